// oracles/fixed_point.cpp against the public definitions it transcribes (cited above each
// function in fixed_point.hpp; docs/numerics.md "Requantization schemes in real implementations").
// Every expected value is derived by hand from the cited source's formula; the derivation is in
// the comment next to it. The random tests compare against an independent evaluation of the
// *definition* on BigInt (floor division only, written below), never against another function of
// the oracle.
#include "oracles/fixed_point.hpp"

#include "cases/generators.hpp"
#include "oracles/exact.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qc {
namespace {

constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t k2p30 = 1 << 30;

// ---- An independent reference: the definitions as floor divisions on BigInt ---------------------

BigInt floor_div(const BigInt& n, const BigInt& d) {  // d > 0
  BigInt q = n / d;                                   // truncates
  if (q * d > n) q -= 1;
  return q;
}
BigInt pow2i(int e) { return BigInt(1) << e; }
// n/d rounded half toward +inf: floor(n/d + 1/2).
BigInt div_half_up(const BigInt& n, const BigInt& d) { return floor_div(2 * n + d, 2 * d); }
// n/d rounded half away from zero.
BigInt div_half_away(const BigInt& n, const BigInt& d) {
  return n >= 0 ? floor_div(2 * n + d, 2 * d) : BigInt(-floor_div(-2 * n + d, 2 * d));
}

// gemmlowp double rounding by its definition: RHU(x * 2^ls * M / 2^31), then RNA(. / 2^rs).
BigInt reference_double(std::int32_t x, std::int32_t m, int shift) {
  const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
  const BigInt high = div_half_up(BigInt(x) * pow2i(ls) * m, pow2i(31));
  return div_half_away(high, pow2i(rs));
}
// Single rounding by its definition: RHU(x * M / 2^(31 - shift)).
BigInt reference_single(std::int32_t x, std::int32_t m, int shift) {
  return div_half_up(BigInt(x) * m, pow2i(31 - shift));
}

// ---- gemmlowp -------------------------------------------------------------------------------------

TEST(GemmlowpSrdhm, RoundsHalfTowardPlusInfinity) {
  // SRDHM(a, b) = (a*b + nudge) / 2^31 truncating, nudge = 2^30 if a*b >= 0 else 1 - 2^30.
  // a*b/2^31 = -0.5: a = -2^30, b = 1: (-2^30 + 1 - 2^30) / 2^31 = (-2^31 + 1) / 2^31 -> trunc 0.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(-k2p30, 1), 0);
  // -1.5: a = -3*2^29, b = 2: a*b = -3*2^30; (-3*2^30 + 1 - 2^30) / 2^31 = (-2^32 + 1) / 2^31 -> trunc -1.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(-3 * (1 << 29), 2), -1);
  // 0.5: a = 2^30, b = 1: (2^30 + 2^30) / 2^31 = 1.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(k2p30, 1), 1);
  // 1.5: a = 3*2^29, b = 2: (3*2^30 + 2^30) / 2^31 = 2.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(3 * (1 << 29), 2), 2);
  // -1.25: a = -5*2^28, b = 2: (-5*2^29 + 1 - 2^30) / 2^31 = -(7*2^29 - 1)/2^31 = -1.749.. -> trunc -1.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(-5 * (1 << 28), 2), -1);
}

TEST(GemmlowpSrdhm, SaturatesOnlyMinTimesMin) {
  // INT_MIN * INT_MIN = 2^62 would be 2^31 after the doubling high half: saturated to INT_MAX.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(kMin, kMin), kMax);
  // INT_MIN * INT_MAX / 2^31 = -(2^31 - 1) exactly; the nudge 1 - 2^30 leaves -2^31 + 1 + (1 - 2^30)/2^31,
  // which truncates to -2^31 + 1.
  EXPECT_EQ(gemmlowp_saturating_rounding_doubling_high_mul(kMin, kMax), kMin + 1);
}

TEST(GemmlowpRdbpot, RoundsHalfAwayFromZero) {
  // RDBPOT(x, e) = (x >> e) + (remainder > threshold), remainder = x & mask,
  // threshold = (mask >> 1) + (x < 0), mask = 2^e - 1.
  // -1 / 2 = -0.5: -1 >> 1 = -1, remainder 1, threshold 0 + 1 = 1, 1 > 1 false -> -1.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(-1, 1), -1);
  // -5 / 2 = -2.5: -5 >> 1 = -3, remainder 1, threshold 1 -> -3.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(-5, 1), -3);
  // 5 / 2 = 2.5: 5 >> 1 = 2, remainder 1, threshold 0, 1 > 0 -> 3.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(5, 1), 3);
  // -3 / 4 = -0.75: -3 >> 2 = -1, remainder 1, threshold 1 + 1 = 2 -> -1.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(-3, 2), -1);
  // -6 / 4 = -1.5: -6 >> 2 = -2, remainder 2, threshold 2 -> -2.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(-6, 2), -2);
  // exponent 0 is the identity.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(-7, 0), -7);
  // exponent 31: INT_MIN / 2^31 = -1 exactly.
  EXPECT_EQ(gemmlowp_rounding_divide_by_pot(kMin, 31), -1);
  EXPECT_THROW(gemmlowp_rounding_divide_by_pot(1, 32), InputError);
  EXPECT_THROW(gemmlowp_rounding_divide_by_pot(1, -1), InputError);
}

TEST(GemmlowpLegacyStage, AddsTheOffsetBeforeTheMultiply) {
  // ((x + offset) * mult + 2^(shift-1)) >> shift in int32.
  // (10 - 3) * 3 = 21, + 1 = 22, >> 1 = 11 (10.5 rounds half up).
  EXPECT_EQ(gemmlowp_quantize_down_int32_to_uint8_scale(10, -3, 3, 1), 11);
  // (-10 + 3) * 3 = -21, + 1 = -20, >> 1 = -10 (-10.5 rounds half up).
  EXPECT_EQ(gemmlowp_quantize_down_int32_to_uint8_scale(-10, 3, 3, 1), -10);
  // shift 0: no rounding term; 2^30 + 2^30 = 2^31 wraps to INT_MIN in int32.
  EXPECT_EQ(gemmlowp_quantize_down_int32_to_uint8_scale(k2p30, k2p30, 1, 0), kMin);
}

// ---- TFLite ---------------------------------------------------------------------------------------

TEST(TfliteMultiplyByQuantizedMultiplier, DoubleAndSingleRoundingDiffer) {
  // M = 2^30 (0.5 in Q31), shift -1: real multiplier 0.25, x = 5, exact 1.25.
  // double: SRDHM(5, 2^30) = RHU(5 * 2^30 / 2^31) = RHU(2.5) = 3; RDBPOT(3, 1) = RNA(1.5) = 2.
  // single: (5*2^30 + 2^31) >> 32 = floor(7 * 2^30 / 2^32) = floor(1.75) = 1.
  const Q31Multiplier quarter{k2p30, -1};
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(5, quarter), 2);
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_single(5, quarter), 1);
  // x = -6, exact -1.5. double: SRDHM = -3 (exact), RDBPOT(-3, 1) = RNA(-1.5) = -2.
  // single: (-6*2^30 + 2^31) >> 32 = floor(-4*2^30 / 2^32) = -1 (RHU).
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(-6, quarter), -2);
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_single(-6, quarter), -1);
}

TEST(TfliteMultiplyByQuantizedMultiplier, LeftShiftWrapsInInt32) {
  // shift 1: x * (1 << 1) with x = 2^30 is 2^31, which wraps to INT_MIN; SRDHM(INT_MIN, 2^30) =
  // -2^61 / 2^31 = -2^30 exactly (the nudge 1 - 2^30 truncates away); RDBPOT(., 0) = -2^30.
  // The exact product 2^30 * 0.5 * 2 is +2^30.
  EXPECT_EQ(tflite_left_shift_wrapping(k2p30, 1), kMin);
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(k2p30, {k2p30, 1}), -k2p30);
  // Without the wrap: x = 3, shift 2 (real 2.0): 3 * 4 = 12, SRDHM(12, 2^30) = 6, RDBPOT(6, 0) = 6.
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(3, {k2p30, 2}), 6);
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_double(1, {k2p30, 31}), InputError);
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_double(1, {k2p30, -32}), InputError);
}

TEST(TfliteMultiplyByQuantizedMultiplier, SinglePreconditions) {
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_single(1, {-1, 0}), InputError);
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_single(1, {k2p30, 31}), InputError);
  // shift 30, M = 2^30, x = 2^30: (2^60 + 1) >> 1 = 2^59, which does not fit int32; the release-build
  // static_cast keeps the low 32 bits: 2^59 mod 2^32 = 0.
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_single(k2p30, {k2p30, 30}), 0);
}

TEST(TfliteMultiplyByQuantizedMultiplier, Int64InputUsesA16BitMultiplier) {
  // M = 2^30, shift 0 (0.5): reduced = (2^30 + 2^15) >> 16 = 16384, total_shift = 15.
  // x = 3: (3*16384 + 2^14) >> 15 = 65536 >> 15 = 2 (1.5 rounds half up).
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_int64(3, {k2p30, 0}), 2);
  // x = -3: (-49152 + 16384) >> 15 = -32768 >> 15 = -1.
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_int64(-3, {k2p30, 0}), -1);
  // M >= 0x7FFF0000 reduces to 0x7FFF: x = 2, shift 0: (2*32767 + 2^14) >> 15 = 81918 >> 15 = 2.
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_int64(2, {0x7FFF0000, 0}), 2);
  // x = 2^40, M = 2^30, shift 0: 2^40 * 2^14 >> 15 = 2^39 (+ 2^14 >> 15 adds nothing): narrowed to int32 it wraps to 0.
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_int64(std::int64_t{1} << 40, {k2p30, 0}), 0);
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_int64(std::int64_t{1} << 47, {k2p30, 0}), InputError);
  EXPECT_THROW(tflite_multiply_by_quantized_multiplier_int64(1, {k2p30, 8}), InputError);
}

TEST(TfliteQuantizeMultiplier, HandDerivedValues) {
  const auto dbl = TfliteRounding::double_rounding;
  // frexp(0.5) = (0.5, 0): q = 0.5 * 2^31 = 2^30, shift 0.
  EXPECT_EQ(tflite_quantize_multiplier(0.5, dbl), (Q31Multiplier{k2p30, 0}));
  // frexp(0.25) = (0.5, -1).
  EXPECT_EQ(tflite_quantize_multiplier(0.25, dbl), (Q31Multiplier{k2p30, -1}));
  // frexp(1.0) = (0.5, 1).
  EXPECT_EQ(tflite_quantize_multiplier(1.0, dbl), (Q31Multiplier{k2p30, 1}));
  // frexp(0.75) = (0.75, 0): 0.75 * 2^31 = 3 * 2^29.
  EXPECT_EQ(tflite_quantize_multiplier(0.75, dbl), (Q31Multiplier{3 * (1 << 29), 0}));
  // frexp(2^-40) = (0.5, -39): shift -39 < -31 flushes to (0, 0).
  EXPECT_EQ(tflite_quantize_multiplier(std::ldexp(1.0, -40), dbl), (Q31Multiplier{0, 0}));
  // frexp(2^-32) = (0.5, -31): shift -31 is kept.
  EXPECT_EQ(tflite_quantize_multiplier(std::ldexp(1.0, -32), dbl), (Q31Multiplier{k2p30, -31}));
  // 1 - 2^-33 (a double): frexp = (1 - 2^-33, 0); q * 2^31 = 2^31 - 0.25 rounds to 2^31, which is halved
  // to 2^30 with shift 0 + 1.
  EXPECT_EQ(tflite_quantize_multiplier(1.0 - std::ldexp(1.0, -33), dbl), (Q31Multiplier{k2p30, 1}));
  // 0.5 + 2^-32: q * 2^31 = 2^30 + 0.5, a tie: TfLiteRound (half away) gives 2^30 + 1 (half even would give 2^30).
  EXPECT_EQ(tflite_quantize_multiplier(0.5 + std::ldexp(1.0, -32), dbl), (Q31Multiplier{k2p30 + 1, 0}));
  // 0 -> (0, 0).
  EXPECT_EQ(tflite_quantize_multiplier(0.0, dbl), (Q31Multiplier{0, 0}));
  // 2^31: frexp = (0.5, 32). The double-rounding build keeps shift 32; the single-rounding build
  // saturates shift > 30 to (2^31 - 1, 30).
  EXPECT_EQ(tflite_quantize_multiplier(std::ldexp(1.0, 31), dbl), (Q31Multiplier{k2p30, 32}));
  EXPECT_EQ(tflite_quantize_multiplier(std::ldexp(1.0, 31), TfliteRounding::single_rounding),
            (Q31Multiplier{kMax, 30}));
  EXPECT_THROW(tflite_quantize_multiplier(std::numeric_limits<double>::infinity(), dbl), InputError);
}

// ---- TOSA -----------------------------------------------------------------------------------------

TEST(TosaApplyScale32, DoubleRoundEqualsGemmlowpOnHandCases) {
  const auto D = TosaRounding::double_round;
  // TFLite (M, shift) is TOSA (M, 31 - shift). M = 2^30, TFLite shift -1 -> TOSA shift 32 (> 31: the
  // double-round adjustment applies).
  // x = 5: round = 2^31 + 2^30; 5*2^30 + 3*2^30 = 2^33; >> 32 = 2. (gemmlowp: 2, see above.)
  EXPECT_EQ(tosa_apply_scale_32(5, k2p30, 32, D), 2);
  // x = -5: round = 2^31 - 2^30 = 2^30; -5*2^30 + 2^30 = -2^32; >> 32 = -1.
  // gemmlowp: SRDHM(-5, 2^30) = RHU(-2.5) = -2, RDBPOT(-2, 1) = -1.
  EXPECT_EQ(tosa_apply_scale_32(-5, k2p30, 32, D), -1);
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(-5, {k2p30, -1}), -1);
  // x = -6: -6*2^30 + 2^30 = -5*2^30, / 2^32 = -1.25, floor -2. gemmlowp: -2 (above).
  EXPECT_EQ(tosa_apply_scale_32(-6, k2p30, 32, D), -2);
  // Single round, x = -6: (-6*2^30 + 2^31) >> 32 = floor(-1) = -1.
  EXPECT_EQ(tosa_apply_scale_32(-6, k2p30, 32, TosaRounding::single_round), -1);
  // TFLite shift 2 -> TOSA shift 29 (<= 31: no adjustment): (3*2^30 + 2^28) >> 29 = floor(6.5) = 6.
  EXPECT_EQ(tosa_apply_scale_32(3, k2p30, 29, D), 6);
  // M = 3*2^29 (0.75), TFLite shift 0 -> TOSA 31: x = 3, 2.25: (9*2^29 + 2^30) >> 31 = floor(2.75) = 2.
  EXPECT_EQ(tosa_apply_scale_32(3, 3 * (1 << 29), 31, D), 2);
  EXPECT_EQ(tflite_multiply_by_quantized_multiplier_double(3, {3 * (1 << 29), 0}), 2);
}

TEST(TosaApplyScale32, Requires) {
  const auto S = TosaRounding::single_round;
  EXPECT_THROW(tosa_apply_scale_32(1, -1, 31, S), InputError);
  EXPECT_THROW(tosa_apply_scale_32(1, 1, 1, S), InputError);
  EXPECT_THROW(tosa_apply_scale_32(1, 1, 63, S), InputError);
  // shift 10: value must lie in [-512, 512).
  EXPECT_THROW(tosa_apply_scale_32(512, 1, 10, S), InputError);
  EXPECT_NO_THROW(tosa_apply_scale_32(511, 1, 10, S));
  EXPECT_NO_THROW(tosa_apply_scale_32(-512, 1, 10, S));
}

TEST(TosaApplyScale16, SingleRoundingOnInt48) {
  // M = 2^14, shift 15 (0.5). 3 -> (3*2^14 + 2^14) >> 15 = 2^16 >> 15 = 2; -3 -> (-2^15) >> 15 = -1.
  EXPECT_EQ(tosa_apply_scale_16(3, 1 << 14, 15), 2);
  EXPECT_EQ(tosa_apply_scale_16(-3, 1 << 14, 15), -1);
  // An int48 value: 2^46 * 2^14 >> 15 = 2^45 does not fit int32: REQUIRE fails.
  EXPECT_THROW(tosa_apply_scale_16(std::int64_t{1} << 46, 1 << 14, 15), InputError);
  EXPECT_THROW(tosa_apply_scale_16(std::int64_t{1} << 47, 1, 15), InputError);
  EXPECT_THROW(tosa_apply_scale_16(1, -1, 15), InputError);
}

TEST(TosaComputeMultiplierAndShift, HandDerivedValues) {
  // scale32: frexp(0.5) = (0.5, 0): M = 2^30, shift 31 - 0 = 31.
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale32(0.5), (ScaleShift{k2p30, 31}));
  // frexp(1.0) = (0.5, 1): shift 30.
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale32(1.0), (ScaleShift{k2p30, 30}));
  // 0.75: M = 3*2^29, shift 31.
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale32(0.75), (ScaleShift{3 * (1 << 29), 31}));
  // 2^-40: (0.5, -39): shift 70 > 62, so M >>= min(31, 8): 2^30 >> 8 = 2^22, shift 62 (2^22 / 2^62 = 2^-40).
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale32(std::ldexp(1.0, -40)), (ScaleShift{1 << 22, 62}));
  // 1 - 2^-33: M rounds to 2^31, halved to 2^30 with exponent 1: shift 30.
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale32(1.0 - std::ldexp(1.0, -33)), (ScaleShift{k2p30, 30}));
  // scale16: 0.5 -> (2^14, 15); 1 - 2^-17: m * 2^15 = 2^15 - 0.25 rounds to 2^15, halved: (2^14, 14).
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale16(0.5), (ScaleShift{1 << 14, 15}));
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale16(1.0 - std::ldexp(1.0, -17)), (ScaleShift{1 << 14, 14}));
  // 2^-50: (0.5, -49): M = 2^14, shift 64 > 62: M >>= 2 -> 2^12, shift 62.
  EXPECT_EQ(tosa_compute_multiplier_and_shift_scale16(std::ldexp(1.0, -50)), (ScaleShift{1 << 12, 62}));
}

// The equivalence docs/numerics.md "Requantization schemes in real implementations" reports from
// an emulation (no upstream source states it), checked here on 200,000 samples:
// TOSA DOUBLE_ROUND is bit-identical to gemmlowp/TFLite double rounding and SINGLE_ROUND to TFLite
// single rounding, and all four equal the BigInt evaluation of their definitions.
TEST(TosaApplyScale32, MatchesGemmlowpAndTfliteOnRandomSamples) {
  SplitMix64 rng{20240611};
  int differ = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const int shift = static_cast<int>(rng.in(-31, 29));  // TFLite shift; TOSA shift 31 - shift in [2, 62]
    const int tosa_shift = 31 - shift;
    // Multipliers as QuantizeMultiplier makes them (2^30 <= M < 2^31), or small ones with many ties.
    const auto m = static_cast<std::int32_t>(rng.next() % 2 ? rng.in(k2p30, kMax) : rng.in(0, 255) << rng.in(0, 23));
    // Values inside TOSA's REQUIRE: -2^(tosa_shift-1) <= x < 2^(tosa_shift-1) (all int32 from 32 up);
    // half of them small, where the rounding of the last bits decides.
    const std::int64_t lim = tosa_shift >= 32 ? (std::int64_t{1} << 31) : (std::int64_t{1} << (tosa_shift - 1));
    const std::int64_t span = rng.next() % 2 ? lim : std::min<std::int64_t>(lim, 1 << 12);
    const auto x = static_cast<std::int32_t>(rng.in(-span, span - 1));
    const BigInt want_double = reference_double(x, m, shift);
    const BigInt want_single = reference_single(x, m, shift);
    const std::int32_t g = tflite_multiply_by_quantized_multiplier_double(x, {m, shift});
    const std::int32_t td = tosa_apply_scale_32(x, m, tosa_shift, TosaRounding::double_round);
    const std::int32_t s = tflite_multiply_by_quantized_multiplier_single(x, {m, shift});
    const std::int32_t ts = tosa_apply_scale_32(x, m, tosa_shift, TosaRounding::single_round);
    ASSERT_EQ(BigInt(g), want_double) << "x=" << x << " M=" << m << " shift=" << shift;
    ASSERT_EQ(td, g) << "x=" << x << " M=" << m << " shift=" << shift;
    ASSERT_EQ(BigInt(s), want_single) << "x=" << x << " M=" << m << " shift=" << shift;
    ASSERT_EQ(ts, s) << "x=" << x << " M=" << m << " shift=" << shift;
    differ += g != s;
  }
  // Double and single rounding part at some ties (docs/numerics.md reports 3.8% on its sample).
  EXPECT_GT(differ, 0);
  EXPECT_LT(differ, n / 4);
}

// ---- XNNPACK / QNNPACK ----------------------------------------------------------------------------

TEST(Fp32MantissaScale, IsTheSignificandAndExponent) {
  // 0.75f = 1.5 * 2^-1: biased exponent 126, fraction 0x400000 -> M = 0xC00000 = 12582912, s = 150 - 126 = 24.
  EXPECT_EQ(fp32_mantissa_scale(0.75f), (ScaleShift{12582912, 24}));
  // 1.0f: biased 127 -> M = 2^23, s = 23.
  EXPECT_EQ(fp32_mantissa_scale(1.0f), (ScaleShift{1 << 23, 23}));
  EXPECT_THROW(fp32_mantissa_scale(0.0f), InputError);
  EXPECT_THROW(fp32_mantissa_scale(-1.0f), InputError);
}

TEST(XnnpackRndnu, HandDerivedValues) {
  const ScaleShift s = fp32_mantissa_scale(0.75f);  // (12582912, 24)
  // 2 * 0.75 = 1.5: 2*12582912 + 2^23 = 2^25, >> 24 = 2 (half up).
  EXPECT_EQ(xnnpack_rndnu_multiply_shift(2, s), 2);
  // -2 * 0.75 = -1.5: -25165824 + 8388608 = -2^24, >> 24 = -1 (half up, not away).
  EXPECT_EQ(xnnpack_rndnu_multiply_shift(-2, s), -1);
  // 128.0f: M = 2^23, s = 150 - 134 = 16. acc = 2^24: 2^47 + 2^15 >> 16 = 2^31 (the 2^15 adds nothing):
  // the (int32_t) cast wraps it to INT_MIN.
  EXPECT_EQ(xnnpack_rndnu_multiply_shift(1 << 24, fp32_mantissa_scale(128.0f)), kMin);
  // 256.0f gives s = 15: outside the assert (scale < 256).
  EXPECT_THROW(xnnpack_rndnu_multiply_shift(1, fp32_mantissa_scale(256.0f)), InputError);
}

// xnn_qs8_requantize_rndnu is exact with respect to the f32 scale: RHU(acc * scale) with the scale's
// exact binary value (from the double that holds the float exactly), whenever the result fits int32.
TEST(XnnpackRndnu, ExactWithRespectToTheF32Scale) {
  SplitMix64 rng{7};
  for (int i = 0; i < 100000; ++i) {
    // A random f32 in [2^-32, 256): biased exponent 95..134, any fraction.
    const auto bits = static_cast<std::uint32_t>((rng.in(95, 134) << 23) | rng.in(0, (1 << 23) - 1));
    const float scale = std::bit_cast<float>(bits);
    const auto acc = static_cast<std::int32_t>(rng.next() % 2 ? rng.in(kMin, kMax) : rng.in(-4096, 4096));
    const Rational exact_scale(static_cast<double>(scale));
    const BigInt want = div_half_up(BigInt(acc) * numerator(exact_scale), denominator(exact_scale));
    if (want < kMin || want > kMax) continue;  // the cast would wrap: covered by the hand case above
    ASSERT_EQ(BigInt(xnnpack_rndnu_multiply_shift(acc, fp32_mantissa_scale(scale))), want)
        << "acc=" << acc << " scale bits=0x" << std::hex << bits;
  }
}

TEST(XnnpackFp32, HandDerivedValues) {
  const IntRange i8{-128, 127};
  // (float)3 * 0.5f = 1.5, lrintf (ties to even) -> 2; (float)5 * 0.5f = 2.5 -> 2.
  EXPECT_EQ(xnnpack_requantize_fp32(3, 0.5f, 0, i8), 2);
  EXPECT_EQ(xnnpack_requantize_fp32(5, 0.5f, 0, i8), 2);
  // 1000 * 0.5 = 500 clamps to qmax - zp = 127 - 10 = 117, + 10 = 127.
  EXPECT_EQ(xnnpack_requantize_fp32(1000, 0.5f, 10, i8), 127);
  // (float)(2^24 + 1) = 2^24 (ties to even); * 2^-20 = 16 exactly, whereas the exact product is 16 + 2^-20.
  EXPECT_EQ(xnnpack_requantize_fp32((1 << 24) + 1, 0x1.0p-20f, 0, i8), 16);
  EXPECT_THROW(xnnpack_requantize_fp32(1, 256.0f, 0, i8), InputError);
}

TEST(QnnpackPrecise, RoundsHalfAwayExactly) {
  const ScaleShift s = fp32_mantissa_scale(0.75f);  // (12582912, 24)
  // 2 * 0.75 = 1.5 -> 2; -2 * 0.75 = -1.5 -> -2 (away: -25165824 - 1 + 2^23 = -16777217, >> 24 = -2).
  EXPECT_EQ(qnnpack_precise_multiply_shift(2, s), 2);
  EXPECT_EQ(qnnpack_precise_multiply_shift(-2, s), -2);
  // -1 * 0.75 = -0.75 -> -1.
  EXPECT_EQ(qnnpack_precise_multiply_shift(-1, s), -1);
  // scale 1.0f (s = 23) is outside the assert scale < 1.
  EXPECT_THROW(qnnpack_precise_multiply_shift(1, fp32_mantissa_scale(1.0f)), InputError);

  SplitMix64 rng{11};
  for (int i = 0; i < 50000; ++i) {  // RNA(acc * scale) for f32 scales in [2^-32, 1)
    const auto bits = static_cast<std::uint32_t>((rng.in(95, 126) << 23) | rng.in(0, (1 << 23) - 1));
    const float scale = std::bit_cast<float>(bits);
    const auto acc = static_cast<std::int32_t>(rng.next() % 2 ? rng.in(kMin, kMax) : rng.in(-4096, 4096));
    const Rational exact_scale(static_cast<double>(scale));
    const BigInt want = div_half_away(BigInt(acc) * numerator(exact_scale), denominator(exact_scale));
    ASSERT_EQ(BigInt(qnnpack_precise_multiply_shift(acc, fp32_mantissa_scale(scale))), want) << acc << " " << scale;
  }
}

TEST(QnnpackQ31, MultiplierAndRequantize) {
  // 0.75f: M = 0xC00000 << 7 = 3 * 2^29 (0.75 in Q31), post shift 126 - 126 = 0.
  EXPECT_EQ(qnnpack_q31_multiplier(0.75f), (Q31Multiplier{3 * (1 << 29), 0}));
  // 0.375f: the same significand, biased exponent 125: post shift 1.
  const Q31Multiplier m = qnnpack_q31_multiplier(0.375f);
  EXPECT_EQ(m, (Q31Multiplier{3 * (1 << 29), -1}));
  // n = -4: -1.5. q31 = (-4 * 3*2^29 + 2^30) >> 31 = (-5*2^30) >> 31 = floor(-2.5) = -3; remainder =
  // (-3 & 1) - 1 = 0, threshold 0: asr(-3, 1) = -2 (half away).
  EXPECT_EQ(qnnpack_q31_multiply_shift(-4, m), -2);
  // n = 4: 1.5. q31 = (6*2^30 + 2^30) >> 31 = 3; remainder (3 & 1) - 0 = 1 > 0: 1 + 1 = 2.
  EXPECT_EQ(qnnpack_q31_multiply_shift(4, m), 2);
  // n = -2: -0.75. q31 = (-3*2^30 + 2^30) >> 31 = -1; remainder (-1 & 1) - 1 = 0: asr(-1, 1) = -1.
  EXPECT_EQ(qnnpack_q31_multiply_shift(-2, m), -1);

  SplitMix64 rng{13};
  for (int i = 0; i < 50000; ++i) {  // RNA(RHU(n*M / 2^31) / 2^s), the definition
    const auto bits = static_cast<std::uint32_t>((rng.in(95, 126) << 23) | rng.in(0, (1 << 23) - 1));
    const Q31Multiplier q = qnnpack_q31_multiplier(std::bit_cast<float>(bits));
    const auto n = static_cast<std::int32_t>(rng.next() % 2 ? rng.in(kMin, kMax) : rng.in(-4096, 4096));
    const BigInt want = div_half_away(div_half_up(BigInt(n) * q.multiplier, pow2i(31)), pow2i(-q.shift));
    ASSERT_EQ(BigInt(qnnpack_q31_multiply_shift(n, q)), want) << n << " " << q.multiplier << " " << q.shift;
  }
}

// ---- Glow -----------------------------------------------------------------------------------------

TEST(GlowQuantizeScaleOffset, HandDerivedValues) {
  // 0.1f = 0.100000001490116...: post doubles while < 0.5 (0.2, 0.4, 0.8: post 3) and on while < 256
  // and post < 15: 0.1 * 2^12 = 409.6 >= 256 stops at post 12. pre: 409.6 >= 255, none.
  // S = round(409.6000061) = 410.
  EXPECT_EQ(glow_quantize_scale_offset_32_to_8(0.1f), (GlowScale{0, 12, 410}));
  // 0.001f: 0.001 * 2^9 = 0.512 (post 9), on to post 15: 32.768; pre while < 255 and pre < 7:
  // 65.5, 131.1, 262.1 (pre 3). S = round(0.001f * 2^18 = 262.144012...) = 262.
  EXPECT_EQ(glow_quantize_scale_offset_32_to_8(0.001f), (GlowScale{3, 15, 262}));
  // Powers of two: 0.25 = 2^-2 -> (0, 2, 1); 4 = 2^2 -> (0, 0, 4); 1 = 2^0 -> (0, 0, 1).
  EXPECT_EQ(glow_quantize_scale_offset_32_to_8(0.25f), (GlowScale{0, 2, 1}));
  EXPECT_EQ(glow_quantize_scale_offset_32_to_8(4.0f), (GlowScale{0, 0, 4}));
  EXPECT_EQ(glow_quantize_scale_offset_32_to_8(1.0f), (GlowScale{0, 0, 1}));
  EXPECT_THROW(glow_quantize_scale_offset_32_to_8(0.0f), InputError);
}

TEST(GlowLibjitScale, Int32ArithmeticOverflows) {
  const GlowScale g{0, 12, 410};  // scale 0.1f
  // 1000: 1000*410 = 410000, + 2^11 = 412048, >> 12 = floor(100.598) = 100, + offset 3 = 103.
  EXPECT_EQ(glow_libjit_scale_i32i8(1000, g, 3), 103);
  // 5,300,000 (exact x * 0.1 = 530,000): 5,300,000 * 410 = 2,173,000,000 > 2^31 - 1 wraps to
  // 2,173,000,000 - 2^32 = -2,121,967,296; + 2048 = -2,121,965,248; >> 12 = floor(-518,057.9) = -518,058.
  // libjit_clip then gives -128 where the exact value saturates to +127.
  EXPECT_EQ(glow_libjit_scale_i32i8(5300000, g, 0), -518058);
  // The pre-shift floors: 0.001f -> (3, 15, 262): x = -9: -9 >> 3 = -2; -2*262 + 2^14 = 15860; >> 15 = 0.
  EXPECT_EQ(glow_libjit_scale_i32i8(-9, GlowScale{3, 15, 262}, 0), 0);
  EXPECT_THROW(glow_libjit_scale_i32i8(1, GlowScale{0, 32, 1}, 0), InputError);
}

// ---- FBGEMM ---------------------------------------------------------------------------------------

TEST(FbgemmChooseRequantizationMultiplier, HandDerivedValues) {
  // 0.5f: no doubling or halving; q = 0.5 * 2^31 = 2^30, s = 31.
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(0.5f), (ScaleShift{k2p30, 31}));
  // 1.0f: "> 1.f" is false, q = 2^31 == 2^(32-1): halved to 2^30, s = 30.
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(1.0f), (ScaleShift{k2p30, 30}));
  // 0.3f = 10066330 * 2^-25: doubled once (s = 32) to 10066330 * 2^-24; * 2^31 = 10066330 * 2^7 = 1288490240.
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(0.3f), (ScaleShift{1288490240, 32}));
  // 3.0f: halved twice to 0.75 (s = 29): 0.75 * 2^31 = 3 * 2^29.
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(3.0f), (ScaleShift{3 * (1 << 29), 29}));
  // Precision 16: q = nearbyint(real * 2^15), ties to even. 0.5 + 2^-16 -> 2^14 + 0.5 -> 16384;
  // 0.5 + 3*2^-16 -> 2^14 + 1.5 -> 16386.
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(0.5f + 0x1.0p-16f, 16), (ScaleShift{16384, 31}));
  EXPECT_EQ(fbgemm_choose_requantization_multiplier(0.5f + 0x1.8p-15f, 16), (ScaleShift{16386, 31}));
  EXPECT_THROW(fbgemm_choose_requantization_multiplier(0.0f), InputError);
}

TEST(FbgemmSaturatingRoundingMulWithShift, RoundsHalfUp) {
  // (5 * 2^30 + 2^31) >> 32 = floor(1.75) = 1 (exact 1.25).
  EXPECT_EQ(fbgemm_saturating_rounding_mul_with_shift(5, k2p30, 32), 1);
  // (-6 * 2^30 + 2^31) >> 32 = -1 (exact -1.5, half up).
  EXPECT_EQ(fbgemm_saturating_rounding_mul_with_shift(-6, k2p30, 32), -1);
  EXPECT_THROW(fbgemm_saturating_rounding_mul_with_shift(1, 1, 0), InputError);
}

// ---- StableHLO ------------------------------------------------------------------------------------

TEST(StablehloQuantToMath, SkipsNearOneAndTruncates) {
  // |1 + 2^-10 - 1| = 0.0009765625 <= 0.001: scaling skipped. 1 + 2^-9 is scaled.
  EXPECT_FALSE(stablehlo_dot_combined_scale(1.0 + std::ldexp(1.0, -10)).has_value());
  EXPECT_EQ(stablehlo_dot_combined_scale(1.0 + std::ldexp(1.0, -9)), 1.0f + 0x1.0p-9f);
  // 0.1 (double) becomes 0.1f.
  EXPECT_EQ(stablehlo_dot_combined_scale(0.1), 0.1f);
  // 5 * 0.5 = 2.5 truncates to 2; -2.5 to -2.
  EXPECT_EQ(stablehlo_scale_and_truncate(5, 0.5f), 2);
  EXPECT_EQ(stablehlo_scale_and_truncate(-5, 0.5f), -2);
  // f32(2^24 + 1) = 2^24 (tie to even), * 1.5 = 25165824 exactly: truncation keeps it (exact: 25165825.5).
  EXPECT_EQ(stablehlo_scale_and_truncate((1 << 24) + 1, 1.5f), 25165824);
}

}  // namespace
}  // namespace qc
