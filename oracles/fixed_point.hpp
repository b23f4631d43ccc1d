// Fixed-point requantization rules of real implementations, one small function per rule, each a
// transcription of its public source (cited in the line above it; see docs/numerics.md
// "Requantization schemes in real implementations"). Each function computes exactly what the
// cited C/C++ computes, including the places where it wraps (a signed int32 overflow that the
// source leaves to the hardware) -- those are modelled explicitly as two's-complement wraps
// (unchecked::wrap_int32).
// Preconditions the source states (REQUIRE, assert, DCHECK on inputs) are checked and throw
// qc::InputError naming the function and the violated condition.
//
// Conventions for the integer multipliers:
//   Q31Multiplier  real ~= multiplier * 2^(shift - 31)   (TFLite / gemmlowp; shift > 0 shifts left)
//   ScaleShift     real ~= multiplier * 2^(-right_shift) (TOSA, XNNPACK, QNNPACK, FBGEMM)
//   GlowScale      real ~= scale * 2^(-(pre_shift + post_shift)), applied as ((x >> pre) * scale) >> post
#pragma once

#include "qconform/ops.hpp"  // IntRange

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace qc {

struct Q31Multiplier {
  std::int32_t multiplier = 0;
  int shift = 0;
  bool operator==(const Q31Multiplier&) const = default;
};

struct ScaleShift {
  std::int64_t multiplier = 0;
  int right_shift = 0;
  bool operator==(const ScaleShift&) const = default;
};

struct GlowScale {
  int pre_shift = 0;
  int post_shift = 0;
  std::int32_t scale = 0;
  bool operator==(const GlowScale&) const = default;
};

// The two rounding modes of TOSA RESCALE that must be exact (tosa.xml: SINGLE_ROUND, DOUBLE_ROUND).
enum class TosaRounding : std::uint8_t { single_round, double_round };

// Which TFLite build: TFLITE_SINGLE_ROUNDING changes QuantizeMultiplier (shift > 30 saturates).
enum class TfliteRounding : std::uint8_t { double_rounding, single_rounding };

// ---- gemmlowp ------------------------------------------------------------------------------

// gemmlowp fixedpoint/fixedpoint.h::SaturatingRoundingDoublingHighMul (int32). (a*b + nudge) / 2^31
// with C++ truncating division, nudge = 2^30 or 1 - 2^30 by the sign of a*b: round half toward +inf
// (-0.5 -> 0, -1.5 -> -1, 0.5 -> 1). Only INT32_MIN * INT32_MIN saturates (to INT32_MAX).
std::int32_t gemmlowp_saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b);

// gemmlowp fixedpoint/fixedpoint.h::RoundingDivideByPOT. x / 2^exponent, round half away from
// zero (-0.5 -> -1, -2.5 -> -3). Requires 0 <= exponent <= 31.
std::int32_t gemmlowp_rounding_divide_by_pot(std::int32_t x, int exponent);

// gemmlowp internal/output.h::OutputStageEvalImpl<OutputStageQuantizeDownInt32ToUint8Scale> (the
// legacy stage): ((x + offset) * mult_int + rounding) >> shift, rounding = shift < 1 ? 0 :
// 2^(shift-1), every operation in int32 (wraps). The zero-point offset goes in before the
// multiply. Requires 0 <= shift <= 31. Returns the int32 before OutputStageSaturatingCastToUint8.
std::int32_t gemmlowp_quantize_down_int32_to_uint8_scale(std::int32_t x, std::int32_t result_offset,
                                                         std::int32_t result_mult_int, int result_shift);

// ---- TFLite --------------------------------------------------------------------------------

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (double-rounding
// build, the #else branch): RoundingDivideByPOT(SRDHM(x * (1 << left_shift), M), right_shift).
// x * (1 << left_shift) is an int32 multiply and wraps. Requires -31 <= shift <= 30 (1 << 31 is
// undefined and RoundingDivideByPOT asserts exponent <= 31).
std::int32_t tflite_multiply_by_quantized_multiplier_double(std::int32_t x, Q31Multiplier m);

// gemmlowp internal/output.h::OutputStageEvalImpl<OutputStageScaleInt32ByFixedPointAndExponent>
// with the scalar fixedpoint.h (what a build without SIMD fixed point runs, Debian's included):
// RoundingDivideByPOT(SRDHM(ShiftLeft(x, left_shift), M), right_shift), where ShiftLeft computes
// in int64 and saturates to int32 (fixedpoint.h ShiftLeft(tIntegerType, int)); TFLite's version
// above wraps instead. Requires -31 <= shift <= 30.
std::int32_t gemmlowp_scale_by_fixed_point_and_exponent(std::int32_t x, Q31Multiplier m);

// gemmlowp's scalar ShiftLeft: x * 2^left_shift in int64, saturated to int32. 0 <= left_shift <= 30.
std::int32_t gemmlowp_shift_left_saturating(std::int32_t x, int left_shift);

// The int32 pre-shift of the double-rounding build, x * (1 << left_shift), wrapped as int32
// hardware does. Separate so that traces can show the wrap. Requires 0 <= left_shift <= 30.
std::int32_t tflite_left_shift_wrapping(std::int32_t x, int left_shift);

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (#if
// TFLITE_SINGLE_ROUNDING): (x*M + 2^(30-shift)) >> (31-shift) in int64 with an arithmetic shift,
// round half toward +inf. Requires M >= 0 and -31 <= shift <= 30 (the DCHECKs). The result DCHECK
// is compiled out of release builds, whose static_cast<int32_t> wraps; so does this.
std::int32_t tflite_multiply_by_quantized_multiplier_single(std::int32_t x, Q31Multiplier m);

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier(int64_t x, ...) (both
// builds compute the same): the 16-bit reduced multiplier M16 = M < 0x7FFF0000 ? (M + 2^15) >> 16
// : 0x7FFF, then (x*M16 + 2^(14-shift)) >> (15-shift), narrowed to int32 (wraps). Requires
// M >= 0, -31 <= shift < 8 and -2^47 <= x < 2^47.
std::int32_t tflite_multiply_by_quantized_multiplier_int64(std::int64_t x, Q31Multiplier m);

// tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier: q = frexp(real),
// M = round(q * 2^31) half away from zero (TfLiteRound), M == 2^31 -> 2^30 and shift + 1,
// shift < -31 -> (0, 0); the single-rounding build also saturates shift > 30 to (2^31 - 1, 30).
// real == 0 gives (0, 0). Requires a finite real.
Q31Multiplier tflite_quantize_multiplier(double real, TfliteRounding build);

// ---- TOSA ----------------------------------------------------------------------------------

// arm/tosa-specification pseudocode/library/scale_helpers.tosac::apply_scale_32:
// (value*M + 2^(shift-1) [+/- 2^30 by the sign of value when double_round and shift > 31]) >> shift
// in int64. REQUIRE M >= 0, 2 <= shift <= 62, -2^(shift-1) <= value < 2^(shift-1).
std::int32_t tosa_apply_scale_32(std::int32_t value, std::int32_t multiplier, int shift, TosaRounding rounding);

// arm/tosa-specification pseudocode/library/scale_helpers.tosac::apply_scale_16: an int48 value
// times an int16 multiplier, (value*M + 2^(shift-1)) >> shift. REQUIRE M >= 0, 2 <= shift <= 62,
// the result within int32; value must be an int48.
std::int32_t tosa_apply_scale_16(std::int64_t value, std::int16_t multiplier, int shift);

// llvm-project mlir/lib/Dialect/Tosa/Utils/QuantUtils.cpp::computeMultiplierAndShiftTosaScale32:
// m = frexp(scale), M = std::round(m * 2^31) (half away), 2^31 -> 2^30 and exponent + 1,
// shift = 31 - exponent; shift > 62 -> M >>= min(31, shift - 62), shift = 62. Requires a finite scale.
ScaleShift tosa_compute_multiplier_and_shift_scale32(double scale);

// llvm-project mlir/lib/Dialect/Tosa/Utils/QuantUtils.cpp::computeMultiplierAndShiftTosaScale16:
// the same with 15 fraction bits (M = std::round(m * 2^15), shift = 15 - exponent, capped at 62).
ScaleShift tosa_compute_multiplier_and_shift_scale16(double scale);

// ---- XNNPACK / QNNPACK ---------------------------------------------------------------------

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_rndnu and pytorch/QNNPACK
// src/requantization/precise-scalar.c: the f32 scale's 24-bit significand M = (bits & 0x7FFFFF) |
// 0x800000 and s = 127 + 23 - biased_exponent, so that scale == M * 2^-s exactly. Requires a
// positive normal finite f32.
ScaleShift fp32_mantissa_scale(float scale);

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_rndnu, before its clamp:
// (int32_t) asr(acc*M + 2^(s-1), s), round half toward +inf, exact with respect to the f32 scale.
// The (int32_t) cast of the int64 wraps; this models it. Requires 2^23 <= M < 2^24, 16 <= s < 56
// (the asserts scale < 256 and scale >= 2^-32).
std::int32_t xnnpack_rndnu_multiply_shift(std::int32_t acc, ScaleShift m);

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_fp32: lrintf(clamp((float)acc *
// scale, qmin - zp, qmax - zp)) + zp in hardware binary32 (RNE; the oracle builds with
// -ffp-contract=off, so the multiply is one IEEE operation). A literal transcription, used to
// validate the oracle's exact float recipe. Requires 2^-32 <= scale < 256 and zp inside `out`.
std::int32_t xnnpack_requantize_fp32(std::int32_t acc, float scale, std::int32_t zero_point, IntRange out);

// pytorch/QNNPACK src/requantization/precise-scalar.c::qnnp_requantize_precise__scalar_signed64,
// before its clamp: asr(acc*M - (acc < 0) + 2^(s-1), s), i.e. round half away from zero, exact with
// respect to the f32 scale. Requires 2^23 <= M < 2^24 and 24 <= s < 56 (scale < 1).
std::int32_t qnnpack_precise_multiply_shift(std::int32_t acc, ScaleShift m);

// pytorch/QNNPACK src/qnnpack/requantization.h::qnnp_compute_scalar_requantization_params: the
// Q31 multiplier (mantissa24 << 7) and post shift 127 + 31 - 32 - biased_exponent, returned in the
// TFLite convention (shift = -post_shift). Requires 2^-32 <= scale < 1.
Q31Multiplier qnnpack_q31_multiplier(float scale);

// pytorch/QNNPACK src/qnnpack/requantization.h::qnnp_q31_requantize, before its clamp: q31 =
// (acc*M + 2^30) >> 31 (round half up), then asr(q31, s) + (remainder > threshold) with the
// remainder corrected by the sign of acc (round half away). Requires 2^30 <= M < 2^31 and
// 0 <= s = -m.shift <= 31.
std::int32_t qnnpack_q31_multiply_shift(std::int32_t acc, Q31Multiplier m);

// ---- Glow ----------------------------------------------------------------------------------

// pytorch/glow lib/Quantization/Base/Base.cpp::quantizeScaleOffset32To8 (the version with the
// power-of-two special case): powers of two give (0, 0, int(scale)) or (0, -exp, 1); otherwise
// post grows while scale < 0.5 or (scale < 256 and post < 15), pre while scale < 255 and
// pre < post / 2 (each step scale *= 2 in float, exact), S = std::round(scale) (half away).
// Requires a positive finite scale whose S fits int32.
GlowScale glow_quantize_scale_offset_32_to_8(float scale);

// pytorch/glow lib/LLVMIRCodeGen/libjit/libjit_defs.h::libjit_scale_i32i8:
// ((((x >> pre) * S) + rtn) >> post) + offset with rtn = post > 0 ? 2^(post-1) : 0, every operation
// in int32: the pre-shift floors, the multiply and the adds wrap. Returns the int32 before
// libjit_clip. Requires 0 <= pre, post <= 31.
std::int32_t glow_libjit_scale_i32i8(std::int32_t x, GlowScale s, std::int32_t offset);

// ---- FBGEMM --------------------------------------------------------------------------------

// pytorch/FBGEMM src/QuantUtils.cc::ChooseRequantizationMultiplier: s = 31; real *= 2 while < 0.5f,
// real /= 2 while > 1.f (in float, exact); q = nearbyint(real * 2^(precision-1)) (RNE);
// q == 2^(precision-1) -> q / 2, s - 1. Returns (q, s): real ~= q * 2^-s. Requires real > 0 finite
// and 2 <= precision <= 32.
ScaleShift fbgemm_choose_requantization_multiplier(float real, int precision = 32);

// pytorch/FBGEMM src/QuantUtils.cc::SaturatingRoundingMulWithShift: (a*b + 2^(rs-1)) >> rs in
// int64, round half toward +inf. Requires 1 <= right_shift <= 62.
std::int64_t fbgemm_saturating_rounding_mul_with_shift(std::int32_t a, std::int32_t b, int right_shift);

// ---- StableHLO -----------------------------------------------------------------------------

// openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp::matchAndRewriteDotLikeOp:
// the combined scale (computed in double by the caller) is skipped when |combined - 1| <= 0.001,
// otherwise it becomes an f32 constant (getF32FloatAttr: a cast, RNE). nullopt means "no scaling".
std::optional<float> stablehlo_dot_combined_scale(double combined);

// openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp::matchAndRewriteDotLikeOp:
// convert i32 -> f32 (RNE), multiply by the f32 combined scale, convert f32 -> i32, which truncates
// toward zero (StableHLO `convert` semantics). The spec leaves out-of-range conversions open; this
// saturates them to int32 (such an element is far outside every narrower output range anyway).
std::int32_t stablehlo_scale_and_truncate(std::int32_t value, float combined_scale);

// ---- Unchecked kernels -----------------------------------------------------------------------
//
// The arithmetic of the functions above, inline and without their precondition checks: each
// checked function is its require() lines plus one call of its kernel here, so every rule has one
// definition. The requantize fast path calls these directly after establishing the preconditions
// once per channel (and per element where they depend on the value, see requantize.cpp).
namespace unchecked {

// Two's-complement wrap into int32 (C++20 defines the conversion as modular): what an int32
// operation that the source leaves to the hardware (signed overflow) produces.
constexpr std::int32_t wrap_int32(std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }

// C++20 >> on a negative signed integer is an arithmetic shift (floor division by 2^s).
constexpr std::int64_t arithmetic_shift_right(std::int64_t v, int s) { return v >> s; }

constexpr std::int32_t gemmlowp_saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<std::int32_t>::min();
  const std::int64_t ab = static_cast<std::int64_t>(a) * b;
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  const std::int64_t high = (ab + nudge) / (std::int64_t{1} << 31);  // C++ division truncates toward zero
  return overflow ? std::numeric_limits<std::int32_t>::max() : static_cast<std::int32_t>(high);
}

// 0 <= exponent <= 31.
constexpr std::int32_t gemmlowp_rounding_divide_by_pot(std::int32_t x, int exponent) {
  const auto mask = static_cast<std::int32_t>((std::int64_t{1} << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// 0 <= result_shift <= 31.
constexpr std::int32_t gemmlowp_quantize_down_int32_to_uint8_scale(std::int32_t x, std::int32_t result_offset,
                                                                   std::int32_t result_mult_int, int result_shift) {
  const std::int32_t rounding = result_shift < 1 ? 0 : static_cast<std::int32_t>(std::int64_t{1} << (result_shift - 1));
  const std::int32_t offset_added = wrap_int32(std::int64_t{x} + result_offset);
  const std::int32_t multiplied = wrap_int32(std::int64_t{offset_added} * result_mult_int);
  const std::int32_t rounded = wrap_int32(std::int64_t{multiplied} + rounding);
  return rounded >> result_shift;
}

// 0 <= left_shift <= 30.
constexpr std::int32_t tflite_left_shift_wrapping(std::int32_t x, int left_shift) {
  return wrap_int32(std::int64_t{x} * (std::int64_t{1} << left_shift));
}

// gemmlowp fixedpoint.h ShiftLeft(int32, exponent), the scalar version: the product in int64,
// saturated to int32 (the SSE/AVX versions, _mm_slli_epi32, wrap instead). 0 <= left_shift <= 30.
constexpr std::int32_t gemmlowp_shift_left_saturating(std::int32_t x, int left_shift) {
  const std::int64_t wide = std::int64_t{x} * (std::int64_t{1} << left_shift);
  constexpr std::int64_t lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
  return static_cast<std::int32_t>(wide > hi ? hi : wide < lo ? lo : wide);
}

// gemmlowp internal/output.h OutputStageScaleInt32ByFixedPointAndExponent, scalar:
// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(ShiftLeft(x, ls), M), rs), the shift saturating.
// -31 <= m.shift <= 30.
constexpr std::int32_t gemmlowp_scale_by_fixed_point_and_exponent(std::int32_t x, Q31Multiplier m) {
  const int left_shift = m.shift > 0 ? m.shift : 0;
  const int right_shift = m.shift > 0 ? 0 : -m.shift;
  return gemmlowp_rounding_divide_by_pot(
      gemmlowp_saturating_rounding_doubling_high_mul(gemmlowp_shift_left_saturating(x, left_shift), m.multiplier),
      right_shift);
}

// -31 <= m.shift <= 30.
constexpr std::int32_t tflite_multiply_by_quantized_multiplier_double(std::int32_t x, Q31Multiplier m) {
  const int left_shift = m.shift > 0 ? m.shift : 0;
  const int right_shift = m.shift > 0 ? 0 : -m.shift;
  return gemmlowp_rounding_divide_by_pot(
      gemmlowp_saturating_rounding_doubling_high_mul(tflite_left_shift_wrapping(x, left_shift), m.multiplier),
      right_shift);
}

// m.multiplier >= 0, -31 <= m.shift <= 30.
constexpr std::int32_t tflite_multiply_by_quantized_multiplier_single(std::int32_t x, Q31Multiplier m) {
  const int total_shift = 31 - m.shift;
  const std::int64_t round = std::int64_t{1} << (total_shift - 1);
  return wrap_int32(arithmetic_shift_right(std::int64_t{x} * m.multiplier + round, total_shift));
}

// m.multiplier >= 0, -31 <= m.shift < 8, -2^47 <= x < 2^47.
constexpr std::int32_t tflite_multiply_by_quantized_multiplier_int64(std::int64_t x, Q31Multiplier m) {
  const std::int64_t reduced = m.multiplier < 0x7FFF0000 ? (std::int64_t{m.multiplier} + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - m.shift;
  const std::int64_t round = std::int64_t{1} << (total_shift - 1);
  return wrap_int32(arithmetic_shift_right(x * reduced + round, total_shift));
}

// multiplier >= 0, 2 <= shift <= 62, -2^(shift-1) <= value < 2^(shift-1).
constexpr std::int32_t tosa_apply_scale_32(std::int32_t value, std::int32_t multiplier, int shift,
                                           TosaRounding rounding) {
  std::int64_t round = std::int64_t{1} << (shift - 1);
  if (rounding == TosaRounding::double_round && shift > 31) round += value >= 0 ? (1 << 30) : -(1 << 30);
  const std::int64_t result = arithmetic_shift_right(std::int64_t{value} * multiplier + round, shift);
  return static_cast<std::int32_t>(result);  // fits: |value| < 2^(shift-1) and multiplier < 2^31
}

// multiplier >= 0, 2 <= shift <= 62, value an int48. The result before the REQUIRE that it fits
// int32 (the caller checks it).
constexpr std::int64_t tosa_apply_scale_16(std::int64_t value, std::int16_t multiplier, int shift) {
  const std::int64_t round = std::int64_t{1} << (shift - 1);
  return arithmetic_shift_right(value * multiplier + round, shift);
}

// 2^23 <= m.multiplier < 2^24, 16 <= m.right_shift < 56.
constexpr std::int32_t xnnpack_rndnu_multiply_shift(std::int32_t acc, ScaleShift m) {
  const std::int64_t rounding = std::int64_t{1} << (m.right_shift - 1);
  return wrap_int32(arithmetic_shift_right(std::int64_t{acc} * m.multiplier + rounding, m.right_shift));
}

// 2^23 <= m.multiplier < 2^24, 24 <= m.right_shift < 56.
constexpr std::int32_t qnnpack_precise_multiply_shift(std::int32_t acc, ScaleShift m) {
  const std::int64_t product = std::int64_t{acc} * m.multiplier;
  const std::int64_t adjusted = product - (acc < 0 ? 1 : 0);  // turns round-half-up into half-away
  const std::int64_t rounding = std::int64_t{1} << (m.right_shift - 1);
  return static_cast<std::int32_t>(arithmetic_shift_right(adjusted + rounding, m.right_shift));
}

// 2^30 <= m.multiplier < 2^31, 0 <= -m.shift <= 31.
constexpr std::int32_t qnnpack_q31_multiply_shift(std::int32_t acc, Q31Multiplier m) {
  const int shift = -m.shift;
  const std::int64_t product = std::int64_t{acc} * m.multiplier;
  // (int32_t)(uint32_t)((uint64_t)(product + 2^30) >> 31): the low 32 bits of the logical shift
  // equal those of the arithmetic shift, and |product| < 2^62 makes the quotient fit int32.
  const auto q31product = static_cast<std::int32_t>(arithmetic_shift_right(product + (std::int64_t{1} << 30), 31));
  const auto remainder_mask = static_cast<std::int32_t>((std::uint32_t{1} << shift) - 1u);
  const std::int32_t remainder_threshold = static_cast<std::int32_t>(static_cast<std::uint32_t>(remainder_mask) >> 1);
  const std::int32_t remainder = (q31product & remainder_mask) - (acc < 0 ? 1 : 0);
  return (q31product >> shift) + (remainder > remainder_threshold ? 1 : 0);
}

// 0 <= s.pre_shift, s.post_shift <= 31.
constexpr std::int32_t glow_libjit_scale_i32i8(std::int32_t x, GlowScale s, std::int32_t offset) {
  const std::int32_t rtn = s.post_shift > 0 ? static_cast<std::int32_t>(std::int64_t{1} << (s.post_shift - 1)) : 0;
  const std::int32_t pre_shifted = x >> s.pre_shift;
  const std::int32_t multiplied = wrap_int32(std::int64_t{pre_shifted} * s.scale);
  const std::int32_t rounded = wrap_int32(std::int64_t{multiplied} + rtn);
  return wrap_int32(std::int64_t{rounded >> s.post_shift} + offset);
}

// 1 <= right_shift <= 62.
constexpr std::int64_t fbgemm_saturating_rounding_mul_with_shift(std::int32_t a, std::int32_t b, int right_shift) {
  const std::int64_t nudge = std::int64_t{1} << (right_shift - 1);
  return arithmetic_shift_right(std::int64_t{a} * b + nudge, right_shift);
}

// A finite combined_scale. The f32 multiply is one IEEE operation: the oracle is built with
// -ffp-contract=off and SSE arithmetic (FLT_EVAL_METHOD 0).
inline std::int32_t stablehlo_scale_and_truncate(std::int32_t value, float combined_scale) {
  const float scaled = static_cast<float>(value) * combined_scale;
  if (scaled >= 0x1.0p31f) return std::numeric_limits<std::int32_t>::max();
  if (scaled < -0x1.0p31f) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(scaled);  // truncates toward zero
}

}  // namespace unchecked

}  // namespace qc
