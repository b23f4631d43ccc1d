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

std::string_view name(QuantizeOrder o) { return table_name(o); }

std::string_view formula(QuantizeOrder o) { return table_description(o); }

std::optional<QuantizeOrder> parse_quantize_order(std::string_view s) {  // its name or its formula
  for (const EnumEntry<QuantizeOrder>& e : enum_table(QuantizeOrder{}))
    if (e.name == s || e.description == s) return e.value;
  return std::nullopt;
}

std::string_view name(Clamp c) { return table_name(c); }

std::optional<Clamp> parse_clamp(std::string_view s) { return table_parse<Clamp>(s); }

std::string_view name(NanRule n) { return table_name(n); }

std::optional<NanRule> parse_nan_rule(std::string_view s) { return table_parse<NanRule>(s); }

std::string_view name(IntCast c) { return table_name(c); }

std::optional<IntCast> parse_int_cast(std::string_view s) { return table_parse<IntCast>(s); }

std::string_view name(DequantizeOrder o) { return table_name(o); }

std::string_view formula(DequantizeOrder o) { return table_description(o); }

std::optional<DequantizeOrder> parse_dequantize_order(std::string_view s) { return table_parse<DequantizeOrder>(s); }

// ---- Requantize and accumulation names ----------------------------------------------------------

std::string_view name(RequantizeScheme s) { return table_name(s); }

std::string_view describe(RequantizeScheme s) { return table_description(s); }

std::optional<RequantizeScheme> parse_requantize_scheme(std::string_view s) { return table_parse<RequantizeScheme>(s); }

std::string_view name(MultiplierOrder o) { return table_name(o); }

std::optional<MultiplierOrder> parse_multiplier_order(std::string_view s) { return table_parse<MultiplierOrder>(s); }

std::string_view name(MultiplierDerivation d) { return table_name(d); }

std::optional<MultiplierDerivation> parse_multiplier_derivation(std::string_view s) {
  return table_parse<MultiplierDerivation>(s);
}

std::string_view name(ZeroPointAdd z) { return table_name(z); }

std::optional<ZeroPointAdd> parse_zero_point_add(std::string_view s) { return table_parse<ZeroPointAdd>(s); }

std::string_view name(Accumulation a) { return table_name(a); }

std::string_view describe(Accumulation a) { return table_description(a); }

std::optional<Accumulation> parse_accumulation(std::string_view s) { return table_parse<Accumulation>(s); }

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
