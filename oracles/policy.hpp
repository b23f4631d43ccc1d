// Numerics policies: every choice real implementations make differently, as types.
// A policy is evaluated bit-exactly by the oracle: each intermediate operation is computed
// exactly and then rounded to the policy's compute format (IEEE round-to-nearest-even, the
// default floating-point environment), exactly as an implementation following that recipe.
#pragma once

#include "oracles/format.hpp"
#include "oracles/rounding.hpp"
#include "qconform/enum_table.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qc {

// The format intermediates are rounded to.
struct ComputeFormat {
  enum class Kind : std::uint8_t {
    exact,  // no intermediate rounding (the real-number definition)
    f64,
    f32,
    f16,
    bf16,
    scale_type,  // the scale's own format (ONNX: "precision of the division ... type of y_scale")
    input_type,  // the input's own format (MIGraphX reference: x type == scale type)
    fixed64,     // int64 fixed point with `frac_bits` fraction bits, truncated (a C cast)
  };
  Kind kind = Kind::scale_type;
  int frac_bits = 0;

  bool operator==(const ComputeFormat&) const = default;
};
std::string to_string(const ComputeFormat& c);
std::optional<ComputeFormat> parse_compute_format(std::string_view s);
// The formats an implementation plausibly rounds its intermediates to: what causes and infer try
// (scale_type and input_type resolve to one of these; fixed64 needs a fraction width to name).
inline constexpr ComputeFormat kPlausibleComputeFormats[] = {
    {ComputeFormat::Kind::exact, 0}, {ComputeFormat::Kind::f64, 0},  {ComputeFormat::Kind::f32, 0},
    {ComputeFormat::Kind::f16, 0},   {ComputeFormat::Kind::bf16, 0},
};

// Quantize: float -> int.
enum class QuantizeOrder : std::uint8_t {
  div_then_add_int,            // round(x / s) + zp, zero point added in integers (ONNX)
  div_add_float,               // round(x / s + zp), zero point added in the compute format
  recip_then_add_int,          // round(x * (1/s)) + zp
  recip_add_float,             // round(x * (1/s) + zp)
  fma_recip,                   // round(fma(x, 1/s, zp)), one rounding for the multiply-add
  round_then_add_float,        // round(x / s) + zp, the add in the compute format (MLAS scalar, MIGraphX GPU)
  recip_round_then_add_float,  // round(x * (1/s)) + zp, the add in the compute format (PyTorch quantize_val)
};
inline constexpr EnumEntry<QuantizeOrder> kQuantizeOrderTable[] = {
    {QuantizeOrder::div_then_add_int, "div_then_add_int", "round(x/s) + zp"},
    {QuantizeOrder::div_add_float, "div_add_float", "round(x/s + zp)"},
    {QuantizeOrder::recip_then_add_int, "recip_then_add_int", "round(x*(1/s)) + zp"},
    {QuantizeOrder::recip_add_float, "recip_add_float", "round(x*(1/s) + zp)"},
    {QuantizeOrder::fma_recip, "fma_recip", "round(fma(x, 1/s, zp))"},
    {QuantizeOrder::round_then_add_float, "round_then_add_float", "round(x/s) +. zp"},
    {QuantizeOrder::recip_round_then_add_float, "recip_round_then_add_float", "round(x*(1/s)) +. zp"},
};
constexpr std::span<const EnumEntry<QuantizeOrder>> enum_table(QuantizeOrder) { return kQuantizeOrderTable; }
// The orders that add the zero point after rounding, in the compute format.
inline bool adds_zp_in_float_after_rounding(QuantizeOrder o) {
  return o == QuantizeOrder::round_then_add_float || o == QuantizeOrder::recip_round_then_add_float;
}
std::string_view name(QuantizeOrder o);
std::string_view formula(QuantizeOrder o);
std::optional<QuantizeOrder> parse_quantize_order(std::string_view s);

enum class Clamp : std::uint8_t {
  int_after,     // saturate the integer result
  float_before,  // clamp in the compute format before rounding (MLAS, XNNPACK, StableHLO)
  wrap,          // no clamp: two's-complement wrap of the integer (a plain cast)
};
inline constexpr EnumEntry<Clamp> kClampTable[] = {
    {Clamp::int_after, "int_after"},
    {Clamp::float_before, "float_before"},
    {Clamp::wrap, "wrap"},
};
constexpr std::span<const EnumEntry<Clamp>> enum_table(Clamp) { return kClampTable; }
std::string_view name(Clamp c);
std::optional<Clamp> parse_clamp(std::string_view s);

enum class NanRule : std::uint8_t {
  unspecified,  // the spec leaves it open: any output is accepted, the element is labelled special
  to_qmin,
  to_qmax,
  to_zero_point,
  to_zero,
  error,  // NaN input is an input error
  // x86 minps/maxps return their second operand when the first is NaN, so a float clamp written
  // min(v, qmax), preceded for unsigned outputs by max(v, 0), sends NaN to qmax for a signed
  // output and to qmin (0) for an unsigned one (oneDNN 2.x jit reorder: saturate_f32).
  to_qmax_signed_qmin_unsigned,
};
inline constexpr EnumEntry<NanRule> kNanRuleTable[] = {
    {NanRule::unspecified, "unspecified"},
    {NanRule::to_qmin, "qmin"},
    {NanRule::to_qmax, "qmax"},
    {NanRule::to_zero_point, "zero_point"},
    {NanRule::to_zero, "zero"},
    {NanRule::error, "error"},
    {NanRule::to_qmax_signed_qmin_unsigned, "qmax_signed_qmin_unsigned"},
};
constexpr std::span<const EnumEntry<NanRule>> enum_table(NanRule) { return kNanRuleTable; }
// The rules a backend's output can show: every rule but `unspecified` (it names no value) and
// `error` (it gives no output). What causes and infer try.
constexpr auto output_nan_rules() {
  std::array<NanRule, std::size(kNanRuleTable) - 2> rules{};
  std::size_t k = 0;
  for (const EnumEntry<NanRule>& e : kNanRuleTable)
    if (e.value != NanRule::unspecified && e.value != NanRule::error) rules[k++] = e.value;
  return rules;
}
inline constexpr auto kOutputNanRules = output_nan_rules();
std::string_view name(NanRule n);
std::optional<NanRule> parse_nan_rule(std::string_view s);

// How the rounded value becomes an integer. Code that converts a float with a C cast
// (static_cast<int32_t>, static_cast<int64_t>) compiles on x86-64 to cvttss2si/cvttsd2si, which
// give the "integer indefinite" value, the most negative integer, for NaN, infinities and values
// out of range (Intel SDM vol. 2, CVTTSS2SI). What follows the cast sees that value: a zero point
// added in that integer type wraps, and the clamp then takes it to qmin.
enum class IntCast : std::uint8_t {
  exact,      // the rounded real value, however large (then the clamp); NaN follows the NaN rule
  x86_int32,  // a cast to int32 on x86: NaN, +-inf and values outside int32 give INT32_MIN
  x86_int64,  // a cast to int64 on x86: NaN, +-inf and values outside int64 give INT64_MIN
};
inline constexpr EnumEntry<IntCast> kIntCastTable[] = {
    {IntCast::exact, "exact"},
    {IntCast::x86_int32, "x86_int32"},
    {IntCast::x86_int64, "x86_int64"},
};
constexpr std::span<const EnumEntry<IntCast>> enum_table(IntCast) { return kIntCastTable; }
std::string_view name(IntCast c);
std::optional<IntCast> parse_int_cast(std::string_view s);

struct QuantizePolicy {
  QuantizeOrder order = QuantizeOrder::div_then_add_int;
  ComputeFormat compute{};
  RoundingMode rounding = RoundingMode::rne;  // the final float -> integer rounding
  Clamp clamp = Clamp::int_after;
  bool narrow_range = false;                                  // signed: drop the most negative value
  std::optional<std::pair<std::int64_t, std::int64_t>> clip;  // explicit sub-range, e.g. int4 in int8
  NanRule nan = NanRule::unspecified;  // under a cast other than exact, NaN goes through the cast
  IntCast cast = IntCast::exact;

  bool operator==(const QuantizePolicy&) const = default;
};

// The integer range an output may take: the format's range (narrow range drops the most
// negative value of a signed format), intersected with an explicit clip. Throws InputError when
// the clip leaves nothing.
struct OutputRange {
  std::int64_t lo, hi;
};
OutputRange output_range(DType out, bool narrow_range,
                         const std::optional<std::pair<std::int64_t, std::int64_t>>& clip);

// Dequantize: int -> float.
enum class DequantizeOrder : std::uint8_t {
  sub_int_then_mul,    // (q - zp) * s, subtraction in integers (exact)
  sub_float_then_mul,  // (float(q) - float(zp)) * s, subtraction in the compute format
  mul_then_sub,        // q*s - zp*s
  fma,                 // fma(q, s, -(zp*s))
};
inline constexpr EnumEntry<DequantizeOrder> kDequantizeOrderTable[] = {
    {DequantizeOrder::sub_int_then_mul, "sub_int_then_mul", "(q - zp) * s, integer subtraction"},
    {DequantizeOrder::sub_float_then_mul, "sub_float_then_mul", "(float(q) - float(zp)) * s"},
    {DequantizeOrder::mul_then_sub, "mul_then_sub", "q*s - zp*s"},
    {DequantizeOrder::fma, "fma", "fma(q, s, -(zp*s))"},
};
constexpr std::span<const EnumEntry<DequantizeOrder>> enum_table(DequantizeOrder) { return kDequantizeOrderTable; }
std::string_view name(DequantizeOrder o);
std::string_view formula(DequantizeOrder o);
std::optional<DequantizeOrder> parse_dequantize_order(std::string_view s);

struct DequantizePolicy {
  DequantizeOrder order = DequantizeOrder::sub_int_then_mul;
  ComputeFormat compute{ComputeFormat::Kind::f32, 0};
  bool operator==(const DequantizePolicy&) const = default;
};

// ---- Requantize (oracles/requantize.hpp evaluates it) -----------------------------------------

enum class RequantizeScheme : std::uint8_t {
  ideal,               // round(acc * s_in*s_w/s_out) on exact rationals, with `rounding`
  float_multiplier,    // multiplier and product in IEEE formats (ORT MLAS, oneDNN, FBGEMM float, ONNX ref, Glow
                       // interpreter, TVM FP)
  gemmlowp_double,     // TFLite default: RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << ls, M), rs)
  tflite_single,       // TFLITE_SINGLE_ROUNDING: (x*M + 2^(30-shift)) >> (31-shift)
  tflite_int64,        // TFLite int16x8: int64 accumulator, 16-bit reduced multiplier
  tosa_single,         // TOSA RESCALE scale32, SINGLE_ROUND
  tosa_double,         // TOSA RESCALE scale32, DOUBLE_ROUND
  tosa_scale16,        // TOSA RESCALE scale32 = false (apply_scale_16)
  xnnpack_rndnu,       // (acc*M24 + 2^(s-1)) >> s with the f32 scale's significand, clamp, + zp
  xnnpack_fp32,        // lrintf(clamp((float)acc * scale, qmin-zp, qmax-zp)) + zp
  qnnpack_precise,     // round half away on |acc| * M24 >> s
  qnnpack_q31,         // Q31 high multiply (round half up), then a round-half-away shift
  glow_int32,          // ((((x >> pre) * S) + 2^(post-1)) >> post) + offset in int32
  stablehlo_truncate,  // stablehlo-legalize-quant-to-math: f32(acc) * f32 scale, convert (truncates)
  fbgemm_fixed_point,  // zp + ((acc*M + 2^(rs-1)) >> rs), FBGEMM RequantizeFixedPoint
  gemmlowp_scalar,     // gemmlowp's own output stage, scalar: as gemmlowp_double, the pre-shift saturating
};
inline constexpr EnumEntry<RequantizeScheme> kRequantizeSchemeTable[] = {
    {RequantizeScheme::ideal, "ideal", "round(acc * s_in*s_w/s_out) on exact rationals"},
    {RequantizeScheme::float_multiplier, "float_multiplier",
     "multiplier and product in IEEE formats, in a stated order"},
    {RequantizeScheme::gemmlowp_double, "gemmlowp_double",
     "RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^ls, M), rs): round half up, then half away"},
    {RequantizeScheme::tflite_single, "tflite_single", "(x*M + 2^(30-shift)) >> (31-shift) in int64: round half up"},
    {RequantizeScheme::tflite_int64, "tflite_int64",
     "int64 x, 16-bit reduced multiplier, (x*M16 + 2^(14-shift)) >> (15-shift)"},
    {RequantizeScheme::tosa_single, "tosa_single", "TOSA apply_scale_32, SINGLE_ROUND"},
    {RequantizeScheme::tosa_double, "tosa_double", "TOSA apply_scale_32, DOUBLE_ROUND"},
    {RequantizeScheme::tosa_scale16, "tosa_scale16", "TOSA apply_scale_16 (int16 multiplier)"},
    {RequantizeScheme::xnnpack_rndnu, "xnnpack_rndnu",
     "(acc*M24 + 2^(s-1)) >> s from the f32 scale's bits: round half up, exact"},
    {RequantizeScheme::xnnpack_fp32, "xnnpack_fp32", "lrintf(clamp((float)acc * scale, qmin-zp, qmax-zp)) + zp"},
    {RequantizeScheme::qnnpack_precise, "qnnpack_precise",
     "|acc|*M24 >> s rounded half up, sign restored: round half away, exact"},
    {RequantizeScheme::qnnpack_q31, "qnnpack_q31", "Q31 high multiply (round half up), then a round-half-away shift"},
    {RequantizeScheme::glow_int32, "glow_int32", "((((x >> pre) * S) + 2^(post-1)) >> post) + offset in int32 (wraps)"},
    {RequantizeScheme::stablehlo_truncate, "stablehlo_truncate",
     "f32(acc) * f32 scale, convert to i32 (truncates), + zp, narrowing convert"},
    {RequantizeScheme::fbgemm_fixed_point, "fbgemm_fixed_point",
     "zp + ((acc*M + 2^(rs-1)) >> rs) in int64: round half up"},
    {RequantizeScheme::gemmlowp_scalar, "gemmlowp_scalar",
     "RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(ShiftLeft(x, ls), M), rs), ShiftLeft saturating "
     "(gemmlowp's scalar output stage)"},
};
constexpr std::span<const EnumEntry<RequantizeScheme>> enum_table(RequantizeScheme) { return kRequantizeSchemeTable; }
inline constexpr auto kAllRequantizeSchemes = table_values<RequantizeScheme>();
std::string_view name(RequantizeScheme s);
std::string_view describe(RequantizeScheme s);
std::optional<RequantizeScheme> parse_requantize_scheme(std::string_view s);

// How the real multiplier s_in*s_w/s_out is formed, each operation rounded to `multiplier_format`.
enum class MultiplierOrder : std::uint8_t {
  left_to_right,        // (s_in * s_w) / s_out  (ORT ComputeOutputScale, XNNPACK, FBGEMM, TFLite per-channel in f64)
  product_then_divide,  // (s_in * s_w) rounded to the scales' own format, then / s_out in multiplier_format
                        // (TFLite legacy GetQuantizedConvolutionMultipler: fp32 product, double division)
  per_op,               // no multiplier: ((f(acc) * s_in) * s_w) / s_out, each in product_format (oneDNN ref)
  reciprocal_scales,    // (1/s_out) / ((1/s_in) * (1/s_w)), each reciprocal rounded first (ideep compute_scales,
                        // PyTorch's onednn engine)
  product_times_reciprocal,  // (s_in * s_w) * (1/s_out) (PyTorch's qnnpack engine, generate_requantization_scales)
};
inline constexpr EnumEntry<MultiplierOrder> kMultiplierOrderTable[] = {
    {MultiplierOrder::left_to_right, "left_to_right"},
    {MultiplierOrder::product_then_divide, "product_then_divide"},
    {MultiplierOrder::per_op, "per_op"},
    {MultiplierOrder::reciprocal_scales, "reciprocal_scales"},
    {MultiplierOrder::product_times_reciprocal, "product_times_reciprocal"},
};
constexpr std::span<const EnumEntry<MultiplierOrder>> enum_table(MultiplierOrder) { return kMultiplierOrderTable; }
std::string_view name(MultiplierOrder o);
std::optional<MultiplierOrder> parse_multiplier_order(std::string_view s);

// How a fixed-point scheme turns the formed real multiplier into integers.
enum class MultiplierDerivation : std::uint8_t {
  tflite,               // QuantizeMultiplier, double-rounding build (frexp, RNA to Q31)
  tflite_single_round,  // QuantizeMultiplier, TFLITE_SINGLE_ROUNDING (shift > 30 saturates)
  fp32_mantissa,        // the f32 scale's 24-bit significand and 150 - biased exponent (XNNPACK rndnu, QNNPACK precise)
  qnnpack_q31,          // the f32 significand << 7 as Q31, post shift 126 - biased exponent
  tosa_scale32,         // MLIR computeMultiplierAndShiftTosaScale32
  tosa_scale16,         // MLIR computeMultiplierAndShiftTosaScale16
  glow,                 // Glow quantizeScaleOffset32To8 (pre-shift, integer scale, post-shift)
  fbgemm,               // FBGEMM ChooseRequantizationMultiplier (float doubling/halving, RNE to Q31)
};
inline constexpr EnumEntry<MultiplierDerivation> kMultiplierDerivationTable[] = {
    {MultiplierDerivation::tflite, "tflite"},
    {MultiplierDerivation::tflite_single_round, "tflite_single_round"},
    {MultiplierDerivation::fp32_mantissa, "fp32_mantissa"},
    {MultiplierDerivation::qnnpack_q31, "qnnpack_q31"},
    {MultiplierDerivation::tosa_scale32, "tosa_scale32"},
    {MultiplierDerivation::tosa_scale16, "tosa_scale16"},
    {MultiplierDerivation::glow, "glow"},
    {MultiplierDerivation::fbgemm, "fbgemm"},
};
constexpr std::span<const EnumEntry<MultiplierDerivation>> enum_table(MultiplierDerivation) {
  return kMultiplierDerivationTable;
}
std::string_view name(MultiplierDerivation d);
std::optional<MultiplierDerivation> parse_multiplier_derivation(std::string_view s);

// Where the output zero point is added.
enum class ZeroPointAdd : std::uint8_t {
  int_after_rounding,     // round(acc * m) + zp in integers
  float_before_rounding,  // round(acc * m + zp), the addition in product_format (oneDNN, Glow interpreter, TVM FP)
};
inline constexpr EnumEntry<ZeroPointAdd> kZeroPointAddTable[] = {
    {ZeroPointAdd::int_after_rounding, "int_after_rounding"},
    {ZeroPointAdd::float_before_rounding, "float_before_rounding"},
};
constexpr std::span<const EnumEntry<ZeroPointAdd>> enum_table(ZeroPointAdd) { return kZeroPointAddTable; }
std::string_view name(ZeroPointAdd z);
std::optional<ZeroPointAdd> parse_zero_point_add(std::string_view s);

struct RequantizePolicy {
  RequantizeScheme scheme = RequantizeScheme::ideal;
  // Every scheme but `ideal`: how s_in*s_w/s_out is formed. per_op only for the float schemes.
  MultiplierOrder multiplier_order = MultiplierOrder::left_to_right;
  ComputeFormat multiplier_format{ComputeFormat::Kind::f32, 0};  // exact, f64, f32, f16, bf16
  // Fixed-point schemes: the integer multiplier rule (see scheme_accepts()).
  MultiplierDerivation derivation = MultiplierDerivation::tflite;
  // ideal and float_multiplier: the product's format, zero-point placement, rounding and clamp.
  // The fixed-point schemes, xnnpack_fp32 and stablehlo_truncate take these from their source.
  ComputeFormat product_format{ComputeFormat::Kind::f32, 0};
  ZeroPointAdd zero_point = ZeroPointAdd::int_after_rounding;
  RoundingMode rounding = RoundingMode::rne;
  Clamp clamp = Clamp::int_after;
  // Every scheme: the output range (narrow range; an explicit clip such as a fused ReLU6).
  bool narrow_range = false;
  std::optional<std::pair<std::int64_t, std::int64_t>> clip;

  bool operator==(const RequantizePolicy&) const = default;
};

// The policy a scheme's own source uses: its multiplier order and format and its derivation
// (e.g. xnnpack_rndnu: f32 left to right, fp32_mantissa; gemmlowp_double: f64, tflite).
RequantizePolicy requantize_policy_for(RequantizeScheme s);
// Whether a scheme can use a derivation (glow_int32 needs glow and only glow; tosa_scale16 needs a
// 16-bit multiplier; the float schemes and ideal use none).
bool scheme_accepts(RequantizeScheme s, MultiplierDerivation d);
bool scheme_uses_derivation(RequantizeScheme s);
// One line, every field that matters for the scheme: "gemmlowp_double(multiplier=f64 left_to_right,
// derivation=tflite)".
std::string to_string(const RequantizePolicy& p);

// ---- Accumulation (oracles/int_accumulate.hpp evaluates it) ----------------------------------

enum class Accumulation : std::uint8_t {
  exact,                // arbitrary precision
  int32_wrap,           // int32, two's-complement wrap (ONNX: "accumulation may overflow if and only if in 32 bits")
  int32_saturate,       // int32, each add saturating, in index order k = 0, 1, ...
  int64,                // int64, wrapping
  int16_pair_saturate,  // x86 vpmaddubsw + vpmaddwd + vpaddd: u8 x s8 pairs saturated to int16
};
inline constexpr EnumEntry<Accumulation> kAccumulationTable[] = {
    {Accumulation::exact, "exact", "arbitrary precision"},
    {Accumulation::int32_wrap, "int32_wrap", "int32, two's-complement wrap"},
    {Accumulation::int32_saturate, "int32_saturate", "int32, saturating adds in index order"},
    {Accumulation::int64, "int64", "int64, two's-complement wrap"},
    {Accumulation::int16_pair_saturate, "int16_pair_saturate",
     "u8 x s8 pairs (2j, 2j+1) summed and saturated to int16 (vpmaddubsw), then added in int32"},
};
constexpr std::span<const EnumEntry<Accumulation>> enum_table(Accumulation) { return kAccumulationTable; }
inline constexpr auto kAllAccumulations = table_values<Accumulation>();
std::string_view name(Accumulation a);
std::string_view describe(Accumulation a);
std::optional<Accumulation> parse_accumulation(std::string_view s);

}  // namespace qc
