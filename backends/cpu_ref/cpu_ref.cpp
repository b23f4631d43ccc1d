#include "backends/cpu_ref/cpu_ref.hpp"
#include "backends/host/qparams.hpp"

#include "backends/cpu_ref/float8.hpp"
#include "backends/cpu_ref/formats.hpp"
#include "backends/cpu_ref/linear.hpp"
#include "backends/cpu_ref/mx.hpp"
#include "backends/cpu_ref/qadd.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <boost/multiprecision/cpp_int.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace qc {
namespace cpu_ref {
namespace {

// QuantizeLinear as a plain C++ reference writes it: x and s in the numerics' float type T, x / s
// (or x * (1 / s)), one rounding call, the zero point added in integers, saturate. A NaN has no
// integer; the references leave it open (ONNX, TFLite) or send it to qmax (FBGEMM's min_ps), and
// cpu-ref picks qmin where it is open.
template <class Out>
void quantize_into(const QuantizeOp& op, const Numerics& n, Tensor& y) {
  const Tensor& x = op.x;
  const QuantParams& p = op.params;
  const ParamIndexer index(p, x.shape());
  const FloatIn T = float_in(n.quantize_in, p.scale_dtype);
  const auto lo = static_cast<std::int64_t>(int_min(op.out));
  const auto hi = static_cast<std::int64_t>(int_max(op.out));
  Out* out = y.data<Out>();
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t k = index(i);
    const double xt = T.round(x.get_double(i));
    const double st = T.round(p.scales[static_cast<std::size_t>(k)]);
    const double q = n.reciprocal ? T.mul(xt, T.div(1.0, st)) : T.div(xt, st);
    std::int64_t v;
    if (std::isnan(q)) {
      v = n.nan_to_qmax ? hi : lo;
    } else {
      const double bounded = std::clamp(q, -1e18, 1e18);  // infinities saturate below
      const double r = n.ties_away ? std::round(bounded) : std::nearbyint(bounded);
      v = static_cast<std::int64_t>(r) + p.zero_point(k);
    }
    out[i] = static_cast<Out>(std::clamp(v, lo, hi));
  }
}

}  // namespace

Tensor quantize_linear(const QuantizeOp& q, const Numerics& n) {
  Tensor y(q.out, q.x.shape());
  switch (q.out) {
    case DType::i8:
    case DType::i4:
      quantize_into<std::int8_t>(q, n, y);
      break;
    case DType::u8:
    case DType::u4:
      quantize_into<std::uint8_t>(q, n, y);
      break;
    case DType::i16:
      quantize_into<std::int16_t>(q, n, y);
      break;
    case DType::u16:
      quantize_into<std::uint16_t>(q, n, y);
      break;
    default:
      throw std::invalid_argument("cpu-ref: unsupported output " + std::string(qc::name(q.out)));
  }
  return y;
}

namespace {

// DequantizeLinear as a reference writes it: static_cast<T>(q - zp) * static_cast<T>(scale) in
// the numerics' type T, then stored in the output format.
Tensor dequantize_linear(const DequantizeOp& op, const Numerics& n) {
  const QuantParams& p = op.params;
  const ParamIndexer index(p, op.q.shape());
  const FloatIn T = float_in(n.dequantize_in, p.scale_dtype);
  Tensor y(op.out, op.q.shape());
  for (std::int64_t i = 0; i < op.q.size(); ++i) {
    const std::int64_t k = index(i);
    const double diff = T.round(static_cast<double>(op.q.get_int(i) - p.zero_point(k)));
    const double v = T.mul(diff, T.round(p.scales[static_cast<std::size_t>(k)]));
    y.set_bits(i, to_format_bits(op.out, v));
  }
  return y;
}

}  // namespace

// ---- Exact requantization -------------------------------------------------------------------
// Every finite double is m * 2^e with an odd integer m of at most 53 bits, so acc * s_in * s_w /
// s_out is a ratio of integers times a power of two, and rounding it is an integer division.

namespace {

// A finite double as m * 2^e with m odd (m carries the sign; 0 for zero).
struct Dyadic {
  std::int64_t m = 0;
  int e = 0;
};

Dyadic dyadic(double s) {
  int e;
  const double f = std::frexp(s, &e);  // s = f * 2^e, f in [0.5, 1)
  Dyadic d{static_cast<std::int64_t>(std::ldexp(f, 53)), e - 53};
  while (d.m != 0 && (d.m & 1) == 0) d.m >>= 1, ++d.e;  // strip trailing zero bits
  return d;
}

// num / den rounded to the nearest integer, ties to even (den > 0): floor division, then up when
// the remainder is past half, or exactly half with an odd quotient.
template <class Int>
Int round_half_even_quotient(const Int& num, const Int& den) {
  Int q = num / den, r = num % den;  // C++ division truncates toward zero
  if (r < 0) q -= 1, r += den;       // floor division, 0 <= r < den
  const Int twice = 2 * r;
  if (twice > den || (twice == den && q % 2 != 0)) q += 1;
  return q;
}

constexpr std::int64_t kSaturated = std::int64_t{1} << 40;  // beyond every output format

}  // namespace

// round(acc * s_in * s_w / s_out) with ties to even, exactly: the value is
// (acc * m_in * m_w) / m_out * 2^(e_in + e_w - e_out), an integer division in 128-bit arithmetic
// when |acc| <= 2^31 and the scales are f32 values (m < 2^24): |acc * m_in * m_w| < 2^80, and
// shifts up to 100 bits keep numerator and denominator inside 128 bits. Otherwise (f64 scales,
// a 64-bit accumulator) the arbitrary-precision requantize_sum_exact does it.
std::int64_t requantize_exact(std::int64_t acc, double s_in, double s_w, double s_out) {
  const Dyadic in = dyadic(s_in), w = dyadic(s_w), out = dyadic(s_out);
  constexpr std::int64_t k24 = std::int64_t{1} << 24;
  if (in.m >= k24 || w.m >= k24 || out.m >= k24 || acc > (std::int64_t{1} << 31) || acc < -(std::int64_t{1} << 31)) {
    const ScaledTerm t{acc, s_in, s_w};
    return requantize_sum_exact(std::span<const ScaledTerm>(&t, 1), s_out);
  }
  const int shift = in.e + w.e - out.e;
  __int128 num = static_cast<__int128>(acc) * in.m * w.m;
  __int128 den = out.m;
  if (num == 0) return 0;
  if (shift >= 0) {
    int bits = 0;
    for (__int128 a = num < 0 ? -num : num; a != 0; a >>= 1) ++bits;
    // |value| > 2^(bits - 1 + shift - 24): past 2^40 it saturates every output format.
    if (bits + shift > 100) return num > 0 ? kSaturated : -kSaturated;
    num <<= shift;
  } else {
    if (-shift > 100) return 0;  // |value| < 2^-20: rounds to 0
    den <<= -shift;
  }
  const __int128 q = round_half_even_quotient(num, den);
  return static_cast<std::int64_t>(std::clamp<__int128>(q, -kSaturated, kSaturated));
}

// round(Σ acc_i * s_a_i * s_b_i / s_out), ties to even, exactly. The terms have different
// exponents (one per K block), so they are brought to the smallest one in an arbitrary-precision
// integer (Boost's cpp_int): a block scale far from the others would not fit 128 bits.
std::int64_t requantize_sum_exact(std::span<const ScaledTerm> terms, double s_out) {
  using Big = boost::multiprecision::cpp_int;
  struct Part {
    Big coefficient;
    int e;
  };
  std::vector<Part> parts;
  int e_min = INT_MAX;
  for (const ScaledTerm& t : terms) {
    if (t.acc == 0) continue;
    const Dyadic a = dyadic(t.s_a), b = dyadic(t.s_b);
    parts.push_back({Big(t.acc) * a.m * b.m, a.e + b.e});
    e_min = std::min(e_min, a.e + b.e);
  }
  if (parts.empty()) return 0;
  Big num = 0;
  for (const Part& p : parts) num += p.coefficient << (p.e - e_min);
  const Dyadic out = dyadic(s_out);
  Big den = out.m;
  const int shift = e_min - out.e;  // value = num * 2^shift / den
  if (shift >= 0)
    num <<= shift;
  else
    den <<= -shift;
  const Big q = round_half_even_quotient(num, den);
  if (q > kSaturated) return kSaturated;
  if (q < -kSaturated) return -kSaturated;
  return q.convert_to<std::int64_t>();
}

std::int32_t wrap_int32(std::int64_t v) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));  // modulo 2^32 (C++20)
}

// ---- TFLite's requantization ----------------------------------------------------------------
// Written out as TFLite and gemmlowp write it (cpu-ref does not share the oracle's fixed-point
// code, so the two are checked against each other rather than against themselves).

// tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier: real = q * 2^shift with
// q in [0.5, 1), q rounded to Q31 half away from zero (TfLiteRound is std::round).
Q31 tflite_quantize_multiplier(double real) {
  if (real == 0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(real, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(std::int64_t{1} << 31)));
  if (q_fixed == (std::int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {  // "if exponent < -31, the multiplier is flushed to zero"
    shift = 0;
    q_fixed = 0;
  }
  return {static_cast<std::int32_t>(q_fixed), shift};
}

namespace {

// google/gemmlowp fixedpoint/fixedpoint.h::SaturatingRoundingDoublingHighMul: round(a * b / 2^31),
// ties toward +inf, the one overflow case (INT32_MIN squared) saturated.
std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<std::int32_t>::min();
  const std::int64_t ab = std::int64_t{a} * b;
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  const auto high = static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));  // truncates toward 0
  return overflow ? std::numeric_limits<std::int32_t>::max() : high;
}

// fixedpoint.h::RoundingDivideByPOT: x / 2^exponent, ties away from zero (0 <= exponent <= 31).
std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  const auto mask = static_cast<std::int32_t>((std::int64_t{1} << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (the double-rounding
// build): x * (1 << left_shift) is an int32 multiply, which wraps here (TFLite leaves it undefined).
std::int32_t multiply_by_quantized_multiplier(std::int32_t x, Q31 m) {
  if (m.shift > 30)
    throw std::invalid_argument("cpu-ref (gemmlowp): a left shift of " + std::to_string(m.shift) +
                                " (a multiplier of 2^30 or more); TFLite requires shift <= 30");
  const int left = m.shift > 0 ? m.shift : 0, right = m.shift > 0 ? 0 : -m.shift;
  return rounding_divide_by_pot(
      saturating_rounding_doubling_high_mul(wrap_int32(std::int64_t{x} * (std::int64_t{1} << left)), m.multiplier),
      right);
}

}  // namespace

std::int64_t requantize_value(const Numerics& n, std::int64_t acc, double s_a, double s_b, double s_out,
                              std::int64_t zp) {
  switch (n.requantize) {
    case RequantizeRoutine::exact:
      return requantize_exact(acc, s_a, s_b, s_out) + zp;
    case RequantizeRoutine::gemmlowp: {
      // The real multiplier in double, left to right (tensorflow/lite/kernels/kernel_util.cc::
      // PopulateConvolutionQuantizationParams), and `acc += output_offset` in int32.
      if (acc < std::numeric_limits<std::int32_t>::min() || acc > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument("cpu-ref (gemmlowp): the accumulator " + std::to_string(acc) + " is not an int32");
      const Q31 m = tflite_quantize_multiplier(s_a * s_b / s_out);
      return wrap_int32(std::int64_t{multiply_by_quantized_multiplier(static_cast<std::int32_t>(acc), m)} + zp);
    }
    case RequantizeRoutine::f32_multiplier: {
      // Every operation in float (the scales are exact in float: check_requantize_scales).
      const float m = static_cast<float>(s_a) * static_cast<float>(s_b) / static_cast<float>(s_out);
      const float v = static_cast<float>(acc) * m;
      return static_cast<std::int64_t>(std::nearbyint(std::clamp<double>(v, -1e18, 1e18))) + zp;
    }
  }
  throw std::invalid_argument("cpu-ref: unknown requantize routine");
}

Availability check_requantize_scales(const Numerics& n, DType scale_dtype) {
  if (n.requantize == RequantizeRoutine::f32_multiplier && scale_dtype != DType::f32 && scale_dtype != DType::f16 &&
      scale_dtype != DType::bf16)
    return {false, "cpu-ref (" + std::string(n.preset) + ") forms its float multiplier from f32, f16 or bf16 scales"};
  return {};
}

namespace {

Tensor requantize(const RequantizeOp& op, const Numerics& n) {
  const RequantizeParams& p = op.params;
  Tensor y(op.out, op.acc.shape());
  std::int64_t inner = 1, dim = 1;
  if (p.axis) {
    const int a = resolve_axis(*p.axis, op.acc.rank());
    dim = op.acc.shape()[static_cast<std::size_t>(a)];
    for (int d = a + 1; d < op.acc.rank(); ++d) inner *= op.acc.shape()[static_cast<std::size_t>(d)];
  }
  for (std::int64_t i = 0; i < op.acc.size(); ++i) {
    const auto c = static_cast<std::size_t>((i / inner) % dim);
    const double w = p.weight_scales[p.weight_scales.size() == 1 ? 0 : c];
    const std::int64_t zp =
        p.output_zero_points.empty() ? 0 : p.output_zero_points[p.output_zero_points.size() == 1 ? 0 : c];
    const std::int64_t v = requantize_value(n, op.acc.get_int(i), p.input_scale, w, p.output_scale, zp);
    y.set_int(i, std::clamp(v, int_min(op.out), int_max(op.out)));
  }
  return y;
}

}  // namespace
}  // namespace cpu_ref

CpuRefBackend::CpuRefBackend(std::string_view preset) : numerics_(cpu_ref::find_numerics(preset)) {
  if (!numerics_)
    throw InputError("cpu-ref cannot claim '" + std::string(preset) + "' (it implements " + cpu_ref::claimable_list() +
                     ")");
}

std::string CpuRefBackend::name() const {
  return numerics_ == &cpu_ref::claimable().front() ? "cpu-ref" : "cpu-ref:" + std::string(numerics_->preset);
}

std::string CpuRefBackend::description() const {
  return "plain C++ reference, " + std::string(numerics_->description) + " (Eigen int32 GEMM, direct conv)";
}

std::string CpuRefBackend::claim() const { return std::string(numerics_->preset); }

Availability CpuRefBackend::supports(const OpRequest& op) const {
  const cpu_ref::Numerics& n = *numerics_;
  if (const auto* wo = std::get_if<WeightOnlyGemmOp>(&op)) return cpu_ref::supports_weight_only(*wo);
  if (const auto* fc = std::get_if<Conv2dOp>(&op)) return cpu_ref::supports_conv2d(*fc);
  if (std::holds_alternative<MxQuantizeOp>(op) || std::holds_alternative<MxDequantizeOp>(op) ||
      std::holds_alternative<MxGemmOp>(op))
    return {};
  if (const auto* a = std::get_if<QAddOp>(&op)) {
    // cpu-ref adds by the exact value with ties to even: the claimed preset must define qadd so.
    const auto spec = find_preset(n.preset);
    if (!spec || spec->add.scheme != AddScheme::ideal || spec->add.rounding != RoundingMode::rne)
      return {false,
              "cpu-ref's qadd is the exact value with ties to even, not '" + std::string(n.preset) + "'s add scheme"};
    return cpu_ref::supports_qadd(*a);
  }
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (!is_float(q->params.scale_dtype) || q->params.scale_dtype == DType::f8e4m3fn ||
        q->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
    if (info(q->out).bits == 32) return {false, "cpu-ref does not quantize to i32"};
    if (is_float(q->out) && q->out != DType::f8e4m3fn && q->out != DType::f8e5m2)
      return {false, "cpu-ref quantizes to integers or float8 only"};
    return {};
  }
  if (const auto* d = std::get_if<DequantizeOp>(&op)) {
    if (d->params.scale_dtype == DType::f8e4m3fn || d->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref dequantizes with f64, f32, f16 or bf16 scales only"};
    return {};
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    if (r->params.scale_dtype != DType::f32) return {false, "cpu-ref requantizes with f32 scales only"};
    if (n.requantize == cpu_ref::RequantizeRoutine::gemmlowp && info(r->acc.dtype()).bits > 32)
      return {false, "TFLite's MultiplyByQuantizedMultiplier takes int32 accumulators, not " +
                         std::string(qc::name(r->acc.dtype()))};
    return {};
  }
  if (const auto* g = std::get_if<QGemmOp>(&op)) return cpu_ref::supports_qgemm(*g, n);
  if (const auto* c = std::get_if<QConv2dOp>(&op)) return cpu_ref::supports_qconv2d(*c, n);
  if (const auto* p = std::get_if<ChooseQParamsOp>(&op)) return host::supports_choose_qparams(*p);
  return {false, "op not implemented by cpu-ref"};
}

Tensor CpuRefBackend::run(const OpRequest& op) {
  const cpu_ref::Numerics& n = *numerics_;
  if (const auto* d = std::get_if<DequantizeOp>(&op))
    return is_float(d->q.dtype()) ? cpu_ref::dequantize_float8(*d, n) : cpu_ref::dequantize_linear(*d, n);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return cpu_ref::requantize(*r, n);
  if (const auto* g = std::get_if<QGemmOp>(&op)) return cpu_ref::run_qgemm(*g, n);
  if (const auto* c = std::get_if<QConv2dOp>(&op)) return cpu_ref::run_qconv2d(*c, n);
  if (const auto* wo = std::get_if<WeightOnlyGemmOp>(&op)) return cpu_ref::run_weight_only(*wo);
  if (const auto* p = std::get_if<ChooseQParamsOp>(&op)) return host::run_choose_qparams(*p);
  if (const auto* fc = std::get_if<Conv2dOp>(&op)) return cpu_ref::run_conv2d(*fc);
  if (const auto* m = std::get_if<MxQuantizeOp>(&op)) return cpu_ref::mx_quantize(*m);
  if (const auto* m = std::get_if<MxDequantizeOp>(&op)) return cpu_ref::mx_dequantize(*m);
  if (const auto* m = std::get_if<MxGemmOp>(&op)) return cpu_ref::mx_gemm(*m);
  if (const auto* a = std::get_if<QAddOp>(&op)) return cpu_ref::run_qadd(*a);
  const auto& q = std::get<QuantizeOp>(op);
  return is_float(q.out) ? cpu_ref::quantize_float8(q, n) : cpu_ref::quantize_linear(q, n);
}

}  // namespace qc
