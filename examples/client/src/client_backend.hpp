// The client kernels (kernels/client_kernels.h) as a qconform backend: the one adapter shared by the
// plugin (src/plugin.cpp) and the exec runner (src/runner.cpp). It includes only <qconform/...> core
// headers and links only qconform::core.
#pragma once

#include <qconform/backend.hpp>
#include <qconform/error.hpp>

#include "client_kernels.h"

#include <string>
#include <vector>

namespace client {

class ClientBackend : public qc::Backend {
 public:
  std::string name() const override { return "client-kernels"; }
  std::string description() const override {
    return "example client kernels: reciprocal quantize with roundf, int32 GEMM, float requantize with roundf";
  }
  // Declared in presets/client-kernels.json (a policy file; the plugin also carries it).
  std::string claim() const override { return "client-kernels-1.0"; }

  qc::Availability supports(const qc::OpRequest& op) const override {
    if (const auto* q = std::get_if<qc::QuantizeOp>(&op)) {
      if (q->x.dtype() != qc::DType::f32) return {false, "quantize: only f32 input"};
      if (q->params.granularity() != qc::Granularity::per_tensor || q->params.scale_dtype != qc::DType::f32)
        return {false, "quantize: only one f32 scale per tensor"};
      if (q->out != qc::DType::i8 && q->out != qc::DType::u8) return {false, "quantize: only i8/u8 output"};
      return {};
    }
    if (const auto* g = std::get_if<qc::QGemmOp>(&op)) return supports_gemm(*g);
    return {false, std::string(qc::op_name(op)) + " is not implemented"};
  }

  qc::Tensor run(const qc::OpRequest& op) override {
    if (const auto* q = std::get_if<qc::QuantizeOp>(&op)) {
      std::vector<std::int32_t> out(static_cast<std::size_t>(q->x.size()));
      ck_quantize_f32(q->x.data<float>(), out.size(), static_cast<float>(q->params.scales[0]), zero_point(q->params),
                      static_cast<std::int32_t>(qc::int_min(q->out)), static_cast<std::int32_t>(qc::int_max(q->out)),
                      out.data());
      return to_tensor(out, q->out, q->x.shape());
    }
    return run_gemm(std::get<qc::QGemmOp>(op));
  }

 private:
  static std::int32_t zero_point(const qc::QuantParams& p, std::size_t i = 0) {
    return static_cast<std::int32_t>(p.zero_points.empty() ? 0 : p.zero_points[i]);
  }
  static bool is_8bit(qc::DType t) { return t == qc::DType::i8 || t == qc::DType::u8; }

  static qc::Availability supports_gemm(const qc::QGemmOp& g) {
    if (qc::logical_shape(g.b).size() != 2) return {false, "qgemm: B is one 2-D matrix (no batched B)"};
    const bool float_a = g.a.values.dtype() == qc::DType::f32;
    if (!float_a && !is_8bit(g.a.values.dtype())) return {false, "qgemm: A is f32, i8 or u8"};
    if (float_a && !is_8bit(g.a.format)) return {false, "qgemm: A quantizes to i8 or u8"};
    if (g.a.quantization != qc::ActivationQuantization::static_params ||
        g.a.params.granularity() != qc::Granularity::per_tensor)
      return {false, "qgemm: A is quantized statically, per tensor"};
    if (g.b.packing || !is_8bit(g.b.values.dtype())) return {false, "qgemm: B is unpacked i8 or u8"};
    const qc::Granularity gb = g.b.params.granularity();
    if (gb == qc::Granularity::blocked) return {false, "qgemm: B is per tensor or per column"};
    if (gb == qc::Granularity::per_axis) {
      const int n_axis = g.b_layout == qc::WeightLayout::k_by_n ? 1 : 0;
      if ((*g.b.params.axis + 2) % 2 != n_axis) return {false, "qgemm: B's parameters vary along N only"};
    }
    if (g.bias && g.bias->dtype() != qc::DType::i32) return {false, "qgemm: the bias is i32"};
    if (g.output.kind == qc::OutputKind::dequantized) return {false, "qgemm: no dequantized output"};
    if (g.output.kind == qc::OutputKind::requantized && !is_8bit(g.output.format))
      return {false, "qgemm: requantizes to i8 or u8"};
    return {};
  }

  qc::Tensor run_gemm(const qc::QGemmOp& g) const {
    const qc::GemmShape d = qc::gemm_shape(g.a.values.shape(), g.b.values.shape(), g.b_layout);
    const auto R = static_cast<std::size_t>(d.rows), K = static_cast<std::size_t>(d.depth),
               N = static_cast<std::size_t>(d.cols);
    std::vector<std::int32_t> a(R * K), b(K * N), acc(R * N);
    if (g.a.values.dtype() == qc::DType::f32)
      ck_quantize_f32(g.a.values.data<float>(), a.size(), static_cast<float>(g.a.params.scales[0]),
                      zero_point(g.a.params), static_cast<std::int32_t>(qc::int_min(g.a.format)),
                      static_cast<std::int32_t>(qc::int_max(g.a.format)), a.data());
    else
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int32_t>(g.a.values.get_int(std::int64_t(i)));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int32_t>(g.b.values.get_int(std::int64_t(i)));
    std::vector<std::int32_t> zb(g.b.params.scales.size());
    std::vector<float> sb(zb.size());
    for (std::size_t i = 0; i < zb.size(); ++i) {
      zb[i] = zero_point(g.b.params, i);
      sb[i] = static_cast<float>(g.b.params.scales[i]);
    }
    std::vector<std::int32_t> bias;
    if (g.bias)
      for (std::int64_t i = 0; i < g.bias->size(); ++i) bias.push_back(static_cast<std::int32_t>(g.bias->get_int(i)));
    ck_gemm_s32(a.data(), b.data(), g.b_layout == qc::WeightLayout::k_by_n, R, K, N, zero_point(g.a.params), zb.data(),
                zb.size(), g.bias ? bias.data() : nullptr, acc.data());
    if (g.output.kind == qc::OutputKind::int32) return to_tensor(acc, qc::DType::i32, d.out_shape);
    const qc::DType out = g.output.format;
    const auto lo = static_cast<std::int32_t>(g.output.clamp ? g.output.clamp->lo : qc::int_min(out));
    const auto hi = static_cast<std::int32_t>(g.output.clamp ? g.output.clamp->hi : qc::int_max(out));
    std::vector<std::int32_t> y(acc.size());
    ck_requantize_f32(acc.data(), R, N, static_cast<float>(g.a.params.scales[0]), sb.data(), sb.size(),
                      static_cast<float>(g.output.scale), static_cast<std::int32_t>(g.output.zero_point), lo, hi,
                      y.data());
    return to_tensor(y, out, d.out_shape);
  }

  static qc::Tensor to_tensor(const std::vector<std::int32_t>& v, qc::DType t, const qc::Shape& shape) {
    qc::Tensor out(t, shape);
    for (std::size_t i = 0; i < v.size(); ++i) out.set_int(static_cast<std::int64_t>(i), v[i]);
    return out;
  }
};

}  // namespace client
