#include "oracles/fp8.hpp"

#include "oracles/qlinear.hpp"
#include "qconform/error.hpp"

#include <cmath>
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
                                  const QuantizePolicy& pol, bool want_labels) {
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
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const Float8QuantizeElement e = quantize_to_float8_element(
        x.get_double(i), x.dtype(), p.scales[static_cast<std::size_t>(index(i))], p.scale_dtype, out, saturate, pol);
    res.q.set_bits(i, e.bits);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = e.label;
  }
  res.slow_elements = x.size();
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
                                        bool want_labels) {
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
  for (std::int64_t i = 0; i < q.size(); ++i) {
    const DequantizeElement e = dequantize_from_float8_element(
        q.bits(i), q.dtype(), p.scales[static_cast<std::size_t>(index(i))], p.scale_dtype, out, pol);
    res.y.set_bits(i, e.bits);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = e.label;
  }
  res.slow_elements = q.size();
  return res;
}

}  // namespace qc
