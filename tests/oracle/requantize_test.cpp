// oracles/requantize.cpp: every scheme on hand-derived cases (the derivation from the cited
// definition is in the comment next to each value; nothing is copied from the code's output), the
// labels, the tensor-level per-channel path, the accumulation modes, and two consistency checks
// (the exact float recipe against XNNPACK's literal fp32 transcription; exact float formats
// against the ideal scheme).
#include "oracles/requantize.hpp"

#include "cases/generators.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace qc {
namespace {

using S = RequantizeScheme;

RequantizeScales scales(double in, double w, double out) { return {in, w, out, DType::f32}; }

std::int64_t rq(std::int64_t acc, const RequantizeScales& s, std::int64_t zp, DType out, const RequantizePolicy& p) {
  return requantize_element(acc, s, zp, out, p).q;
}
std::int64_t rq(std::int64_t acc, const RequantizeScales& s, const RequantizePolicy& p) {
  return rq(acc, s, 0, DType::i8, p);
}
RequantizePolicy ideal(RoundingMode m) {
  RequantizePolicy p = requantize_policy_for(S::ideal);
  p.rounding = m;
  return p;
}

// ---- Every scheme at one multiplier --------------------------------------------------------------

// s_in*s_w/s_out = 0.5 * 0.5 / 1 = 0.25 (exact in every format). Each scheme's own multiplier:
//   TFLite QuantizeMultiplier(0.25) = (2^30, shift -1); TOSA scale32 = (2^30, 32); TOSA scale16 =
//   (2^14, 16); f32 mantissa (XNNPACK, QNNPACK precise) = (2^23, 150 - 125 = 25); QNNPACK Q31 =
//   (2^30, post 1); FBGEMM = (2^30, 32); Glow: power of two -> (pre 0, post 2, S 1); StableHLO 0.25f.
struct Row {
  S scheme;
  std::int64_t at_5;       // 5 * 0.25 = 1.25
  std::int64_t at_minus6;  // -6 * 0.25 = -1.5, a tie
};

TEST(RequantizeSchemes, AllSchemesOnOneMultiplier) {
  const std::vector<Row> rows = {
      // ideal (RNE): 1.25 -> 1; -1.5 -> -2 (even).
      {S::ideal, 1, -2},
      // f32 multiplier 0.25, f32 products 1.25 / -1.5 exact, RNE: 1, -2.
      {S::float_multiplier, 1, -2},
      {S::xnnpack_fp32, 1, -2},
      // SRDHM(5, 2^30) = RHU(2.5) = 3, RDBPOT(3, 1) = RNA(1.5) = 2. SRDHM(-6, 2^30) = -3, RDBPOT = RNA(-1.5) = -2.
      {S::gemmlowp_double, 2, -2},
      // No left shift for 0.25 (shift -1): the same arithmetic as gemmlowp_double.
      {S::gemmlowp_scalar, 2, -2},
      // (5*2^30 + 2^31) >> 32 = floor(1.75) = 1; (-6*2^30 + 2^31) >> 32 = -1 (half up).
      {S::tflite_single, 1, -1},
      {S::tosa_single, 1, -1},
      // DOUBLE_ROUND, shift 32 > 31: 5*2^30 + 2^31 + 2^30 = 2^33 -> 2; -6*2^30 + 2^31 - 2^30 = -5*2^30 -> floor(-1.25)
      // = -2.
      {S::tosa_double, 2, -2},
      // M16 = 2^14, shift 16: (5*2^14 + 2^15) >> 16 = floor(1.75) = 1; (-6*2^14 + 2^15) >> 16 = -1.
      {S::tflite_int64, 1, -1},
      {S::tosa_scale16, 1, -1},
      // (5*2^23 + 2^24) >> 25 = 1; (-6*2^23 + 2^24) >> 25 = -1.
      {S::xnnpack_rndnu, 1, -1},
      // half away: 1.25 -> 1; (-6*2^23 - 1 + 2^24) >> 25 = floor(-1.00000003) = -2.
      {S::qnnpack_precise, 1, -2},
      // q31 = (5*2^30 + 2^30) >> 31 = 3, then RNA(3/2) = 2; q31 = floor(-2.5) = -3, then RNA(-1.5) = -2.
      {S::qnnpack_q31, 2, -2},
      // (5*2^30 + 2^31) >> 32 = 1; -1.
      {S::fbgemm_fixed_point, 1, -1},
      // ((5 >> 0) * 1 + 2) >> 2 = 1; (-6 + 2) >> 2 = -1.
      {S::glow_int32, 1, -1},
      // truncation toward zero: 1.25 -> 1, -1.5 -> -1.
      {S::stablehlo_truncate, 1, -1},
  };
  ASSERT_EQ(rows.size(), kAllRequantizeSchemes.size());
  for (const Row& r : rows) {
    const RequantizePolicy p = requantize_policy_for(r.scheme);
    EXPECT_EQ(rq(5, scales(0.5, 0.5, 1.0), p), r.at_5) << name(r.scheme);
    EXPECT_EQ(rq(-6, scales(0.5, 0.5, 1.0), p), r.at_minus6) << name(r.scheme);
    // Labels depend on the ideal value only: 1.25 is 0.25 from the half-way point, -1.5 is on it.
    EXPECT_EQ(requantize_element(5, scales(0.5, 0.5, 1.0), 0, DType::i8, p).label, Label::clear);
    EXPECT_EQ(requantize_element(-6, scales(0.5, 0.5, 1.0), 0, DType::i8, p).label, Label::tie);
  }
}

TEST(RequantizeSchemes, IdealRoundingModesAtTies) {
  const auto half = scales(0.5, 1.0, 1.0);
  // -3 * 0.5 = -1.5: rne -2, rna -2, rhu -1, rhd -2, rtz -1, floor -2, ceil -1.
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::rne)), -2);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::rna)), -2);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::rhu)), -1);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::rhd)), -2);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::rtz)), -1);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::floor)), -2);
  EXPECT_EQ(rq(-3, half, ideal(RoundingMode::ceil)), -1);
  // 5 * 0.5 = 2.5: rne 2, rna 3, rhu 3, rhd 2.
  EXPECT_EQ(rq(5, half, ideal(RoundingMode::rne)), 2);
  EXPECT_EQ(rq(5, half, ideal(RoundingMode::rna)), 3);
  EXPECT_EQ(rq(5, half, ideal(RoundingMode::rhu)), 3);
  EXPECT_EQ(rq(5, half, ideal(RoundingMode::rhd)), 2);
}

// ---- Float multipliers: order and format ---------------------------------------------------------

// s_in = 1.2f = 10066330 * 2^-23, s_w = 0.5625 = 9/16, s_out = 0.75, acc = -25.
// Exact: -25 * 1.2f * 0.75 = -377487375 * 2^-24 = -22.50000089... -> -23 (a near tie).
// f32 left to right: s_in*s_w = 90596970 * 2^-27 (27 bits) rounds to 11324621 * 2^-24; / 0.75 =
//   15099494.67 * 2^-24 rounds to m = 15099495 * 2^-24. acc * m = -377487375 * 2^-24 (29 bits)
//   rounds (377487375 / 32 = 11796480.47) to -11796480 * 2^-19 = -22.5 exactly: RNE -> -22.
// f32 multiplier, f64 product: -377487375 * 2^-24 is exact in f64: -23.
// oneDNN per-op f32: -25 * 1.2f = -251658250 * 2^-23 rounds to -15728641 * 2^-19; * 9/16 =
//   -141557769 * 2^-23 rounds to -8847361 * 2^-19; / 0.75 = -11796481.33 * 2^-19 rounds to
//   -11796481 * 2^-19 = -22.5000019: -23.
// f64 left to right: 1.2f * 9/16 exact, / 0.75 = 120795960 * 2^-27 exact; * -25 exact: -23.
// product_then_divide (TFLite legacy: f32 product, f64 division): 11324621 * 2^-24 / 0.75 =
//   0.90000001589...; * -25 = -22.5000003974 in f64: -23.
TEST(RequantizeFloat, OrderAndFormatOfTheMultiplier) {
  const auto s = scales(1.2f, 0.5625, 0.75);
  const ComputeFormat f32{ComputeFormat::Kind::f32, 0}, f64{ComputeFormat::Kind::f64, 0};
  RequantizePolicy p = requantize_policy_for(S::float_multiplier);
  EXPECT_EQ(rq(-25, s, p), -22);
  p.product_format = f64;
  EXPECT_EQ(rq(-25, s, p), -23);
  p.product_format = f32;
  p.multiplier_order = MultiplierOrder::per_op;
  EXPECT_EQ(rq(-25, s, p), -23);
  p.multiplier_order = MultiplierOrder::left_to_right;
  p.multiplier_format = f64;
  p.product_format = f64;
  EXPECT_EQ(rq(-25, s, p), -23);
  p.multiplier_order = MultiplierOrder::product_then_divide;
  EXPECT_EQ(rq(-25, s, p), -23);
  EXPECT_EQ(rq(-25, s, ideal(RoundingMode::rne)), -23);
  EXPECT_EQ(requantize_element(-25, s, 0, DType::i8, p).label, Label::near_tie);
}

// s_in = 0.5 - 2^-25 (24 significant bits, an f32), acc = 1, zp = 1 (docs/numerics.md "Pitfalls",
// 4, where the zero point is added):
// zp before, in f32: 1.5 - 2^-25 is a quarter ulp below 1.5 and rounds to 1.5; RNE gives 2.
// zp after: RNE(0.49999997) = 0, + 1 = 1. Exact: 1.49999997 -> 1.
TEST(RequantizeFloat, ZeroPointBeforeOrAfterRounding) {
  const auto s = scales(0x1.fffffep-2, 1.0, 1.0);
  RequantizePolicy p = requantize_policy_for(S::float_multiplier);
  EXPECT_EQ(rq(1, s, 1, DType::i8, p), 1);
  p.zero_point = ZeroPointAdd::float_before_rounding;
  EXPECT_EQ(rq(1, s, 1, DType::i8, p), 2);
  EXPECT_EQ(rq(1, s, 1, DType::i8, ideal(RoundingMode::rne)), 1);
  EXPECT_EQ(requantize_element(1, s, 1, DType::i8, p).label, Label::near_tie);
  // With a sign-dependent tie rule the place matters even exactly: acc = -1, s = 0.5, zp = 1, RNA:
  // after: round(-0.5) = -1, + 1 = 0; before: round(0.5) = 1.
  RequantizePolicy rna = ideal(RoundingMode::rna);
  EXPECT_EQ(rq(-1, scales(0.5, 1, 1), 1, DType::i8, rna), 0);
  rna.zero_point = ZeroPointAdd::float_before_rounding;
  EXPECT_EQ(rq(-1, scales(0.5, 1, 1), 1, DType::i8, rna), 1);
}

// The exact float recipe (qc::Arith, one rounding per operation) against XNNPACK's literal
// xnn_qs8_requantize_fp32 in hardware binary32: two independent evaluations of one definition.
TEST(RequantizeFloat, XnnpackFp32MatchesTheLiteralTranscription) {
  SplitMix64 rng{3};
  const RequantizePolicy p = requantize_policy_for(S::xnnpack_fp32);
  for (int i = 0; i < 20000; ++i) {
    // f32 scales in [2^-20, 16), accumulators up to 2^27 (so (float)acc rounds), any int8 zero point.
    const auto bits = static_cast<std::uint32_t>((rng.in(107, 130) << 23) | rng.in(0, (1 << 23) - 1));
    const float scale = std::bit_cast<float>(bits);
    // A third anywhere up to 2^27 (mostly saturating); the rest where acc * scale lands in [-256, 256].
    const auto reach = static_cast<std::int64_t>(256.0 / static_cast<double>(scale)) + 1;
    const auto acc = static_cast<std::int32_t>(
        rng.next() % 3 == 0 ? rng.in(-(1 << 27), 1 << 27)
                            : rng.in(-std::min<std::int64_t>(reach, 1 << 27), std::min<std::int64_t>(reach, 1 << 27)));
    const auto zp = static_cast<std::int32_t>(rng.in(-128, 127));
    ASSERT_EQ(rq(acc, scales(scale, 1, 1), zp, DType::i8, p), xnnpack_requantize_fp32(acc, scale, zp, {-128, 127}))
        << "acc=" << acc << " scale=" << scale << " zp=" << zp;
  }
}

// float_multiplier with every format exact is the ideal scheme.
TEST(RequantizeFloat, ExactFormatsAreTheIdeal) {
  SplitMix64 rng{5};
  RequantizePolicy p = requantize_policy_for(S::float_multiplier);
  p.multiplier_format = p.product_format = ComputeFormat{ComputeFormat::Kind::exact, 0};
  for (int i = 0; i < 5000; ++i) {
    const float s_in = std::bit_cast<float>(static_cast<std::uint32_t>((rng.in(117, 127) << 23) | rng.in(0, 1 << 22)));
    const float s_w = std::bit_cast<float>(static_cast<std::uint32_t>((rng.in(117, 127) << 23) | rng.in(0, 1 << 22)));
    const float s_out = std::bit_cast<float>(static_cast<std::uint32_t>((rng.in(120, 127) << 23) | rng.in(0, 1 << 22)));
    const auto acc = rng.in(-1000, 1000);
    const auto zp = rng.in(-128, 127);
    const auto s = scales(s_in, s_w, s_out);
    ASSERT_EQ(rq(acc, s, zp, DType::i8, p), rq(acc, s, zp, DType::i8, ideal(RoundingMode::rne)));
  }
}

// ---- Fixed-point schemes beyond the shared table --------------------------------------------------

TEST(RequantizeFixedPoint, GlowInt32OverflowFlipsTheSign) {
  // Glow derives (pre 0, post 12, S 410) from 0.1f (see fixed_point_test). acc = 5,300,000:
  // 5,300,000 * 410 wraps in int32; the result is -518,058 before libjit_clip, which gives -128.
  // Exact: 530,000.0000079 -> saturates to 127.
  const auto s = scales(0.1f, 1.0, 1.0);
  EXPECT_EQ(rq(5300000, s, requantize_policy_for(S::glow_int32)), -128);
  EXPECT_EQ(rq(5300000, s, ideal(RoundingMode::rne)), 127);
  EXPECT_EQ(requantize_element(5300000, s, 0, DType::i8, requantize_policy_for(S::glow_int32)).label, Label::saturated);
}

TEST(RequantizeFixedPoint, TfliteInt64TakesWideAccumulators) {
  // s = 2^-20: QuantizeMultiplier = (2^30, -19), M16 = 2^14, total shift 15 + 19 = 34.
  // acc = 3*2^30 + 2^19 (beyond int32): acc / 2^20 = 3072.5; (acc*2^14 + 2^33) >> 34 = floor(3073) = 3073.
  // The ideal value 3072.5 is a tie: RNE gives 3072.
  const std::int64_t acc = 3 * (std::int64_t{1} << 30) + (1 << 19);
  const auto s = scales(std::ldexp(1.0, -20), 1.0, 1.0);
  EXPECT_EQ(rq(acc, s, 0, DType::i16, requantize_policy_for(S::tflite_int64)), 3073);
  EXPECT_EQ(rq(acc, s, 0, DType::i16, ideal(RoundingMode::rne)), 3072);
  EXPECT_THROW(rq(acc, s, 0, DType::i16, requantize_policy_for(S::gemmlowp_double)), InputError);
}

TEST(RequantizeFixedPoint, StablehloSkipsScalingAndNarrowsWithoutClamp) {
  // combined = 1 + 2^-11: |combined - 1| <= 0.001, so the lowering skips scaling: 10000 stays 10000.
  // Exact: 10000 * (1 + 2^-11) = 10004.88 -> 10005.
  const auto near_one = scales(1.0 + std::ldexp(1.0, -11), 1.0, 1.0);
  EXPECT_EQ(rq(10000, near_one, 0, DType::i16, requantize_policy_for(S::stablehlo_truncate)), 10000);
  EXPECT_EQ(rq(10000, near_one, 0, DType::i16, ideal(RoundingMode::rne)), 10005);
  // 1000 * 0.5 = 500, no clamp, the narrowing convert keeps the low 8 bits: 500 - 512 = -12 as int8.
  EXPECT_EQ(rq(1000, scales(0.5, 1, 1), requantize_policy_for(S::stablehlo_truncate)), -12);
}

TEST(RequantizeFixedPoint, OutputRangeNarrowAndClip) {
  RequantizePolicy p = requantize_policy_for(S::gemmlowp_double);
  p.narrow_range = true;  // int8 [-127, 127]
  EXPECT_EQ(rq(-1000, scales(1, 1, 1), p), -127);
  p.narrow_range = false;
  p.clip = std::pair<std::int64_t, std::int64_t>{0, 6};  // a fused ReLU6 in quantized units
  EXPECT_EQ(rq(-5, scales(1, 1, 1), p), 0);
  EXPECT_EQ(rq(9, scales(1, 1, 1), p), 6);
  EXPECT_EQ(requantize_element(9, scales(1, 1, 1), 0, DType::i8, p).label, Label::saturated);
}

TEST(RequantizeFixedPoint, TraceShowsEveryStage) {
  const RequantizeElement e =
      requantize_element(5, scales(0.5, 0.5, 1.0), 0, DType::i8, requantize_policy_for(S::gemmlowp_double), true);
  ASSERT_FALSE(e.steps.empty());
  EXPECT_EQ(e.q, 2);
  EXPECT_EQ(e.steps.back().rounded.value, Rational(2));
  bool saw_srdhm = false, saw_rdbpot = false;
  for (const TraceStep& s : e.steps) {
    saw_srdhm |= s.what == "SaturatingRoundingDoublingHighMul";
    saw_rdbpot |= s.what == "RoundingDivideByPOT";
  }
  EXPECT_TRUE(saw_srdhm);
  EXPECT_TRUE(saw_rdbpot);
  EXPECT_EQ(e.ideal, Rational(5, 4));
}

// ---- Tensor ----------------------------------------------------------------------------------------

TEST(RequantizeTensor, PerChannelAlongAnAxis) {
  // acc [[3, 6, -2], [5, -10, 7]], channel axis 1, weight scales {0.5, 0.25, 1}, s_in = s_out = 1.
  Tensor acc(DType::i32, {2, 3});
  const std::int64_t values[] = {3, 6, -2, 5, -10, 7};
  for (int i = 0; i < 6; ++i) acc.set_int(i, values[i]);
  RequantizeParams params;
  params.weight_scales = {0.5, 0.25, 1.0};
  params.axis = 1;
  // ideal RNE: 1.5 -> 2, 1.5 -> 2, -2; 2.5 -> 2, -2.5 -> -2, 7.
  RequantizeResult r = requantize(acc, params, DType::i8, ideal(RoundingMode::rne));
  const std::int64_t want_rne[] = {2, 2, -2, 2, -2, 7};
  const Label want_labels[] = {Label::tie, Label::tie, Label::clear, Label::tie, Label::tie, Label::clear};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(r.q.get_int(i), want_rne[i]) << i;
    EXPECT_EQ(r.labels[static_cast<std::size_t>(i)], want_labels[i]) << i;
  }
  // gemmlowp double: channel 0 (2^30, 0): SRDHM(3, 2^30) = RHU(1.5) = 2, SRDHM(5, 2^30) = RHU(2.5) = 3.
  // channel 1 (2^30, -1): SRDHM(6) = 3, RDBPOT(3, 1) = 2; SRDHM(-10) = -5, RDBPOT(-5, 1) = RNA(-2.5) = -3.
  // channel 2 (2^30, 1): SRDHM(2x, 2^30) = x: -2, 7.
  r = requantize(acc, params, DType::i8, requantize_policy_for(S::gemmlowp_double));
  const std::int64_t want_gemmlowp[] = {2, 2, -2, 3, -3, 7};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.q.get_int(i), want_gemmlowp[i]) << i;
  // Per-channel zero points {1, -1, 0} with the ideal scheme: {3, 1, -2, 3, -3, 7}.
  params.output_zero_points = {1, -1, 0};
  r = requantize(acc, params, DType::i8, ideal(RoundingMode::rne));
  const std::int64_t want_zp[] = {3, 1, -2, 3, -3, 7};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.q.get_int(i), want_zp[i]) << i;
}

TEST(RequantizeTensor, InvalidParametersAreInputErrors) {
  Tensor acc(DType::i32, {2, 3});
  RequantizeParams params;
  params.weight_scales = {0.5, 0.25};  // 3 channels along axis 1
  params.axis = 1;
  EXPECT_THROW(requantize(acc, params, DType::i8, ideal(RoundingMode::rne)), InputError);
  params.weight_scales = {0.5, 0.25, 1.0};
  params.axis = 2;
  EXPECT_THROW(requantize(acc, params, DType::i8, ideal(RoundingMode::rne)), InputError);
  params.axis = 1;
  params.output_zero_points = {300};
  EXPECT_THROW(requantize(acc, params, DType::i8, ideal(RoundingMode::rne)), InputError);
  params.output_zero_points = {};
  params.input_scale = 0.1;  // not an f32
  EXPECT_THROW(requantize(acc, params, DType::i8, ideal(RoundingMode::rne)), InputError);
  params.input_scale = 1.0;
  EXPECT_THROW(requantize(Tensor(DType::f32, {2, 3}), params, DType::i8, ideal(RoundingMode::rne)), InputError);
}

// ---- Policies ---------------------------------------------------------------------------------------

TEST(RequantizePolicies, NamesParseAndCombinations) {
  for (S s : kAllRequantizeSchemes) EXPECT_EQ(parse_requantize_scheme(name(s)), s);
  for (Accumulation a : kAllAccumulations) EXPECT_EQ(parse_accumulation(name(a)), a);
  EXPECT_EQ(parse_multiplier_order("per_op"), MultiplierOrder::per_op);
  EXPECT_EQ(parse_multiplier_derivation("tosa_scale32"), MultiplierDerivation::tosa_scale32);
  EXPECT_EQ(parse_zero_point_add("float_before_rounding"), ZeroPointAdd::float_before_rounding);
  EXPECT_FALSE(parse_requantize_scheme("nonsense").has_value());
  EXPECT_EQ(to_string(requantize_policy_for(S::gemmlowp_double)),
            "gemmlowp_double(multiplier=f64 left_to_right, derivation=tflite)");
  EXPECT_TRUE(scheme_accepts(S::glow_int32, MultiplierDerivation::glow));
  EXPECT_FALSE(scheme_accepts(S::glow_int32, MultiplierDerivation::tflite));
  EXPECT_FALSE(scheme_accepts(S::gemmlowp_double, MultiplierDerivation::glow));
  EXPECT_FALSE(scheme_accepts(S::xnnpack_fp32, MultiplierDerivation::tflite));
  for (S s : kAllRequantizeSchemes) {
    if (scheme_uses_derivation(s)) {
      EXPECT_TRUE(scheme_accepts(s, requantize_policy_for(s).derivation)) << name(s);
    }
  }
}

TEST(RequantizePolicies, InvalidCombinationsAreInputErrors) {
  RequantizePolicy p = requantize_policy_for(S::gemmlowp_double);
  p.multiplier_order = MultiplierOrder::per_op;  // oneDNN's order has no multiplier to derive from
  EXPECT_THROW(prepare_multiplier(scales(0.5, 0.5, 1), p), InputError);
  p = requantize_policy_for(S::glow_int32);
  p.derivation = MultiplierDerivation::tflite;
  EXPECT_THROW(prepare_multiplier(scales(0.5, 0.5, 1), p), InputError);
  // XNNPACK rndnu asserts scale < 256: 256 * 1 / 1.
  EXPECT_THROW(rq(1, scales(256, 1, 1), requantize_policy_for(S::xnnpack_rndnu)), InputError);
  EXPECT_THROW(rq(1, scales(256, 1, 1), requantize_policy_for(S::xnnpack_fp32)), InputError);
  // QNNPACK precise asserts scale < 1.
  EXPECT_THROW(rq(1, scales(1, 1, 1), requantize_policy_for(S::qnnpack_precise)), InputError);
  EXPECT_THROW(rq(1, scales(0.5, 1, 1), 200, DType::i8, ideal(RoundingMode::rne)), InputError);
}

}  // namespace
}  // namespace qc
