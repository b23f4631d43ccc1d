#include "oracles/policy.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <array>

namespace qc {

OutputRange output_range(DType out, bool narrow_range,
                         const std::optional<std::pair<std::int64_t, std::int64_t>>& clip) {
  OutputRange r{int_min(out, narrow_range), int_max(out)};
  if (clip) {
    r.lo = std::max(r.lo, clip->first);
    r.hi = std::min(r.hi, clip->second);
  }
  if (r.lo > r.hi)
    throw InputError("the clip [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "] leaves no value of " +
                     std::string(name(out)));
  return r;
}

std::string to_string(const ComputeFormat& c) {
  switch (c.kind) {
    case ComputeFormat::Kind::exact:
      return "exact";
    case ComputeFormat::Kind::f64:
      return "f64";
    case ComputeFormat::Kind::f32:
      return "f32";
    case ComputeFormat::Kind::f16:
      return "f16";
    case ComputeFormat::Kind::bf16:
      return "bf16";
    case ComputeFormat::Kind::scale_type:
      return "scale_type";
    case ComputeFormat::Kind::input_type:
      return "input_type";
    case ComputeFormat::Kind::fixed64:
      return "fixed64:" + std::to_string(c.frac_bits);
  }
  return "?";
}

std::optional<ComputeFormat> parse_compute_format(std::string_view s) {
  using K = ComputeFormat::Kind;
  static constexpr std::pair<std::string_view, K> kNames[] = {{"exact", K::exact},
                                                              {"f64", K::f64},
                                                              {"f32", K::f32},
                                                              {"f16", K::f16},
                                                              {"bf16", K::bf16},
                                                              {"scale_type", K::scale_type},
                                                              {"input_type", K::input_type}};
  for (auto [n, k] : kNames)
    if (n == s) return ComputeFormat{k, 0};
  if (s.starts_with("fixed64:")) {
    const std::string rest(s.substr(8));
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int bits = std::stoi(rest);
    if (bits > 62) return std::nullopt;
    return ComputeFormat{K::fixed64, bits};
  }
  return std::nullopt;
}

std::string_view name(QuantizeOrder o) {
  switch (o) {
    case QuantizeOrder::div_then_add_int:
      return "div_then_add_int";
    case QuantizeOrder::div_add_float:
      return "div_add_float";
    case QuantizeOrder::recip_then_add_int:
      return "recip_then_add_int";
    case QuantizeOrder::recip_add_float:
      return "recip_add_float";
    case QuantizeOrder::fma_recip:
      return "fma_recip";
    case QuantizeOrder::round_then_add_float:
      return "round_then_add_float";
    case QuantizeOrder::recip_round_then_add_float:
      return "recip_round_then_add_float";
  }
  return "?";
}

std::string_view formula(QuantizeOrder o) {
  switch (o) {
    case QuantizeOrder::div_then_add_int:
      return "round(x/s) + zp";
    case QuantizeOrder::div_add_float:
      return "round(x/s + zp)";
    case QuantizeOrder::recip_then_add_int:
      return "round(x*(1/s)) + zp";
    case QuantizeOrder::recip_add_float:
      return "round(x*(1/s) + zp)";
    case QuantizeOrder::fma_recip:
      return "round(fma(x, 1/s, zp))";
    case QuantizeOrder::round_then_add_float:
      return "round(x/s) +. zp";
    case QuantizeOrder::recip_round_then_add_float:
      return "round(x*(1/s)) +. zp";
  }
  return "?";
}

std::optional<QuantizeOrder> parse_quantize_order(std::string_view s) {
  for (auto o : {QuantizeOrder::div_then_add_int, QuantizeOrder::div_add_float, QuantizeOrder::recip_then_add_int,
                 QuantizeOrder::recip_add_float, QuantizeOrder::fma_recip, QuantizeOrder::round_then_add_float,
                 QuantizeOrder::recip_round_then_add_float})
    if (name(o) == s || formula(o) == s) return o;
  return std::nullopt;
}

std::string_view name(Clamp c) {
  switch (c) {
    case Clamp::int_after:
      return "int_after";
    case Clamp::float_before:
      return "float_before";
    case Clamp::wrap:
      return "wrap";
  }
  return "?";
}

std::optional<Clamp> parse_clamp(std::string_view s) {
  for (auto c : {Clamp::int_after, Clamp::float_before, Clamp::wrap})
    if (name(c) == s) return c;
  return std::nullopt;
}

std::string_view name(NanRule n) {
  switch (n) {
    case NanRule::unspecified:
      return "unspecified";
    case NanRule::to_qmin:
      return "qmin";
    case NanRule::to_qmax:
      return "qmax";
    case NanRule::to_zero_point:
      return "zero_point";
    case NanRule::to_zero:
      return "zero";
    case NanRule::error:
      return "error";
    case NanRule::to_qmax_signed_qmin_unsigned:
      return "qmax_signed_qmin_unsigned";
  }
  return "?";
}

std::optional<NanRule> parse_nan_rule(std::string_view s) {
  for (auto n : {NanRule::unspecified, NanRule::to_qmin, NanRule::to_qmax, NanRule::to_zero_point, NanRule::to_zero,
                 NanRule::error, NanRule::to_qmax_signed_qmin_unsigned})
    if (name(n) == s) return n;
  return std::nullopt;
}

std::string_view name(IntCast c) {
  switch (c) {
    case IntCast::exact:
      return "exact";
    case IntCast::x86_int32:
      return "x86_int32";
    case IntCast::x86_int64:
      return "x86_int64";
  }
  return "?";
}

std::optional<IntCast> parse_int_cast(std::string_view s) {
  for (auto c : {IntCast::exact, IntCast::x86_int32, IntCast::x86_int64})
    if (name(c) == s) return c;
  return std::nullopt;
}

std::string_view name(DequantizeOrder o) {
  switch (o) {
    case DequantizeOrder::sub_int_then_mul:
      return "sub_int_then_mul";
    case DequantizeOrder::sub_float_then_mul:
      return "sub_float_then_mul";
    case DequantizeOrder::mul_then_sub:
      return "mul_then_sub";
    case DequantizeOrder::fma:
      return "fma";
  }
  return "?";
}

std::string_view formula(DequantizeOrder o) {
  switch (o) {
    case DequantizeOrder::sub_int_then_mul:
      return "(q - zp) * s, integer subtraction";
    case DequantizeOrder::sub_float_then_mul:
      return "(float(q) - float(zp)) * s";
    case DequantizeOrder::mul_then_sub:
      return "q*s - zp*s";
    case DequantizeOrder::fma:
      return "fma(q, s, -(zp*s))";
  }
  return "?";
}

std::optional<DequantizeOrder> parse_dequantize_order(std::string_view s) {
  for (auto o : {DequantizeOrder::sub_int_then_mul, DequantizeOrder::sub_float_then_mul, DequantizeOrder::mul_then_sub,
                 DequantizeOrder::fma})
    if (name(o) == s) return o;
  return std::nullopt;
}

// ---- Requantize and accumulation names ----------------------------------------------------------

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

// ---- Requantize policies ------------------------------------------------------------------------

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

}  // namespace qc
