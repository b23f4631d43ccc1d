// qgemm's and qconv2d's requantized output under every scheme but `ideal` (which has its own row
// kernel, qgemm_output_property_test.cpp) against the per-element definition: the output stage runs
// the requantize op's fast channels per (A scale, B scale) pair (oracles/qlinear_fast.hpp) and hands
// what they leave to requantize_element. Every expected value and label here is requantize_element
// (exact rationals) on the accumulator the result reports, with the scales read from the op's own
// parameters, and `saturated` where the accumulation overflowed (qlinear.hpp). The generator covers
// per-tensor, per-row A, per-column B and batched B parameters, a convolution's per-channel weights,
// int32 sums that wrap and int64 sums beyond int32, int32 biases, fused clamps, narrow range and
// clips, the policy's clamp, rounding and zero-point placement, and every integer output format.
#include "oracles/format.hpp"
#include "oracles/ieee.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/quantize.hpp"
#include "tests/oracle/both_paths.hpp"
#include "tests/oracle/qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace qc {
namespace qlinear_requantize_test {

using test::element_budget;
using test::ints;

constexpr RequantizeScheme kSchemes[] = {
    RequantizeScheme::float_multiplier,   RequantizeScheme::gemmlowp_double,    RequantizeScheme::tflite_single,
    RequantizeScheme::tflite_int64,       RequantizeScheme::tosa_single,        RequantizeScheme::tosa_double,
    RequantizeScheme::tosa_scale16,       RequantizeScheme::xnnpack_rndnu,      RequantizeScheme::xnnpack_fp32,
    RequantizeScheme::qnnpack_precise,    RequantizeScheme::qnnpack_q31,        RequantizeScheme::glow_int32,
    RequantizeScheme::stablehlo_truncate, RequantizeScheme::fbgemm_fixed_point, RequantizeScheme::gemmlowp_scalar,
};

// A small hand-derived case (four elements per pair, so both pairs get a channel): A [4, 1] =
// [20, -20, 3, 0] with s_a = 1/2, B [1, 2] = [1, 1] with column scales 1/4 and 1/2, s_out = 1, i8,
// zero point 0. Column 0's multiplier is 1/8: exact values 2.5, -2.5, 0.375, 0; column 1's is 1/4:
// 5, -5, 0.75, 0.
//   float_multiplier (f32, RNE):  2, -2, 0, 0 | 5, -5, 1, 0.
//   gemmlowp_double (Q31 2^30, shift -2 and -1): SaturatingRoundingDoublingHighMul halves with
//     rounding (20 -> 10, -20 -> -10, 3 -> 1.5 -> 2), then RoundingDivideByPOT rounds half away:
//     10/4 -> 3, -10/4 -> -3, 2/4 -> 1 (a double rounding: 0.375 becomes 1) | 5, -5, 2/2 -> 1, 0.
// Labels are against the exact value: tie, tie, clear, clear | clear x 4.
TEST(QLinearRequantize, HandDerivedPerColumnPairs) {
  QGemmOp op;
  op.a.values = ints(DType::i8, {4, 1}, {20, -20, 3, 0});
  op.a.params = test::per_tensor(0.5);
  op.b.values = ints(DType::i8, {1, 2}, {1, 1});
  op.b.format = DType::i8;
  op.b.shape = {1, 2};
  op.b.params = test::per_axis(1, {0.25, 0.5});
  op.output = test::requant_out(1.0, 0);
  const std::vector<Label> labels = {Label::tie,   Label::clear, Label::tie,   Label::clear,
                                     Label::clear, Label::clear, Label::clear, Label::clear};
  for (const auto& [scheme, want] :
       {std::pair{RequantizeScheme::float_multiplier, std::vector<std::int64_t>{2, 5, -2, -5, 0, 1, 0, 0}},
        std::pair{RequantizeScheme::gemmlowp_double, std::vector<std::int64_t>{3, 5, -3, -5, 1, 1, 0, 0}}}) {
    QGemmPolicy p;
    p.requantize = requantize_policy_for(scheme);
    const QGemmResult r = qgemm(op, p);
    EXPECT_EQ(test::int_values(r.y), want) << name(scheme);
    EXPECT_EQ(r.labels, labels) << name(scheme);
    EXPECT_EQ(r.slow_elements, 0) << name(scheme);
  }
}

struct Trial {
  std::function<QLinearResult(const std::vector<std::int64_t>*)> run;  // the op, optionally on selected elements
  std::function<double(std::int64_t)> a_scale, b_scale;                // output element e's, from the op's parameters
  QGemmPolicy policy;
  OutputStage output;
  DType scale_dtype = DType::f32;
  bool pairs_repeat = true;  // every (A scale, B scale) pair has several elements (not per-row A x per-column B)
  std::string what;
};

double pick_scale(SplitMix64& rng) {
  switch (rng.below(4)) {
    case 0:
      return std::ldexp(1.0, -static_cast<int>(rng.below(10)));  // dyadic: ties
    case 1:
      return 256 + 0x1p-11;  // with s_a = 1/64 and s_out = 8: m = 1/2 + 2^-20, near ties
    default:
      return static_cast<double>(static_cast<float>(0.001 + static_cast<double>(rng.below(1u << 20)) * 1e-7));
  }
}

QGemmPolicy random_policy(SplitMix64& rng, RequantizeScheme scheme, bool wide_ints) {
  QGemmPolicy p;
  p.requantize = requantize_policy_for(scheme);
  RequantizePolicy& rp = p.requantize;
  if (scheme == RequantizeScheme::float_multiplier) {  // the recipe's own choices
    using K = ComputeFormat::Kind;
    rp.product_format = {test::pick(rng, {K::f32, K::f32, K::f64, K::exact}), 0};
    rp.multiplier_format = {test::pick(rng, {K::f32, K::f64}), 0};
    rp.multiplier_order = rng.below(2) ? MultiplierOrder::left_to_right : rp.multiplier_order;
    rp.rounding = test::pick(rng, {RoundingMode::rne, RoundingMode::rne, RoundingMode::rna, RoundingMode::rtz,
                                   RoundingMode::floor, RoundingMode::ceil, RoundingMode::rhu});
    rp.zero_point = rng.below(2) ? ZeroPointAdd::int_after_rounding : ZeroPointAdd::float_before_rounding;
    rp.clamp = test::pick(rng, {Clamp::int_after, Clamp::float_before, Clamp::wrap});
  }
  rp.narrow_range = rng.below(5) == 0;
  p.accumulation = wide_ints ? test::pick(rng, {Accumulation::int64, Accumulation::int32_wrap})
                             : test::pick(rng, {Accumulation::int32_wrap, Accumulation::int32_wrap, Accumulation::int64,
                                                Accumulation::int32_saturate});
  return p;
}

// The output format, zero point, scale, fused clamp and clip of one trial.
void random_output(SplitMix64& rng, Trial& t, OutputStage& out) {
  const DType format =
      test::pick(rng, {DType::i8, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i4, DType::u4});
  const std::int64_t zp = int_min(format) + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(
                                                std::min<std::int64_t>(int_max(format) - int_min(format), 1000) + 1)));
  const double s_out = test::pick(rng, {8.0, 0.5, 3.0, 0.1, 0.05, 1.0 / 1024});
  std::optional<IntRange> fused;
  if (rng.below(4) == 0)
    fused = fused_activation_range(test::pick(rng, {FusedActivation::relu, FusedActivation::relu6}),
                                   static_cast<float>(s_out), zp, format);
  out = test::requant_out(static_cast<double>(static_cast<float>(s_out)), zp, fused, format);
  if (rng.below(6) == 0 && int_max(format) - int_min(format) > 20)
    t.policy.requantize.clip = std::make_pair(int_min(format) + 2, int_max(format) - 5);
  t.output = out;
}

Trial gemm_trial(SplitMix64& rng, RequantizeScheme scheme) {
  Trial t;
  QGemmOp op;
  const bool wide_ints = rng.below(5) == 0;  // i16 operands: int64 sums beyond int32, int32 sums that wrap
  const bool batched = rng.below(5) == 0;
  const std::int64_t batches = batched ? 2 : 1;
  const std::int64_t M = 1 + static_cast<std::int64_t>(rng.below(40)), K = 1 + static_cast<std::int64_t>(rng.below(48)),
                     N = 1 + static_cast<std::int64_t>(rng.below(rng.below(3) ? 40 : 300));
  const DType a_type = wide_ints ? DType::i16 : rng.below(2) ? DType::u8 : DType::i8;
  const DType b_type = wide_ints ? DType::i16 : DType::i8;
  const std::int64_t za = a_type == DType::u8 ? 128 : 0;
  std::vector<std::int64_t> a(static_cast<std::size_t>(batches * M * K)), b(static_cast<std::size_t>(batches * K * N));
  const std::int64_t spread = wide_ints ? 30000 : rng.below(2) ? 6 : 127;  // small sums or anywhere
  for (auto& v : a)
    v = std::clamp<std::int64_t>(
        za + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * spread + 1))) - spread, int_min(a_type),
        int_max(a_type));
  for (auto& v : b)
    v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * std::min<std::int64_t>(spread, 127) + 1))) -
        std::min<std::int64_t>(spread, 127);
  if (wide_ints)
    for (auto& v : b) v = static_cast<std::int64_t>(rng.below(60001)) - 30000;
  op.a.values = ints(a_type, batched ? Shape{batches, M, K} : Shape{M, K}, a);
  op.b.values = ints(b_type, batched ? Shape{batches, K, N} : Shape{K, N}, b);
  op.b.format = b_type;
  op.b.shape = op.b.values.shape();
  const bool per_row = rng.below(3) == 0, per_column = rng.below(4) != 0;
  const DType scale_dtype = rng.below(6) == 0 ? DType::f64 : DType::f32;
  if (per_row) {
    std::vector<double> sa;
    for (std::int64_t r = 0; r < M; ++r) sa.push_back(std::ldexp(1.0, -static_cast<int>(rng.below(8))) / 64);
    op.a.params = test::per_axis(batched ? 1 : 0, sa, std::vector<std::int64_t>(static_cast<std::size_t>(M), za));
  } else {
    op.a.params = test::per_tensor(1.0 / 64, za);
  }
  if (per_column) {
    std::vector<double> sb;
    for (std::int64_t n = 0; n < N; ++n) sb.push_back(pick_scale(rng));
    op.b.params = test::per_axis(batched ? 2 : 1, sb);
  } else {
    op.b.params = test::per_tensor(pick_scale(rng));
  }
  op.a.params.scale_dtype = op.b.params.scale_dtype = scale_dtype;
  if (rng.below(4) == 0) {
    std::vector<std::int64_t> bias;
    for (std::int64_t n = 0; n < N; ++n)
      bias.push_back(rng.below(8) == 0 ? (rng.below(2) ? 1 : -1) * (std::int64_t{1} << 31) + 100
                                       : static_cast<std::int64_t>(rng.below(4001)) - 2000);
    for (auto& v : bias) v = std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX);
    op.bias = ints(DType::i32, {N}, bias);
  }
  t.policy = random_policy(rng, scheme, wide_ints);
  random_output(rng, t, op.output);
  t.scale_dtype = scale_dtype;
  t.pairs_repeat = !(per_row && per_column);
  t.a_scale = [params = op.a.params, M, N](std::int64_t e) {
    return params.axis ? params.scales[static_cast<std::size_t>((e / N) % M)] : params.scales[0];
  };
  t.b_scale = [params = op.b.params, N](std::int64_t e) {
    return params.axis ? params.scales[static_cast<std::size_t>(e % N)] : params.scales[0];
  };
  t.what = "gemm M " + std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N) +
           (batched ? " batched" : "") + (per_row ? " per-row A" : "") + (per_column ? " per-column B" : "") +
           (wide_ints ? " i16" : "") + (op.bias ? " bias" : "");
  t.run = [op, policy = t.policy](const std::vector<std::int64_t>* only) { return qgemm(op, policy, only); };
  return t;
}

Trial conv_trial(SplitMix64& rng, RequantizeScheme scheme) {
  Trial t;
  QConv2dOp op;
  const std::int64_t C = 1 + static_cast<std::int64_t>(rng.below(4)), OC = 1 + static_cast<std::int64_t>(rng.below(6)),
                     H = 3 + static_cast<std::int64_t>(rng.below(8)), W = 3 + static_cast<std::int64_t>(rng.below(8));
  std::vector<std::int64_t> x(static_cast<std::size_t>(C * H * W)), w(static_cast<std::size_t>(OC * C * 9));
  for (auto& v : x) v = static_cast<std::int64_t>(rng.below(256));
  for (auto& v : w) v = static_cast<std::int64_t>(rng.below(256)) - 128;
  op.input.values = ints(DType::u8, {1, C, H, W}, x);
  op.input.params = test::per_tensor(1.0 / 64, static_cast<std::int64_t>(rng.below(256)));
  op.weight.values = ints(DType::i8, {OC, C, 3, 3}, w);
  op.weight.format = DType::i8;
  op.weight.shape = op.weight.values.shape();
  const bool per_channel = rng.below(3) != 0;
  if (per_channel) {
    std::vector<double> s;
    for (std::int64_t c = 0; c < OC; ++c) s.push_back(pick_scale(rng));
    op.weight.params = test::per_axis(0, s);
  } else {
    op.weight.params = test::per_tensor(pick_scale(rng));
  }
  op.geometry.pad_top = op.geometry.pad_left = op.geometry.pad_bottom = op.geometry.pad_right =
      static_cast<std::int64_t>(rng.below(2));
  if (rng.below(4) == 0) {
    std::vector<std::int64_t> bias;
    for (std::int64_t c = 0; c < OC; ++c) bias.push_back(static_cast<std::int64_t>(rng.below(40001)) - 20000);
    op.bias = ints(DType::i32, {OC}, bias);
  }
  t.policy = random_policy(rng, scheme, false);
  random_output(rng, t, op.output);
  const std::int64_t pad = op.geometry.pad_top, pixels = (H + 2 * pad - 2) * (W + 2 * pad - 2);
  t.a_scale = [s = op.input.params.scales[0]](std::int64_t) { return s; };
  t.b_scale = [params = op.weight.params, pixels, OC](std::int64_t e) {
    return params.axis ? params.scales[static_cast<std::size_t>((e / pixels) % OC)] : params.scales[0];
  };
  t.what = "conv C " + std::to_string(C) + " OC " + std::to_string(OC) + " H " + std::to_string(H) + " W " +
           std::to_string(W) + " pad " + std::to_string(pad) + (per_channel ? " per-channel" : "") +
           (op.bias ? " bias" : "");
  t.run = [op, policy = t.policy](const std::vector<std::int64_t>* only) { return qconv2d(op, policy, only); };
  return t;
}

TEST(QLinearRequantize, EverySchemeEqualsTheDefinition) {
  const std::int64_t budget = element_budget() / 4;  // each element costs an exact evaluation
  SplitMix64 rng(20261128);
  std::mt19937_64 pick(5);
  std::int64_t compared = 0, eligible = 0, eligible_slow = 0, must_slow = 0, selected = 0;
  std::array<std::int64_t, std::size(kSchemes)> per_scheme{};
  std::array<std::int64_t, kLabelCount> seen{};
  for (int trial = 0; compared < budget && trial < 200000; ++trial) {
    const std::size_t si = static_cast<std::size_t>(trial) % std::size(kSchemes);
    const RequantizeScheme scheme = kSchemes[si];
    const Trial t = rng.below(5) == 0 ? conv_trial(rng, scheme) : gemm_trial(rng, scheme);
    const std::string what = t.what + " " + std::string(name(scheme)) + " out " + std::string(name(t.output.format)) +
                             " zp " + std::to_string(t.output.zero_point) + " accumulation " +
                             std::string(name(t.policy.accumulation));
    QLinearResult r;
    try {
      r = t.run(nullptr);
    } catch (const InputError&) {
      continue;  // a multiplier or clip the scheme rejects: the definition raises it too (qgemm_test.cpp)
    }
    RequantizePolicy rp = t.policy.requantize;
    if (t.output.clamp)
      rp.clip = rp.clip ? std::make_pair(std::max(rp.clip->first, t.output.clamp->lo),
                                         std::min(rp.clip->second, t.output.clamp->hi))
                        : std::make_pair(t.output.clamp->lo, t.output.clamp->hi);
    std::int64_t direct = 0;  // elements the channels cannot take: overflowed, or beyond int32
    for (std::int64_t e = 0; e < r.y.size(); ++e) {
      const std::int64_t acc = add_in_accumulator(t.policy.accumulation, r.accumulator(e), r.int_bias(e));
      const bool overflowed = r.exact_accumulator(e) != BigInt(r.accumulator(e));  // the accumulation's own
      if (overflowed || acc < INT32_MIN || acc > INT32_MAX) ++direct;
      const RequantizeScales s{t.a_scale(e), t.b_scale(e), t.output.scale, t.scale_dtype};
      RequantizeElement want;
      try {
        want = requantize_element(acc, s, t.output.zero_point, t.output.format, rp);
      } catch (const InputError& err) {
        FAIL() << what << ", element " << e << ": the definition raises " << err.what() << " but the op did not";
      }
      const Label want_label = overflowed ? Label::saturated : want.label;
      ASSERT_EQ(r.y.get_int(e), want.q) << what << ", element " << e << ", accumulator " << acc;
      ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], want_label)
          << what << ", element " << e << ", accumulator " << acc;
      ++seen[static_cast<std::size_t>(want_label)];
    }
    compared += r.y.size();
    per_scheme[si] += r.y.size();
    must_slow += direct;
    if (t.pairs_repeat && r.y.size() >= 64) {
      eligible += r.y.size() - direct;
      eligible_slow += r.slow_elements - direct;
    }
    if (trial % 7 == 0) {  // selected elements: per-element scale tables (cols = 1), same values and labels
      const std::vector<std::int64_t> only = test::some_elements(r.y, pick);
      selected += test::expect_selected_equal_whole(t.run(&only), r, only, trial);
    }
  }
  EXPECT_GE(compared, budget);
  EXPECT_GT(selected, 0);
  for (std::size_t i = 0; i < std::size(kSchemes); ++i)
    EXPECT_GT(per_scheme[i], budget / 200) << name(kSchemes[i]) << ": too few trials the scheme accepts";
  for (const Label l : {Label::clear, Label::near_tie, Label::tie, Label::saturated})
    EXPECT_GT(seen[static_cast<std::size_t>(l)], 0) << name(l);
  // The fast channels decide almost everything they can take (pairs of several elements, int32
  // accumulators that did not overflow).
  EXPECT_GT(must_slow, 0);
  EXPECT_GT(eligible, compared / 3);
  EXPECT_LT(eligible_slow, eligible / 20) << "of " << eligible << " elements the fast channels could take";
  // (At the default budget: 251313 compared, 192872 eligible, 74 of them slow; 2096 overflowed or
  // beyond int32.)
}

// Dequantized outputs with blocked B (several K segments) and/or a float bias: each value is the
// recipe of qlinear.hpp evaluated here in Arith (float(acc_s) * (float(s_a) * float(s_b)) per
// segment, summed in order, + float(bias), then cast RNE), the label float_grid_label of the exact
// value (saturated for an overflowed accumulation or a non-finite result). The scales per segment
// come from qgemm_terms (the op's own parameters, not the output stage).
TEST(QLinearDequantize, SeveralSegmentsAndFloatBiasEqualTheRecipe) {
  SplitMix64 rng(31);
  std::int64_t eligible = 0, slow = 0;
  std::array<std::int64_t, kLabelCount> seen{};
  for (int trial = 0; trial < 300; ++trial) {
    const std::int64_t M = 1 + static_cast<std::int64_t>(rng.below(12)),
                       N = 1 + static_cast<std::int64_t>(rng.below(24)),
                       block = 1 + static_cast<std::int64_t>(rng.below(16)),
                       K = 1 + static_cast<std::int64_t>(rng.below(64));
    const bool wide = rng.below(6) == 0;  // i16 operands: int32 sums that wrap
    const DType t = wide ? DType::i16 : DType::i8;
    std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
    const std::int64_t spread = wide ? 30000 : rng.below(2) ? 3 : 127;
    for (auto& v : a) v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * spread + 1))) - spread;
    for (auto& v : b) v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * spread + 1))) - spread;
    QGemmOp op;
    op.a.values = ints(t, {M, K}, a);
    op.a.format = t;
    op.a.params = test::per_tensor(test::pick(rng, {1.0 / 64, static_cast<double>(0.0123f), 0.5}));
    op.b.values = ints(t, {K, N}, b);
    op.b.format = t;
    op.b.shape = {K, N};
    const bool blocked = rng.below(4) != 0;
    std::vector<double> sb;
    const std::int64_t blocks = blocked ? (K + block - 1) / block : 1;
    for (std::int64_t i = 0; i < blocks * N; ++i)
      sb.push_back(rng.below(3) ? static_cast<double>(static_cast<float>(pick_scale(rng)))
                                : std::ldexp(1.0, -static_cast<int>(rng.below(12))));
    op.b.params = blocked ? test::blocked(0, block, sb) : test::per_axis(1, sb);
    const DType out = test::pick(rng, {DType::f32, DType::f32, DType::f16, DType::bf16, DType::f64});
    if (!blocked || rng.below(2)) {
      std::vector<double> bias;
      for (std::int64_t n = 0; n < N; ++n)
        bias.push_back(rng.below(4) == 0 ? 0.0
                                         : static_cast<double>(static_cast<float>(
                                               (static_cast<double>(rng.below(20001)) - 10000) / 256)));
      op.bias = test::floats(test::pick(rng, {DType::f32, DType::f16, DType::f64}), {N}, bias);
    }
    op.output = test::float_out(out);
    QGemmPolicy p;
    using Kd = ComputeFormat::Kind;
    p.dequantize.compute = {test::pick(rng, {Kd::f32, Kd::f32, Kd::f64, Kd::exact, Kd::f16}), 0};
    p.accumulation = wide ? Accumulation::int32_wrap : Accumulation::int64;
    const QGemmResult r = qgemm(op, p);
    const Arith A = resolve_compute(p.dequantize.compute, DType::i32, op.a.params.scale_dtype);
    const std::vector<double> bias_values = op.bias ? test::float_values(*op.bias) : std::vector<double>{};
    for (std::int64_t e = 0; e < r.y.size(); ++e) {
      const DotTerms terms = qgemm_terms(op, p, e);
      ExactFloat sum;
      bool overflowed = false;
      for (std::int64_t s = 0; s < r.segments(); ++s) {
        overflowed = overflowed || r.exact_accumulator(e, s) != BigInt(r.accumulator(e, s));
        const ExactFloat fa = A.convert(ExactFloat::finite(Rational(r.accumulator(e, s))));
        const ExactFloat fsa = A.convert(ExactFloat::finite(Rational(terms.a_scale[static_cast<std::size_t>(s)])));
        const ExactFloat fsb = A.convert(ExactFloat::finite(Rational(terms.b_scale[static_cast<std::size_t>(s)])));
        const ExactFloat term = A.mul(fa, A.mul(fsa, fsb));
        sum = s == 0 ? term : A.add(sum, term);
      }
      if (op.bias)
        sum = A.add(sum, A.convert(ExactFloat::finite(Rational(bias_values[static_cast<std::size_t>(e % N)]))));
      const std::uint64_t want = encode_float(out, sum, RoundingMode::rne, Overflow::ieee);
      const bool finite = decode_float(out, want).is_finite();
      const Label want_label = overflowed || !finite ? Label::saturated : float_grid_label(r.exact_value(e), out);
      const std::string what = "trial " + std::to_string(trial) + " element " + std::to_string(e) + " out " +
                               std::string(name(out)) + " compute " + A.name() + (blocked ? " blocked" : "") +
                               (op.bias ? " bias" : "");
      ASSERT_EQ(r.y.bits(e), want) << what;
      ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], want_label) << what;
      ++seen[static_cast<std::size_t>(want_label)];
    }
    if (!wide && A.name() != "f16") {
      eligible += r.y.size();
      slow += r.slow_elements;
    }
  }
  for (const Label l : {Label::clear, Label::near_tie, Label::tie, Label::saturated})
    EXPECT_GT(seen[static_cast<std::size_t>(l)], 0) << name(l);
  // f16 compute, overflows (wrapped sums; large values in f16) and elements near the grid's midpoints
  // go to the definition; little else does.
  EXPECT_LT(slow, eligible / 10) << "of " << eligible;
}

}  // namespace qlinear_requantize_test
}  // namespace qc
