#include "oracles/fixed_point.hpp"

#include "oracles/exact.hpp"
#include "oracles/format.hpp"
#include "oracles/rounding.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

namespace qc {

namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// A source's precondition (REQUIRE / assert / DCHECK on its inputs): a violation is bad input.
void require(bool ok, std::string_view function, std::string_view condition, const std::string& got) {
  if (!ok) throw InputError(std::string(function) + ": requires " + std::string(condition) + " (got " + got + ")");
}

std::string str(std::int64_t v) { return std::to_string(v); }
std::string real_str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

using unchecked::arithmetic_shift_right;

// round(v * 2^bits) half away from zero (std::round / TfLiteRound of an exactly scaled double).
BigInt round_scaled_half_away(double v, int bits) {
  return round_to_integer(Rational(v) * pow2(bits), RoundingMode::rna);
}

// MLIR's computeMultiplierAndShiftTosaScale32/16 differ only in the fraction bits.
ScaleShift tosa_compute_multiplier_and_shift(double scale, int bits, std::string_view function) {
  require(std::isfinite(scale), function, "a finite scale", real_str(scale));
  int exponent = 0;
  const double mantissa = std::frexp(scale, &exponent);
  BigInt shifted = round_scaled_half_away(mantissa, bits);
  const BigInt one = BigInt(1) << bits;
  if (shifted == one) {  // "Can't be greater than 1.0": a mantissa that rounds up to 1.0 is halved
    shifted /= 2;
    ++exponent;
  }
  ScaleShift r{shifted.convert_to<std::int64_t>(), bits - exponent};
  if (r.right_shift > 62) {  // "Shifting tops out at 62 bits"
    r.multiplier = arithmetic_shift_right(r.multiplier, std::min(31, r.right_shift - 62));
    r.right_shift = 62;
  }
  return r;
}

std::uint32_t f32_bits(float v) { return std::bit_cast<std::uint32_t>(v); }

}  // namespace

// ---- gemmlowp ------------------------------------------------------------------------------

// gemmlowp fixedpoint/fixedpoint.h::SaturatingRoundingDoublingHighMul
std::int32_t gemmlowp_saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  return unchecked::gemmlowp_saturating_rounding_doubling_high_mul(a, b);
}

// gemmlowp fixedpoint/fixedpoint.h::RoundingDivideByPOT
std::int32_t gemmlowp_rounding_divide_by_pot(std::int32_t x, int exponent) {
  require(exponent >= 0 && exponent <= 31, "gemmlowp_rounding_divide_by_pot", "0 <= exponent <= 31", str(exponent));
  return unchecked::gemmlowp_rounding_divide_by_pot(x, exponent);
}

// gemmlowp internal/output.h::OutputStageEvalImpl<OutputStageQuantizeDownInt32ToUint8Scale>
std::int32_t gemmlowp_quantize_down_int32_to_uint8_scale(std::int32_t x, std::int32_t result_offset,
                                                         std::int32_t result_mult_int, int result_shift) {
  require(result_shift >= 0 && result_shift <= 31, "gemmlowp_quantize_down_int32_to_uint8_scale",
          "0 <= result_shift <= 31", str(result_shift));
  return unchecked::gemmlowp_quantize_down_int32_to_uint8_scale(x, result_offset, result_mult_int, result_shift);
}

// ---- TFLite --------------------------------------------------------------------------------

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (double rounding)
std::int32_t gemmlowp_shift_left_saturating(std::int32_t x, int left_shift) {
  require(left_shift >= 0 && left_shift <= 30, "gemmlowp_shift_left_saturating", "0 <= left_shift <= 30",
          str(left_shift));
  return unchecked::gemmlowp_shift_left_saturating(x, left_shift);
}

std::int32_t gemmlowp_scale_by_fixed_point_and_exponent(std::int32_t x, Q31Multiplier m) {
  require(m.shift >= -31 && m.shift <= 30, "gemmlowp_scale_by_fixed_point_and_exponent", "-31 <= shift <= 30",
          str(m.shift));
  return unchecked::gemmlowp_scale_by_fixed_point_and_exponent(x, m);
}

std::int32_t tflite_left_shift_wrapping(std::int32_t x, int left_shift) {
  require(left_shift >= 0 && left_shift <= 30, "tflite_left_shift_wrapping", "0 <= left_shift <= 30", str(left_shift));
  return unchecked::tflite_left_shift_wrapping(x, left_shift);
}

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (#else: double rounding)
std::int32_t tflite_multiply_by_quantized_multiplier_double(std::int32_t x, Q31Multiplier m) {
  require(m.shift >= -31 && m.shift <= 30, "tflite_multiply_by_quantized_multiplier_double", "-31 <= shift <= 30",
          str(m.shift));
  return unchecked::tflite_multiply_by_quantized_multiplier_double(x, m);
}

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier (TFLITE_SINGLE_ROUNDING)
std::int32_t tflite_multiply_by_quantized_multiplier_single(std::int32_t x, Q31Multiplier m) {
  constexpr std::string_view fn = "tflite_multiply_by_quantized_multiplier_single";
  require(m.multiplier >= 0, fn, "quantized_multiplier >= 0", str(m.multiplier));
  require(m.shift >= -31 && m.shift <= 30, fn, "-31 <= shift <= 30", str(m.shift));
  return unchecked::tflite_multiply_by_quantized_multiplier_single(x, m);
}

// tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier(int64_t x, ...)
std::int32_t tflite_multiply_by_quantized_multiplier_int64(std::int64_t x, Q31Multiplier m) {
  constexpr std::string_view fn = "tflite_multiply_by_quantized_multiplier_int64";
  require(m.multiplier >= 0, fn, "quantized_multiplier >= 0", str(m.multiplier));
  require(m.shift >= -31 && m.shift < 8, fn, "-31 <= shift < 8", str(m.shift));
  require(x >= -(std::int64_t{1} << 47) && x < (std::int64_t{1} << 47), fn, "-2^47 <= x < 2^47", str(x));
  return unchecked::tflite_multiply_by_quantized_multiplier_int64(x, m);
}

// tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier
Q31Multiplier tflite_quantize_multiplier(double real, TfliteRounding build) {
  require(std::isfinite(real), "tflite_quantize_multiplier", "a finite multiplier", real_str(real));
  if (real == 0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(real, &shift);
  BigInt q_fixed = round_scaled_half_away(q, 31);
  const BigInt two31 = BigInt(1) << 31;
  if (q_fixed == two31) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {  // every bit would be shifted out: flushed to zero
    shift = 0;
    q_fixed = 0;
  }
  if (build == TfliteRounding::single_rounding && shift > 30) {
    shift = 30;
    q_fixed = two31 - 1;
  }
  return {static_cast<std::int32_t>(q_fixed.convert_to<std::int64_t>()), shift};
}

// ---- TOSA ----------------------------------------------------------------------------------

// arm/tosa-specification pseudocode/library/scale_helpers.tosac::apply_scale_32
std::int32_t tosa_apply_scale_32(std::int32_t value, std::int32_t multiplier, int shift, TosaRounding rounding) {
  constexpr std::string_view fn = "tosa_apply_scale_32";
  require(multiplier >= 0, fn, "REQUIRE(multiplier >= 0)", str(multiplier));
  require(shift >= 2 && shift <= 62, fn, "REQUIRE(2 <= shift && shift <= 62)", str(shift));
  const std::int64_t half = std::int64_t{1} << (shift - 1);
  require(value >= -half && value < half, fn, "REQUIRE(value >= (-1 << (shift - 1)) && value < (1 << (shift - 1)))",
          "value " + str(value) + ", shift " + str(shift));
  return unchecked::tosa_apply_scale_32(value, multiplier, shift, rounding);
}

// arm/tosa-specification pseudocode/library/scale_helpers.tosac::apply_scale_16
std::int32_t tosa_apply_scale_16(std::int64_t value, std::int16_t multiplier, int shift) {
  constexpr std::string_view fn = "tosa_apply_scale_16";
  require(multiplier >= 0, fn, "REQUIRE(multiplier >= 0)", str(multiplier));
  require(shift >= 2 && shift <= 62, fn, "REQUIRE(2 <= shift && shift <= 62)", str(shift));
  require(value >= -(std::int64_t{1} << 47) && value < (std::int64_t{1} << 47), fn, "an int48 value", str(value));
  const std::int64_t result = unchecked::tosa_apply_scale_16(value, multiplier, shift);
  require(result >= kInt32Min && result <= kInt32Max, fn,
          "REQUIRE(result >= minimum<int32_t> && result <= maximum<int32_t>)", str(result));
  return static_cast<std::int32_t>(result);
}

// llvm-project mlir/lib/Dialect/Tosa/Utils/QuantUtils.cpp::computeMultiplierAndShiftTosaScale32
ScaleShift tosa_compute_multiplier_and_shift_scale32(double scale) {
  return tosa_compute_multiplier_and_shift(scale, 31, "tosa_compute_multiplier_and_shift_scale32");
}

// llvm-project mlir/lib/Dialect/Tosa/Utils/QuantUtils.cpp::computeMultiplierAndShiftTosaScale16
ScaleShift tosa_compute_multiplier_and_shift_scale16(double scale) {
  return tosa_compute_multiplier_and_shift(scale, 15, "tosa_compute_multiplier_and_shift_scale16");
}

// ---- XNNPACK / QNNPACK ---------------------------------------------------------------------

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_rndnu (multiplier and shift)
ScaleShift fp32_mantissa_scale(float scale) {
  require(scale > 0 && std::isnormal(scale), "fp32_mantissa_scale", "a positive normal f32 scale",
          real_str(static_cast<double>(scale)));
  const std::uint32_t bits = f32_bits(scale);
  const std::int64_t multiplier = (bits & 0x007FFFFFu) | 0x00800000u;
  return {multiplier, 127 + 23 - static_cast<int>(bits >> 23)};
}

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_rndnu
std::int32_t xnnpack_rndnu_multiply_shift(std::int32_t acc, ScaleShift m) {
  constexpr std::string_view fn = "xnnpack_rndnu_multiply_shift";
  require(m.multiplier >= (1 << 23) && m.multiplier < (1 << 24), fn, "a 24-bit significand 2^23 <= M < 2^24",
          str(m.multiplier));
  require(m.right_shift >= 16 && m.right_shift < 56, fn, "16 <= shift < 56 (2^-32 <= scale < 256)", str(m.right_shift));
  return unchecked::xnnpack_rndnu_multiply_shift(acc, m);
}

// google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_fp32
std::int32_t xnnpack_requantize_fp32(std::int32_t acc, float scale, std::int32_t zero_point, IntRange out) {
  constexpr std::string_view fn = "xnnpack_requantize_fp32";
  require(scale >= 0x1.0p-32f && scale < 256.0f, fn, "2^-32 <= scale < 256", real_str(static_cast<double>(scale)));
  require(zero_point >= out.lo && zero_point <= out.hi, fn, "a zero point inside the output range", str(zero_point));
  const auto min_less_zero_point = static_cast<float>(out.lo - zero_point);
  const auto max_less_zero_point = static_cast<float>(out.hi - zero_point);
  float scaled = static_cast<float>(acc) * scale;
  scaled = std::max(scaled, min_less_zero_point);
  scaled = std::min(scaled, max_less_zero_point);
  return static_cast<std::int32_t>(std::lrintf(scaled)) + zero_point;
}

// pytorch/QNNPACK src/requantization/precise-scalar.c::qnnp_requantize_precise__scalar_signed64
std::int32_t qnnpack_precise_multiply_shift(std::int32_t acc, ScaleShift m) {
  constexpr std::string_view fn = "qnnpack_precise_multiply_shift";
  require(m.multiplier >= (1 << 23) && m.multiplier < (1 << 24), fn, "a 24-bit significand 2^23 <= M < 2^24",
          str(m.multiplier));
  require(m.right_shift >= 24 && m.right_shift < 56, fn, "24 <= shift < 56 (2^-32 <= scale < 1)", str(m.right_shift));
  return unchecked::qnnpack_precise_multiply_shift(acc, m);
}

// pytorch/QNNPACK src/qnnpack/requantization.h::qnnp_compute_scalar_requantization_params
Q31Multiplier qnnpack_q31_multiplier(float scale) {
  constexpr std::string_view fn = "qnnpack_q31_multiplier";
  require(scale >= 0x1.0p-32f && scale < 1.0f, fn, "2^-32 <= scale < 1", real_str(static_cast<double>(scale)));
  const std::uint32_t bits = f32_bits(scale);
  const auto multiplier = static_cast<std::int32_t>(((bits & 0x007FFFFFu) | 0x00800000u) << 7);
  const int shift = 127 + 31 - 32 - static_cast<int>(bits >> 23);
  return {multiplier, -shift};
}

// pytorch/QNNPACK src/qnnpack/requantization.h::qnnp_q31_requantize
std::int32_t qnnpack_q31_multiply_shift(std::int32_t acc, Q31Multiplier m) {
  constexpr std::string_view fn = "qnnpack_q31_multiply_shift";
  require(m.multiplier >= (1 << 30), fn, "2^30 <= multiplier < 2^31", str(m.multiplier));
  const int shift = -m.shift;
  require(shift >= 0 && shift <= 31, fn, "0 <= shift <= 31", str(shift));
  return unchecked::qnnpack_q31_multiply_shift(acc, m);
}

// ---- Glow ----------------------------------------------------------------------------------

// pytorch/glow lib/Quantization/Base/Base.cpp::quantizeScaleOffset32To8
GlowScale glow_quantize_scale_offset_32_to_8(float scale) {
  constexpr std::string_view fn = "glow_quantize_scale_offset_32_to_8";
  require(scale > 0 && std::isfinite(scale), fn, "a positive finite scale", real_str(static_cast<double>(scale)));
  int frexp_exponent = 0;
  const bool power_of_two = std::fabs(std::frexp(scale, &frexp_exponent)) == 0.5f;  // isFloatPowerOf2
  if (power_of_two) {
    const int exp = std::ilogb(scale);  // getFloat2Exp
    if (exp > 0) {
      require(scale < 0x1.0p31f, fn, "a power-of-two scale below 2^31", real_str(static_cast<double>(scale)));
      return {0, 0, static_cast<std::int32_t>(scale)};
    }
    return {0, -exp, 1};
  }
  int pre_shift = 0;
  int post_shift = 0;
  while (scale < 0.5f || (scale < 256.0f && post_shift < 15)) {
    scale *= 2.0f;  // exact in binary32
    ++post_shift;
  }
  while (scale < 255.0f && pre_shift < post_shift / 2) {
    scale *= 2.0f;
    ++pre_shift;
  }
  const BigInt s = round_to_integer(Rational(static_cast<double>(scale)), RoundingMode::rna);  // std::round
  require(s <= kInt32Max, fn, "an integer scale that fits int32", s.str());
  return {pre_shift, post_shift, static_cast<std::int32_t>(s.convert_to<std::int64_t>())};
}

// pytorch/glow lib/LLVMIRCodeGen/libjit/libjit_defs.h::libjit_scale_i32i8
std::int32_t glow_libjit_scale_i32i8(std::int32_t x, GlowScale s, std::int32_t offset) {
  constexpr std::string_view fn = "glow_libjit_scale_i32i8";
  require(s.pre_shift >= 0 && s.pre_shift <= 31, fn, "0 <= pre <= 31", str(s.pre_shift));
  require(s.post_shift >= 0 && s.post_shift <= 31, fn, "0 <= post <= 31", str(s.post_shift));
  return unchecked::glow_libjit_scale_i32i8(x, s, offset);
}

// ---- FBGEMM --------------------------------------------------------------------------------

// pytorch/FBGEMM src/QuantUtils.cc::ChooseRequantizationMultiplier
ScaleShift fbgemm_choose_requantization_multiplier(float real, int precision) {
  constexpr std::string_view fn = "fbgemm_choose_requantization_multiplier";
  require(real > 0 && std::isfinite(real), fn, "a positive finite real_multiplier",
          real_str(static_cast<double>(real)));
  require(precision >= 2 && precision <= 32, fn, "2 <= requantization_multiplier_precision <= 32", str(precision));
  int s = 31;
  while (real < 0.5f) {
    real *= 2.0f;
    ++s;
  }
  while (real > 1.0f) {
    real /= 2.0f;
    --s;
  }
  // real * (1ll << (precision - 1)) is a float product by a power of two (exact); nearbyint is RNE.
  BigInt q = round_to_integer(Rational(static_cast<double>(real)) * pow2(precision - 1), RoundingMode::rne);
  if (q == BigInt(1) << (precision - 1)) {
    q /= 2;
    --s;
  }
  require(s >= 0 && s < 64, fn, "0 <= right_shift < 64", str(s));
  require(q <= kInt32Max, fn, "a multiplier that fits int32", q.str());
  return {q.convert_to<std::int64_t>(), s};
}

// pytorch/FBGEMM src/QuantUtils.cc::SaturatingRoundingMulWithShift
std::int64_t fbgemm_saturating_rounding_mul_with_shift(std::int32_t a, std::int32_t b, int right_shift) {
  require(right_shift >= 1 && right_shift <= 62, "fbgemm_saturating_rounding_mul_with_shift", "1 <= right_shift <= 62",
          str(right_shift));
  return unchecked::fbgemm_saturating_rounding_mul_with_shift(a, b, right_shift);
}

// ---- StableHLO -----------------------------------------------------------------------------

// openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp::matchAndRewriteDotLikeOp
std::optional<float> stablehlo_dot_combined_scale(double combined) {
  require(std::isfinite(combined), "stablehlo_dot_combined_scale", "a finite combined scale", real_str(combined));
  if (std::abs(combined - 1.0) <= 0.001) return std::nullopt;
  const auto f = static_cast<float>(combined);
  require(std::isfinite(f), "stablehlo_dot_combined_scale", "a combined scale inside the f32 range",
          real_str(combined));
  return f;
}

// openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp::matchAndRewriteDotLikeOp
std::int32_t stablehlo_scale_and_truncate(std::int32_t value, float combined_scale) {
  require(std::isfinite(combined_scale), "stablehlo_scale_and_truncate", "a finite combined scale",
          real_str(static_cast<double>(combined_scale)));
  return unchecked::stablehlo_scale_and_truncate(value, combined_scale);
}

}  // namespace qc
