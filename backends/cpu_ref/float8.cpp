#include "backends/cpu_ref/float8.hpp"

#include "backends/cpu_ref/formats.hpp"
#include "qconform/error.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace qc::cpu_ref {
namespace {

// OCP 8-bit floating point (v1.0): E4M3 has bias 7, no inf, S.1111.111 = NaN, largest S.1111.110 =
// 448; E5M2 has bias 15, IEEE inf (S.11111.00) and NaNs, largest S.11110.11 = 57344.
struct Float8Bits {
  int mant;
  int bias;
  std::uint8_t max_code;  // the largest finite magnitude's code
  std::uint8_t nan_code;
  bool has_inf;
};

Float8Bits float8_bits(DType t) {
  if (t == DType::f8e4m3fn) return {3, 7, 0x7E, 0x7F, false};
  if (t == DType::f8e5m2) return {2, 15, 0x7B, 0x7E, true};
  throw InputError("cpu-ref: " + std::string(name(t)) + " is not a float8 format");
}

}  // namespace

std::uint8_t float8_from_double(DType t, double v, bool saturate) {
  const Float8Bits f = float8_bits(t);
  const std::uint64_t b = std::bit_cast<std::uint64_t>(v);
  const auto sign = static_cast<std::uint8_t>((b >> 63) << 7);
  const std::uint8_t overflow = saturate ? f.max_code : f.has_inf ? std::uint8_t{0x7C} : f.nan_code;
  if (std::isnan(v)) return f.nan_code;
  if (std::isinf(v)) return sign | overflow;
  const int biased = static_cast<int>((b >> 52) & 0x7FF);
  if (biased == 0) return sign;  // zero, or a double subnormal: far below half of float8's least subnormal
  const std::uint64_t m = (b & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);  // v = m * 2^(e - 52)
  const int e = biased - 1023;
  // The target quantum 2^q: f.mant fraction bits at v's binade, or the subnormal quantum below it.
  int q = std::max(e, 1 - f.bias) - f.mant;
  const int drop = q - (e - 52);  // low bits of m below the quantum (>= 52 - mant)
  std::uint64_t r = 0;
  if (drop < 54) {  // otherwise m < 2^53 <= half a quantum: rounds to zero
    const std::uint64_t rem = m & ((std::uint64_t{1} << drop) - 1);
    const std::uint64_t half = std::uint64_t{1} << (drop - 1);
    r = m >> drop;
    if (rem > half || (rem == half && (r & 1) != 0)) ++r;  // ties to even
  }
  if (r == 0) return sign;
  const std::uint64_t hidden = std::uint64_t{1} << f.mant;
  if (r >= 2 * hidden) r >>= 1, ++q;  // the round-up carried into the next binade (r was 2^(mant+1))
  std::uint64_t code;
  if (r < hidden) {
    code = r;  // subnormal: exponent field 0
  } else {
    const int field = q + f.mant + f.bias;
    code = (static_cast<std::uint64_t>(field) << f.mant) | (r - hidden);
  }
  if (code > f.max_code) return sign | overflow;
  return static_cast<std::uint8_t>(sign | code);
}

double float8_to_double(DType t, std::uint8_t code) {
  const Float8Bits f = float8_bits(t);
  const double sign = (code & 0x80) != 0 ? -1.0 : 1.0;
  const int mag = code & 0x7F;
  const int field = mag >> f.mant;
  const int frac = mag & ((1 << f.mant) - 1);
  if (!f.has_inf && mag == f.nan_code) return std::numeric_limits<double>::quiet_NaN();
  if (f.has_inf && field == (0x7F >> f.mant))
    return frac == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (field == 0) return sign * std::ldexp(frac, 1 - f.bias - f.mant);
  return sign * std::ldexp(frac + (1 << f.mant), field - f.bias - f.mant);
}

// x / s (or x * (1/s)) in the numerics' float type, then the float8 cast; the zero point (0) is not added.
Tensor quantize_float8(const QuantizeOp& op, const Numerics& n) {
  const QuantParams& p = op.params;
  const ParamIndexer index(p, op.x.shape());
  const FloatIn T = float_in(n.quantize_in, p.scale_dtype);
  Tensor y(op.out, op.x.shape());
  for (std::int64_t i = 0; i < op.x.size(); ++i) {
    const double xt = T.round(op.x.get_double(i));
    const double st = T.round(p.scales[static_cast<std::size_t>(index(i))]);
    const double v = n.reciprocal ? T.mul(xt, T.div(1.0, st)) : T.div(xt, st);
    y.set_bits(i, float8_from_double(op.out, v, op.saturate));
  }
  return y;
}

// float(q) * s in the numerics' float type, then stored in the output format.
Tensor dequantize_float8(const DequantizeOp& op, const Numerics& n) {
  const QuantParams& p = op.params;
  const ParamIndexer index(p, op.q.shape());
  const FloatIn T = float_in(n.dequantize_in, p.scale_dtype);
  Tensor y(op.out, op.q.shape());
  for (std::int64_t i = 0; i < op.q.size(); ++i) {
    const double q = float8_to_double(op.q.dtype(), static_cast<std::uint8_t>(op.q.bits(i)));
    const double v = T.mul(q, T.round(p.scales[static_cast<std::size_t>(index(i))]));
    y.set_bits(i, to_format_bits(op.out, v));
  }
  return y;
}

}  // namespace qc::cpu_ref
