#include "oracles/requantize.hpp"

#include "qconform/error.hpp"
#include "qconform/qparams.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>

namespace qc {

// ---- Names -----------------------------------------------------------------------------------

std::string_view name(RequantizeScheme s) {
  switch (s) {
    case RequantizeScheme::ideal:
      return "ideal";
    case RequantizeScheme::float_multiplier:
      return "float_multiplier";
    case RequantizeScheme::gemmlowp_double:
      return "gemmlowp_double";
    case RequantizeScheme::tflite_single:
      return "tflite_single";
    case RequantizeScheme::tflite_int64:
      return "tflite_int64";
    case RequantizeScheme::tosa_single:
      return "tosa_single";
    case RequantizeScheme::tosa_double:
      return "tosa_double";
    case RequantizeScheme::tosa_scale16:
      return "tosa_scale16";
    case RequantizeScheme::xnnpack_rndnu:
      return "xnnpack_rndnu";
    case RequantizeScheme::xnnpack_fp32:
      return "xnnpack_fp32";
    case RequantizeScheme::qnnpack_precise:
      return "qnnpack_precise";
    case RequantizeScheme::qnnpack_q31:
      return "qnnpack_q31";
    case RequantizeScheme::glow_int32:
      return "glow_int32";
    case RequantizeScheme::stablehlo_truncate:
      return "stablehlo_truncate";
    case RequantizeScheme::fbgemm_fixed_point:
      return "fbgemm_fixed_point";
    case RequantizeScheme::gemmlowp_scalar:
      return "gemmlowp_scalar";
  }
  return "?";
}

std::string_view describe(RequantizeScheme s) {
  switch (s) {
    case RequantizeScheme::ideal:
      return "round(acc * s_in*s_w/s_out) on exact rationals";
    case RequantizeScheme::float_multiplier:
      return "multiplier and product in IEEE formats, in a stated order";
    case RequantizeScheme::gemmlowp_double:
      return "RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^ls, M), rs): round half up, then half away";
    case RequantizeScheme::gemmlowp_scalar:
      return "RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(ShiftLeft(x, ls), M), rs), ShiftLeft saturating "
             "(gemmlowp's scalar output stage)";
    case RequantizeScheme::tflite_single:
      return "(x*M + 2^(30-shift)) >> (31-shift) in int64: round half up";
    case RequantizeScheme::tflite_int64:
      return "int64 x, 16-bit reduced multiplier, (x*M16 + 2^(14-shift)) >> (15-shift)";
    case RequantizeScheme::tosa_single:
      return "TOSA apply_scale_32, SINGLE_ROUND";
    case RequantizeScheme::tosa_double:
      return "TOSA apply_scale_32, DOUBLE_ROUND";
    case RequantizeScheme::tosa_scale16:
      return "TOSA apply_scale_16 (int16 multiplier)";
    case RequantizeScheme::xnnpack_rndnu:
      return "(acc*M24 + 2^(s-1)) >> s from the f32 scale's bits: round half up, exact";
    case RequantizeScheme::xnnpack_fp32:
      return "lrintf(clamp((float)acc * scale, qmin-zp, qmax-zp)) + zp";
    case RequantizeScheme::qnnpack_precise:
      return "|acc|*M24 >> s rounded half up, sign restored: round half away, exact";
    case RequantizeScheme::qnnpack_q31:
      return "Q31 high multiply (round half up), then a round-half-away shift";
    case RequantizeScheme::glow_int32:
      return "((((x >> pre) * S) + 2^(post-1)) >> post) + offset in int32 (wraps)";
    case RequantizeScheme::stablehlo_truncate:
      return "f32(acc) * f32 scale, convert to i32 (truncates), + zp, narrowing convert";
    case RequantizeScheme::fbgemm_fixed_point:
      return "zp + ((acc*M + 2^(rs-1)) >> rs) in int64: round half up";
  }
  return "?";
}

std::optional<RequantizeScheme> parse_requantize_scheme(std::string_view s) {
  for (RequantizeScheme r : kAllRequantizeSchemes)
    if (name(r) == s) return r;
  return std::nullopt;
}

std::string_view name(MultiplierOrder o) {
  switch (o) {
    case MultiplierOrder::left_to_right:
      return "left_to_right";
    case MultiplierOrder::product_then_divide:
      return "product_then_divide";
    case MultiplierOrder::per_op:
      return "per_op";
    case MultiplierOrder::reciprocal_scales:
      return "reciprocal_scales";
    case MultiplierOrder::product_times_reciprocal:
      return "product_times_reciprocal";
  }
  return "?";
}

std::optional<MultiplierOrder> parse_multiplier_order(std::string_view s) {
  for (auto o : {MultiplierOrder::left_to_right, MultiplierOrder::product_then_divide, MultiplierOrder::per_op,
                 MultiplierOrder::reciprocal_scales, MultiplierOrder::product_times_reciprocal})
    if (name(o) == s) return o;
  return std::nullopt;
}

std::string_view name(MultiplierDerivation d) {
  switch (d) {
    case MultiplierDerivation::tflite:
      return "tflite";
    case MultiplierDerivation::tflite_single_round:
      return "tflite_single_round";
    case MultiplierDerivation::fp32_mantissa:
      return "fp32_mantissa";
    case MultiplierDerivation::qnnpack_q31:
      return "qnnpack_q31";
    case MultiplierDerivation::tosa_scale32:
      return "tosa_scale32";
    case MultiplierDerivation::tosa_scale16:
      return "tosa_scale16";
    case MultiplierDerivation::glow:
      return "glow";
    case MultiplierDerivation::fbgemm:
      return "fbgemm";
  }
  return "?";
}

std::optional<MultiplierDerivation> parse_multiplier_derivation(std::string_view s) {
  for (auto d :
       {MultiplierDerivation::tflite, MultiplierDerivation::tflite_single_round, MultiplierDerivation::fp32_mantissa,
        MultiplierDerivation::qnnpack_q31, MultiplierDerivation::tosa_scale32, MultiplierDerivation::tosa_scale16,
        MultiplierDerivation::glow, MultiplierDerivation::fbgemm})
    if (name(d) == s) return d;
  return std::nullopt;
}

std::string_view name(ZeroPointAdd z) {
  switch (z) {
    case ZeroPointAdd::int_after_rounding:
      return "int_after_rounding";
    case ZeroPointAdd::float_before_rounding:
      return "float_before_rounding";
  }
  return "?";
}

std::optional<ZeroPointAdd> parse_zero_point_add(std::string_view s) {
  for (auto z : {ZeroPointAdd::int_after_rounding, ZeroPointAdd::float_before_rounding})
    if (name(z) == s) return z;
  return std::nullopt;
}

std::string_view name(Accumulation a) {
  switch (a) {
    case Accumulation::exact:
      return "exact";
    case Accumulation::int32_wrap:
      return "int32_wrap";
    case Accumulation::int32_saturate:
      return "int32_saturate";
    case Accumulation::int64:
      return "int64";
    case Accumulation::int16_pair_saturate:
      return "int16_pair_saturate";
  }
  return "?";
}

std::string_view describe(Accumulation a) {
  switch (a) {
    case Accumulation::exact:
      return "arbitrary precision";
    case Accumulation::int32_wrap:
      return "int32, two's-complement wrap";
    case Accumulation::int32_saturate:
      return "int32, saturating adds in index order";
    case Accumulation::int64:
      return "int64, two's-complement wrap";
    case Accumulation::int16_pair_saturate:
      return "u8 x s8 pairs (2j, 2j+1) summed and saturated to int16 (vpmaddubsw), then added in int32";
  }
  return "?";
}

std::optional<Accumulation> parse_accumulation(std::string_view s) {
  for (Accumulation a : kAllAccumulations)
    if (name(a) == s) return a;
  return std::nullopt;
}

// ---- Policies --------------------------------------------------------------------------------

namespace {

constexpr ComputeFormat kExact{ComputeFormat::Kind::exact, 0};
constexpr ComputeFormat kF64{ComputeFormat::Kind::f64, 0};
constexpr ComputeFormat kF32{ComputeFormat::Kind::f32, 0};

}  // namespace

bool scheme_uses_derivation(RequantizeScheme s) {
  switch (s) {
    case RequantizeScheme::ideal:
    case RequantizeScheme::float_multiplier:
    case RequantizeScheme::xnnpack_fp32:
    case RequantizeScheme::stablehlo_truncate:
      return false;
    default:
      return true;
  }
}

bool scheme_accepts(RequantizeScheme s, MultiplierDerivation d) {
  if (!scheme_uses_derivation(s)) return false;
  if (s == RequantizeScheme::glow_int32 || d == MultiplierDerivation::glow)
    return s == RequantizeScheme::glow_int32 && d == MultiplierDerivation::glow;
  if (s == RequantizeScheme::tosa_scale16) return d == MultiplierDerivation::tosa_scale16;
  if (s == RequantizeScheme::xnnpack_rndnu || s == RequantizeScheme::qnnpack_precise)
    return d == MultiplierDerivation::fp32_mantissa;  // the kernels take a 24-bit significand
  return true;  // a Q31 scheme takes any (M, shift); its range preconditions are checked per use
}

RequantizePolicy requantize_policy_for(RequantizeScheme s) {
  RequantizePolicy p;
  p.scheme = s;
  using D = MultiplierDerivation;
  auto fixed = [&](ComputeFormat f, D d) {
    p.multiplier_format = f;
    p.derivation = d;
  };
  switch (s) {
    case RequantizeScheme::ideal:
      p.multiplier_format = kExact;
      p.product_format = kExact;
      break;
    case RequantizeScheme::float_multiplier:
      break;  // ORT MLAS: f32 left to right, f32 product, RNE
    // TFLite per-channel: double(s_in) * double(s_w) / double(s_out)
    // (kernel_util.cc::PopulateConvolutionQuantizationParams).
    case RequantizeScheme::gemmlowp_double:
    case RequantizeScheme::gemmlowp_scalar:  // gemmlowp derives no multiplier: users call TFLite's
      fixed(kF64, D::tflite);
      break;
    case RequantizeScheme::tflite_single:
      fixed(kF64, D::tflite_single_round);
      break;
    case RequantizeScheme::tflite_int64:
      fixed(kF64, D::tflite);
      break;
    // MLIR TFLite->TOSA lowerings compute the scale in double, then computeMultiplierAndShift.
    case RequantizeScheme::tosa_single:
    case RequantizeScheme::tosa_double:
      fixed(kF64, D::tosa_scale32);
      break;
    case RequantizeScheme::tosa_scale16:
      fixed(kF64, D::tosa_scale16);
      break;
    // XNNPACK convolution-nhwc.c::init_requantization_scale: input_scale * kernel_scale / output_scale in f32.
    case RequantizeScheme::xnnpack_rndnu:
      fixed(kF32, D::fp32_mantissa);
      break;
    case RequantizeScheme::xnnpack_fp32:
      p.clamp = Clamp::float_before;
      break;
    case RequantizeScheme::qnnpack_precise:
      fixed(kF32, D::fp32_mantissa);
      break;
    case RequantizeScheme::qnnpack_q31:
      fixed(kF32, D::qnnpack_q31);
      break;
    case RequantizeScheme::glow_int32:
      fixed(kF32, D::glow);
      break;
    // StableHLO: combinedScaleFp = lhs_scale * rhs_scale / res_scale in double.
    case RequantizeScheme::stablehlo_truncate:
      p.multiplier_format = kF64;
      break;
    // PyTorch/caffe2: float real_multiplier = in_scale * w_scale / out_scale.
    case RequantizeScheme::fbgemm_fixed_point:
      fixed(kF32, D::fbgemm);
      break;
  }
  return p;
}

std::string to_string(const RequantizePolicy& p) {
  std::string s(name(p.scheme));
  std::vector<std::string> parts;
  if (p.scheme != RequantizeScheme::ideal) {
    if (p.multiplier_order == MultiplierOrder::per_op)
      parts.push_back("order=per_op");
    else
      parts.push_back("multiplier=" + to_string(p.multiplier_format) + " " + std::string(name(p.multiplier_order)));
  }
  if (scheme_uses_derivation(p.scheme)) parts.push_back("derivation=" + std::string(name(p.derivation)));
  if (p.scheme == RequantizeScheme::float_multiplier) parts.push_back("product=" + to_string(p.product_format));
  if (p.scheme == RequantizeScheme::ideal || p.scheme == RequantizeScheme::float_multiplier) {
    parts.push_back("zp=" + std::string(name(p.zero_point)));
    parts.push_back(std::string(name(p.rounding)));
    parts.push_back("clamp=" + std::string(name(p.clamp)));
  }
  if (p.narrow_range) parts.push_back("narrow_range");
  if (p.clip) parts.push_back("clip=[" + std::to_string(p.clip->first) + ", " + std::to_string(p.clip->second) + "]");
  s += "(";
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s + ")";
}

// ---- One element -----------------------------------------------------------------------------

namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

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

using Range = OutputRange;

Range output_range(DType out, const RequantizePolicy& p) {
  try {
    return qc::output_range(out, p.narrow_range, p.clip);
  } catch (const InputError& e) {
    throw InputError(std::string("requantize: ") + e.what());
  }
}

Arith arith_of(const ComputeFormat& f, DType scale_dtype, std::string_view field) {
  using K = ComputeFormat::Kind;
  if (f.kind == K::fixed64)
    throw InputError("requantize: " + std::string(field) + " " + to_string(f) + " is not a float format");
  return resolve_compute(f, DType::i32, scale_dtype);
}

ExactFloat scale_value(double s) { return ExactFloat::finite(Rational(s)); }

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
  if (t.on())
    t.integer("acc * multiplier, exactly", std::to_string(acc) + " * multiplier", v,
              round_to_integer(v, RoundingMode::rtz));
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

// float_multiplier and xnnpack_fp32: each IEEE operation rounded once, in the product format.
struct FloatRecipe {
  Arith product;
  ZeroPointAdd zero_point;
  RoundingMode rounding;
  Clamp clamp;
  bool per_op;
};

FloatRecipe float_recipe(const RequantizeMultiplier& m, const RequantizePolicy& p) {
  if (p.scheme == RequantizeScheme::xnnpack_fp32)  // xnn_qs8_requantize_fp32: f32, clamp in float, lrintf, + zp
    return {Arith::in(DType::f32), ZeroPointAdd::int_after_rounding, RoundingMode::rne, Clamp::float_before, false};
  return {arith_of(p.product_format, m.scales.dtype, "product_format"), p.zero_point, p.rounding, p.clamp,
          p.multiplier_order == MultiplierOrder::per_op};
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
    t.integer("SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT",
              std::to_string(shifted) + " * " + std::to_string(q.multiplier) + " * 2^" + std::to_string(q.shift - 31),
              Rational(shifted) * q.multiplier * pow2(std::min(q.shift, 0) - 31), v,
              "rounds half toward +inf, then half away from zero");
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

// ---- Fast path ---------------------------------------------------------------------------------
//
// Each channel's multiplier is prepared once, exactly as the slow path prepares it
// (prepare_multiplier). Per element the fast path then evaluates the scheme in machine arithmetic
// that provably equals its definition:
//   fixed-point schemes  the unchecked integer kernels of fixed_point.hpp -- the very definitions
//                        the slow path calls through their checked wrappers -- in int64 with the
//                        same int32 wraps;
//   float_multiplier, xnnpack_fp32 (f32 or f64 product)
//                        hardware binary32/binary64: in the default environment each operation is
//                        the policy's correctly rounded operation (the oracle is built with
//                        -ffp-contract=off, and FLT_EVAL_METHOD is 0);
//   ideal, and float_multiplier with an exact product
//                        floor(acc * M) and where acc * M lies, decided by ExactProduct below.
// Labels come from an ExactProduct on the ideal multiplier. An element whose bounds do not hold
// goes to the slow path. So does every element of a channel on which the slow path throws for
// acc = 0 (a precondition on the channel's parameters), and every element that would break a
// precondition depending on the accumulator (TOSA's REQUIREs), so that errors are the slow path's
// own, raised at the same element.

static_assert(FLT_EVAL_METHOD == 0, "the fast path needs float and double operations evaluated in their own format");

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

u128 low_128_bits(const BigInt& v) {  // v >= 0
  const BigInt mask64 = (BigInt(1) << 64) - 1;
  const auto lo = static_cast<std::uint64_t>(BigInt(v & mask64).convert_to<unsigned long long>());
  const auto hi = static_cast<std::uint64_t>(BigInt((v >> 64) & mask64).convert_to<unsigned long long>());
  return (static_cast<u128>(hi) << 64) | lo;
}

// Where v = acc * M lies: floor(v), the fraction class of v - floor(v), and whether v is within
// kNearTieDistance of floor(v) + 1/2.
struct Position {
  std::int64_t floor = 0;
  Fraction fraction = Fraction::zero;
  bool near = false;
};

// A positive rational multiplier M = N / D, prepared to locate acc * M exactly for any int32 acc.
// A double approximation with a proven error bound settles almost every element; the rest (ties,
// and values within that bound of a decision boundary) are settled exactly in 128-bit integers
// when D < 2^124, and otherwise left to the slow path.
class ExactProduct {
 public:
  enum class Where : std::uint8_t {
    settled,    // the Position is filled in
    beyond,     // |acc * M| > 2^38: beyond every int32 output range (it has the sign of acc)
    unsettled,  // the slow path decides
  };

  ExactProduct() = default;
  explicit ExactProduct(const Rational& m) {
    const ExactFloat a = round_to_format(DType::f64, m);  // RNE: |a - M| <= 2^-53 M in the normal range
    if (a.is_finite()) {
      const double d = a.value.convert_to<double>();  // exact: a is a double
      if (d >= 0x1p-1000 && d <= 0x1p1000) approx_ = d;
    }
    if (msb(denominator(m)) < 124) {
      den_ = low_128_bits(denominator(m));
      num_mod_ = low_128_bits(numerator(m));
    }
  }

  // M rounded to the nearest double (relative error 2^-53); 0 when M is outside [2^-1000, 2^1000].
  double approx() const { return approx_; }

  // exact_beyond: also settle |acc * M| > 2^38 exactly (up to 2^50) instead of answering `beyond`.
  [[gnu::always_inline]] Where locate(std::int32_t acc, Position& p, bool exact_beyond = false) const {
    if (acc == 0) {
      p = {0, Fraction::zero, false};
      return Where::settled;
    }
    if (approx_ == 0) return Where::unsettled;
    // t = acc * approx_ rounded: |acc*M - t| < |t| * 2^-51 (two roundings of relative 2^-53).
    const double t = static_cast<double>(acc) * approx_;
    const double at = std::fabs(t);
    if (at < 0.25) {  // |acc * M| < 1/2, with the sign of acc: far from any half-integer
      p = acc > 0 ? Position{0, Fraction::below_half, false} : Position{-1, Fraction::above_half, false};
      return Where::settled;
    }
    if (at >= 0x1p39 && !exact_beyond) return Where::beyond;
    if (at >= 0x1p50) return Where::unsettled;
    auto fl = static_cast<std::int64_t>(t);  // floor by truncation (branch-free: the sign is data)
    fl -= static_cast<double>(fl) > t ? 1 : 0;
    // d = t - (fl + 1/2) is exact (Sterbenz: 1/4 <= |t| < 2^50). With eps above the error of t,
    // t and acc * M lie on the same side of fl + 1/2, of fl + 1/2 +- 2^-10, and strictly between
    // fl and fl + 1 when every comparison below clears eps (the roundings in them are monotone).
    const double d = t - (static_cast<double>(fl) + 0.5);
    const double ad = std::fabs(d);
    const double eps = at * 0x1p-50;
    if (ad > eps && std::fabs(ad - kNearTieDistance) > eps && ad + eps < 0.5) {
      p = {fl, d < 0 ? Fraction::below_half : Fraction::above_half, ad <= kNearTieDistance};
      return Where::settled;
    }
    if (den_ == 0) return Where::unsettled;
    // Exactly: r = acc * N - fl * D. |acc*M - t| < 1 puts floor(acc * M) within one of fl, so r
    // lies in (-D, 2D) and fits an i128 (D < 2^124); both products may be taken modulo 2^128.
    const auto wide = [](std::int64_t v) { return static_cast<u128>(static_cast<i128>(v)); };
    auto r = static_cast<i128>(wide(acc) * num_mod_ - wide(fl) * den_);
    const auto den = static_cast<i128>(den_);
    if (r < 0) {
      --fl;
      r += den;
    } else if (r >= den) {
      ++fl;
      r -= den;
    }
    // acc*M - fl = r / D; its distance to 1/2 is |2r - D| / 2D, within 2^-10 iff |2r - D| <= D / 512.
    const i128 twice = 2 * r;
    p.floor = fl;
    p.fraction = r == 0         ? Fraction::zero
                 : twice < den  ? Fraction::below_half
                 : twice == den ? Fraction::half
                                : Fraction::above_half;
    p.near = (twice > den ? twice - den : den - twice) <= (den >> 9);
    return Where::settled;
  }

 private:
  double approx_ = 0;  // M rounded to the nearest double; 0 when outside [2^-1000, 2^1000]
  u128 num_mod_ = 0;   // N modulo 2^128
  u128 den_ = 0;       // D; 0 when D >= 2^124
};

// The label of v = acc * M relative to the ideal value (see requantize.hpp, and ideal_label):
// saturated when v + zp >= hi + 1/2 or v + zp <= lo - 1/2.
[[gnu::always_inline]] inline Label label_at(const Position& p, std::int64_t hi_less_zp, std::int64_t lo_less_zp) {
  if (p.floor > hi_less_zp || (p.floor == hi_less_zp && p.fraction >= Fraction::half)) return Label::saturated;
  if (p.floor < lo_less_zp - 1 || (p.floor == lo_less_zp - 1 && p.fraction <= Fraction::half)) return Label::saturated;
  if (p.fraction == Fraction::half) return Label::tie;
  return p.near ? Label::near_tie : Label::clear;
}

// The ideal-value label of one element; false when it is left to the slow path.
struct IdealLabel {
  const ExactProduct* ideal;
  std::int64_t hi_less_zp, lo_less_zp;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, Label& l) const {
    Position p;
    switch (ideal->locate(acc, p)) {
      case ExactProduct::Where::settled:
        l = label_at(p, hi_less_zp, lo_less_zp);
        return true;
      case ExactProduct::Where::beyond:
        l = Label::saturated;
        return true;
      case ExactProduct::Where::unsettled:
        return false;
    }
    return false;
  }
};

// The labels of a run of elements, as IdealLabel gives them, in a branch-free loop (labels are
// data: a branch on them mispredicts). t = acc * m, m the ideal multiplier rounded to double,
// settles every element whose |t| < 2^31 clears the same bounds as ExactProduct::locate, and every
// element with |t| < 1/4 (acc * M then lies strictly between -1/2 and 1/2, with the sign of acc).
// `unsettled[i]` flags the others for IdealLabel. Label codes: clear 0, near_tie 1, saturated 3
// (a settled element is never a tie).
static_assert(static_cast<int>(Label::clear) == 0 && static_cast<int>(Label::near_tie) == 1 &&
              static_cast<int>(Label::saturated) == 3);
// (Compare results are used as 0/1 values: GCC does not if-convert floating-point selects under
// -ftrapping-math.)
void settle_labels(const std::int32_t* acc, Label* labels, std::uint8_t* unsettled, std::int64_t n, double m,
                   double hi_less_zp, double lo_less_zp) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(acc[i]) * m;
    const double at = std::fabs(t);
    const bool in_int32 = at < 0x1p31;
    const double tc = in_int32 ? t : 0.0;  // truncated below without overflow
    const auto ti = static_cast<std::int32_t>(tc);
    const double fl = static_cast<double>(ti - static_cast<std::int32_t>(static_cast<double>(ti) > tc));
    const double d = tc - (fl + 0.5);  // exact for 1/4 <= |t| < 2^31 (see locate)
    const double ad = std::fabs(d);
    const double eps = at * 0x1p-50;
    const bool settled =
        (at < 0.25) | (in_int32 & (ad > eps) & (std::fabs(ad - kNearTieDistance) > eps) & (ad + eps < 0.5));
    const bool above = d > 0;
    const bool saturated =
        (fl > hi_less_zp) | ((fl == hi_less_zp) & above) | (fl < lo_less_zp - 1) | ((fl == lo_less_zp - 1) & !above);
    const bool near = (ad <= kNearTieDistance) & (at >= 0.25);
    labels[i] = static_cast<Label>((saturated ? 3 : 0) | (near ? 1 : 0));
    unsettled[i] = settled ? 0 : 1;
  }
}

// Two's-complement wrap into an integer format of at most 32 bits (int_convert's wrap).
struct WrapTo {
  int bits = 32;
  bool is_signed = true;
  std::int64_t operator()(std::int64_t v) const {
    const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
    std::uint64_t u = static_cast<std::uint64_t>(v) & mask;
    if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
    return static_cast<std::int64_t>(u);
  }
};

// rounds_up() tabulated for one rounding mode, indexed by its five inputs, so that the hot loops
// look the decision up instead of branching on the mode.
class RoundTable {
 public:
  explicit RoundTable(RoundingMode m) {
    for (unsigned i = 0; i < 32; ++i)
      up_[i] = rounds_up(m, (i & 1) != 0, (i & 2) != 0, (i & 4) != 0, (i & 8) != 0, (i & 16) != 0) ? 1 : 0;
  }
  [[gnu::always_inline]] std::int64_t operator()(bool zero, bool half, bool above, bool floor_is_odd,
                                                 bool floor_is_negative) const {
    return up_[static_cast<unsigned>(zero) | static_cast<unsigned>(half) << 1 | static_cast<unsigned>(above) << 2 |
               static_cast<unsigned>(floor_is_odd) << 3 | static_cast<unsigned>(floor_is_negative) << 4];
  }
  [[gnu::always_inline]] std::int64_t operator()(Fraction f, bool floor_is_odd, bool floor_is_negative) const {
    return (*this)(f == Fraction::zero, f == Fraction::half, f == Fraction::above_half, floor_is_odd,
                   floor_is_negative);
  }

 private:
  std::array<std::uint8_t, 32> up_{};
};

// What every kernel needs besides its own parameters.
struct Common {
  std::int64_t zp;
  Range range;
  WrapTo wrap_out;
  std::int64_t clamp(std::int64_t v) const { return std::clamp(v, range.lo, range.hi); }
};

// Each kernel: bool operator()(acc, q) computes the output q exactly as the slow path's eval_*
// does, or returns false to decline the element.

// ideal (eval_ideal), and float_multiplier with an exact product (eval_float in exact arithmetic,
// where a float clamp before rounding equals the integer clamp after it): round(acc * M) with the
// policy's rounding mode, zero-point placement and clamp.
struct RationalKernel {
  Common c;
  const ExactProduct* product;
  bool zp_before;
  bool wrap;
  RoundTable round_up;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    Position p;
    const ExactProduct::Where w = product->locate(acc, p, wrap);
    if (w == ExactProduct::Where::unsettled) return false;
    if (w == ExactProduct::Where::beyond) {  // (not under wrap) far beyond the range either way
      q = acc > 0 ? c.range.hi : c.range.lo;
    } else {
      const std::int64_t base = p.floor + (zp_before ? c.zp : 0);  // floor(v + zp) when zp comes first
      const std::int64_t r = base + round_up(p.fraction, (base & 1) != 0, base < 0);
      const std::int64_t v = zp_before ? r : r + c.zp;
      q = c.clamp(wrap ? c.wrap_out(v) : v);
    }
    return true;
  }
};

// float_multiplier and xnnpack_fp32 with an f32 (T = float) or f64 (T = double) product
// (eval_float): every operation is one hardware IEEE operation.
template <class T>
struct FloatKernel {
  Common c;
  T mult, s_in, s_w, s_out;  // in the product format
  T zp_t, lo_t, hi_t;        // zp, and the float clamp's bounds (lo - off, hi - off) in the product format
  std::int64_t off;          // the zero point when added in integers after rounding, else 0
  bool per_op, zp_before, float_before, wrap;
  RoundTable round_up;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const auto a = static_cast<T>(acc);  // cvtsi2ss/sd: round to nearest even
    T v = per_op ? ((a * s_in) * s_w) / s_out : a * mult;
    if (zp_before) v = v + zp_t;
    if (!std::isfinite(v)) return false;
    if (float_before) v = v < lo_t ? lo_t : v > hi_t ? hi_t : v;
    constexpr T big = static_cast<T>(0x1p62);
    if (std::fabs(v) >= big) {
      if (wrap) return false;
      v = v > 0 ? big : -big;  // saturates below all the same
    }
    // floor(v) by truncation, and where v lies against floor(v) + 1/2 (exact where it matters: see
    // quantize.cpp's f32_kernel; a v of 2^23 or more in f32, 2^52 in f64, is an integer).
    auto fli = static_cast<std::int64_t>(v);
    T fl = static_cast<T>(fli);
    const bool adjust = fl > v;  // written branch-free: the sign is data
    fli -= static_cast<std::int64_t>(adjust);
    fl -= static_cast<T>(adjust);
    const T d = v - (fl + T(0.5));
    const bool zero = v == fl, half = (d == T(0)) & !zero, above = (d > T(0)) & !zero;
    const std::int64_t r = fli + round_up(zero, half, above, (fli & 1) != 0, fli < 0);
    const std::int64_t w = r + off;
    q = c.clamp(wrap ? c.wrap_out(w) : w);
    return true;
  }
};

// gemmlowp_double, gemmlowp_scalar, tflite_single, tflite_int64: the TFLite (or gemmlowp) kernel, then `acc +=
// output_offset` in int32 (wraps), then the clamp.
template <RequantizeScheme S>
struct TfliteKernel {
  Common c;
  Q31Multiplier m;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    std::int32_t v;
    if constexpr (S == RequantizeScheme::gemmlowp_double)
      v = unchecked::tflite_multiply_by_quantized_multiplier_double(acc, m);
    else if constexpr (S == RequantizeScheme::gemmlowp_scalar)
      v = unchecked::gemmlowp_scale_by_fixed_point_and_exponent(acc, m);
    else if constexpr (S == RequantizeScheme::tflite_single)
      v = unchecked::tflite_multiply_by_quantized_multiplier_single(acc, m);
    else
      v = unchecked::tflite_multiply_by_quantized_multiplier_int64(acc, m);
    q = c.clamp(unchecked::wrap_int32(std::int64_t{v} + c.zp));
    return true;
  }
};

// tosa_single, tosa_double: apply_scale_32 (declining values outside its REQUIRE), + zp, clamp.
struct TosaScale32Kernel {
  Common c;
  std::int32_t multiplier;
  int shift;
  TosaRounding rounding;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int64_t half = std::int64_t{1} << (shift - 1);
    if (acc < -half || acc >= half) return false;  // the slow path raises TOSA's REQUIRE
    q = c.clamp(std::int64_t{unchecked::tosa_apply_scale_32(acc, multiplier, shift, rounding)} + c.zp);
    return true;
  }
};

// tosa_scale16: apply_scale_16 (declining results outside int32, its REQUIRE), + zp, clamp.
struct TosaScale16Kernel {
  Common c;
  std::int16_t multiplier;
  int shift;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int64_t v = unchecked::tosa_apply_scale_16(acc, multiplier, shift);
    if (v < kInt32Min || v > kInt32Max) return false;  // the slow path raises TOSA's REQUIRE
    q = c.clamp(v + c.zp);
    return true;
  }
};

// xnnpack_rndnu, qnnpack_precise, qnnpack_q31: the kernel, clamp to [qmin - zp, qmax - zp], + zp.
template <RequantizeScheme S>
struct MantissaKernel {
  Common c;
  ScaleShift m;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    std::int32_t v;
    if constexpr (S == RequantizeScheme::xnnpack_rndnu)
      v = unchecked::xnnpack_rndnu_multiply_shift(acc, m);
    else if constexpr (S == RequantizeScheme::qnnpack_precise)
      v = unchecked::qnnpack_precise_multiply_shift(acc, m);
    else
      v = unchecked::qnnpack_q31_multiply_shift(acc, {static_cast<std::int32_t>(m.multiplier), 31 - m.right_shift});
    q = std::clamp<std::int64_t>(v, c.range.lo - c.zp, c.range.hi - c.zp) + c.zp;
    return true;
  }
};

// glow_int32: libjit_scale_i32i8 with the zero point as its int32 offset, then libjit_clip.
struct GlowKernel {
  Common c;
  GlowScale g;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    q = c.clamp(unchecked::glow_libjit_scale_i32i8(acc, g, static_cast<std::int32_t>(c.zp)));
    return true;
  }
};

// stablehlo_truncate: the f32 product truncated (or acc unscaled), + zp in int32, the narrowing
// convert (wraps), then only an explicit clip or narrow range.
struct StablehloKernel {
  Common c;
  bool scaled;
  float scale;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int32_t v = scaled ? unchecked::stablehlo_scale_and_truncate(acc, scale) : acc;
    q = c.clamp(c.wrap_out(unchecked::wrap_int32(std::int64_t{v} + c.zp)));
    return true;
  }
};

// fbgemm_fixed_point: zp + SaturatingRoundingMulWithShift in int64, clamp.
struct FbgemmKernel {
  Common c;
  std::int32_t multiplier;
  int right_shift;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    q = c.clamp(c.zp + unchecked::fbgemm_saturating_rounding_mul_with_shift(acc, multiplier, right_shift));
    return true;
  }
};

// Everything the kernels of one channel (a multiplier and a zero point) need, formed once.
struct FastChannel {
  bool fast = false;  // false: every element of the channel goes to the slow path
  const RequantizeMultiplier* m = nullptr;
  std::int64_t zp = 0;
  Range range{0, 0};
  ExactProduct ideal;    // acc * s_in*s_w/s_out
  ExactProduct product;  // ideal and exact-product float_multiplier: the multiplier applied
  enum class Float : std::uint8_t { none, f32, f64, exact } product_format = Float::none;
  double mult = 0, s_in = 0, s_w = 0, s_out = 0;  // float schemes, in the product format (exact as doubles)
};

double exact_double(const ExactFloat& v) { return v.value.convert_to<double>(); }  // v is an f32/f64 value

FastChannel make_channel(const RequantizeMultiplier& m, std::int64_t zp, DType out, const RequantizePolicy& p) {
  FastChannel c;
  c.m = &m;
  c.zp = zp;
  // Every precondition on the channel's parameters shows at acc = 0, which meets every
  // precondition on the accumulator: a channel the slow path rejects stays with the slow path.
  try {
    (void)requantize_element(0, m, zp, out, p);
  } catch (const InputError&) {
    return c;
  }
  c.range = output_range(out, p);
  c.ideal = ExactProduct(m.exact);
  using S = RequantizeScheme;
  if (p.scheme == S::ideal) {
    c.product_format = FastChannel::Float::exact;
    c.product = c.ideal;
  } else if (p.scheme == S::float_multiplier || p.scheme == S::xnnpack_fp32) {
    const FloatRecipe fr = float_recipe(m, p);
    const std::string n = fr.product.name();
    if (n == "exact") {
      c.product_format = FastChannel::Float::exact;
      // per_op: ((acc * s_in) * s_w) / s_out exactly is acc times the ideal multiplier.
      c.product = fr.per_op ? c.ideal : ExactProduct(fr.product.convert(m.formed).value);
    } else if (n == "f32" || n == "f64") {
      c.product_format = n == "f32" ? FastChannel::Float::f32 : FastChannel::Float::f64;
      // The multiplier (or the three scales) as the slow path converts them into the product
      // format; zero or infinite values (an overflow or underflow in the conversion) stay slow.
      const auto to_product = [&](const ExactFloat& v, double& into) {
        const ExactFloat r = fr.product.convert(v);
        if (!r.is_finite() || r.value == 0) return false;
        into = exact_double(r);
        return true;
      };
      const bool ok = fr.per_op ? to_product(scale_value(m.scales.input), c.s_in) &&
                                      to_product(scale_value(m.scales.weight), c.s_w) &&
                                      to_product(scale_value(m.scales.output), c.s_out)
                                : to_product(m.formed, c.mult);
      if (!ok) return c;
    } else {
      return c;  // f16 / bf16 products: slow path
    }
  }
  c.fast = true;
  return c;
}

// Labels of one run, when asked for: settle_labels, then IdealLabel for what it left.
struct RunLabels {
  Label* labels = nullptr;  // null: no labels wanted
  const std::uint8_t* unsettled = nullptr;
  IdealLabel ideal{};
};

// One run of elements sharing a channel: a tight loop over one kernel and one output type. An
// element goes to the slow path when the kernel declines it or its label stays unsettled.
template <class Kernel, class Out>
void fast_run(const Kernel& k, const RunLabels& l, const std::int32_t* acc, Out* q, std::int64_t begin,
              std::int64_t end, std::vector<std::int64_t>& slow) {
  for (std::int64_t i = begin; i < end; ++i) {
    std::int64_t v;
    if (!k(acc[i], v)) {
      slow.push_back(i);
      continue;
    }
    q[i] = static_cast<Out>(v);
    if (l.labels && l.unsettled[i] && !l.ideal(acc[i], l.labels[i])) slow.push_back(i);
  }
}

template <class Kernel>
void fast_run_out(const Kernel& k, const RunLabels& l, const std::int32_t* acc, Tensor& q, std::int64_t begin,
                  std::int64_t end, std::vector<std::int64_t>& slow) {
  switch (q.dtype()) {
    case DType::i8:
    case DType::i4:
      return fast_run(k, l, acc, q.data<std::int8_t>(), begin, end, slow);
    case DType::u8:
    case DType::u4:
      return fast_run(k, l, acc, q.data<std::uint8_t>(), begin, end, slow);
    case DType::i16:
      return fast_run(k, l, acc, q.data<std::int16_t>(), begin, end, slow);
    case DType::u16:
      return fast_run(k, l, acc, q.data<std::uint16_t>(), begin, end, slow);
    case DType::i32:
      return fast_run(k, l, acc, q.data<std::int32_t>(), begin, end, slow);
    default:
      for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
  }
}

// Runs the kernel of `p.scheme` for one channel over [begin, end). labels/unsettled: null when no
// labels are wanted; else the tensor's labels and a scratch flag per element.
void fast_channel_run(const FastChannel& ch, const RequantizePolicy& p, DType out, const std::int32_t* acc, Tensor& q,
                      Label* labels, std::uint8_t* unsettled, std::int64_t begin, std::int64_t end,
                      std::vector<std::int64_t>& slow) {
  if (!ch.fast) {
    for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
    return;
  }
  const RequantizeMultiplier& m = *ch.m;
  const Common c{ch.zp, ch.range, WrapTo{info(out).bits, info(out).is_signed}};
  const RunLabels l{labels, unsettled, IdealLabel{&ch.ideal, ch.range.hi - ch.zp, ch.range.lo - ch.zp}};
  if (labels) {
    if (ch.ideal.approx() != 0)
      settle_labels(acc + begin, labels + begin, unsettled + begin, end - begin, ch.ideal.approx(),
                    static_cast<double>(l.ideal.hi_less_zp), static_cast<double>(l.ideal.lo_less_zp));
    else
      std::fill(unsettled + begin, unsettled + end, std::uint8_t{1});
  }
  const auto run = [&](const auto& kernel) { fast_run_out(kernel, l, acc, q, begin, end, slow); };
  const auto q31 = [&] {
    return Q31Multiplier{static_cast<std::int32_t>(m.fixed->multiplier), 31 - m.fixed->right_shift};
  };
  using S = RequantizeScheme;
  switch (p.scheme) {
    case S::ideal:
      return run(RationalKernel{c, &ch.product, p.zero_point == ZeroPointAdd::float_before_rounding,
                                p.clamp == Clamp::wrap, RoundTable(p.rounding)});
    case S::float_multiplier:
    case S::xnnpack_fp32: {
      const FloatRecipe fr = float_recipe(m, p);
      const bool zp_before = fr.zero_point == ZeroPointAdd::float_before_rounding;
      const Clamp clamp = fr.clamp;
      const RoundingMode mode = fr.rounding;
      const std::int64_t off = zp_before ? 0 : ch.zp;
      const auto floats = [&](auto zero) {
        using T = decltype(zero);
        return FloatKernel<T>{c,
                              static_cast<T>(ch.mult),
                              static_cast<T>(ch.s_in),
                              static_cast<T>(ch.s_w),
                              static_cast<T>(ch.s_out),
                              static_cast<T>(ch.zp),
                              static_cast<T>(ch.range.lo - off),
                              static_cast<T>(ch.range.hi - off),
                              off,
                              fr.per_op,
                              zp_before,
                              clamp == Clamp::float_before,
                              clamp == Clamp::wrap,
                              RoundTable(mode)};
      };
      switch (ch.product_format) {
        case FastChannel::Float::exact:
          return run(RationalKernel{c, &ch.product, zp_before, clamp == Clamp::wrap, RoundTable(mode)});
        case FastChannel::Float::f32:
          return run(floats(0.0f));
        case FastChannel::Float::f64:
          return run(floats(0.0));
        case FastChannel::Float::none:
          break;
      }
      break;
    }
    case S::gemmlowp_double:
      return run(TfliteKernel<S::gemmlowp_double>{c, q31()});
    case S::gemmlowp_scalar:
      return run(TfliteKernel<S::gemmlowp_scalar>{c, q31()});
    case S::tflite_single:
      return run(TfliteKernel<S::tflite_single>{c, q31()});
    case S::tflite_int64:
      return run(TfliteKernel<S::tflite_int64>{c, q31()});
    case S::tosa_single:
    case S::tosa_double:
      return run(
          TosaScale32Kernel{c, static_cast<std::int32_t>(m.fixed->multiplier), m.fixed->right_shift,
                            p.scheme == S::tosa_double ? TosaRounding::double_round : TosaRounding::single_round});
    case S::tosa_scale16:
      return run(TosaScale16Kernel{c, static_cast<std::int16_t>(m.fixed->multiplier), m.fixed->right_shift});
    case S::xnnpack_rndnu:
      return run(MantissaKernel<S::xnnpack_rndnu>{c, *m.fixed});
    case S::qnnpack_precise:
      return run(MantissaKernel<S::qnnpack_precise>{c, *m.fixed});
    case S::qnnpack_q31:
      return run(MantissaKernel<S::qnnpack_q31>{c, *m.fixed});
    case S::glow_int32:
      return run(GlowKernel{c, *m.glow});
    case S::stablehlo_truncate:
      return run(StablehloKernel{c, m.stablehlo_scale.has_value(), m.stablehlo_scale.value_or(1.0f)});
    case S::fbgemm_fixed_point:
      return run(FbgemmKernel{c, static_cast<std::int32_t>(m.fixed->multiplier), m.fixed->right_shift});
  }
  for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
}

}  // namespace

// ---- Tensor ----------------------------------------------------------------------------------

namespace {

int resolve_axis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

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
  std::vector<FastChannel> channels;
  if (acc.size() > 0) {
    const std::size_t count = per_channel ? channel_params.scales.size() : 1;
    channels.reserve(count);
    for (std::size_t c = 0; c < count; ++c) {
      const auto k = static_cast<std::int64_t>(c);
      channels.push_back(make_channel(multiplier_of(k), zero_point_of(k), out, policy));
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
    fast_channel_run(channels[per_channel ? static_cast<std::size_t>(c) : 0], policy, out, a, res.q, labels,
                     unsettled.data(), begin, end, slow);
    begin = end;
  }
  // In index order, so that an error names the element the slow path alone would have named.
  for (const std::int64_t i : slow) slow_element(i);
  res.slow_elements = static_cast<std::int64_t>(slow.size());
  return res;
}

// ---- Accumulation ----------------------------------------------------------------------------

namespace {

// Two's-complement wrap to 64 bits (int64 is not a DType, so int_convert does not cover it).
BigInt wrap_int64(const BigInt& v) {
  const BigInt mod = BigInt(1) << 64;
  BigInt r = v % mod;
  if (r < 0) r += mod;
  if (r >= (mod >> 1)) r -= mod;
  return r;
}

void require_byte_ranges(std::span<const std::int32_t> a, std::span<const std::int32_t> b) {
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] < 0 || a[k] > 255)
      throw InputError("accumulate_dot: int16_pair_saturate (vpmaddubsw) takes unsigned bytes in a[], got a[" +
                       std::to_string(k) + "] = " + std::to_string(a[k]));
    if (b[k] < -128 || b[k] > 127)
      throw InputError("accumulate_dot: int16_pair_saturate (vpmaddubsw) takes signed bytes in b[], got b[" +
                       std::to_string(k) + "] = " + std::to_string(b[k]));
  }
}

// Intel SDM VPMADDUBSW: SaturateToSignedWord(a[2j]*b[2j] + a[2j+1]*b[2j+1]) per int16 lane.
std::int64_t saturate_int16(std::int64_t v) { return std::clamp<std::int64_t>(v, -32768, 32767); }

}  // namespace

DotProduct accumulate_dot(std::span<const std::int32_t> a, std::span<const std::int32_t> b, Accumulation acc) {
  if (a.size() != b.size())
    throw InputError("accumulate_dot: operand lengths differ (" + std::to_string(a.size()) + " and " +
                     std::to_string(b.size()) + ")");
  DotProduct d;
  for (std::size_t k = 0; k < a.size(); ++k) d.exact += BigInt(std::int64_t{a[k]} * b[k]);
  switch (acc) {
    case Accumulation::exact:
      d.value = d.exact;
      break;
    case Accumulation::int32_wrap:  // modular: wrapping each add equals wrapping the exact sum
      d.value = int_convert(DType::i32, d.exact, IntOverflow::wrap);
      break;
    case Accumulation::int64:
      d.value = wrap_int64(d.exact);
      break;
    case Accumulation::int32_saturate: {
      std::int64_t s = 0;
      for (std::size_t k = 0; k < a.size(); ++k) s = std::clamp(s + std::int64_t{a[k]} * b[k], kInt32Min, kInt32Max);
      d.value = s;
      break;
    }
    case Accumulation::int16_pair_saturate: {
      require_byte_ranges(a, b);
      BigInt lanes = 0;
      for (std::size_t k = 0; k < a.size(); k += 2) {
        const std::int64_t second = k + 1 < a.size() ? std::int64_t{a[k + 1]} * b[k + 1] : 0;  // zero padding
        lanes += saturate_int16(std::int64_t{a[k]} * b[k] + second);
      }
      d.value = int_convert(DType::i32, lanes, IntOverflow::wrap);  // vpaddd wraps
      break;
    }
  }
  return d;
}

AccumulationBound accumulation_bound(Accumulation acc, std::int64_t k, IntRange a, IntRange b) {
  if (k < 0) throw InputError("accumulation_bound: K must be >= 0, got " + std::to_string(k));
  if (a.lo > a.hi || b.lo > b.hi) throw InputError("accumulation_bound: an empty operand range");
  const BigInt corners[] = {BigInt(a.lo) * b.lo, BigInt(a.lo) * b.hi, BigInt(a.hi) * b.lo, BigInt(a.hi) * b.hi};
  const BigInt pmin = *std::min_element(std::begin(corners), std::end(corners));
  const BigInt pmax = *std::max_element(std::begin(corners), std::end(corners));
  AccumulationBound r;
  r.lo = pmin * k;
  r.hi = pmax * k;
  const BigInt partial_lo = r.lo < 0 ? r.lo : BigInt(0);
  const BigInt partial_hi = r.hi > 0 ? r.hi : BigInt(0);
  auto fits = [&](const BigInt& lo, const BigInt& hi) { return partial_lo >= lo && partial_hi <= hi; };
  const BigInt i32_lo(kInt32Min), i32_hi(kInt32Max);
  switch (acc) {
    case Accumulation::exact:
      r.exact = true;
      break;
    case Accumulation::int32_wrap:
    case Accumulation::int32_saturate:
      r.exact = fits(i32_lo, i32_hi);
      break;
    case Accumulation::int64:
      r.exact =
          fits(BigInt(std::numeric_limits<std::int64_t>::min()), BigInt(std::numeric_limits<std::int64_t>::max()));
      break;
    case Accumulation::int16_pair_saturate: {
      if (a.lo < 0 || a.hi > 255 || b.lo < -128 || b.hi > 127)
        throw InputError("accumulation_bound: int16_pair_saturate takes u8 a and s8 b");
      const int per_pair = k >= 2 ? 2 : static_cast<int>(k);
      const bool pairs_fit = pmin * per_pair >= -32768 && pmax * per_pair <= 32767;
      r.exact = pairs_fit && fits(i32_lo, i32_hi);
      break;
    }
  }
  return r;
}

bool int32_accumulation_is_exact(std::int64_t k, IntRange a_range, IntRange b_range) {
  return accumulation_bound(Accumulation::int32_saturate, k, a_range, b_range).exact;
}

}  // namespace qc
