#include "backends/cpu_ref/cpu_ref.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qc {
namespace {

// ONNX QuantizeLinear as a plain C++ reference writes it: divide in the scale's type, round
// half to even with nearbyint (default FP environment), add the zero point in int, saturate.
// For f16/bf16 scales the division runs in float and is rounded back to the scale's format:
// float carries more than 2p+2 bits for both, so that equals a native f16/bf16 division.
template <class Out>
void quantize_linear(const QuantizeOp& op, Tensor& y) {
  const Tensor& x = op.x;
  const QuantParams& p = op.params;
  const ParamIndexer index(p, x.shape());
  const auto lo = static_cast<std::int64_t>(int_min(op.out));
  const auto hi = static_cast<std::int64_t>(int_max(op.out));
  const bool narrow_scale = p.scale_dtype == DType::f16 || p.scale_dtype == DType::bf16;
  Out* out = y.data<Out>();
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t k = index(i);
    double q;
    if (p.scale_dtype == DType::f64) {
      q = x.get_double(i) / p.scales[static_cast<std::size_t>(k)];
    } else {
      float xf = static_cast<float>(x.get_double(i));
      const auto sf = static_cast<float>(p.scales[static_cast<std::size_t>(k)]);
      if (narrow_scale) xf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, xf)));
      float qf = xf / sf;
      if (narrow_scale) qf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, qf)));
      q = qf;
    }
    std::int64_t v;
    if (std::isnan(q)) {
      v = lo;  // ONNX leaves NaN open; a reference has to pick something
    } else {
      const double r = std::nearbyint(std::clamp(q, -1e18, 1e18));
      v = static_cast<std::int64_t>(r) + p.zero_point(k);
    }
    out[i] = static_cast<Out>(std::clamp(v, lo, hi));
  }
}

}  // namespace

Availability CpuRefBackend::supports(const OpRequest& op) const {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (!is_float(q->params.scale_dtype) || q->params.scale_dtype == DType::f8e4m3fn ||
        q->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
    if (info(q->out).bits == 32) return {false, "cpu-ref does not quantize to i32"};
    return {};
  }
  return {false, "op not implemented by cpu-ref"};
}

Tensor CpuRefBackend::run(const OpRequest& op) {
  const auto& q = std::get<QuantizeOp>(op);
  Tensor y(q.out, q.x.shape());
  switch (q.out) {
    case DType::i8:
    case DType::i4: quantize_linear<std::int8_t>(q, y); break;
    case DType::u8:
    case DType::u4: quantize_linear<std::uint8_t>(q, y); break;
    case DType::i16: quantize_linear<std::int16_t>(q, y); break;
    case DType::u16: quantize_linear<std::uint16_t>(q, y); break;
    default: throw std::invalid_argument("cpu-ref: unsupported output " + std::string(qc::name(q.out)));
  }
  return y;
}

}  // namespace qc
