#include "oracles/choose_qparams.hpp"

#include "oracles/ieee.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace qc {

namespace {

using EF = ExactFloat;

struct QRange {
  std::int64_t lo, hi;
};

// ---------------------------------------------------------------------------------------------
// Small vocabulary for transcribing C++/NumPy float code with exact rounding.

const Arith kF32 = Arith::in(DType::f32);  // a `float` operation
const Arith kF64 = Arith::in(DType::f64);  // a `double` operation

EF num(double v) { return EF::finite(Rational(v), std::signbit(v)); }
EF num(std::int64_t v) { return EF::finite(Rational(v)); }
// A value held in f32/f64 as a double (exact: every value here is an f32 or f64 value).
double dbl(const EF& v) { return std::bit_cast<double>(encode_float(DType::f64, v)); }
EF absolute(EF v) {
  v.negative = false;
  if (v.is_finite()) v.value = abs(v.value);
  return v;
}
// std::max(a, b) and std::min(a, b): (a < b) ? b : a and (b < a) ? b : a.
EF std_max(const EF& a, const EF& b) { return dbl(a) < dbl(b) ? b : a; }
EF std_min(const EF& a, const EF& b) { return dbl(b) < dbl(a) ? b : a; }

std::int64_t round_zero_point(const EF& v, RoundingMode m) {
  return round_to_integer(v.value, m).convert_to<std::int64_t>();
}

// `if (zp < qmin) qmin; else if (zp > qmax) qmax; else round(zp)`, the nudge of gemmlowp,
// FBGEMM and Glow (the comparisons in double, exact for these integer bounds).
std::int64_t nudge_into_range(const EF& zp, QRange r, RoundingMode m) {
  if (dbl(zp) < static_cast<double>(r.lo)) return r.lo;
  if (dbl(zp) > static_cast<double>(r.hi)) return r.hi;
  return round_zero_point(zp, m);
}

// The zero point from (rmin, qmin) or (rmax, qmax), whichever adds smaller terms
// (gemmlowp/TFLite quantization_util.h, FBGEMM QuantUtils.cc, Glow Base.cpp):
//   from_min = qmin - min/scale, from_max = qmax - max/scale,
//   error_min = |qmin| + |min/scale|, error_max = |qmax| + |max/scale|,
//   zp = error_min < error_max ? from_min : from_max,
// every operation in arithmetic A. ATen's copy (QuantUtils.h) writes `-` for the `+`.
EF zero_point_error(const Arith& A, const EF& q, const EF& r_over_s, ZeroPointChoice choice) {
  return choice == ZeroPointChoice::smaller_error_difference ? A.sub(absolute(q), absolute(r_over_s))
                                                             : A.add(absolute(q), absolute(r_over_s));
}

EF zero_point_by_smaller_error(const Arith& A, const EF& lo, const EF& hi, const EF& scale, QRange r,
                               ZeroPointChoice choice) {
  const EF qmin = num(r.lo), qmax = num(r.hi);
  const EF min_over_s = A.div(lo, scale), max_over_s = A.div(hi, scale);
  const EF from_min = A.sub(qmin, min_over_s);
  const EF from_max = A.sub(qmax, max_over_s);
  const EF err_min = zero_point_error(A, qmin, min_over_s, choice);
  const EF err_max = zero_point_error(A, qmax, max_over_s, choice);
  return dbl(err_min) < dbl(err_max) ? from_min : from_max;
}

// FBGEMM/ATen preserve_sparsity: widen [min, max] so that the midpoint of the range maps to 0,
//   symmetric_qmin = -((qmax - qmin) / 2 + 1), symmetric_qmax = (qmax - qmin) / 2 (int),
//   double max_scale = std::max(fabs(min / symmetric_qmin), fabs(max / symmetric_qmax)) (float /),
//   min = max_scale * symmetric_qmin; max = max_scale * symmetric_qmax (double product -> float).
void preserve_sparsity_range(EF& lo, EF& hi, QRange r) {
  const std::int64_t sym_qmin = -((r.hi - r.lo) / 2 + 1);
  const std::int64_t sym_qmax = (r.hi - r.lo) / 2;
  const EF max_scale = std_max(absolute(kF32.div(lo, num(sym_qmin))), absolute(kF32.div(hi, num(sym_qmax))));
  lo = kF32.convert(kF64.mul(max_scale, num(sym_qmin)));
  hi = kF32.convert(kF64.mul(max_scale, num(sym_qmax)));
}

// FBGEMM/ATen "Cut off small scale": below the threshold the scale becomes the threshold and the
// range is rescaled in float, so the zero point is computed for the widened range.
void cut_off_small_scale(EF& scale, EF& lo, EF& hi, QRange r, double floor_value, const Arith& scale_arith) {
  const EF threshold = kF32.convert(num(floor_value));  // constexpr float SMALL_SCALE_THRESHOLD
  if (!(dbl(scale) < dbl(threshold))) return;
  const EF org_scale = kF32.convert(scale);  // float org_scale = scale
  scale = scale_arith.convert(threshold);
  const EF qrange = num(r.hi - r.lo);
  if (dbl(lo) == 0) {
    hi = kF32.mul(threshold, qrange);  // SMALL_SCALE_THRESHOLD * (qmax - qmin)
  } else if (dbl(hi) == 0) {
    lo = kF32.mul(negate(threshold), qrange);
  } else {
    const EF amplifier = kF32.div(threshold, org_scale);
    lo = kF32.mul(lo, amplifier);
    hi = kF32.mul(hi, amplifier);
  }
}

// An exponent for `1 << n` in the cited code: an int shift, so 0 <= n <= 30.
int shift_exponent(double n, std::string_view recipe) {
  if (!(n >= 0 && n <= 30))
    throw InputError("choose_qparams (" + std::string(recipe) + "): power-of-two scale exponent " + std::to_string(n) +
                     " is outside the int shift range [0, 30] of the cited code");
  return static_cast<int>(n);
}

// ---------------------------------------------------------------------------------------------
// The recipes. Each takes the range already extended to contain 0 when the rule says so.

// ONNX DynamicQuantizeLinear (onnx/reference/ops/op_dynamic_quantize_linear.py::_run; the
// function body in onnx/defs/quantization/defs.cc) and ORT GetQuantizationParameter
// (onnxruntime/core/util/qmath.h), which compute the same for uint8:
//   scale = max == min ? 1 : (max - min) / float(qmax - qmin)            (float)
//   zp = RoundHalfToEven(max(qmin, min(qmax, qmin - min / scale)))      (float; clip, then round)
// (Older ONNX references, e.g. onnx@724d46d6, computed float32(1.0 if max == min else max - min)
// / 255, i.e. 1/255 for an all-zero range; the current reference and ORT give 1, modelled here.)
// ORT, int8 only: ReduceRange -> [-64, 64]; Symmetric -> zp = 0,
//   scale = max(max, -min) > 0 ? max(max, -min) / qmax : 1.
ChosenQParams onnx_ort_get_quantization_parameter(EF lo, EF hi, QRange r, const QParamsRule& rule) {
  const Arith A = Arith::in(rule.arithmetic);
  ChosenQParams c;
  c.scale_dtype = rule.arithmetic;
  if (rule.scheme == QParamsScheme::symmetric) {
    const EF max_value = std_max(hi, negate(lo));
    c.scale = dbl(max_value) > 0 ? dbl(A.div(max_value, num(r.hi))) : 1.0;
    c.zero_point = 0;
    return c;
  }
  const EF scale = dbl(hi) == dbl(lo) ? num(1.0) : A.div(A.sub(hi, lo), A.convert(num(r.hi - r.lo)));
  const EF initial = A.sub(A.convert(num(r.lo)), A.div(lo, scale));
  const EF clipped = std_max(num(r.lo), std_min(num(r.hi), initial));
  c.scale = dbl(scale);
  c.zero_point = round_zero_point(clipped, rule.nudge);
  return c;
}

// gemmlowp / TFLite ChooseQuantizationParams
// (tensorflow/lite/kernels/internal/quantization_util.h), in double:
//   rmin == rmax (both 0) -> scale 0, zp 0;
//   scale = (rmax - rmin) / (qmax_double - qmin_double);
//   zp by the smaller-error rule, then nudged: below qmin -> qmin, above qmax -> qmax, else
//   round() (half away from zero). narrow_range raises qmin by one.
ChosenQParams gemmlowp_choose_quantization_params(const EF& lo, const EF& hi, QRange r, const QParamsRule& rule) {
  const Arith A = Arith::in(rule.arithmetic);
  ChosenQParams c;
  c.scale_dtype = rule.arithmetic;
  if (dbl(lo) == dbl(hi)) {
    c.scale = 0;
    c.zero_point = 0;
    return c;
  }
  const EF scale = A.div(A.sub(hi, lo), A.sub(num(r.hi), num(r.lo)));
  c.scale = dbl(scale);
  c.zero_point = nudge_into_range(zero_point_by_smaller_error(A, lo, hi, scale, r, rule.zero_point), r, rule.nudge);
  return c;
}

// FBGEMM ChooseQuantizationParams (pytorch/FBGEMM src/QuantUtils.cc):
//   preserve_sparsity (scheme symmetric) and min < 0 < max: preserve_sparsity_range;
//   float scale = (double(max) - min) / (qmax - qmin)       (double, then stored as float);
//   scale == 0 or 1.0f/scale == inf -> 0.1;
//   force_scale_power_of_two: scale < 1 ? 1.0 / (1 << floor(log2(1.0 / scale)))
//                                       : 1 << ceil(log2(scale))   (log2 of a float: log2f);
//   scale < SMALL_SCALE_THRESHOLD (6.1e-5f) -> cut_off_small_scale;
//   zp by the smaller-error rule in double with the float scale; preserve_sparsity -> (qmin +
//   qmax) / 2; nudged with nearbyint.
ChosenQParams fbgemm_choose_quantization_params(EF lo, EF hi, QRange r, const QParamsRule& rule) {
  const Arith D = Arith::in(rule.arithmetic);  // the code's `double`
  const bool preserve_sparsity = rule.scheme == QParamsScheme::symmetric;
  if (preserve_sparsity && dbl(lo) < 0 && dbl(hi) > 0) preserve_sparsity_range(lo, hi, r);
  EF scale = kF32.convert(D.div(D.sub(hi, lo), num(r.hi - r.lo)));
  if (dbl(scale) == 0 || kF32.div(num(1.0), scale).is_inf()) scale = kF32.convert(num(0.1));
  if (rule.scheme == QParamsScheme::power_of_two) {
    if (dbl(scale) < 1) {
      const int n = shift_exponent(std::floor(std::log2(dbl(kF64.div(num(1.0), scale)))), "fbgemm");
      scale = kF32.convert(kF64.div(num(1.0), num(std::int64_t{1} << n)));
    } else {
      const float l = std::log2(static_cast<float>(dbl(scale)));
      scale = kF32.convert(num(std::int64_t{1} << shift_exponent(std::ceil(l), "fbgemm")));
    }
  }
  if (rule.scale_floor > 0) cut_off_small_scale(scale, lo, hi, r, rule.scale_floor, kF32);
  EF initial = zero_point_by_smaller_error(D, lo, hi, scale, r, rule.zero_point);
  if (dbl(lo) < 0 && dbl(hi) > 0 && preserve_sparsity) initial = D.div(num(r.lo + r.hi), num(std::int64_t{2}));
  ChosenQParams c;
  c.scale = dbl(scale);
  c.scale_dtype = DType::f32;
  c.zero_point = nudge_into_range(initial, r, rule.nudge);
  return c;
}

// ATen quant_utils::ChooseQuantizationParams (pytorch/pytorch
// aten/src/ATen/native/quantized/cpu/QuantUtils.h), used by dynamic quantized linear. FBGEMM's
// algorithm with these differences: reduce_range halves qmin and qmax; the scale stays a
// double; the zero/inf check is made on float(scale); the power of two uses log(x) / log(2);
// the error comparison subtracts (|qmin| - |min/scale|) where FBGEMM adds.
ChosenQParams pytorch_aten_choose_quantization_params(EF lo, EF hi, QRange r, const QParamsRule& rule) {
  const Arith D = Arith::in(rule.arithmetic);
  const bool preserve_sparsity = rule.scheme == QParamsScheme::symmetric;
  if (preserve_sparsity && dbl(lo) < 0 && dbl(hi) > 0) preserve_sparsity_range(lo, hi, r);
  EF scale = D.div(D.sub(hi, lo), num(r.hi - r.lo));
  const EF scale_f = kF32.convert(scale);
  if (dbl(scale_f) == 0 || kF32.div(num(1.0), scale_f).is_inf()) scale = num(0.1);
  if (rule.scheme == QParamsScheme::power_of_two) {
    if (dbl(scale) < 1) {
      const double inv = dbl(kF64.div(num(1.0), scale));
      const int n = shift_exponent(std::floor(std::log(inv) / std::log(2.0)), "pytorch_aten");
      scale = kF64.div(num(1.0), num(std::int64_t{1} << n));
    } else {
      const int n = shift_exponent(std::ceil(std::log(dbl(scale)) / std::log(2.0)), "pytorch_aten");
      scale = num(std::int64_t{1} << n);
    }
  }
  if (rule.scale_floor > 0) cut_off_small_scale(scale, lo, hi, r, rule.scale_floor, D);
  EF initial = zero_point_by_smaller_error(D, lo, hi, scale, r, rule.zero_point);
  if (dbl(lo) < 0 && dbl(hi) > 0 && preserve_sparsity) initial = D.div(num(r.lo + r.hi), num(std::int64_t{2}));
  ChosenQParams c;
  c.scale = dbl(scale);
  c.scale_dtype = rule.arithmetic;
  c.zero_point = nudge_into_range(initial, r, rule.nudge);
  return c;
}

// torch.ao.quantization observers, UniformQuantizationObserverBase._calculate_qparams
// (torch/ao/quantization/observer.py), on float32 tensors:
//   symmetric: scale = max(-min, max) / ((qmax - qmin) / 2); scale = max(scale, eps);
//              zp = 128 for quint8, else 0;
//   affine:    scale = (max - min) / float(qmax - qmin); scale = max(scale, eps);
//              zp = clamp(qmin - round(min / scale), qmin, qmax)   (torch.round: half to even).
// reduce_range (utils.py calculate_qmin_qmax): qint8 [-64, 63], quint8 [0, 127].
ChosenQParams pytorch_observer_calculate_qparams(const EF& lo, const EF& hi, QRange r, DType q,
                                                 const QParamsRule& rule) {
  const Arith A = Arith::in(rule.arithmetic);
  const EF eps = A.convert(num(rule.scale_floor));
  ChosenQParams c;
  c.scale_dtype = rule.arithmetic;
  if (rule.scheme == QParamsScheme::symmetric) {
    const EF max_abs = std_max(negate(lo), hi);  // torch.max(-min_val_neg, max_val_pos)
    // float(quant_max - quant_min) / 2 is a Python double (k + 0.5), exact in f32 for 8-bit ranges.
    const EF half_range = A.convert(num(static_cast<double>(r.hi - r.lo) / 2));
    c.scale = dbl(std_max(A.div(max_abs, half_range), eps));
    c.zero_point = q == DType::u8 ? 128 : 0;
    return c;
  }
  const EF scale = std_max(A.div(A.sub(hi, lo), A.convert(num(r.hi - r.lo))), eps);
  const std::int64_t rounded = round_zero_point(A.div(lo, scale), rule.nudge);
  c.scale = dbl(scale);
  c.zero_point = std::clamp(r.lo - rounded, r.lo, r.hi);
  return c;
}

// XNNPACK xnn_qd8_asymmetric_quantization_params (google/XNNPACK src/xnnpack/quantization.h),
// all float, with the reciprocal formed first:
//   r = rmin == rmax ? 1 : (qmax - qmin) / (rmax - rmin);
//   dmin = rmin * r, dmax = rmax * r;
//   zp = (qmin + dmin) + (qmax + dmax) > 0 ? qmin - dmin : qmax - dmax; clamp to [qmin, qmax];
//   lrintf (half to even). The f32 scale is 1.f / r (xnn_f32_qd8_asymmetric_quantization_params).
// uint8 (xnn_qdu8_asymmetric_quantization_params): zp = lrintf(-rmin * r), no clamp.
ChosenQParams xnnpack_qd8_asymmetric_quantization_params(const EF& lo, const EF& hi, QRange r, DType q,
                                                         const QParamsRule& rule) {
  const Arith A = Arith::in(rule.arithmetic);
  const EF qmin = num(r.lo), qmax = num(r.hi);
  const EF recip = dbl(lo) == dbl(hi) ? num(1.0) : A.div(A.sub(qmax, qmin), A.sub(hi, lo));
  ChosenQParams c;
  c.scale_dtype = rule.arithmetic;
  c.quantize_multiplier = dbl(recip);
  c.scale = dbl(A.div(num(1.0), recip));
  if (q == DType::u8) {
    c.zero_point = round_zero_point(A.mul(negate(lo), recip), rule.nudge);
    return c;
  }
  const EF descaled_min = A.mul(lo, recip), descaled_max = A.mul(hi, recip);
  const EF err_min = A.add(qmin, descaled_min), err_max = A.add(qmax, descaled_max);
  EF zp = dbl(A.add(err_min, err_max)) > 0 ? A.sub(qmin, descaled_min) : A.sub(qmax, descaled_max);
  zp = std_min(std_max(zp, qmin), qmax);  // math_max_f32 then math_min_f32
  c.zero_point = round_zero_point(zp, rule.nudge);
  return c;
}

// Glow quantization::chooseQuantizationParams (pytorch/glow lib/Quantization/Base/Base.cpp),
// KL calibration not modelled:
//   SymmetricWithUnsigned: a range with min >= 0 stays asymmetric (zp = qmin), else Symmetric;
//   Symmetric / SymmetricWithPower2Scale: rmin = min / (double)qmin, rmax = max / (double)qmax;
//     if rmin > rmax: max = rmin * qmax, else min = rmax * qmin (double product -> float);
//   scale = ((double)max - min) / ((double)qmax - qmin); 0 -> 0.1;
//   zp by the smaller-error rule in double; |max + min| (float) <= FLT_EPSILON -> 0;
//   nudged with round() (half away from zero);
//   SymmetricWithPower2Scale: scale = exp2(ceil(log2(scale))) after the zero point;
//   the scale is stored as float.
ChosenQParams glow_choose_quantization_params(EF lo, EF hi, QRange r, const QParamsRule& rule) {
  const Arith D = Arith::in(rule.arithmetic);
  QParamsScheme schema = rule.scheme;
  if (schema == QParamsScheme::symmetric_unsigned && !(dbl(lo) >= 0)) schema = QParamsScheme::symmetric;
  if (schema == QParamsScheme::symmetric || schema == QParamsScheme::power_of_two) {
    if (r.lo >= 0)
      throw InputError(
          "choose_qparams (glow): a negative min falls back to the Symmetric schema, which needs a "
          "signed range (Base.cpp asserts qmin < 0)");
    const EF rmin = D.div(lo, num(r.lo)), rmax = D.div(hi, num(r.hi));
    if (dbl(rmin) > dbl(rmax)) {
      hi = kF32.convert(D.mul(rmin, num(r.hi)));
    } else {
      lo = kF32.convert(D.mul(rmax, num(r.lo)));
    }
  }
  EF scale = D.div(D.sub(hi, lo), D.sub(num(r.hi), num(r.lo)));
  if (dbl(scale) == 0) scale = num(0.1);
  EF initial = zero_point_by_smaller_error(D, lo, hi, scale, r, rule.zero_point);
  const EF difference = absolute(kF32.add(hi, lo));
  if (dbl(difference) <= static_cast<double>(std::numeric_limits<float>::epsilon())) initial = num(std::int64_t{0});
  ChosenQParams c;
  c.zero_point = nudge_into_range(initial, r, rule.nudge);
  if (schema == QParamsScheme::power_of_two) scale = num(std::exp2(std::ceil(std::log2(dbl(scale)))));
  c.scale = dbl(kF32.convert(scale));
  c.scale_dtype = DType::f32;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Checking a rule against what its recipe's code can express.

[[noreturn]] void unsupported(const QParamsRule& rule, const std::string& what) {
  throw InputError("choose_qparams: recipe '" + std::string(name(rule.recipe)) + "' " + what);
}

template <class T>
void require_one_of(const QParamsRule& rule, T value, std::initializer_list<T> allowed, std::string_view field) {
  for (T a : allowed)
    if (a == value) return;
  unsupported(rule, "does not support " + std::string(field) + " '" + std::string(name(value)) + "'");
}

void check_rule(const QParamsRule& rule, DType q) {
  using S = QParamsScheme;
  using Z = ZeroPointChoice;
  using RR = ReduceRange;
  if (!is_int(q)) throw InputError("choose_qparams: " + std::string(name(q)) + " is not an integer format");
  if (rule.arithmetic != DType::f32 && rule.arithmetic != DType::f64)
    unsupported(rule, "computes in f32 or f64, not " + std::string(name(rule.arithmetic)));
  if (!(rule.scale_floor >= 0) || !std::isfinite(rule.scale_floor))
    unsupported(rule, "needs a finite, non-negative scale_floor");
  const bool reads_floor = rule.recipe == QParamsRecipe::fbgemm || rule.recipe == QParamsRecipe::pytorch_aten ||
                           rule.recipe == QParamsRecipe::pytorch_observer;
  if (!reads_floor && rule.scale_floor != 0) unsupported(rule, "has no scale floor");
  switch (rule.recipe) {
    case QParamsRecipe::onnx_ort:
      require_one_of(rule, rule.scheme, {S::asymmetric, S::symmetric}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::from_min}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none, RR::ort_int8}, "reduce_range");
      if ((rule.scheme == S::symmetric || rule.reduce_range == RR::ort_int8) && q != DType::i8)
        unsupported(rule, "applies Symmetric and ReduceRange to int8 only (qmath.h std::is_same<QType, int8_t>)");
      break;
    case QParamsRecipe::gemmlowp:
      require_one_of(rule, rule.scheme, {S::asymmetric}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::smaller_error}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none}, "reduce_range");
      break;
    case QParamsRecipe::fbgemm:
      require_one_of(rule, rule.scheme, {S::asymmetric, S::symmetric, S::power_of_two}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::smaller_error}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none}, "reduce_range");
      break;
    case QParamsRecipe::pytorch_aten:
      require_one_of(rule, rule.scheme, {S::asymmetric, S::symmetric, S::power_of_two}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::smaller_error_difference}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none, RR::halve}, "reduce_range");
      break;
    case QParamsRecipe::pytorch_observer:
      require_one_of(rule, rule.scheme, {S::asymmetric, S::symmetric}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::from_min}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none, RR::halve}, "reduce_range");
      if (rule.scheme == S::symmetric && rule.reduce_range == RR::halve && q == DType::u8)
        unsupported(rule, "cannot reduce range for symmetric quint8 (MinMaxObserver raises NotImplementedError)");
      break;
    case QParamsRecipe::xnnpack_qd8:
      require_one_of(rule, rule.scheme, {S::asymmetric}, "scheme");
      require_one_of(rule, rule.zero_point, {Z::xnnpack_sign_rule}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none}, "reduce_range");
      if (q != DType::i8 && q != DType::u8) unsupported(rule, "is defined for i8 (qd8) and u8 (qdu8) only");
      break;
    case QParamsRecipe::glow:
      require_one_of(rule, rule.zero_point, {Z::smaller_error}, "zero_point");
      require_one_of(rule, rule.reduce_range, {RR::none}, "reduce_range");
      if (q != DType::i8 && q != DType::u8 && q != DType::i16 && q != DType::i32)
        unsupported(rule, "is defined for i8, u8, i16 and i32 (getQuantizedRange)");
      if ((rule.scheme == S::symmetric || rule.scheme == S::power_of_two) && !info(q).is_signed)
        unsupported(rule, "needs a signed range for a symmetric schema (Base.cpp asserts qmin < 0)");
      break;
  }
}

}  // namespace

std::pair<std::int64_t, std::int64_t> qparams_range(DType q, const QParamsRule& rule) {
  std::int64_t lo = int_min(q, rule.narrow_range), hi = int_max(q);
  if (rule.recipe == QParamsRecipe::glow && q == DType::i32) {
    // getQuantizedRange: int32 -> int30 (min >> 2, max >> 2) so that bias - offset fits int32.
    lo = -(std::int64_t{1} << 29);
    hi = (std::int64_t{1} << 29) - 1;
  }
  switch (rule.reduce_range) {
    case ReduceRange::none:
      break;
    case ReduceRange::ort_int8:
      if (q == DType::i8) lo = -64, hi = 64;
      break;
    case ReduceRange::halve:  // C++ and Python: -128 / 2 = -64, 127 / 2 = 63, 255 / 2 = 127
      lo /= 2;
      hi /= 2;
      break;
  }
  return {lo, hi};
}

ChosenQParams choose_qparams(float min, float max, DType q, const QParamsRule& rule) {
  check_rule(rule, q);
  if (!std::isfinite(min) || !std::isfinite(max))
    throw InputError("choose_qparams: the range [" + std::to_string(min) + ", " + std::to_string(max) +
                     "] is not finite");
  if (!(min <= max))
    throw InputError("choose_qparams: min " + std::to_string(min) + " is greater than max " + std::to_string(max));
  EF lo = num(static_cast<double>(min)), hi = num(static_cast<double>(max));
  if (rule.include_zero) {
    // min = std::min(min, 0.f); max = std::max(max, 0.f)
    lo = std_min(lo, num(0.0));
    hi = std_max(hi, num(0.0));
  } else if (min > 0 || max < 0) {
    throw InputError("choose_qparams: the range [" + std::to_string(min) + ", " + std::to_string(max) +
                     "] does not contain 0 and the rule does not extend it");
  }
  const auto [qlo, qhi] = qparams_range(q, rule);
  const QRange r{qlo, qhi};
  ChosenQParams c;
  switch (rule.recipe) {
    case QParamsRecipe::onnx_ort:
      c = onnx_ort_get_quantization_parameter(lo, hi, r, rule);
      break;
    case QParamsRecipe::gemmlowp:
      c = gemmlowp_choose_quantization_params(lo, hi, r, rule);
      break;
    case QParamsRecipe::fbgemm:
      c = fbgemm_choose_quantization_params(lo, hi, r, rule);
      break;
    case QParamsRecipe::pytorch_aten:
      c = pytorch_aten_choose_quantization_params(lo, hi, r, rule);
      break;
    case QParamsRecipe::pytorch_observer:
      c = pytorch_observer_calculate_qparams(lo, hi, r, q, rule);
      break;
    case QParamsRecipe::xnnpack_qd8:
      c = xnnpack_qd8_asymmetric_quantization_params(lo, hi, r, q, rule);
      break;
    case QParamsRecipe::glow:
      c = glow_choose_quantization_params(lo, hi, r, rule);
      break;
  }
  c.qmin = r.lo;
  c.qmax = r.hi;
  return c;
}

QuantParams to_quant_params(const ChosenQParams& c) {
  if (!(c.scale > 0) || !std::isfinite(c.scale))
    throw InputError("choose_qparams: the chosen scale " + std::to_string(c.scale) +
                     " is not positive and finite, so it cannot quantize");
  QuantParams p;
  p.scale_dtype = c.scale_dtype;
  p.scales = {c.scale};
  p.zero_points = {c.zero_point};
  return p;
}

DynamicQParams choose_dynamic_qparams(const Tensor& x, DType q, const QParamsRule& rule, std::optional<int> axis) {
  const DType t = x.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    throw InputError("choose_dynamic_qparams: input format " + std::string(name(t)) +
                     " is not f32, f16 or bf16 (the cited rules take float min and max)");
  if (x.size() == 0) throw InputError("choose_dynamic_qparams: the input is empty");
  std::int64_t dim = 1, inner = x.size();
  if (axis) {
    const int a = resolve_axis(*axis, x.rank());
    if (a < 0 || a >= x.rank())
      throw InputError("choose_dynamic_qparams: axis " + std::to_string(*axis) + " is out of range for rank " +
                       std::to_string(x.rank()));
    dim = x.shape()[static_cast<std::size_t>(a)];
    inner = 1;
    for (std::size_t k = static_cast<std::size_t>(a) + 1; k < x.shape().size(); ++k) inner *= x.shape()[k];
  }
  std::vector<double> mins(static_cast<std::size_t>(dim), std::numeric_limits<double>::infinity());
  std::vector<double> maxs(static_cast<std::size_t>(dim), -std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const double v = x.get_double(i);
    if (!std::isfinite(v))
      throw InputError("choose_dynamic_qparams: element " + std::to_string(i) + " is " + std::to_string(v) +
                       " (the min/max reductions differ on NaN and inf; not modelled)");
    const auto c = static_cast<std::size_t>((i / inner) % dim);
    mins[c] = std::min(mins[c], v);
    maxs[c] = std::max(maxs[c], v);
  }
  DynamicQParams out;
  out.mins = mins;
  out.maxs = maxs;
  out.params.axis = axis;
  for (std::size_t c = 0; c < mins.size(); ++c) {
    // Values of f32/f16/bf16 tensors are exact in float.
    out.chosen.push_back(choose_qparams(static_cast<float>(mins[c]), static_cast<float>(maxs[c]), q, rule));
    out.params.scales.push_back(out.chosen.back().scale);
    out.params.zero_points.push_back(out.chosen.back().zero_point);
  }
  out.params.scale_dtype = out.chosen.front().scale_dtype;
  return out;
}

namespace {

using S = QParamsScheme;
using Z = ZeroPointChoice;
using RR = ReduceRange;
using RM = RoundingMode;

// FBGEMM/ATen SMALL_SCALE_THRESHOLD = 6.1e-5f ("fp16_min as the small scale cutoff").
constexpr double kSmallScaleThreshold = 6.1e-5;
// torch.finfo(torch.float32).eps, the observers' default eps.
constexpr double kFloat32Eps = 0x1p-23;

// Each preset names only what differs from QParamsRule's defaults (asymmetric, include zero,
// from_min, half-even nudge, no reduce/narrow range, no floor, f32).
constexpr QParamsRule kOnnx{.recipe = QParamsRecipe::onnx_ort};
constexpr QParamsRule kOrtReduce{.recipe = QParamsRecipe::onnx_ort, .reduce_range = RR::ort_int8};
constexpr QParamsRule kOrtSym{.recipe = QParamsRecipe::onnx_ort, .scheme = S::symmetric};
constexpr QParamsRule kTflite{
    .recipe = QParamsRecipe::gemmlowp, .zero_point = Z::smaller_error, .nudge = RM::rna, .arithmetic = DType::f64};
constexpr QParamsRule kTfliteNarrow{.recipe = QParamsRecipe::gemmlowp,
                                    .zero_point = Z::smaller_error,
                                    .nudge = RM::rna,
                                    .narrow_range = true,
                                    .arithmetic = DType::f64};
constexpr QParamsRule kFbgemm{.recipe = QParamsRecipe::fbgemm,
                              .zero_point = Z::smaller_error,
                              .scale_floor = kSmallScaleThreshold,
                              .arithmetic = DType::f64};
constexpr QParamsRule kFbgemmSym{.recipe = QParamsRecipe::fbgemm,
                                 .scheme = S::symmetric,
                                 .zero_point = Z::smaller_error,
                                 .scale_floor = kSmallScaleThreshold,
                                 .arithmetic = DType::f64};
constexpr QParamsRule kFbgemmPow2{.recipe = QParamsRecipe::fbgemm,
                                  .scheme = S::power_of_two,
                                  .zero_point = Z::smaller_error,
                                  .scale_floor = kSmallScaleThreshold,
                                  .arithmetic = DType::f64};
constexpr QParamsRule kAten{.recipe = QParamsRecipe::pytorch_aten,
                            .zero_point = Z::smaller_error_difference,
                            .scale_floor = kSmallScaleThreshold,
                            .arithmetic = DType::f64};
constexpr QParamsRule kAtenReduce{.recipe = QParamsRecipe::pytorch_aten,
                                  .zero_point = Z::smaller_error_difference,
                                  .reduce_range = RR::halve,
                                  .scale_floor = kSmallScaleThreshold,
                                  .arithmetic = DType::f64};
constexpr QParamsRule kObsAffine{.recipe = QParamsRecipe::pytorch_observer, .scale_floor = kFloat32Eps};
constexpr QParamsRule kObsReduce{
    .recipe = QParamsRecipe::pytorch_observer, .reduce_range = RR::halve, .scale_floor = kFloat32Eps};
constexpr QParamsRule kObsSym{
    .recipe = QParamsRecipe::pytorch_observer, .scheme = S::symmetric, .scale_floor = kFloat32Eps};
constexpr QParamsRule kXnnpack{.recipe = QParamsRecipe::xnnpack_qd8, .zero_point = Z::xnnpack_sign_rule};
constexpr QParamsRule kGlowAsym{
    .recipe = QParamsRecipe::glow, .zero_point = Z::smaller_error, .nudge = RM::rna, .arithmetic = DType::f64};
constexpr QParamsRule kGlowSym{.recipe = QParamsRecipe::glow,
                               .scheme = S::symmetric,
                               .zero_point = Z::smaller_error,
                               .nudge = RM::rna,
                               .arithmetic = DType::f64};
constexpr QParamsRule kGlowSymU{.recipe = QParamsRecipe::glow,
                                .scheme = S::symmetric_unsigned,
                                .zero_point = Z::smaller_error,
                                .nudge = RM::rna,
                                .arithmetic = DType::f64};
constexpr QParamsRule kGlowPow2{.recipe = QParamsRecipe::glow,
                                .scheme = S::power_of_two,
                                .zero_point = Z::smaller_error,
                                .nudge = RM::rna,
                                .arithmetic = DType::f64};

constexpr std::string_view kOrtSource = "microsoft/onnxruntime onnxruntime/core/util/qmath.h::GetQuantizationParameter";
constexpr std::string_view kFbgemmSource = "pytorch/FBGEMM src/QuantUtils.cc::ChooseQuantizationParams";
constexpr std::string_view kAtenSource =
    "pytorch/pytorch aten/src/ATen/native/quantized/cpu/QuantUtils.h::quant_utils::ChooseQuantizationParams";
constexpr std::string_view kObserverSource =
    "pytorch/pytorch torch/ao/quantization/observer.py::UniformQuantizationObserverBase._calculate_qparams";
constexpr std::string_view kGlowSource = "pytorch/glow lib/Quantization/Base/Base.cpp::chooseQuantizationParams";

const std::array<QParamsPreset, 19> kPresets = {{
    {"onnx-dynamic-quantize-linear",
     "onnx/onnx onnx/reference/ops/op_dynamic_quantize_linear.py::DynamicQuantizeLinear._run", kOnnx},
    {"ort-dynamic", kOrtSource, kOnnx},
    {"ort-int8-reduce-range", kOrtSource, kOrtReduce},
    {"ort-int8-symmetric", kOrtSource, kOrtSym},
    {"tflite", "tensorflow/tensorflow tensorflow/lite/kernels/internal/quantization_util.h::ChooseQuantizationParams",
     kTflite},
    {"tflite-narrow-range",
     "tensorflow/tensorflow tensorflow/lite/kernels/internal/quantization_util.h::ChooseQuantizationParams",
     kTfliteNarrow},
    {"fbgemm", kFbgemmSource, kFbgemm},
    {"fbgemm-preserve-sparsity", kFbgemmSource, kFbgemmSym},
    {"fbgemm-power-of-two", kFbgemmSource, kFbgemmPow2},
    {"pytorch-dynamic", kAtenSource, kAten},
    {"pytorch-dynamic-reduce-range", kAtenSource, kAtenReduce},
    {"pytorch-observer-affine", kObserverSource, kObsAffine},
    {"pytorch-observer-affine-reduce-range", kObserverSource, kObsReduce},
    {"pytorch-observer-symmetric", kObserverSource, kObsSym},
    {"xnnpack-qd8", "google/XNNPACK src/xnnpack/quantization.h::xnn_qd8_asymmetric_quantization_params", kXnnpack},
    {"glow-asymmetric", kGlowSource, kGlowAsym},
    {"glow-symmetric", kGlowSource, kGlowSym},
    {"glow-symmetric-unsigned", kGlowSource, kGlowSymU},
    {"glow-power2", kGlowSource, kGlowPow2},
}};

}  // namespace

std::span<const QParamsPreset> qparams_presets() { return kPresets; }

std::optional<QParamsRule> find_qparams_preset(std::string_view preset) {
  for (const QParamsPreset& p : qparams_presets())
    if (p.name == preset) return p.rule;
  return std::nullopt;
}

}  // namespace qc
