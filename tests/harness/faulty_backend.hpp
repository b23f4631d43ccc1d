// A test backend with planted faults: each fault is one real-world numerics bug, written as the
// plain C++ a kernel author would write (never through the oracle), so the harness's location,
// counts, causes and inference are checked against an independent implementation.
#pragma once

#include "cases/case.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"
#include "qconform/backend.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <thread>

namespace qc::testing {

enum class Fault {
  none,             // correct ONNX QuantizeLinear: round(x / s) ties to even, + zp, saturate
  ties_away,        // std::round: ties away from zero
  reciprocal,       // x * (1 / s) instead of x / s
  f16,              // x and s converted to f16, the quotient rounded to f16
  wrap,             // a plain cast to int8: two's-complement wrap instead of saturation
  nan_to_qmax,      // NaN becomes qmax
  int16_pairs,      // qgemm: u8 x s8 products summed in pairs saturated to int16 (vpmaddubsw)
  extra_mismatch,   // ties_away, and element 0 off by one as well (a changed fingerprint)
  fewer_mismatch,   // ties_away, but the first mismatching element right (a changed fingerprint)
  nudged,           // correct, but element 0 off by the backend's `nudge` (the same element, any distance)
  recip_ties_away,  // two hazards at once: x * (1 / s), then std::round (ties away from zero)
  gemmlowp_double,  // qgemm requantized to i8 as TFLite does: gemmlowp's SaturatingRoundingDoublingHighMul
                    // (ties up) then RoundingDivideByPOT (ties away), a double rounding
  crash,            // raises SIGSEGV
  hang,             // never answers
};

inline const char* fault_name(Fault f) {
  switch (f) {
    case Fault::none:
      return "none";
    case Fault::ties_away:
      return "ties-away";
    case Fault::reciprocal:
      return "reciprocal";
    case Fault::f16:
      return "f16";
    case Fault::wrap:
      return "wrap";
    case Fault::nan_to_qmax:
      return "nan-to-qmax";
    case Fault::int16_pairs:
      return "int16-pairs";
    case Fault::extra_mismatch:
      return "extra-mismatch";
    case Fault::fewer_mismatch:
      return "fewer-mismatch";
    case Fault::nudged:
      return "nudged";
    case Fault::recip_ties_away:
      return "recip-ties-away";
    case Fault::gemmlowp_double:
      return "gemmlowp-double";
    case Fault::crash:
      return "crash";
    case Fault::hang:
      return "hang";
  }
  return "?";
}

class FaultyBackend : public Backend {
 public:
  // `name` lets a changed backend pose as the one a baseline was recorded for.
  explicit FaultyBackend(Fault f, std::string name = "", std::int64_t nudge = 0, std::string claim = "onnx")
      : fault_(f), name_(std::move(name)), nudge_(nudge), claim_(std::move(claim)) {}
  std::string name() const override { return name_.empty() ? std::string("faulty-") + fault_name(fault_) : name_; }
  std::string description() const override { return "planted fault: " + std::string(fault_name(fault_)); }
  std::string claim() const override { return claim_; }
  Availability supports(const OpRequest& op) const override {
    if (const auto* q = std::get_if<QuantizeOp>(&op)) {
      if (q->x.dtype() == DType::f32 && q->params.granularity() == Granularity::per_tensor &&
          (q->out == DType::i8 || q->out == DType::u8))
        return {};
      return {false, "per-tensor f32 -> i8/u8 quantize only"};
    }
    if (const auto* g = std::get_if<QGemmOp>(&op)) {
      const bool output = fault_ == Fault::gemmlowp_double
                              ? g->output.kind == OutputKind::requantized && g->output.format == DType::i8 &&
                                    !g->bias && g->b.params.granularity() == Granularity::per_tensor
                              : g->output.kind == OutputKind::int32;
      if (g->a.values.dtype() == DType::u8 && g->b.values.dtype() == DType::i8 && !g->b.packing && output &&
          g->a.values.shape().size() == 2 && g->b_layout == WeightLayout::k_by_n)
        return {};
      return {false, fault_ == Fault::gemmlowp_double ? "u8 x i8 -> requantized i8 [M, K] x [K, N] qgemm only"
                                                      : "u8 x i8 -> int32 [M, K] x [K, N] qgemm only"};
    }
    return {false, "quantize and qgemm only"};
  }

  Tensor run(const OpRequest& op) override {
    if (fault_ == Fault::crash) std::raise(SIGSEGV);
    if (fault_ == Fault::hang)
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (const auto* q = std::get_if<QuantizeOp>(&op)) return quantize(*q);
    return gemm(std::get<QGemmOp>(op));
  }

 private:
  Tensor quantize(const QuantizeOp& op) const {
    const auto s = static_cast<float>(op.params.scales[0]);
    const std::int64_t zp = op.params.zero_points.empty() ? 0 : op.params.zero_points[0];
    const std::int64_t lo = op.out == DType::i8 ? -128 : 0, hi = op.out == DType::i8 ? 127 : 255;
    Tensor y(op.out, op.x.shape());
    bool first_fixed = false;
    for (std::int64_t i = 0; i < op.x.size(); ++i) {
      const auto x = static_cast<float>(op.x.get_double(i));
      if (std::isnan(x) && fault_ == Fault::nan_to_qmax) {
        y.set_int(i, hi);
        continue;
      }
      if (std::isnan(x)) {  // this backend's rule for NaN otherwise: the zero point
        y.set_int(i, zp);
        continue;
      }
      float t = x / s;
      if (fault_ == Fault::reciprocal || fault_ == Fault::recip_ties_away) t = x * (1.0f / s);
      if (fault_ == Fault::f16) {  // each operand and the quotient rounded to f16 (the quotient of two
                                   // f16 values in f32, then to f16: correctly rounded, 24 >= 2*11+2)
        const auto xh = static_cast<float>(static_cast<_Float16>(x));
        const auto sh = static_cast<float>(static_cast<_Float16>(s));
        t = static_cast<float>(static_cast<_Float16>(xh / sh));
      }
      const bool away = fault_ == Fault::ties_away || fault_ == Fault::extra_mismatch ||
                        fault_ == Fault::fewer_mismatch || fault_ == Fault::recip_ties_away;
      float r = away ? std::round(t) : std::nearbyint(t);
      if (fault_ == Fault::fewer_mismatch && !first_fixed && r != std::nearbyint(t)) {
        r = std::nearbyint(t);
        first_fixed = true;
      }
      std::int64_t v;
      if (fault_ == Fault::wrap) {
        // (int8_t)(r + zp): out-of-range values wrap modulo 256 (fmod of an integer-valued float is
        // exact); a cast of an infinity has no meaning, and this kernel saturates them.
        if (std::isinf(r)) {
          y.set_int(i, r > 0 ? hi : lo);
          continue;
        }
        const auto w = static_cast<std::int64_t>(std::fmod(r, 256.0f)) + zp;
        v = op.out == DType::i8 ? static_cast<std::int8_t>(static_cast<std::uint8_t>(w & 0xff))
                                : static_cast<std::int64_t>(w & 0xff);
      } else {
        v = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::clamp(r, -1e9f, 1e9f)) + zp, lo, hi);
      }
      if (fault_ == Fault::extra_mismatch && i == 0) v = v == hi ? v - 1 : v + 1;
      if (fault_ == Fault::nudged && i == 0) v = std::clamp(v + nudge_, lo, hi);
      y.set_int(i, v);
    }
    return y;
  }

  Tensor gemm(const QGemmOp& op) const {
    const std::int64_t m = op.a.values.shape()[0], k = op.a.values.shape()[1], n = op.b.values.shape()[1];
    const std::int64_t za = op.a.params.zero_points.empty() ? 0 : op.a.params.zero_points[0];
    const std::int64_t zb = op.b.params.zero_points.empty() ? 0 : op.b.params.zero_points[0];
    Tensor y(DType::i32, {m, n});
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        std::int64_t acc = 0, sum_a = 0, sum_b = 0;
        for (std::int64_t p = 0; p < k; p += 2) {
          const std::int64_t a0 = op.a.values.get_int(i * k + p), b0 = op.b.values.get_int(p * n + j);
          const std::int64_t a1 = p + 1 < k ? op.a.values.get_int(i * k + p + 1) : 0;
          const std::int64_t b1 = p + 1 < k ? op.b.values.get_int((p + 1) * n + j) : 0;
          std::int64_t pair = a0 * b0 + a1 * b1;
          if (fault_ == Fault::int16_pairs) pair = std::clamp<std::int64_t>(pair, -32768, 32767);
          acc += pair;
          sum_a += a0 + a1;
          sum_b += b0 + b1;
        }
        // The zero points enter as the correction terms vpmaddubsw kernels add.
        acc += -zb * sum_a - za * sum_b + k * za * zb;
        y.set_int(i * n + j, static_cast<std::int32_t>(static_cast<std::uint32_t>(acc)));
      }
    if (fault_ != Fault::gemmlowp_double) return y;
    // TFLite's requantize (tensorflow/lite/kernels/internal/quantization_util.cc QuantizeMultiplier,
    // common.h MultiplyByQuantizedMultiplier), with gemmlowp/fixedpoint/fixedpoint.h's
    // SaturatingRoundingDoublingHighMul and RoundingDivideByPOT.
    const double real = op.a.params.scales[0] * op.b.params.scales[0] / op.output.scale;
    int exponent = 0;
    const double q = std::frexp(real, &exponent);
    auto q_fixed = static_cast<std::int64_t>(std::round(q * (1LL << 31)));
    if (q_fixed == (1LL << 31)) {
      q_fixed /= 2;
      ++exponent;
    }
    const std::int32_t multiplier = static_cast<std::int32_t>(q_fixed);
    const int left = exponent > 0 ? exponent : 0, right = exponent > 0 ? 0 : -exponent;
    Tensor out(DType::i8, {m, n});
    for (std::int64_t e = 0; e < m * n; ++e) {
      const auto x = static_cast<std::int32_t>(y.get_int(e) * (std::int64_t{1} << left));
      const std::int64_t ab = static_cast<std::int64_t>(x) * multiplier;
      const std::int64_t nudge = ab >= 0 ? (1LL << 30) : (1 - (1LL << 30));
      const auto high = static_cast<std::int32_t>((ab + nudge) / (1LL << 31));  // C++ division truncates
      const std::int32_t mask = (1 << right) - 1, remainder = high & mask;
      const std::int32_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
      const std::int32_t shifted = (high >> right) + (remainder > threshold ? 1 : 0);
      out.set_int(e, std::clamp<std::int64_t>(shifted + op.output.zero_point, -128, 127));
    }
    return out;
  }

  Fault fault_;
  std::string name_;
  std::int64_t nudge_ = 0;
  std::string claim_;
};

// A u8 x i8 GEMM requantized to i8 with the multiplier s_a * s_b / s_out = 0.25 * 0.5 / 0.5 = 1/4
// (gemmlowp: Q31 multiplier 2^30, right shift 1), so that the spec's round(acc / 4) and the double
// rounding of Fault::gemmlowp_double part on accumulators of both signs. A [6, 16] from 120..135
// (zero point 128), B [16, 5] from -4..3: |acc| <= 16 * 8 * 4 = 512, so acc / 4 stays within one
// step of the i8 range and the clamp treats both alike.
inline Case double_rounding_case(std::int64_t m = 6, std::int64_t n = 5) {
  QGemmOp op;
  op.a.values = Tensor(DType::u8, {m, 16});
  op.b.values = Tensor(DType::i8, {16, n});
  std::uint32_t state = 12345;  // a fixed LCG (Numerical Recipes), independent of the code under test
  const auto next = [&state](int span) {
    state = state * 1664525u + 1013904223u;
    return static_cast<std::int64_t>((state >> 8) % static_cast<std::uint32_t>(span));
  };
  for (std::int64_t i = 0; i < op.a.values.size(); ++i) op.a.values.set_int(i, 120 + next(16));
  for (std::int64_t i = 0; i < op.b.values.size(); ++i) op.b.values.set_int(i, next(8) - 4);
  op.a.params.scales = {0.25};
  op.a.params.zero_points = {128};
  op.b.params.scales = {0.5};
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = 0.5;
  Case c;
  c.suite = "planted";
  c.name = "double_rounding";
  c.op = op;
  c.spec = *find_preset("onnx");
  return c;
}

// The exact accumulators of a [M, K] x [K, N] GEMM with per-tensor zero points, by plain loops.
inline std::vector<std::int64_t> exact_accumulators(const QGemmOp& op) {
  const std::int64_t m = op.a.values.shape()[0], k = op.a.values.shape()[1], n = op.b.values.shape()[1];
  const std::int64_t za = op.a.params.zero_points.empty() ? 0 : op.a.params.zero_points[0];
  const std::int64_t zb = op.b.params.zero_points.empty() ? 0 : op.b.params.zero_points[0];
  std::vector<std::int64_t> acc(static_cast<std::size_t>(m * n), 0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p)
        acc[static_cast<std::size_t>(i * n + j)] +=
            (op.a.values.get_int(i * k + p) - za) * (op.b.values.get_int(p * n + j) - zb);
  return acc;
}

// round(v / 4), ties to even, clamped to i8: the spec's (onnx, exact) requantize of acc with the
// multiplier 1/4.
inline std::int64_t quarter_ties_to_even(std::int64_t acc) {
  const std::int64_t q = acc >= 0 ? acc / 4 : -((-acc + 3) / 4);  // floor(acc / 4)
  const std::int64_t r = acc - 4 * q;                             // 0..3
  const std::int64_t rounded = r < 2 ? q : r > 2 ? q + 1 : (q % 2 == 0 ? q : q + 1);
  return std::clamp<std::int64_t>(rounded, -128, 127);
}

}  // namespace qc::testing
