#include "oracles/fp8.hpp"

#include "oracles/qlinear.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace qc {
namespace {

ExactFloat float8_exact_of(double v) {
  if (std::isnan(v)) return ExactFloat::nan();
  if (std::isinf(v)) return ExactFloat::inf(v < 0);
  return ExactFloat::finite(Rational(v), std::signbit(v));
}

bool uses_reciprocal(QuantizeOrder o) {
  return o == QuantizeOrder::recip_then_add_int || o == QuantizeOrder::recip_add_float ||
         o == QuantizeOrder::fma_recip || o == QuantizeOrder::recip_round_then_add_float;
}

void require_zero_points_zero(const QuantParams& p, const char* op) {
  for (std::size_t i = 0; i < p.zero_points.size(); ++i)
    if (p.zero_points[i] != 0)
      throw InputError(std::string(op) + ": field 'zero_point[" + std::to_string(i) +
                       "]': a float8 zero point must be 0 (ONNX), got " + std::to_string(p.zero_points[i]));
}

// Where the exact value v lies on out's grid: special for NaN/inf, saturated when the cast went past
// the largest finite value, else tie / near_tie / clear.
Label float8_label(const ExactFloat& exact, const ExactFloat& y, DType out) {
  if (!exact.is_finite()) return Label::special;
  if (!y.is_finite() || abs(y.value) == max_finite(out)) {
    if (abs(exact.value) > max_finite(out)) return Label::saturated;
  }
  return float_grid_label(exact.value, out);
}

// ---- The fast path --------------------------------------------------------------------------
//
// quantize_to_float8_element and dequantize_from_float8_element are the definitions; the fast path
// below gives the same bits and labels from hardware doubles, and hands an element to them whenever
// an argument below does not hold. The argument for quantize:
//
// 1. For x and s in [2^-900, 2^900] with t = x / s in double (rounded to nearest) and |t| in that range
//    too, the residual x - t*s is a double (the remainder of a correctly rounded division is
//    representable when nothing underflows: Boldo and Daumas, "Representable correcting terms for
//    possibly underflowing floating point operations", ARITH 2003), so fma(-t, s, x) gives it exactly
//    and its sign `sticky` says on which side of t the exact quotient v = x / s lies. v is t, or lies
//    strictly between t and the next double in that direction. The same holds for a product
//    p = x * r in double (the error x*r - p is a double: fma(x, r, -p)) and for 1 / s.
// 2. Rounding into a binary format (f32, f16, bf16, float8; ties to even, the overflow threshold being
//    a midpoint of the grid continued past the largest finite value) changes value only at midpoints,
//    which are doubles. So a value known as (t, sticky) rounds as t does, unless t is itself a
//    midpoint; then it rounds as the next double in the sticky direction does, which is not a midpoint
//    (two midpoints are at least a step of the format apart, far more than a double's ulp) and has no
//    midpoint between it and v (`nudged`).
// 3. The labels compare v with the output grid, its midpoints, the near-tie band's edges and the
//    largest finite value, all doubles: float_grid_label(t, sticky, out) decides them exactly.
// So every decision is exact: the fast path falls back only outside the ranges of 1 (huge or tiny
// values, where a residual could underflow), for compute formats it does not model (fixed point, a
// float8 compute format) and where 1 / s leaves the compute format's range in a reciprocal order.
// Dequantize needs no residual: q has at most 4 significant bits, so q * s is exact in double whenever
// the fma residual says so (any scale of at most 49 bits), and then the compute format's rounding of
// it is round_into's.

constexpr double kFastMin = 0x1p-900, kFastMax = 0x1p900;

int sign_of(double v) { return (v > 0) - (v < 0); }

// Whether |a| (a normal double) is a midpoint of format l's grid at a's binade.
bool on_midpoint(double a, const FloatLayout& l) {
  const double k = std::ldexp(a, l.mant_bits - std::max(std::ilogb(a), 1 - l.bias));  // exact scaling
  return k - std::floor(k) == 0.5;
}

// A double that rounds into format l (to nearest even) as v does, for v known as (t, sticky) (see 2).
double nudged(double t, int sticky, const FloatLayout& l) {
  if (sticky == 0 || !on_midpoint(std::fabs(t), l)) return t;
  return std::nextafter(
      t, sticky > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
}

// How the fast path evaluates the policy's compute format: exactly (the value (t, sticky)), with the
// hardware's f64 operations, or with doubles rounded into a narrower IEEE format (f32, f16, bf16) by
// round_into; `none` leaves every element to the definition.
enum class FastCompute : std::uint8_t { none, exact, f64, narrow };

FastCompute fast_compute(const Arith& A) {
  switch (A.native()) {
    case Arith::Native::exact:
      return FastCompute::exact;
    case Arith::Native::f64:
      return FastCompute::f64;
    case Arith::Native::f32:
    case Arith::Native::narrow:
      return FastCompute::narrow;
    case Arith::Native::none:
      break;
  }
  return FastCompute::none;
}

// What one quantize_to_float8 call fixes for all its elements.
struct Float8QuantizeFast {
  FastCompute compute = FastCompute::none;
  DType a = DType::f64;  // the compute format (narrow)
  bool recip = false;
  DType out = DType::f8e4m3fn;
  bool saturate = false;
  double max_finite = 0;                 // out's largest finite value
  std::uint64_t max_bits = 0, sign = 0;  // its pattern, and out's sign bit
};

Float8QuantizeFast float8_quantize_fast(const Arith& A, const QuantizePolicy& pol, DType out, bool saturate) {
  Float8QuantizeFast c;
  c.compute = fast_compute(A);
  if (c.compute == FastCompute::narrow) c.a = A.format();
  c.recip = uses_reciprocal(pol.order);
  c.out = out;
  c.saturate = saturate;
  const FloatLayout& l = info(out).fl;
  c.max_finite = std::ldexp(static_cast<double>(max_significand(l)), max_exponent(l) - l.mant_bits);
  c.max_bits = double_to_float_bits(out, c.max_finite);
  c.sign = sign_mask(l);
  return c;
}

// One element of quantize_to_float8 (the definition's steps, on doubles); false hands it to the slow path.
bool float8_quantize_fast_element(const Float8QuantizeFast& c, double x, double s, bool want_label, std::uint64_t& bits,
                                  Label& label) {
  const FloatLayout& ol = info(c.out).fl;
  if (!(s >= kFastMin && s <= kFastMax)) return false;
  if (std::isnan(x)) {  // NaN / s and NaN * r are NaN in every arithmetic: the canonical NaN, unsigned
    bits = canonical_nan_bits(ol);
    label = Label::special;
    return true;
  }
  // The reciprocal in the compute format (exact compute needs none: x * (1/s) is x / s).
  double r = 0;
  if (c.recip && c.compute != FastCompute::exact) {
    r = 1.0 / s;
    if (c.compute == FastCompute::narrow) r = round_into(c.a, nudged(r, sign_of(std::fma(-r, s, 1.0)), info(c.a).fl));
    if (!(r > 0) || std::isinf(r)) return false;  // 1/s left the compute format: inf * 0 and the like
  }
  double q = x;      // the quotient in the compute format: +-inf and +-0 pass through every order unchanged
  int q_sticky = 0;  // exact compute: the quotient is (q, q_sticky)
  double t = 0;      // v = x / s as (t, sticky), for the labels
  int sticky = 0;
  if (std::isfinite(x) && x != 0) {
    if (!(std::fabs(x) >= kFastMin && std::fabs(x) <= kFastMax)) return false;
    t = x / s;
    if (!(std::fabs(t) >= kFastMin && std::fabs(t) <= kFastMax)) return false;
    sticky = sign_of(std::fma(-t, s, x));
    switch (c.compute) {
      case FastCompute::exact:
        q = t;
        q_sticky = sticky;
        break;
      case FastCompute::f64:
        q = c.recip ? x * r : t;
        break;
      case FastCompute::narrow:
        if (c.recip) {
          // r is 1/s rounded, at worst to a subnormal of the format: within a factor 2 of it, and |p|
          // within a factor 2 of |t|, in range for the product's error to be a double.
          const double p = x * r;
          q = round_into(c.a, nudged(p, sign_of(std::fma(x, r, -p)), info(c.a).fl));
        } else {
          q = round_into(c.a, nudged(t, sticky, info(c.a).fl));
        }
        break;
      case FastCompute::none:
        return false;
    }
  }
  // The cast: ties to even; past the largest finite value, +-max when saturating, else e5m2's +-inf or
  // e4m3fn's NaN with the quotient's sign (the definition's overflow rules).
  bits = double_to_float_bits(c.out, nudged(q, q_sticky, ol));
  if (!std::isfinite(float_bits_to_double(c.out, bits))) {
    if (c.saturate)
      bits = c.max_bits | (std::signbit(q) ? c.sign : 0);
    else if (std::signbit(q))
      bits |= c.sign;  // e5m2's -inf already has it; e4m3fn's NaN gets it
  }
  if (!want_label) return true;
  if (!std::isfinite(x)) {
    label = Label::special;
  } else {
    const double y = std::fabs(float_bits_to_double(c.out, bits));
    const double at = std::fabs(t);
    const bool beyond = at > c.max_finite || (at == c.max_finite && (t < 0 ? -sticky : sticky) > 0);
    label = (!(y < c.max_finite) && beyond) ? Label::saturated : float_grid_label(t, sticky, c.out);
  }
  return true;
}

// One element of dequantize_from_float8 on doubles; false hands it to the slow path.
bool float8_dequantize_fast_element(FastCompute compute, DType a, std::uint64_t q_bits, DType q_dtype, double s,
                                    DType out, bool want_label, std::uint64_t& bits, Label& label) {
  const double q = float_bits_to_double(q_dtype, q_bits);
  if (!std::isfinite(q)) {  // NaN stays NaN (canonical); an infinity times s > 0 stays one, cast by IEEE rules
    bits = std::isnan(q) ? canonical_nan_bits(info(out).fl) : double_to_float_bits(out, q);
    label = Label::special;
    return true;
  }
  const double p = q * s;  // +-0 when q is: s > 0
  // In range, q * s - p is a multiple of at least 2^-960 (q * s has at most 57 significant bits), so
  // the fma gives it without underflow: zero exactly when the product is exact.
  if (q != 0 && !(std::fabs(p) >= kFastMin && std::fabs(p) <= kFastMax)) return false;
  if (std::fma(q, s, -p) != 0) return false;                                      // q * s needs more than a double
  const double computed = compute == FastCompute::narrow ? round_into(a, p) : p;  // exact and f64: p itself
  bits = double_to_float_bits(out, computed);
  if (want_label)
    label = std::isfinite(float_bits_to_double(out, bits)) ? float_grid_label(p, 0, out) : Label::saturated;
  return true;
}

}  // namespace

bool is_float8(DType t) { return t == DType::f8e4m3fn || t == DType::f8e5m2; }

Float8QuantizeElement quantize_to_float8_element(double xd, DType x_dtype, double sd, DType scale_dtype, DType out,
                                                 bool saturate, const QuantizePolicy& pol, bool trace) {
  if (!is_float8(out)) throw InputError("quantize: output format " + std::string(name(out)) + " is not float8");
  const Arith A = resolve_compute(pol.compute, x_dtype, scale_dtype);
  const ExactFloat x = float8_exact_of(xd);
  const ExactFloat s = float8_exact_of(sd);
  Float8QuantizeElement e;
  e.exact = Arith::exact().div(x, s);
  if (uses_reciprocal(pol.order)) {
    const ExactFloat r = A.div(ExactFloat::finite(1), s);
    e.quotient = A.mul(x, r);
    if (trace) {
      e.steps.push_back(
          {"1 / s in " + A.name(), "1 / " + to_string(s), Arith::exact().div(ExactFloat::finite(1), s), r, ""});
      e.steps.push_back(
          {"x * (1/s) in " + A.name(), to_string(x) + " * " + to_string(r), Arith::exact().mul(x, r), e.quotient, ""});
    }
  } else {
    e.quotient = A.div(x, s);
    if (trace)
      e.steps.push_back({"x / s in " + A.name(), to_string(x) + " / " + to_string(s), e.exact, e.quotient, ""});
  }
  // The one cast into float8: ties to even whatever the policy's integer rounding (a float cast, ONNX
  // Cast), overflow by ONNX Cast's float8 table (saturate=1 to +-max, saturate=0 to inf or NaN).
  e.bits = encode_float(out, e.quotient, RoundingMode::rne, saturate ? Overflow::saturate : Overflow::ieee);
  // e4m3fn's NaN from an overflow keeps the value's sign (ORT float8.h Float8E4M3FN(float, saturate):
  // the sign bit first, then 0x7F), where a NaN input gives the canonical NaN.
  if (!e.quotient.is_nan() && e.quotient.negative && std::isnan(float_bits_to_double(out, e.bits)))
    e.bits |= sign_mask(info(out).fl);
  e.y = decode_float(out, e.bits);
  e.label = float8_label(e.exact, e.y, out);
  if (trace)
    e.steps.push_back({"cast to " + std::string(name(out)) + (saturate ? " (saturate)" : " (no saturation)"),
                       to_string(e.quotient), e.quotient, e.y, "ties to even; label " + std::string(name(e.label))});
  return e;
}

QuantizeResult quantize_to_float8(const Tensor& x, const QuantParams& p, DType out, bool saturate,
                                  const QuantizePolicy& pol, bool want_labels, OraclePath path) {
  if (!is_float8(out)) throw InputError("quantize: output format " + std::string(name(out)) + " is not float8");
  if (!is_float(x.dtype()))
    throw InputError("quantize: input format " + std::string(name(x.dtype())) + " is not a float format");
  validate(p, x.shape(), out, "quantize");
  require_zero_points_zero(p, "quantize");
  QuantizeResult res;
  res.q = Tensor(out, x.shape());
  if (want_labels) res.labels.resize(static_cast<std::size_t>(x.size()));
  res.specified = SpecifiedMask(static_cast<std::size_t>(x.size()));
  const ParamIndexer index(p, x.shape());
  Float8QuantizeFast fast =
      float8_quantize_fast(resolve_compute(pol.compute, x.dtype(), p.scale_dtype), pol, out, saturate);
  if (path == OraclePath::slow) fast.compute = FastCompute::none;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const double xv = x.get_double(i), s = p.scales[static_cast<std::size_t>(index(i))];
    std::uint64_t bits = 0;
    Label label = Label::clear;
    if (fast.compute == FastCompute::none || !float8_quantize_fast_element(fast, xv, s, want_labels, bits, label)) {
      const Float8QuantizeElement e = quantize_to_float8_element(xv, x.dtype(), s, p.scale_dtype, out, saturate, pol);
      bits = e.bits;
      label = e.label;
      ++res.slow_elements;
    }
    res.q.set_bits(i, bits);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = label;
  }
  return res;
}

DequantizeElement dequantize_from_float8_element(std::uint64_t q_bits, DType q_dtype, double sd, DType scale_dtype,
                                                 DType out, const DequantizePolicy& pol, bool trace) {
  if (!is_float8(q_dtype))
    throw InputError("dequantize: input format " + std::string(name(q_dtype)) + " is not float8");
  // The code is widened to f32 first (ONNX reference: x.astype(float32)); every float8 value is exact in
  // f32, so only the compute format of the product matters. `input_type` resolves to f32 here.
  const Arith A = resolve_compute(pol.compute, DType::f32, scale_dtype);
  const ExactFloat q = decode_float(q_dtype, q_bits);
  const ExactFloat s = float8_exact_of(sd);
  DequantizeElement e;
  e.exact = Arith::exact().mul(q, s);
  e.computed = A.mul(q, s);
  e.bits = encode_float(out, e.computed, RoundingMode::rne);
  e.y = decode_float(out, e.bits);
  if (!q.is_finite())
    e.label = Label::special;
  else if (!e.y.is_finite())
    e.label = Label::saturated;
  else
    e.label = float_grid_label(e.exact.value, out);
  if (trace) {
    e.steps.push_back({"q * s in " + A.name(), to_string(q) + " * " + to_string(s), e.exact, e.computed, ""});
    e.steps.push_back({"cast to " + std::string(name(out)), to_string(e.computed), e.computed, e.y,
                       "ties to even; label " + std::string(name(e.label))});
  }
  return e;
}

DequantizeResult dequantize_from_float8(const Tensor& q, const QuantParams& p, DType out, const DequantizePolicy& pol,
                                        bool want_labels, OraclePath path) {
  if (!is_float8(q.dtype()))
    throw InputError("dequantize: input format " + std::string(name(q.dtype())) + " is not float8");
  if (!is_float(out))
    throw InputError("dequantize: output format " + std::string(name(out)) + " is not a float format");
  validate(p, q.shape(), q.dtype(), "dequantize");
  require_zero_points_zero(p, "dequantize");
  DequantizeResult res;
  res.y = Tensor(out, q.shape());
  if (want_labels) res.labels.resize(static_cast<std::size_t>(q.size()));
  const ParamIndexer index(p, q.shape());
  const Arith A = resolve_compute(pol.compute, DType::f32, p.scale_dtype);  // as the element's
  const FastCompute compute = path == OraclePath::slow ? FastCompute::none : fast_compute(A);
  const DType a = compute == FastCompute::narrow ? A.format() : DType::f64;
  for (std::int64_t i = 0; i < q.size(); ++i) {
    const double s = p.scales[static_cast<std::size_t>(index(i))];
    std::uint64_t bits = 0;
    Label label = Label::clear;
    if (compute == FastCompute::none ||
        !float8_dequantize_fast_element(compute, a, q.bits(i), q.dtype(), s, out, want_labels, bits, label)) {
      const DequantizeElement e = dequantize_from_float8_element(q.bits(i), q.dtype(), s, p.scale_dtype, out, pol);
      bits = e.bits;
      label = e.label;
      ++res.slow_elements;
    }
    res.y.set_bits(i, bits);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = label;
  }
  return res;
}

}  // namespace qc
