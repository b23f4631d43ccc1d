#include "oracles/requantize.hpp"

#include "oracles/requantize_detail.hpp"
#include "qconform/error.hpp"
#include "qconform/qparams.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace qc {

// ---- What the fast path shares with the definitions (requantize_detail.hpp) ----------------------

namespace requantize_detail {

Range output_range(DType out, const RequantizePolicy& p) {
  try {
    return qc::output_range(out, p.narrow_range, p.clip);
  } catch (const InputError& e) {
    throw InputError(std::string("requantize: ") + e.what());
  }
}

ExactFloat scale_value(double s) { return ExactFloat::finite(Rational(s)); }

}  // namespace requantize_detail

using namespace requantize_detail;

// ---- One element -----------------------------------------------------------------------------

namespace {

ExactFloat exact_int(const BigInt& v) { return ExactFloat::finite(Rational(v)); }
ExactFloat exact_of(const Rational& v) { return ExactFloat::finite(v); }

// Records steps only when tracing.
class Tracer {
 public:
  Tracer(bool on, std::vector<TraceStep>& steps) : on_(on), steps_(steps) {}
  bool on() const { return on_; }
  void real(std::string what, std::string formula, const ExactFloat& exact, const ExactFloat& rounded,
            std::string note = "") {
    if (on_) steps_.push_back({std::move(what), std::move(formula), exact, rounded, std::move(note)});
  }
  void integer(std::string what, std::string formula, const Rational& exact, const BigInt& result,
               std::string note = "") {
    real(std::move(what), std::move(formula), exact_of(exact), exact_int(result), std::move(note));
  }

 private:
  bool on_;
  std::vector<TraceStep>& steps_;
};

Arith arith_of(const ComputeFormat& f, DType scale_dtype, std::string_view field) {
  using K = ComputeFormat::Kind;
  if (f.kind == K::fixed64)
    throw InputError("requantize: " + std::string(field) + " " + to_string(f) + " is not a float format");
  return resolve_compute(f, DType::i32, scale_dtype);
}

void check_scale(double s, DType dtype, std::string_view field) {
  if (!(s > 0) || !std::isfinite(s))
    throw InputError("requantize: " + std::string(field) + " must be positive and finite, got " + std::to_string(s));
  if (!is_float(dtype))
    throw InputError("requantize: the scale format " + std::string(name(dtype)) + " is not a float format");
  if (float_bits_to_double(dtype, double_to_float_bits(dtype, s)) != s)
    throw InputError("requantize: " + std::string(field) + " " + std::to_string(s) + " is not representable in " +
                     std::string(name(dtype)));
}

// The value a double parameter receives: an exact rational rounded (RNE) to binary64.
double to_double(const ExactFloat& v) { return round_to_format(DType::f64, v.value).value.convert_to<double>(); }

std::string shift_str(const ScaleShift& s) {
  return "M = " + std::to_string(s.multiplier) + ", right shift " + std::to_string(s.right_shift);
}

void derive(RequantizeMultiplier& m, const RequantizePolicy& p, Tracer& t) {
  if (!scheme_accepts(p.scheme, p.derivation))
    throw InputError("requantize: scheme " + std::string(name(p.scheme)) + " cannot use the multiplier derivation " +
                     std::string(name(p.derivation)));
  const double real = to_double(m.formed);
  const auto real_f32 = static_cast<float>(real);  // the conversion to a float parameter (RNE)
  using D = MultiplierDerivation;
  switch (p.derivation) {
    case D::tflite:
    case D::tflite_single_round: {
      const Q31Multiplier q = tflite_quantize_multiplier(
          real, p.derivation == D::tflite ? TfliteRounding::double_rounding : TfliteRounding::single_rounding);
      m.fixed = ScaleShift{q.multiplier, 31 - q.shift};
      break;
    }
    case D::fp32_mantissa:
      m.fixed = fp32_mantissa_scale(real_f32);
      break;
    case D::qnnpack_q31: {
      const Q31Multiplier q = qnnpack_q31_multiplier(real_f32);
      m.fixed = ScaleShift{q.multiplier, 31 - q.shift};
      break;
    }
    case D::tosa_scale32:
      m.fixed = tosa_compute_multiplier_and_shift_scale32(real);
      break;
    case D::tosa_scale16:
      m.fixed = tosa_compute_multiplier_and_shift_scale16(real);
      break;
    case D::glow:
      m.glow = glow_quantize_scale_offset_32_to_8(real_f32);
      break;
    case D::fbgemm:
      m.fixed = fbgemm_choose_requantization_multiplier(real_f32);
      break;
  }
  if (m.fixed) {
    t.real("derive the integer multiplier (" + std::string(name(p.derivation)) + ")", "M * 2^-shift", m.formed,
           exact_of(Rational(m.fixed->multiplier) * pow2(-m.fixed->right_shift)), shift_str(*m.fixed));
  } else {
    const GlowScale& g = *m.glow;
    t.real("derive pre-shift, integer scale, post-shift (glow)", "S * 2^-(pre + post)", m.formed,
           exact_of(Rational(g.scale) * pow2(-(g.pre_shift + g.post_shift))),
           "pre = " + std::to_string(g.pre_shift) + ", S = " + std::to_string(g.scale) +
               ", post = " + std::to_string(g.post_shift));
  }
}

}  // namespace

namespace requantize_detail {

FloatRecipe float_recipe(const RequantizeMultiplier& m, const RequantizePolicy& p) {
  if (p.scheme == RequantizeScheme::xnnpack_fp32)  // xnn_qs8_requantize_fp32: f32, clamp in float, lrintf, + zp
    return {Arith::in(DType::f32), ZeroPointAdd::int_after_rounding, RoundingMode::rne, Clamp::float_before, false};
  return {arith_of(p.product_format, m.scales.dtype, "product_format"), p.zero_point, p.rounding, p.clamp,
          p.multiplier_order == MultiplierOrder::per_op};
}

}  // namespace requantize_detail

RequantizeMultiplier prepare_multiplier(const RequantizeScales& scales, const RequantizePolicy& p, bool trace) {
  check_scale(scales.input, scales.dtype, "input_scale");
  check_scale(scales.weight, scales.dtype, "weight_scale");
  check_scale(scales.output, scales.dtype, "output_scale");
  RequantizeMultiplier m;
  m.scales = scales;
  m.exact = Rational(scales.input) * Rational(scales.weight) / Rational(scales.output);
  m.formed = exact_of(m.exact);
  Tracer t(trace, m.steps);
  if (p.scheme == RequantizeScheme::ideal) {
    t.real("s_in * s_w / s_out, exactly", "multiplier", m.formed, m.formed);
    return m;
  }
  if (p.multiplier_order == MultiplierOrder::per_op) {
    if (p.scheme != RequantizeScheme::float_multiplier)
      throw InputError("requantize: multiplier order per_op (oneDNN) only applies to scheme float_multiplier, not " +
                       std::string(name(p.scheme)));
    return m;
  }
  const Arith A = arith_of(p.multiplier_format, scales.dtype, "multiplier_format");
  const Arith X = Arith::exact();
  const std::string in = " in " + A.name();
  const ExactFloat si = scale_value(scales.input), sw = scale_value(scales.weight), so = scale_value(scales.output);
  ExactFloat product;
  const ExactFloat one = ExactFloat::finite(1);
  if (p.multiplier_order == MultiplierOrder::reciprocal_scales) {
    const ExactFloat ri = A.div(one, si), rw = A.div(one, sw), ro = A.div(one, so);
    t.real("1 / s_in, 1 / s_w, 1 / s_out" + in, "1 / s_in", X.div(one, si), ri);
    product = A.mul(ri, rw);
    t.real("(1/s_in) * (1/s_w)" + in, "(1/s_in) * (1/s_w)", X.mul(ri, rw), product);
    m.formed = A.div(ro, product);
    t.real("(1/s_out) / that" + in, "(1/s_out) / ((1/s_in) * (1/s_w))", X.div(ro, product), m.formed);
  } else if (p.multiplier_order == MultiplierOrder::product_times_reciprocal) {
    product = A.mul(si, sw);
    t.real("s_in * s_w" + in, "s_in * s_w", X.mul(si, sw), product);
    const ExactFloat ro = A.div(one, so);
    t.real("1 / s_out" + in, "1 / s_out", X.div(one, so), ro);
    m.formed = A.mul(product, ro);
    t.real("(s_in * s_w) * (1/s_out)" + in, "(s_in * s_w) * (1/s_out)", X.mul(product, ro), m.formed);
  } else {
    if (p.multiplier_order == MultiplierOrder::left_to_right) {
      product = A.mul(si, sw);
      t.real("s_in * s_w" + in, "s_in * s_w", X.mul(si, sw), product);
    } else {
      const Arith S = Arith::in(scales.dtype);
      product = S.mul(si, sw);
      t.real("s_in * s_w in " + S.name() + " (the scales' format)", "s_in * s_w", X.mul(si, sw), product);
    }
    m.formed = A.div(product, so);
    t.real("/ s_out" + in, "(s_in * s_w) / s_out", X.div(product, so), m.formed);
  }
  if (!m.formed.is_finite() || m.formed.value <= 0)
    throw InputError("requantize: the multiplier formed" + in + " is " + to_string(m.formed) +
                     " (it overflowed or underflowed)");
  if (scheme_uses_derivation(p.scheme)) derive(m, p, t);
  if (p.scheme == RequantizeScheme::stablehlo_truncate) {
    m.stablehlo_scale = stablehlo_dot_combined_scale(to_double(m.formed));
    if (m.stablehlo_scale)
      t.real("combined scale to f32", "(float)combined", m.formed,
             exact_of(Rational(static_cast<double>(*m.stablehlo_scale))));
    else
      t.real("combined scale within 0.001 of 1: the lowering skips scaling", "", m.formed, m.formed);
  }
  if (p.scheme == RequantizeScheme::xnnpack_fp32) {
    const auto v = static_cast<float>(to_double(m.formed));  // the f32 scale the kernel receives
    if (!(v >= 0x1.0p-32f && v < 256.0f))
      throw InputError("requantize: xnnpack_fp32 requires 2^-32 <= scale < 256, got " + std::to_string(v));
  }
  return m;
}

namespace {

// The label of an element relative to its ideal exact value (see requantize.hpp).
Label ideal_label(const Rational& v, std::int64_t zp, Range r) {
  const Rational w = v + zp;
  const Rational half(1, 2);
  if (w >= Rational(r.hi) + half || w <= Rational(r.lo) - half) return Label::saturated;
  Fraction f;
  const BigInt fl = floor_with_fraction(v, f);
  if (f == Fraction::half) return Label::tie;
  const Rational dist = abs(v - Rational(fl) - half);
  return dist <= Rational(kNearTieDistance) ? Label::near_tie : Label::clear;
}

std::string fraction_note(Fraction f, RoundingMode m, const BigInt& result) {
  const std::string where(describe(f));
  return where + "; " + std::string(name(m)) + " (" + std::string(describe(m)) + ") gives " + result.str();
}

std::int64_t saturate(std::int64_t v, Range r, Tracer& t) {
  const std::int64_t q = std::clamp(v, r.lo, r.hi);
  if (t.on())
    t.integer("saturate to [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]", std::to_string(v),
              Rational(v), q);
  return q;
}

std::int64_t saturate(const BigInt& v, Range r, Tracer& t) {
  if (v < r.lo || v > r.hi) {
    const std::int64_t q = v < r.lo ? r.lo : r.hi;
    if (t.on())
      t.integer("saturate to [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]", v.str(), Rational(v), q);
    return q;
  }
  return saturate(v.convert_to<std::int64_t>(), r, t);
}

// XNNPACK and QNNPACK clamp to [qmin - zp, qmax - zp] and then add zp (exact: no overflow).
std::int64_t clamp_then_add_zero_point(std::int64_t v, std::int64_t zp, Range r, Tracer& t) {
  const std::int64_t c = std::clamp(v, r.lo - zp, r.hi - zp);
  if (t.on())
    t.integer(
        "clamp to [qmin - zp, qmax - zp] = [" + std::to_string(r.lo - zp) + ", " + std::to_string(r.hi - zp) + "]",
        std::to_string(v), Rational(v), c);
  if (t.on()) t.integer("+ zp", std::to_string(c) + " + " + std::to_string(zp), Rational(c + zp), c + zp);
  return c + zp;
}

// int32 addition of the zero point, as TFLite's `acc += output_offset` (wraps on overflow).
std::int64_t add_zero_point_int32(std::int64_t v, std::int64_t zp, Tracer& t) {
  const std::int64_t sum = v + zp;  // |v|, |zp| <= 2^31: exact
  const std::int64_t w =
      sum >= kInt32Min && sum <= kInt32Max ? sum : int_convert(DType::i32, BigInt(sum), IntOverflow::wrap);
  if (t.on())
    t.integer("+ zp in int32", std::to_string(v) + " + " + std::to_string(zp), Rational(sum), w,
              w == sum ? "" : "the int32 addition wraps");
  return w;
}

std::int32_t require_int32(std::int64_t acc, RequantizeScheme s) {
  if (acc < kInt32Min || acc > kInt32Max)
    throw InputError("requantize: scheme " + std::string(name(s)) + " takes an int32 accumulator, got " +
                     std::to_string(acc));
  return static_cast<std::int32_t>(acc);
}

Q31Multiplier to_q31(const ScaleShift& s, RequantizeScheme scheme) {
  if (s.multiplier < kInt32Min || s.multiplier > kInt32Max)
    throw InputError("requantize: scheme " + std::string(name(scheme)) + " needs an int32 multiplier, got " +
                     std::to_string(s.multiplier));
  return {static_cast<std::int32_t>(s.multiplier), 31 - s.right_shift};
}

std::int32_t to_int32_multiplier(const ScaleShift& s, RequantizeScheme scheme) { return to_q31(s, scheme).multiplier; }

// A rounding moves a value by less than 1; a larger gap between the exact value and an int32
// result means the result wrapped.
std::string with_wrap_note(std::string note, const Rational& exact, std::int64_t result) {
  if (abs(exact - Rational(result)) > 1) note += "; the int32 result wraps";
  return note;
}

// ideal: the exact value, rounded once.
std::int64_t eval_ideal(std::int64_t acc, const RequantizeMultiplier& m, std::int64_t zp, DType out, Range r,
                        const RequantizePolicy& p, Tracer& t) {
  Rational v = Rational(acc) * m.exact;
  if (t.on()) t.real("acc * multiplier, exactly", std::to_string(acc) + " * multiplier", exact_of(v), exact_of(v));
  const bool zp_before = p.zero_point == ZeroPointAdd::float_before_rounding;
  if (zp_before) v += zp;
  Fraction f;
  BigInt q = round_to_integer(v, p.rounding, &f);
  if (t.on())
    t.real("round to integer", to_string(exact_of(v)), exact_of(v), exact_int(q), fraction_note(f, p.rounding, q));
  if (!zp_before) {
    if (t.on()) t.integer("+ zp", q.str() + " + " + std::to_string(zp), Rational(q + zp), q + zp);
    q += zp;
  }
  if (p.clamp == Clamp::wrap) {
    const std::int64_t w = int_convert(out, q, IntOverflow::wrap);
    if (t.on()) t.integer("wrap to " + std::string(name(out)), q.str(), Rational(q), w);
    return saturate(w, r, t);  // an explicit clip still applies after the cast
  }
  return saturate(q, r, t);  // float_before and int_after agree on exact values: the bounds are integers
}

std::int64_t eval_float(std::int64_t acc, const RequantizeMultiplier& m, std::int64_t zp, DType out, Range r,
                        const RequantizePolicy& p, Tracer& t) {
  const FloatRecipe fr = float_recipe(m, p);
  const Arith& A = fr.product;
  const Arith X = Arith::exact();
  const std::string in = " in " + A.name();
  const ExactFloat a = A.convert(exact_int(acc));
  if (t.on()) t.real("acc to " + A.name(), std::to_string(acc), exact_int(acc), a);
  ExactFloat v;
  if (fr.per_op) {  // oneDNN ref_convolution_int8: d = (float)acc; d *= src_scale; d *= wei_scale; d /= dst_scale
    const ExactFloat si = A.convert(scale_value(m.scales.input));
    const ExactFloat sw = A.convert(scale_value(m.scales.weight));
    const ExactFloat so = A.convert(scale_value(m.scales.output));
    v = A.mul(a, si);
    if (t.on()) t.real("* s_in" + in, "acc * s_in", X.mul(a, si), v);
    const ExactFloat v2 = A.mul(v, sw);
    if (t.on()) t.real("* s_w" + in, "(acc * s_in) * s_w", X.mul(v, sw), v2);
    v = A.div(v2, so);
    if (t.on()) t.real("/ s_out" + in, "((acc * s_in) * s_w) / s_out", X.div(v2, so), v);
  } else {
    const ExactFloat mult = A.convert(m.formed);
    if (t.on()) t.real("multiplier to " + A.name(), "m", m.formed, mult);
    const ExactFloat prod = A.mul(a, mult);
    if (t.on()) t.real("acc * m" + in, "acc * m", X.mul(a, mult), prod);
    v = prod;
  }
  const bool zp_before = fr.zero_point == ZeroPointAdd::float_before_rounding;
  if (zp_before) {
    const ExactFloat z = A.convert(exact_int(zp));
    const ExactFloat u = A.add(v, z);
    if (t.on()) t.real("+ zp" + in, "(acc * m) + " + std::to_string(zp), X.add(v, z), u);
    v = u;
  }
  const std::int64_t off = zp_before ? 0 : zp;
  if (fr.clamp == Clamp::float_before) {
    const ExactFloat lo = A.convert(exact_int(r.lo - off));
    const ExactFloat hi = A.convert(exact_int(r.hi - off));
    const bool below = v.is_inf() ? v.negative : v.value < lo.value;
    const bool above = v.is_inf() ? !v.negative : v.value > hi.value;
    if (below || above) {
      const ExactFloat c = below ? lo : hi;
      if (t.on()) t.real("clamp" + in + " before rounding", "to [" + to_string(lo) + ", " + to_string(hi) + "]", v, c);
      v = c;
    }
  }
  BigInt q;
  if (v.is_inf()) {  // only reachable without a float clamp: saturates below
    q = v.negative ? BigInt(r.lo) - off - 1 : BigInt(r.hi) - off + 1;
    if (t.on()) t.real("round", "", v, v, "infinite: saturates");
  } else {
    Fraction f;
    q = round_to_integer(v.value, fr.rounding, &f);
    if (t.on()) t.real("round to integer", to_string(v), v, exact_int(q), fraction_note(f, fr.rounding, q));
  }
  if (!zp_before) {
    if (t.on()) t.integer("+ zp in integers", q.str() + " + " + std::to_string(zp), Rational(q + zp), q + zp);
    q += zp;
  }
  if (fr.clamp == Clamp::wrap) {
    const std::int64_t w = int_convert(out, q, IntOverflow::wrap);
    if (t.on()) t.integer("wrap to " + std::string(name(out)), q.str(), Rational(q), w);
    return saturate(w, r, t);
  }
  return saturate(q, r, t);
}

std::int64_t eval_gemmlowp_double(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const Q31Multiplier q = to_q31(*m.fixed, RequantizeScheme::gemmlowp_double);
  const std::int32_t v = tflite_multiply_by_quantized_multiplier_double(x, q);
  if (t.on()) {  // the three stages, for the trace (the value above is the one definition)
    const int ls = std::max(q.shift, 0), rs = std::max(-q.shift, 0);
    const std::int32_t shifted = tflite_left_shift_wrapping(x, ls);
    const Rational exact_shift = Rational(x) * pow2(ls);
    if (t.on())
      t.integer("x * (1 << " + std::to_string(ls) + ") in int32", std::to_string(x) + " * 2^" + std::to_string(ls),
                exact_shift, shifted, Rational(shifted) == exact_shift ? "" : "the int32 multiply wraps");
    const std::int32_t high = gemmlowp_saturating_rounding_doubling_high_mul(shifted, q.multiplier);
    if (t.on())
      t.integer("SaturatingRoundingDoublingHighMul",
                std::to_string(shifted) + " * " + std::to_string(q.multiplier) + " / 2^31",
                Rational(shifted) * q.multiplier * pow2(-31), high, "rounds half toward +inf");
    if (t.on())
      t.integer("RoundingDivideByPOT", std::to_string(high) + " / 2^" + std::to_string(rs), Rational(high) * pow2(-rs),
                v, "rounds half away from zero");
  }
  return saturate(add_zero_point_int32(v, zp, t), r, t);
}

std::int64_t eval_gemmlowp_scalar(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const Q31Multiplier q = to_q31(*m.fixed, RequantizeScheme::gemmlowp_scalar);
  const std::int32_t v = gemmlowp_scale_by_fixed_point_and_exponent(x, q);
  if (t.on()) {
    const int ls = std::max(q.shift, 0);
    const std::int32_t shifted = gemmlowp_shift_left_saturating(x, ls);
    const Rational exact_shift = Rational(x) * pow2(ls);
    t.integer("ShiftLeft(x, " + std::to_string(ls) + ")", std::to_string(x) + " * 2^" + std::to_string(ls), exact_shift,
              shifted, Rational(shifted) == exact_shift ? "" : "saturates to int32");
    // Two roundings, two steps: `explain` names where a double rounding parts from a single one.
    const int rs = std::max(-q.shift, 0);
    const std::int32_t high = gemmlowp_saturating_rounding_doubling_high_mul(shifted, q.multiplier);
    t.integer("SaturatingRoundingDoublingHighMul",
              std::to_string(shifted) + " * " + std::to_string(q.multiplier) + " / 2^31",
              Rational(shifted) * q.multiplier * pow2(-31), high, "rounds half toward +inf");
    t.integer("RoundingDivideByPOT", std::to_string(high) + " / 2^" + std::to_string(rs), Rational(high) * pow2(-rs), v,
              "rounds half away from zero");
  }
  return saturate(add_zero_point_int32(v, zp, t), r, t);
}

std::int64_t eval_tflite_single(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const Q31Multiplier q = to_q31(*m.fixed, RequantizeScheme::tflite_single);
  const std::int32_t v = tflite_multiply_by_quantized_multiplier_single(x, q);
  if (t.on()) {
    const Rational exact = Rational(x) * q.multiplier * pow2(q.shift - 31);
    t.integer("(x*M + 2^(30-shift)) >> (31-shift)",
              std::to_string(x) + " * " + std::to_string(q.multiplier) + " * 2^" + std::to_string(q.shift - 31), exact,
              v, with_wrap_note("rounds half toward +inf", exact, v));
  }
  return saturate(add_zero_point_int32(v, zp, t), r, t);
}

std::int64_t eval_tflite_int64(std::int64_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const Q31Multiplier q = to_q31(*m.fixed, RequantizeScheme::tflite_int64);
  const std::int32_t v = tflite_multiply_by_quantized_multiplier_int64(x, q);
  if (t.on()) {
    const std::int64_t reduced = q.multiplier < 0x7FFF0000 ? (std::int64_t{q.multiplier} + (1 << 15)) >> 16 : 0x7FFF;
    const Rational exact = Rational(x) * reduced * pow2(q.shift - 15);
    t.integer(
        "(x*M16 + 2^(14-shift)) >> (15-shift)",
        std::to_string(x) + " * " + std::to_string(reduced) + " * 2^" + std::to_string(q.shift - 15), exact, v,
        with_wrap_note("16-bit reduced multiplier " + std::to_string(reduced) + "; rounds half toward +inf", exact, v));
  }
  return saturate(add_zero_point_int32(v, zp, t), r, t);
}

std::int64_t eval_tosa(std::int64_t acc, const RequantizeMultiplier& m, std::int64_t zp, Range r,
                       const RequantizePolicy& p, Tracer& t) {
  const ScaleShift& s = *m.fixed;
  std::int32_t v;
  if (p.scheme == RequantizeScheme::tosa_scale16) {
    if (s.multiplier < 0 || s.multiplier > std::numeric_limits<std::int16_t>::max())
      throw InputError("requantize: tosa_scale16 needs an int16 multiplier, got " + std::to_string(s.multiplier));
    v = tosa_apply_scale_16(acc, static_cast<std::int16_t>(s.multiplier), s.right_shift);
  } else {
    const TosaRounding mode =
        p.scheme == RequantizeScheme::tosa_double ? TosaRounding::double_round : TosaRounding::single_round;
    v = tosa_apply_scale_32(require_int32(acc, p.scheme), to_int32_multiplier(s, p.scheme), s.right_shift, mode);
  }
  if (t.on())
    t.integer(std::string(p.scheme == RequantizeScheme::tosa_scale16 ? "apply_scale_16" : "apply_scale_32"),
              std::to_string(acc) + " * " + std::to_string(s.multiplier) + " / 2^" + std::to_string(s.right_shift),
              Rational(acc) * s.multiplier * pow2(-s.right_shift), v,
              p.scheme == RequantizeScheme::tosa_double ? "DOUBLE_ROUND" : "rounds half toward +inf");
  // apply_add_s<int32_t>(result, out_zp), then apply_clip_s/u to the output range.
  if (t.on())
    t.integer("apply_add_s(result, output_zp)", std::to_string(v) + " + " + std::to_string(zp), Rational(v + zp),
              v + zp);
  return saturate(v + zp, r, t);
}

std::int64_t eval_mantissa(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r,
                           const RequantizePolicy& p, Tracer& t) {
  const ScaleShift& s = *m.fixed;
  std::int32_t v = 0;
  switch (p.scheme) {
    case RequantizeScheme::xnnpack_rndnu:
      v = xnnpack_rndnu_multiply_shift(x, s);
      break;
    case RequantizeScheme::qnnpack_precise:
      v = qnnpack_precise_multiply_shift(x, s);
      break;
    case RequantizeScheme::qnnpack_q31:
      v = qnnpack_q31_multiply_shift(x, to_q31(s, p.scheme));
      break;
    default:
      break;
  }
  if (t.on()) {
    const Rational exact = Rational(x) * s.multiplier * pow2(-s.right_shift);
    const std::string how = p.scheme == RequantizeScheme::xnnpack_rndnu
                                ? with_wrap_note("(acc*M + 2^(s-1)) >> s: rounds half toward +inf", exact, v)
                            : p.scheme == RequantizeScheme::qnnpack_precise
                                ? "rounds half away from zero"
                                : "Q31 multiply rounds half up, then the shift rounds half away";
    t.integer(std::string(name(p.scheme)),
              std::to_string(x) + " * " + std::to_string(s.multiplier) + " / 2^" + std::to_string(s.right_shift), exact,
              v, how);
  }
  return clamp_then_add_zero_point(v, zp, r, t);
}

std::int64_t eval_glow(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const GlowScale& g = *m.glow;
  if (zp < kInt32Min || zp > kInt32Max) throw InputError("requantize: glow_int32 needs an int32 offset");
  const std::int32_t v = glow_libjit_scale_i32i8(x, g, static_cast<std::int32_t>(zp));
  if (t.on()) {
    const Rational exact = Rational(x >> g.pre_shift) * g.scale * pow2(-g.post_shift) + zp;
    t.integer("libjit_scale_i32i8",
              "(((" + std::to_string(x) + " >> " + std::to_string(g.pre_shift) + ") * " + std::to_string(g.scale) +
                  ") + rtn) >> " + std::to_string(g.post_shift) + " + " + std::to_string(zp),
              exact, v, with_wrap_note("pre-shift floors, post-shift rounds half up", exact, v));
  }
  return saturate(v, r, t);  // libjit_clip
}

std::int64_t eval_stablehlo(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, DType out, Range r,
                            Tracer& t) {
  std::int32_t v = x;
  if (m.stablehlo_scale) {
    v = stablehlo_scale_and_truncate(x, *m.stablehlo_scale);
    if (t.on()) {
      const Rational scale(static_cast<double>(*m.stablehlo_scale));
      t.integer("convert(f32(acc) * scale) to i32", std::to_string(x) + " * " + to_decimal(scale, 12),
                Rational(x) * scale, v, "f32 product, then convert truncates toward zero");
    }
  }
  const std::int64_t with_zp = add_zero_point_int32(v, zp, t);
  // No clamp before the final narrowing convert; an integer narrowing convert keeps the low bits
  // (inferred from the lowering to arith.trunci; the spec leaves it open).
  const std::int64_t w = int_convert(out, BigInt(with_zp), IntOverflow::wrap);
  if (t.on())
    t.integer("convert to " + std::string(name(out)) + " (narrowing, no clamp)", std::to_string(with_zp),
              Rational(with_zp), w);
  return saturate(w, r, t);  // only an explicit clip or narrow range applies
}

std::int64_t eval_fbgemm(std::int32_t x, const RequantizeMultiplier& m, std::int64_t zp, Range r, Tracer& t) {
  const ScaleShift& s = *m.fixed;
  const std::int64_t v = fbgemm_saturating_rounding_mul_with_shift(
      x, to_int32_multiplier(s, RequantizeScheme::fbgemm_fixed_point), s.right_shift);
  if (t.on())
    t.integer("SaturatingRoundingMulWithShift",
              std::to_string(x) + " * " + std::to_string(s.multiplier) + " / 2^" + std::to_string(s.right_shift),
              Rational(x) * s.multiplier * pow2(-s.right_shift), v, "rounds half toward +inf");
  if (t.on())
    t.integer("zp + result in int64", std::to_string(zp) + " + " + std::to_string(v), Rational(zp + v), zp + v);
  return saturate(zp + v, r, t);
}

}  // namespace

RequantizeElement requantize_element(std::int64_t acc, const RequantizeMultiplier& m, std::int64_t zp, DType out,
                                     const RequantizePolicy& p, bool trace) {
  if (!is_int(out))
    throw InputError("requantize: output format " + std::string(name(out)) + " is not an integer format");
  if (zp < int_min(out) || zp > int_max(out))
    throw InputError("requantize: zero point " + std::to_string(zp) + " is outside " + std::string(name(out)));
  const Range r = output_range(out, p);
  RequantizeElement e;
  if (trace) e.steps = m.steps;
  Tracer t(trace, e.steps);
  const Rational v = Rational(acc) * m.exact;
  e.ideal = v + zp;
  e.label = ideal_label(v, zp, r);
  using S = RequantizeScheme;
  switch (p.scheme) {
    case S::ideal:
      e.q = eval_ideal(acc, m, zp, out, r, p, t);
      break;
    case S::float_multiplier:
    case S::xnnpack_fp32:
      e.q = eval_float(acc, m, zp, out, r, p, t);
      break;
    case S::gemmlowp_double:
      e.q = eval_gemmlowp_double(require_int32(acc, p.scheme), m, zp, r, t);
      break;
    case S::gemmlowp_scalar:
      e.q = eval_gemmlowp_scalar(require_int32(acc, p.scheme), m, zp, r, t);
      break;
    case S::tflite_single:
      e.q = eval_tflite_single(require_int32(acc, p.scheme), m, zp, r, t);
      break;
    case S::tflite_int64:
      e.q = eval_tflite_int64(acc, m, zp, r, t);
      break;
    case S::tosa_single:
    case S::tosa_double:
    case S::tosa_scale16:
      e.q = eval_tosa(acc, m, zp, r, p, t);
      break;
    case S::xnnpack_rndnu:
    case S::qnnpack_precise:
    case S::qnnpack_q31:
      e.q = eval_mantissa(require_int32(acc, p.scheme), m, zp, r, p, t);
      break;
    case S::glow_int32:
      e.q = eval_glow(require_int32(acc, p.scheme), m, zp, r, t);
      break;
    case S::stablehlo_truncate:
      e.q = eval_stablehlo(require_int32(acc, p.scheme), m, zp, out, r, t);
      break;
    case S::fbgemm_fixed_point:
      e.q = eval_fbgemm(require_int32(acc, p.scheme), m, zp, r, t);
      break;
  }
  return e;
}

RequantizeElement requantize_element(std::int64_t acc, const RequantizeScales& scales, std::int64_t zp, DType out,
                                     const RequantizePolicy& p, bool trace) {
  return requantize_element(acc, prepare_multiplier(scales, p, trace), zp, out, p, trace);
}

// ---- Tensor driver: validation, channels, the fast path (requantize_fast.cpp), the rest by definition

void validate(const RequantizeParams& p, const Shape& acc, DType out, const std::string& where) {
  if (!is_float(p.scale_dtype))
    throw InputError(where + ": field 'scale_dtype': " + std::string(name(p.scale_dtype)) + " is not a float format");
  if (!is_int(out)) throw InputError(where + ": output format " + std::string(name(out)) + " is not an integer format");
  const int rank = static_cast<int>(acc.size());
  std::int64_t channels = 1;
  if (p.axis) {
    const int a = resolve_axis(*p.axis, rank);
    if (a < 0 || a >= rank)
      throw InputError(where + ": field 'axis': " + std::to_string(*p.axis) +
                       " is out of range for an accumulator of rank " + std::to_string(rank));
    channels = acc[static_cast<std::size_t>(a)];
  }
  auto check = [&](double s, const std::string& field) {
    try {
      check_scale(s, p.scale_dtype, field);
    } catch (const InputError& e) {
      throw InputError(where + ": field '" + field + "': " + e.what());
    }
  };
  check(p.input_scale, "input_scale");
  check(p.output_scale, "output_scale");
  auto check_count = [&](std::size_t n, const std::string& field, bool allow_empty) {
    const bool ok = (allow_empty && n == 0) || n == 1 || (p.axis && static_cast<std::int64_t>(n) == channels);
    if (!ok)
      throw InputError(
          where + ": field '" + field + "': expected " + (allow_empty ? "none, " : "") + "1" +
          (p.axis ? " or " + std::to_string(channels) + " (one per channel along axis " + std::to_string(*p.axis) + ")"
                  : std::string(" (no 'axis' given)")) +
          " value(s) for an accumulator of shape " + shape_str(acc) + ", got " + std::to_string(n));
  };
  check_count(p.weight_scales.size(), "weight_scales", false);
  for (std::size_t i = 0; i < p.weight_scales.size(); ++i)
    check(p.weight_scales[i], "weight_scales[" + std::to_string(i) + "]");
  check_count(p.output_zero_points.size(), "output_zero_points", true);
  for (std::size_t i = 0; i < p.output_zero_points.size(); ++i) {
    const std::int64_t z = p.output_zero_points[i];
    if (z < int_min(out) || z > int_max(out))
      throw InputError(where + ": field 'output_zero_points[" + std::to_string(i) + "]': " + std::to_string(z) +
                       " is outside " + std::string(name(out)) + " [" + std::to_string(int_min(out)) + ", " +
                       std::to_string(int_max(out)) + "]");
  }
}

RequantizeResult requantize(const Tensor& acc, const RequantizeParams& p, DType out, const RequantizePolicy& policy,
                            OraclePath path, bool want_labels) {
  if (!is_int(acc.dtype()))
    throw InputError("requantize: the accumulator format " + std::string(name(acc.dtype())) +
                     " is not an integer format");
  validate(p, acc.shape(), out, "requantize");
  // One index per channel along the axis (ParamIndexer with one dummy scale per channel).
  QuantParams channel_params;
  if (p.axis) {
    channel_params.axis = p.axis;
    channel_params.scales.assign(
        static_cast<std::size_t>(acc.shape()[static_cast<std::size_t>(resolve_axis(*p.axis, acc.rank()))]), 1.0);
  } else {
    channel_params.scales = {1.0};
  }
  const ParamIndexer channel_of(channel_params, acc.shape());

  std::vector<RequantizeMultiplier> multipliers;
  multipliers.reserve(p.weight_scales.size());
  for (const double w : p.weight_scales)
    multipliers.push_back(prepare_multiplier({p.input_scale, w, p.output_scale, p.scale_dtype}, policy));
  const auto multiplier_of = [&](std::int64_t c) -> const RequantizeMultiplier& {
    return multipliers[multipliers.size() == 1 ? 0 : static_cast<std::size_t>(c)];
  };
  const auto zero_point_of = [&](std::int64_t c) -> std::int64_t {
    return p.output_zero_points.empty()       ? 0
           : p.output_zero_points.size() == 1 ? p.output_zero_points[0]
                                              : p.output_zero_points[static_cast<std::size_t>(c)];
  };

  RequantizeResult res;
  res.q = Tensor(out, acc.shape());
  if (want_labels) res.labels.assign(static_cast<std::size_t>(acc.size()), Label::clear);
  const auto slow_element = [&](std::int64_t i) {
    const std::int64_t c = channel_of(i);
    RequantizeElement e;
    try {
      e = requantize_element(acc.get_int(i), multiplier_of(c), zero_point_of(c), out, policy);
    } catch (const InputError& err) {
      throw InputError(std::string(err.what()) + " (element " + std::to_string(i) + ")");
    }
    res.q.set_int(i, e.q);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = e.label;
  };
  if (path == OraclePath::slow) {
    for (std::int64_t i = 0; i < acc.size(); ++i) slow_element(i);
    return res;
  }

  // Fast path. int32 accumulators are read in place; narrower formats are widened (exactly).
  std::vector<std::int32_t> widened;
  const std::int32_t* a = nullptr;
  if (acc.dtype() == DType::i32) {
    a = acc.data<std::int32_t>();
  } else {
    widened.resize(static_cast<std::size_t>(acc.size()));
    for (std::int64_t i = 0; i < acc.size(); ++i)
      widened[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(acc.get_int(i));
    a = widened.data();
  }
  // One FastChannel per distinct (multiplier, zero point): one in all when both are per tensor.
  const bool per_channel = multipliers.size() > 1 || p.output_zero_points.size() > 1;
  std::vector<FastChannelPtr> channels;
  if (acc.size() > 0) {
    const std::size_t count = per_channel ? channel_params.scales.size() : 1;
    channels.reserve(count);
    for (std::size_t c = 0; c < count; ++c) {
      const auto k = static_cast<std::int64_t>(c);
      channels.push_back(make_fast_channel(multiplier_of(k), zero_point_of(k), out, policy));
    }
  }
  std::vector<std::int64_t> slow;
  Label* labels = want_labels ? res.labels.data() : nullptr;
  std::vector<std::uint8_t> unsettled(want_labels ? static_cast<std::size_t>(acc.size()) : 0);
  // Runs of consecutive elements that share a channel.
  std::int64_t begin = 0;
  while (begin < acc.size()) {
    std::int64_t end = acc.size();
    std::int64_t c = 0;
    if (p.axis) {
      c = channel_of(begin);
      end = begin + 1;
      while (end < acc.size() && channel_of(end) == c) ++end;
    }
    run_fast_channel(*channels[per_channel ? static_cast<std::size_t>(c) : 0], policy, out, a, res.q, labels,
                     unsettled.data(), begin, end, slow);
    begin = end;
  }
  // In index order, so that an error names the element the slow path alone would have named.
  for (const std::int64_t i : slow) slow_element(i);
  res.slow_elements = static_cast<std::int64_t>(slow.size());
  return res;
}

}  // namespace qc
