#include "backends/cpu_ref/cpu_ref.hpp"

#include "backends/cpu_ref/linear.hpp"

#include <boost/multiprecision/cpp_int.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

namespace qc {
namespace cpu_ref {
namespace {

// ONNX QuantizeLinear as a plain C++ reference writes it: divide in the scale's type, round
// half to even with nearbyint (default FP environment), add the zero point in int, saturate.
// For f16/bf16 scales the division runs in float and is rounded back to the scale's format:
// float carries more than 2p+2 bits for both, so that equals a native f16/bf16 division.
template <class Out>
void quantize_into(const QuantizeOp& op, Tensor& y) {
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
      if (narrow_scale)
        xf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, xf)));
      float qf = xf / sf;
      if (narrow_scale)
        qf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, qf)));
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

Tensor quantize_linear(const QuantizeOp& q) {
  Tensor y(q.out, q.x.shape());
  switch (q.out) {
    case DType::i8:
    case DType::i4:
      quantize_into<std::int8_t>(q, y);
      break;
    case DType::u8:
    case DType::u4:
      quantize_into<std::uint8_t>(q, y);
      break;
    case DType::i16:
      quantize_into<std::int16_t>(q, y);
      break;
    case DType::u16:
      quantize_into<std::uint16_t>(q, y);
      break;
    default:
      throw std::invalid_argument("cpu-ref: unsupported output " + std::string(qc::name(q.out)));
  }
  return y;
}

namespace {

// ONNX DequantizeLinear as a reference writes it: static_cast<T>(q - zp) * scale in the scale's
// type T, then stored in the output format. The converted difference times a 24-bit (or
// narrower) significand is exact in double, so one cast gives T's rounded product.
Tensor dequantize_linear(const DequantizeOp& op) {
  const QuantParams& p = op.params;
  const ParamIndexer index(p, op.q.shape());
  Tensor y(op.out, op.q.shape());
  auto in_scale_type = [&](double v) {
    if (p.scale_dtype == DType::f64) return v;
    if (p.scale_dtype == DType::f32) return static_cast<double>(static_cast<float>(v));
    return float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, v));
  };
  for (std::int64_t i = 0; i < op.q.size(); ++i) {
    const std::int64_t k = index(i);
    const double diff = in_scale_type(static_cast<double>(op.q.get_int(i) - p.zero_point(k)));
    const long double prod =
        static_cast<long double>(diff) * static_cast<long double>(p.scales[static_cast<std::size_t>(k)]);
    const double in_t =
        p.scale_dtype == DType::f64 ? static_cast<double>(prod) : in_scale_type(static_cast<double>(prod));
    y.set_bits(i, double_to_float_bits(op.out, in_t));
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

namespace {

Tensor requantize(const RequantizeOp& op) {
  const RequantizeParams& p = op.params;
  Tensor y(op.out, op.acc.shape());
  std::int64_t inner = 1, dim = 1;
  if (p.axis) {
    const int a = *p.axis < 0 ? *p.axis + op.acc.rank() : *p.axis;
    dim = op.acc.shape()[static_cast<std::size_t>(a)];
    for (int d = a + 1; d < op.acc.rank(); ++d) inner *= op.acc.shape()[static_cast<std::size_t>(d)];
  }
  for (std::int64_t i = 0; i < op.acc.size(); ++i) {
    const auto c = static_cast<std::size_t>((i / inner) % dim);
    const double w = p.weight_scales[p.weight_scales.size() == 1 ? 0 : c];
    const std::int64_t zp =
        p.output_zero_points.empty() ? 0 : p.output_zero_points[p.output_zero_points.size() == 1 ? 0 : c];
    const std::int64_t v = requantize_exact(op.acc.get_int(i), p.input_scale, w, p.output_scale) + zp;
    y.set_int(i, std::clamp(v, int_min(op.out), int_max(op.out)));
  }
  return y;
}

}  // namespace
}  // namespace cpu_ref

Availability CpuRefBackend::supports(const OpRequest& op) const {
  if (const auto* wo = std::get_if<WeightOnlyGemmOp>(&op)) return cpu_ref::supports_weight_only(*wo);
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (!is_float(q->params.scale_dtype) || q->params.scale_dtype == DType::f8e4m3fn ||
        q->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
    if (info(q->out).bits == 32) return {false, "cpu-ref does not quantize to i32"};
    return {};
  }
  if (const auto* d = std::get_if<DequantizeOp>(&op)) {
    if (d->params.scale_dtype == DType::f8e4m3fn || d->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref dequantizes with f64, f32, f16 or bf16 scales only"};
    return {};
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    if (r->params.scale_dtype != DType::f32) return {false, "cpu-ref requantizes with f32 scales only"};
    return {};
  }
  if (const auto* g = std::get_if<QGemmOp>(&op)) return cpu_ref::supports_qgemm(*g);
  if (const auto* c = std::get_if<QConv2dOp>(&op)) return cpu_ref::supports_qconv2d(*c);
  return {false, "op not implemented by cpu-ref"};
}

Tensor CpuRefBackend::run(const OpRequest& op) {
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return cpu_ref::dequantize_linear(*d);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return cpu_ref::requantize(*r);
  if (const auto* g = std::get_if<QGemmOp>(&op)) return cpu_ref::run_qgemm(*g);
  if (const auto* c = std::get_if<QConv2dOp>(&op)) return cpu_ref::run_qconv2d(*c);
  if (const auto* wo = std::get_if<WeightOnlyGemmOp>(&op)) return cpu_ref::run_weight_only(*wo);
  return cpu_ref::quantize_linear(std::get<QuantizeOp>(op));
}

}  // namespace qc
