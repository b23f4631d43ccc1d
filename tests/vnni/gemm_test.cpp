// GEMM kernels of every ISA this CPU runs against the int64 model (reference.hpp). An ISA the CPU
// lacks is a GTEST_SKIP naming the missing feature.
#include "gemm_tester.hpp"
#include "isa_name.hpp"

#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <gtest/gtest.h>

namespace qc::vnni {
namespace {

using test::GemmTester;

class VnniGemm : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (const auto missing = missing_feature(GetParam()))
      GTEST_SKIP() << name(GetParam()) << ": this CPU lacks " << *missing;
  }
  Isa isa() const { return GetParam(); }
};

using test::isa_name;

INSTANTIATE_TEST_SUITE_P(AllIsas, VnniGemm, ::testing::ValuesIn(kAllIsas), isa_name);

// M, N, K around every ISA's tile (mr 4 or 12; nr 16, 24 or 32; K groups of 4), int32 output.
TEST_P(VnniGemm, OddShapes) {
  for (std::int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 17, 25})
    for (std::int64_t n : {1, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 97})
      for (std::int64_t k : {1, 2, 3, 4, 5, 7, 64, 65, 131}) {
        GemmTester().m(m).n(n).k(k).seed(static_cast<std::uint32_t>(m * 10007 + n * 101 + k)).test(isa());
        if (HasFatalFailure()) return;
      }
}

TEST_P(VnniGemm, StridedOperands) {
  GemmTester().m(13).n(50).k(37).lda_pad(11).ldo_pad(5).activations(ActivationType::s8, -3).test(isa());
  GemmTester().m(9).n(33).k(70).lda_pad(1).ldo_pad(3).output(OutputKind::u8, 300.0f, 7).test(isa());
  // u8 with K % 4 == 0: the kernel reads A in place, rows lda apart.
  GemmTester().m(29).n(40).k(72).lda_pad(5).activations(ActivationType::u8, 7).test(isa());
}

// s8 and u8 activations with zero points, per-tensor and per-channel scales, bias, every output.
TEST_P(VnniGemm, QuantizationAndOutputs) {
  const OutputKind kinds[] = {OutputKind::int32, OutputKind::f32, OutputKind::u8, OutputKind::s8};
  std::uint32_t seed = 100;
  for (ActivationType at : {ActivationType::u8, ActivationType::s8})
    for (std::int32_t za : {0, 5, at == ActivationType::u8 ? 128 : -128, at == ActivationType::u8 ? 255 : 127})
      for (bool per_channel : {false, true})
        for (bool bias : {false, true})
          for (OutputKind kind : kinds) {
            GemmTester t;
            t.m(11).n(37).k(45).activations(at, za).per_channel_scales(per_channel).bias(bias).scales(0.02f, 0.003f);
            // s_out puts the typical |acc·s_a·s_w| around 1..100: clamps, ties and interior values all occur.
            t.output(kind, 0.05f, kind == OutputKind::u8 ? 120 : (kind == OutputKind::s8 ? -9 : 0));
            t.seed(++seed).test(isa());
            if (HasFatalFailure()) return;
          }
}

TEST_P(VnniGemm, FloatBias) {
  GemmTester()
      .m(7)
      .n(29)
      .k(33)
      .activations(ActivationType::s8, 3)
      .per_channel_scales()
      .bias()
      .bias_f32()
      .output(OutputKind::f32)
      .scales(0.1f, 0.01f)
      .test(isa());
}

TEST_P(VnniGemm, FusedClamp) {
  GemmTester().m(10).n(20).k(30).output(OutputKind::u8, 0.5f, 100).clamp(100, 200).scales(0.01f, 0.02f).test(isa());
  GemmTester().m(10).n(20).k(30).output(OutputKind::s8, 0.5f, -5).clamp(-5, 60).scales(0.01f, 0.02f).test(isa());
}

// Weight zero points: folded as zw[n]·rowsum(A) (FBGEMM row offsets), per tensor and per column.
TEST_P(VnniGemm, WeightZeroPoints) {
  GemmTester().m(9).n(19).k(23).activations(ActivationType::u8, 17).weight_zero_points({-3}).bias().test(isa());
  std::vector<std::int32_t> zw;
  for (int j = 0; j < 50; ++j) zw.push_back(j % 9 - 4);
  GemmTester()
      .m(17)
      .n(50)
      .k(70)
      .activations(ActivationType::s8, -20)
      .weight_zero_points(zw)
      .per_channel_scales()
      .output(OutputKind::s8, 2.0f, 3)
      .test(isa());
}

TEST_P(VnniGemm, Int4Weights) {
  for (bool packed : {false, true}) {
    GemmTester().m(5).n(17).k(31).weights(WeightType::s4).packed_int4(packed).test(isa());  // K*N odd: padded nibble
    GemmTester()
        .m(6)
        .n(24)
        .k(40)
        .activations(ActivationType::s8, 2)
        .weights(WeightType::u4)
        .packed_int4(packed)
        .weight_zero_points({8})
        .per_channel_scales()
        .output(OutputKind::f32)
        .test(isa());
    GemmTester()
        .m(3)
        .n(9)
        .k(9)
        .weights(WeightType::s4)
        .packed_int4(packed)
        .layout(WeightLayout::n_by_k)
        .output(OutputKind::u8, 0.25f, 128)
        .test(isa());
  }
}

TEST_P(VnniGemm, TransposedWeights) {
  GemmTester().m(12).n(53).k(77).layout(WeightLayout::n_by_k).activations(ActivationType::s8, 1).bias().test(isa());
}

// Several M blocks (mc = 64..192 rows) and K blocks (kc = 512 or 1024): the partial-sum path and
// the row sums carried across K blocks.
TEST_P(VnniGemm, CacheBlocks) {
  GemmTester().m(200).n(70).k(1100).activations(ActivationType::s8, 4).weight_zero_points({2}).bias().test(isa());
  GemmTester().m(30).n(40).k(2100).activations(ActivationType::u8, 9).output(OutputKind::f32).test(isa());
  GemmTester().m(131).n(49).k(513).output(OutputKind::u8, 40.0f, 128).scales(0.1f, 0.1f).test(isa());
}

// Row groups split across 3 worker threads (qconform/parallel.hpp), each with its own packing and
// partial-sum buffers: still exactly the int64 model, on the packed path (s8, weight zero points,
// K blocks) and on the in-place one (u8, K % 4 == 0).
TEST_P(VnniGemm, ThreadsSplitTheRowsExactly) {
  set_worker_threads(3);
  GemmTester().m(601).n(70).k(1100).activations(ActivationType::s8, 4).weight_zero_points({2}).bias().test(isa());
  GemmTester().m(997).n(64).k(256).activations(ActivationType::u8, 9).output(OutputKind::s8, 0.5f, -3).test(isa());
  set_worker_threads(0);
}

TEST_P(VnniGemm, EmptyM) {
  GemmParams p;
  p.n = 3;
  p.k = 2;
  const std::vector<std::int8_t> w(6, 1);
  const PackedWeights packed = pack_weights(p, w, isa());
  std::int32_t out = 42;
  gemm(packed, 0, static_cast<const std::uint8_t*>(nullptr), 2, &out, 3);
  EXPECT_EQ(out, 42);
}

// K = 70000. The bound K·max|a - za|·max|w - zw| + |bias| = 70000·128·128 + 50000 < 2^31 proves
// the exact result fits int32, though the raw u8·s8 sums do not (70000·255·127 > 2^31): vpdpbusd
// wraps, and the column term brings the wrapped sum back exactly.
TEST_P(VnniGemm, LargeKStaysExact) {
  constexpr std::int64_t K = 70000;
  static_assert(K * 128 * 128 + 50000 < (std::int64_t{1} << 31));
  static_assert(K * 255 * 127 > (std::int64_t{1} << 31));
  auto tester = [&] { return GemmTester().m(3).n(5).k(K).bias(); };
  if (isa() == Isa::avx2_maddubs) {
    // Pairs leave int16 with full 8-bit weights; 7-bit weights keep every pair (and so the sum) exact.
    tester().activations(ActivationType::u8, 128).weights_7bit().expect_exact().test(isa());
    tester()
        .activations(ActivationType::s8, 0)
        .weights_7bit()
        .expect_exact()
        .a_values([](std::int64_t, std::int64_t) { return 127; })
        .w_values([](std::int64_t, std::int64_t) { return 63; })
        .test(isa());
    tester().activations(ActivationType::u8, 128).test(isa());  // saturates; the model says how
    return;
  }
  tester().activations(ActivationType::u8, 128).expect_exact().test(isa());
  // s8 a = 127 is au = 255: Σ au·w = 70000·255·127 wraps; the -128·Σw compensation restores 70000·127·127.
  tester()
      .activations(ActivationType::s8, 0)
      .expect_exact()
      .a_values([](std::int64_t, std::int64_t) { return 127; })
      .w_values([](std::int64_t, std::int64_t) { return 127; })
      .test(isa());
}

// ---- The vpmaddubsw hazard, by hand -------------------------------------------------------------

std::int32_t one_dot(Isa isa, ActivationType at, std::vector<std::int8_t> a_bytes, std::vector<std::int8_t> w,
                     bool weights_7bit = false) {
  GemmParams p;
  p.n = 1;
  p.k = static_cast<std::int64_t>(w.size());
  p.quant.a_type = at;
  p.quant.weights_7bit = weights_7bit;
  const PackedWeights packed = pack_weights(p, w, isa);
  std::int32_t out = 0;
  if (at == ActivationType::u8) {
    std::vector<std::uint8_t> a(a_bytes.begin(), a_bytes.end());
    gemm(packed, 1, a.data(), p.k, &out, 1);
  } else {
    gemm(packed, 1, a_bytes.data(), p.k, &out, 1);
  }
  return out;
}

TEST_P(VnniGemm, PairSaturationExactlyWhereTheSumLeavesInt16) {
  const auto u255 = static_cast<std::int8_t>(-1);  // the byte 255
  const bool maddubs = isa() == Isa::avx2_maddubs;
  // 255·127 + 255·127 = 64770 -> 32767 (oneDNN doc/advanced_topics/int8_computations.md;
  // docs/numerics.md "Accumulation quirks").
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, u255}, {127, 127}), maddubs ? 32767 : 64770);
  // 255·(-128)·2 = -65280 -> -32768.
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, u255}, {-128, -128}), maddubs ? -32768 : -65280);
  // At the edge: 255·64·2 = 32640 and 255·127 + 2·127 = 32639 fit; 255·127 + 4·127 = 32893 does not.
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, u255}, {64, 64}), 32640);
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, 2}, {127, 127}), 32385 + 254);
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, 4}, {127, 127}), maddubs ? 32767 : 32385 + 508);
  // Pairs are (2j, 2j+1): the same four products split as (big, small), (big, small) never saturate.
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, 0, u255, 0}, {127, 127, 127, 127}), 64770);
  // s8 through the +128 shift: a = 127 is au = 255, so the pair 255·127·2 saturates and the
  // compensation -128·Σw = -32512 then leaves 32767 - 32512 = 255 instead of 127·127·2 = 32258
  // (oneDNN's "expected 32258, got 255").
  EXPECT_EQ(one_dot(isa(), ActivationType::s8, {127, 127}, {127, 127}), maddubs ? 255 : 32258);
  // An odd K pairs the last element with a zero: no saturation from a single product.
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255}, {127}), 32385);
  // 7-bit weights: the largest pairs stay within int16 and every ISA is exact.
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, u255}, {63, 63}, true), 32130);
  EXPECT_EQ(one_dot(isa(), ActivationType::u8, {u255, u255}, {-64, -64}, true), -32640);
  EXPECT_EQ(one_dot(isa(), ActivationType::s8, {127, 127}, {63, 63}, true), 127 * 63 * 2);
}

TEST_P(VnniGemm, RandomWeightsAgainstThePairModel) {
  // Full-range weights: avx2_maddubs saturates somewhere, and must do so exactly as the model says.
  GemmTester().m(16).n(40).k(96).activations(ActivationType::s8, 0).test(isa());
  GemmTester()
      .m(16)
      .n(40)
      .k(97)
      .activations(ActivationType::u8, 0)
      .a_values([](std::int64_t m, std::int64_t k) { return static_cast<std::int32_t>(200 + (m * 7 + k * 13) % 56); })
      .test(isa());
  GemmTester().m(16).n(40).k(96).weights_7bit().expect_exact().test(isa());
}

// ---- The epilogue by hand --------------------------------------------------------------------------

TEST_P(VnniGemm, RequantizeRoundsHalfToEvenAndClampsInFloat) {
  // One column, w = 1, s_a = s_w = 1, s_out = 2: acc / 2 in f32, RNE, + zo.
  GemmParams p;
  p.n = 1;
  p.k = 1;
  p.quant.a_type = ActivationType::s8;
  p.quant.output = {OutputKind::s8, 2.0f, 10, std::nullopt, std::nullopt};
  const std::vector<std::int8_t> w{1};
  const PackedWeights packed = pack_weights(p, w, isa());
  const std::vector<std::int8_t> a{5, 7, -3, -5, 1, -1, 127, -128};
  std::vector<std::int8_t> out(a.size());
  gemm(packed, static_cast<std::int64_t>(a.size()), a.data(), 1, out.data(), 1);
  // 2.5 -> 2, 3.5 -> 4, -1.5 -> -2, -2.5 -> -2, 0.5 -> 0, -0.5 -> -0; 63.5 -> 64 -> 74; -64 -> -54.
  EXPECT_EQ(std::vector<int>(out.begin(), out.end()), (std::vector<int>{12, 14, 8, 8, 10, 10, 74, -54}));
}

TEST_P(VnniGemm, FloatConversionOfLargeAccumulators) {
  // acc = 2^24 + 1 has no f32: cvtdq2ps rounds it to 2^24 (RNE), then · 1.0.
  GemmParams p;
  p.n = 1;
  p.k = 1;
  p.quant.bias = {(1 << 24) + 1 - 3};
  p.quant.output.kind = OutputKind::f32;
  const std::vector<std::int8_t> w{1};
  const PackedWeights packed = pack_weights(p, w, isa());
  const std::uint8_t a = 3;
  float out = 0;
  gemm(packed, 1, &a, 1, &out, 1);
  EXPECT_EQ(out, 16777216.0f);
}

// ---- Validation ----------------------------------------------------------------------------------

TEST(VnniPack, RejectsWhatItCannotRepresent) {
  GemmParams p;
  p.n = 2;
  p.k = 2;
  const std::vector<std::int8_t> w{1, 2, 3, 64};
  p.quant.weights_7bit = true;
  try {
    (void)pack_weights(p, w, Isa::scalar);
    FAIL() << "7-bit weights accepted 64";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("weights_7bit"), std::string::npos) << e.what();
  }
  p.quant.weights_7bit = false;
  p.quant.a_zero_point = 300;
  EXPECT_THROW((void)pack_weights(p, w, Isa::scalar), InputError);
  p.quant.a_zero_point = 0;
  p.quant.w_scales = {1.0f, 2.0f, 3.0f};
  EXPECT_THROW((void)pack_weights(p, w, Isa::scalar), InputError);
  p.quant.w_scales = {1.0f};
  p.quant.w_type = WeightType::s4;
  EXPECT_THROW((void)pack_weights(p, w, Isa::scalar), InputError);  // 64 is not s4
  p.quant.w_type = WeightType::s8;
  p.quant.output = {OutputKind::u8, 0.0f, 0, std::nullopt, std::nullopt};
  EXPECT_THROW((void)pack_weights(p, w, Isa::scalar), InputError);  // s_out = 0
  p.quant.output = {OutputKind::u8, 1.0f, 0, 10, 5};
  EXPECT_THROW((void)pack_weights(p, w, Isa::scalar), InputError);  // empty clamp
  p.quant.output = {OutputKind::u8, 1.0f, 0, std::nullopt, std::nullopt};
  const PackedWeights packed = pack_weights(p, w, Isa::scalar);
  const std::int8_t a[2] = {1, 2};
  std::uint8_t out[2];
  EXPECT_THROW(gemm(packed, 1, a, 2, out, 2), InputError);  // s8 activations into a u8 pack
  const std::uint8_t ua[2] = {1, 2};
  float fout[2];
  EXPECT_THROW(gemm(packed, 1, ua, 2, fout, 2), InputError);  // f32 output into a u8 pack
  EXPECT_THROW(gemm(packed, 1, ua, 1, out, 2), InputError);   // lda < K
}

TEST(VnniPack, PairSaturationFlag) {
  GemmParams p;
  p.n = 1;
  p.k = 3;
  EXPECT_FALSE(pack_weights(p, std::vector<std::int8_t>{64, 64, 127}, Isa::scalar).pair_saturation_possible);
  EXPECT_TRUE(pack_weights(p, std::vector<std::int8_t>{64, 65, 0}, Isa::scalar).pair_saturation_possible);
  EXPECT_TRUE(pack_weights(p, std::vector<std::int8_t>{-65, -64, 0}, Isa::scalar).pair_saturation_possible);
  EXPECT_FALSE(pack_weights(p, std::vector<std::int8_t>{127, -128, 127}, Isa::scalar).pair_saturation_possible);
}

}  // namespace
}  // namespace qc::vnni
