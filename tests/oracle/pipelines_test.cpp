// Pipelines: two lowerings side by side. The u8 x s8 rewrite must be bit-exact with the direct
// s8 x s8 (or u8 x u8) path; the other pairs are checked on hand-derived elements.
#include "oracles/pipelines.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <random>

namespace qc {
namespace {

using namespace qc::test;

std::vector<std::int64_t> random_ints(std::mt19937& rng, std::int64_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// An s8 x s8 GEMM [M, K] x [K, N] with an activation zero point, per-channel weights and a bias.
QGemmOp s8s8_gemm(const std::vector<std::int64_t>& a, std::int64_t za, const std::vector<std::int64_t>& b,
                  std::int64_t M, std::int64_t K, std::int64_t N) {
  QGemmOp op;
  op.a.values = ints(DType::i8, {M, K}, a);
  op.a.params = per_tensor(0.0625, za);
  op.b.values = ints(DType::i8, {K, N}, b);
  std::vector<double> scales;
  for (std::int64_t n = 0; n < N; ++n) scales.push_back(std::ldexp(1.0, -5 - static_cast<int>(n % 4)));
  op.b.params = per_axis(1, scales);
  std::vector<std::int64_t> bias;
  for (std::int64_t n = 0; n < N; ++n) bias.push_back(100 * n - 250);
  op.bias = ints(DType::i32, {N}, bias);
  return op;
}

std::vector<QGemmPolicy> exact_rewrite_policies() {
  // The rewritten side: subtract first, or the raw u8 bytes with compensation, under int32 wrap
  // (exact modulo 2^32, so even a wrapped sum survives the rewrite) and exact accumulation.
  std::vector<QGemmPolicy> ps;
  for (const Accumulation acc : {Accumulation::int32_wrap, Accumulation::exact, Accumulation::int64})
    for (const ZeroPointCorrection z : {ZeroPointCorrection::subtract_first, ZeroPointCorrection::compensate}) {
      QGemmPolicy p = ideal_policy();
      p.accumulation = acc;
      p.zero_points = z;
      ps.push_back(p);
    }
  return ps;
}

void expect_bit_exact_rewrite(const QGemmOp& op) {
  for (const OutputStage& out : {int32_out(), float_out(DType::f32), requant_out(0.5, 3)}) {
    QGemmOp o = op;
    o.output = out;
    for (const QGemmPolicy& rewritten : exact_rewrite_policies()) {
      const LoweringPair p = compare_u8s8_rewrite(o, ideal_policy(), rewritten);
      EXPECT_EQ(p.rewritten.y.dtype(), p.original.y.dtype());
      EXPECT_EQ(p.mismatches, 0) << name(out.kind) << " " << name(rewritten.accumulation) << " "
                                 << name(rewritten.zero_points);
      EXPECT_EQ(p.original.labels, p.rewritten.labels);
    }
  }
}

TEST(Pipelines, U8S8RewriteIsBitExactOnRandomInputs) {
  std::mt19937 rng(3);
  for (const std::int64_t K : {1, 7, 64}) {
    const std::int64_t M = 6, N = 5;
    const QGemmOp op = s8s8_gemm(random_ints(rng, M * K, -128, 127), 17, random_ints(rng, K * N, -128, 127), M, K, N);
    // The rewritten activations are the s8 values + 128 with zero point 17 + 128 = 145.
    const QGemmOp r = rewrite_s8s8_as_u8s8(op, QuantizePolicy{});
    EXPECT_EQ(r.a.values.dtype(), DType::u8);
    EXPECT_EQ(r.a.params.zero_point(0), 145);
    EXPECT_EQ(r.a.values.get_int(0), op.a.values.get_int(0) + 128);
    expect_bit_exact_rewrite(op);
  }
}

TEST(Pipelines, U8S8RewriteIsBitExactOnExtremeInputs) {
  // Every corner of the byte ranges, zero points at both ends, and a K long enough for the raw int32
  // sum to wrap (66312 * 255 * 127 > 2^31 after the shift): wrapping is modular, so it cancels.
  for (const std::int64_t a : {-128, 127})
    for (const std::int64_t b : {-128, 127})
      for (const std::int64_t za : {-128, 0, 127}) {
        const QGemmOp op = s8s8_gemm({a, a, a, a}, za, {b, b, b, b, b, b, b, b}, 2, 2, 4);
        expect_bit_exact_rewrite(op);
      }
  const std::int64_t K = 66312;
  QGemmOp big = s8s8_gemm(std::vector<std::int64_t>(K, 127), -128, std::vector<std::int64_t>(K, 127), 1, K, 1);
  big.output = int32_out();
  QGemmPolicy compensate;
  compensate.zero_points = ZeroPointCorrection::compensate;
  EXPECT_EQ(compare_u8s8_rewrite(big, QGemmPolicy{}, compensate).mismatches, 0);
}

TEST(Pipelines, PairSaturationBreaksTheRewriteAsOneDnnDocuments) {
  // oneDNN int8_computations.md: s8 x s8 via u8 with vpmaddubsw, "expected 32258, got 255".
  // a = [127, 127] (s8, za = 0), b = [127, 127]: exact 127*127*2 = 32258. Rewritten: a + 128 = 255,
  // za = 128; raw pair 255*127*2 = 64770 saturates to 32767; compensation -128 * (127 + 127) = -32512:
  // 32767 - 32512 = 255.
  QGemmOp op;
  op.a.values = ints(DType::i8, {1, 2}, {127, 127});
  op.a.params = per_tensor(1.0, 0);
  op.b.values = ints(DType::i8, {2, 1}, {127, 127});
  op.b.params = per_tensor(1.0);
  op.output = int32_out();
  QGemmPolicy pairs;
  pairs.accumulation = Accumulation::int16_pair_saturate;
  pairs.zero_points = ZeroPointCorrection::compensate;
  const LoweringPair p = compare_u8s8_rewrite(op, QGemmPolicy{}, pairs);
  EXPECT_EQ(p.original.y.get_int(0), 32258);
  EXPECT_EQ(p.rewritten.y.get_int(0), 255);
  EXPECT_EQ(p.rewritten.labels[0], Label::saturated);
  EXPECT_EQ(p.mismatches, 1);
}

TEST(Pipelines, U8U8RewriteShiftsTheWeights) {
  // u8 x u8 -> u8 x s8: weights - 128 with zero point zw - 128; bit-exact on random data.
  std::mt19937 rng(4);
  QGemmOp op;
  op.a.values = ints(DType::u8, {4, 9}, random_ints(rng, 36, 0, 255));
  op.a.params = per_tensor(0.03125, 120);
  op.b.values = ints(DType::u8, {9, 3}, random_ints(rng, 27, 0, 255));
  op.b.params = per_axis(1, {0.25, 0.125, 0.5}, {128, 0, 255});
  op.output = requant_out(2.0, -7);
  const QGemmOp r = rewrite_u8u8_as_u8s8(op, QuantizePolicy{});
  EXPECT_EQ(r.b.values.dtype(), DType::i8);
  EXPECT_EQ(r.b.params.zero_points, (std::vector<std::int64_t>{0, -128, 127}));
  for (const QGemmPolicy& p : exact_rewrite_policies())
    EXPECT_EQ(compare_u8s8_rewrite(op, ideal_policy(), p).mismatches, 0);
}

TEST(Pipelines, ConvRewriteIsExactUnderRealZeroPaddingOnly) {
  // A grouped s8 conv with padding. Real-zero padding: padded taps are the zero point before and after
  // the shift, so the rewrite is exact. Quantized-zero padding: q = 0 stands for -zx before and for
  // -(zx + 128) after, so every output touching padding with a nonzero weight sum moves.
  std::mt19937 rng(9);
  QConv2dOp op;
  op.input.values = ints(DType::i8, {1, 4, 5, 5}, random_ints(rng, 100, -128, 127));
  op.input.params = per_tensor(0.125, -3);
  op.weight.values = ints(DType::i8, {2, 2, 3, 3}, random_ints(rng, 36, -128, 127));
  op.weight.params = per_axis(0, {0.25, 0.5});
  op.geometry.pad_top = op.geometry.pad_left = op.geometry.pad_bottom = op.geometry.pad_right = 1;
  op.geometry.stride_h = op.geometry.stride_w = 2;
  op.geometry.groups = 2;
  op.output = int32_out();
  for (const QGemmPolicy& p : exact_rewrite_policies())
    EXPECT_EQ(compare_u8s8_rewrite(op, ideal_policy(), p).mismatches, 0);
  op.layout = ConvLayout::nhwc;
  op.input.values = ints(DType::i8, {1, 5, 5, 4}, random_ints(rng, 100, -128, 127));
  EXPECT_EQ(compare_u8s8_rewrite(op, ideal_policy(), ideal_policy()).mismatches, 0);
  op.padding = ConvPadding::quantized_zero;
  EXPECT_GT(compare_u8s8_rewrite(op, ideal_policy(), ideal_policy()).mismatches, 0);
}

TEST(Pipelines, FusedFcVersusMatMulThenBiasAdd) {
  // A = [3, 5] (i8, s_a = 0.5), B = [[2, 1], [1, 1]] (i8, s_b = 0.5): acc = [6 + 5, 3 + 5] = [11, 8];
  // bias [1, 0] (i32, scale 0.25); output s_out = 1, zp 0; intermediate s_mid = 2, zp 0.
  //   fused:   (11 + 1) * 0.25 = 3 -> 3;          (8 + 0) * 0.25 = 2 -> 2
  //   unfused: MatMul 11 * 0.25 / 2 = 1.375 -> 1; 8 * 0.25 / 2 = 1 -> 1
  //            bias add: 1 * 2 + 1 * 0.25 = 2.25 -> 2;  1 * 2 + 0 = 2 -> 2
  QGemmOp fc;
  fc.a.values = ints(DType::i8, {1, 2}, {3, 5});
  fc.a.params = per_tensor(0.5);
  fc.b.values = ints(DType::i8, {2, 2}, {2, 1, 1, 1});
  fc.b.params = per_tensor(0.5);
  fc.bias = ints(DType::i32, {2}, {1, 0});
  fc.output = requant_out(1.0, 0);
  const FcLowerings f = compare_fused_fc(fc, IntermediateQParams{2.0, 0, DType::i8}, ideal_policy());
  EXPECT_EQ(int_values(f.fused.y), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(int_values(f.matmul.y), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(int_values(f.unfused), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(f.unfused_exact[0], Rational(9, 4));
  EXPECT_EQ(f.mismatches, 1);
}

TEST(Pipelines, QdqConvAgreesWithQuantizedConvWhenDequantizationIsExact) {
  // 1x1 conv, x - zx = 3 with s_x = 0.5, w = 1 with s_w = 0.25: both lowerings give 3 * 0.125 = 0.375.
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 1, 1, 1}, {13});
  op.input.params = per_tensor(0.5, 10);
  op.weight.values = ints(DType::i8, {1, 1, 1, 1}, {1});
  op.weight.params = per_tensor(0.25);
  op.output = float_out(DType::f32);
  const QdqConvLowerings l = compare_qdq_conv(op, QGemmPolicy{}, std::nullopt);
  EXPECT_EQ(l.qdq.get_double(0), 0.375);
  EXPECT_EQ(l.quantized.y.get_double(0), 0.375);
  EXPECT_EQ(l.mismatches, 0);
}

TEST(Pipelines, QdqConvDiffersWhenDequantizeLinearRoundsToF16) {
  // s_x = 0.1f, x - zx = 3, w = 1 (s_w = 1).
  //   quantized conv, f32 output stage: f32(3) * (0.1f * 1) = 0.30000000447... -> f32 0.3f = 0.30000001192...
  //   QDQ with f16 DequantizeLinear: x = f16(f32(3 * 0.1f)) = f16(0.30000001192...); the f16 neighbours
  //   are 0.2998046875 and 0.300048828125, the second is nearer; times w = 1: 0.300048828125.
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 1, 1, 1}, {13});
  op.input.params = per_tensor(static_cast<double>(0.1f), 10);
  op.weight.values = ints(DType::i8, {1, 1, 1, 1}, {1});
  op.weight.params = per_tensor(1.0);
  op.output = float_out(DType::f32);
  const QdqConvLowerings l = compare_qdq_conv(op, QGemmPolicy{}, DType::f16);
  EXPECT_EQ(l.quantized.y.get_double(0), static_cast<double>(0.3f));
  EXPECT_EQ(l.qdq.get_double(0), 0.300048828125);
  EXPECT_EQ(l.mismatches, 1);
}

TEST(Pipelines, QdqConvPadsWithRealZero) {
  // 1 channel 2x2 of x - zx = 2 (s_x = 1), 3x3 ones kernel (s_w = 1), pad 1: every output sums the 4
  // inside taps: 8. The QDQ float conv pads with 0.0, as the real-zero convention, so they agree; the
  // quantized-zero convention adds (0 - zx) = -5 per padded tap (5 padded taps): 8 - 25 = -17.
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 1, 2, 2}, {7, 7, 7, 7});
  op.input.params = per_tensor(1.0, 5);
  op.weight.values = ints(DType::i8, {1, 1, 3, 3}, std::vector<std::int64_t>(9, 1));
  op.weight.params = per_tensor(1.0);
  op.geometry.pad_top = op.geometry.pad_left = op.geometry.pad_bottom = op.geometry.pad_right = 1;
  op.output = float_out(DType::f32);
  const QdqConvLowerings l = compare_qdq_conv(op, QGemmPolicy{}, std::nullopt);
  EXPECT_EQ(float_values(l.qdq), (std::vector<double>{8, 8, 8, 8}));
  EXPECT_EQ(l.mismatches, 0);
  op.padding = ConvPadding::quantized_zero;
  const QdqConvLowerings q = compare_qdq_conv(op, QGemmPolicy{}, std::nullopt);
  EXPECT_EQ(float_values(q.quantized.y), (std::vector<double>{-17, -17, -17, -17}));
  EXPECT_EQ(q.mismatches, 4);
}

}  // namespace
}  // namespace qc
