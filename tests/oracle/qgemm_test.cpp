// qgemm: hand-derived vectors. Each expected value is derived in the comment above it from the
// inputs (never copied from the code's output).
#include "oracles/qgemm.hpp"
#include "oracles/dequantize.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <set>

namespace qc {
namespace {

using namespace qc::test;

// The 2x3x4 GEMM shared by the granularity tests.
//   A (f32) = [[1.0, -0.5, 2.0], [0.0, 3.0, -1.0]], static u8, s_a = 0.5, za = 2:
//     q = x / 0.5 + 2 = [[4, 1, 6], [2, 8, 0]], so a - za = [[2, -1, 4], [0, 6, -2]].
//   B (i8, [K=3, N=4]) = [[1, 2, -1, 0], [3, -2, 0, 1], [-1, 1, 2, -3]].
QGemmOp base_gemm() {
  QGemmOp op;
  op.a.values = floats(DType::f32, {2, 3}, {1.0, -0.5, 2.0, 0.0, 3.0, -1.0});
  op.a.format = DType::u8;
  op.a.params = per_tensor(0.5, 2);
  op.b.values = ints(DType::i8, {3, 4}, {1, 2, -1, 0, 3, -2, 0, 1, -1, 1, 2, -3});
  op.b.params = per_tensor(0.25);
  op.output = int32_out();
  return op;
}

// ---- Per tensor ------------------------------------------------------------------------------

TEST(QGemm, PerTensorInt32) {
  // acc[0] = 2*[1, 2, -1, 0] - 1*[3, -2, 0, 1] + 4*[-1, 1, 2, -3] = [2-3-4, 4+2+4, -2+0+8, 0-1-12]
  //        = [-5, 10, 6, -13]
  // acc[1] = 0*row0 + 6*[3, -2, 0, 1] - 2*[-1, 1, 2, -3] = [18+2, -12-2, 0-4, 6+6] = [20, -14, -4, 12]
  const QGemmResult r = qgemm(base_gemm(), QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{2, 4}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-5, 10, 6, -13, 20, -14, -4, 12}));
  for (const Label l : r.labels) EXPECT_EQ(l, Label::clear);
  EXPECT_TRUE(r.proof.int32_loop);  // K = 3: |sum| <= 3 * 8 * 128, far inside int32
  EXPECT_TRUE(r.proof.policy_exact);
  EXPECT_EQ(r.proof.arbitrary_precision_dots, 0);
  EXPECT_EQ(r.exact_value(3), Rational(-13));
}

TEST(QGemm, PerTensorInt32WithBias) {
  // acc + [1, -2, 3, 0] = [[-4, 8, 9, -13], [21, -16, -1, 12]]
  QGemmOp op = base_gemm();
  op.bias = ints(DType::i32, {4}, {1, -2, 3, 0});
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-4, 8, 9, -13, 21, -16, -1, 12}));
}

TEST(QGemm, PerTensorDequantizedF32) {
  // s_a * s_b = 0.5 * 0.25 = 0.125; acc * 0.125 (all exact in f32):
  //   [[-0.625, 1.25, 0.75, -1.625], [2.5, -1.75, -0.5, 1.5]]
  QGemmOp op = base_gemm();
  op.output = float_out(DType::f32);
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(float_values(r.y), (std::vector<double>{-0.625, 1.25, 0.75, -1.625, 2.5, -1.75, -0.5, 1.5}));
  EXPECT_EQ(r.exact_value(0), Rational(-5, 8));
  for (const Label l : r.labels) EXPECT_EQ(l, Label::clear);  // every value is exact in f32
}

TEST(QGemm, PerTensorRequantizedI8WithTies) {
  // s_out = 0.25, zp 0: v / s_out = acc * 0.125 / 0.25 = acc / 2:
  //   [[-2.5, 5, 3, -6.5], [10, -7, -2, 6]] -> RNE [[-2, 5, 3, -6], [10, -7, -2, 6]]; -2.5 and -6.5 are ties.
  QGemmOp op = base_gemm();
  op.output = requant_out(0.25, 0);
  const QGemmResult r = qgemm(op, ideal_policy());
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-2, 5, 3, -6, 10, -7, -2, 6}));
  EXPECT_EQ(r.labels[0], Label::tie);
  EXPECT_EQ(r.labels[3], Label::tie);
  EXPECT_EQ(r.labels[1], Label::clear);
  EXPECT_EQ(r.exact_value(0), Rational(-5, 2));  // v / s_out + zp before rounding
}

TEST(QGemm, PerTensorRequantizedWithFusedRelu) {
  // s_out = 0.375, zp = 1: acc * 0.125 / 0.375 = acc / 3:
  //   row 0: [-5/3, 10/3, 2, -13/3] -> [-2, 3, 2, -4] + 1 = [-1, 4, 3, -3]
  //   row 1: [20/3, -14/3, -4/3, 4]  -> [7, -5, -1, 4] + 1 = [8, -4, 0, 5]
  // ReLU (TFLite CalculateActivationRangeQuantizedImpl): [max(-128, 1 + round(0 / 0.375)), 127] = [1, 127];
  // ReLU6: upper 1 + round(6 / 0.375) = 1 + 16 = 17.
  const IntRange relu = fused_activation_range(FusedActivation::relu, 0.375f, 1, DType::i8);
  EXPECT_EQ(relu, (IntRange{1, 127}));
  EXPECT_EQ(fused_activation_range(FusedActivation::relu6, 0.375f, 1, DType::i8), (IntRange{1, 17}));
  QGemmOp op = base_gemm();
  op.output = requant_out(0.375, 1);
  EXPECT_EQ(int_values(qgemm(op, ideal_policy()).y), (std::vector<std::int64_t>{-1, 4, 3, -3, 8, -4, 0, 5}));
  op.output.clamp = relu;
  const QGemmResult r = qgemm(op, ideal_policy());
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{1, 4, 3, 1, 8, 1, 1, 5}));
  // -5/3 + 1 = -2/3 <= 1 - 1/2: every rounding is clamped.
  EXPECT_EQ(r.labels[0], Label::saturated);
  EXPECT_EQ(r.labels[1], Label::clear);
}

TEST(QGemm, BatchedActivations) {
  // A [2, 2, 3]: batch 0 is the base A, batch 1 its rows swapped; the output rows follow.
  QGemmOp op = base_gemm();
  op.a.values = floats(DType::f32, {2, 2, 3}, {1.0, -0.5, 2.0, 0.0, 3.0, -1.0, 0.0, 3.0, -1.0, 1.0, -0.5, 2.0});
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(int_values(r.y),
            (std::vector<std::int64_t>{-5, 10, 6, -13, 20, -14, -4, 12, 20, -14, -4, 12, -5, 10, 6, -13}));
}

TEST(QGemm, TransposedWeightsMatch) {
  // B given as [N, K] (n_by_k) holds the same numbers: the result is the same.
  QGemmOp op = base_gemm();
  op.b.values = ints(DType::i8, {4, 3}, {1, 3, -1, 2, -2, 1, -1, 0, 2, 0, 1, -3});
  op.b_layout = WeightLayout::n_by_k;
  EXPECT_EQ(int_values(qgemm(op, QGemmPolicy{}).y), (std::vector<std::int64_t>{-5, 10, 6, -13, 20, -14, -4, 12}));
}

// ---- Per channel -----------------------------------------------------------------------------

// B per column (axis 1 of [K, N]): scales [0.25, 0.5, 0.125, 1.0], zero points [0, 1, 0, 0].
// Column 1 minus its zero point is [2-1, -2-1, 1-1] = [1, -3, 0]:
//   acc[0][1] = 2*1 + (-1)*(-3) + 4*0 = 5, acc[1][1] = 0*1 + 6*(-3) + (-2)*0 = -18; other columns as before.
QGemmOp per_channel_gemm() {
  QGemmOp op = base_gemm();
  op.b.params = per_axis(1, {0.25, 0.5, 0.125, 1.0}, {0, 1, 0, 0});
  return op;
}

TEST(QGemm, PerChannelInt32) {
  EXPECT_EQ(int_values(qgemm(per_channel_gemm(), QGemmPolicy{}).y),
            (std::vector<std::int64_t>{-5, 5, 6, -13, 20, -18, -4, 12}));
}

TEST(QGemm, PerChannelDequantizedF32) {
  // s_a * s_b = 0.5 * [0.25, 0.5, 0.125, 1] = [0.125, 0.25, 0.0625, 0.5]:
  //   row 0: [-5*0.125, 5*0.25, 6*0.0625, -13*0.5] = [-0.625, 1.25, 0.375, -6.5]
  //   row 1: [20*0.125, -18*0.25, -4*0.0625, 12*0.5] = [2.5, -4.5, -0.25, 6]
  QGemmOp op = per_channel_gemm();
  op.output = float_out(DType::f32);
  EXPECT_EQ(float_values(qgemm(op, QGemmPolicy{}).y),
            (std::vector<double>{-0.625, 1.25, 0.375, -6.5, 2.5, -4.5, -0.25, 6.0}));
}

TEST(QGemm, PerChannelRequantizedI8) {
  // s_out = 0.5, zp = -1: v / 0.5 = [[-1.25, 2.5, 0.75, -13], [5, -9, -0.5, 12]]
  //   RNE: [[-1, 2, 1, -13], [5, -9, -0, 12]] - 1 = [[-2, 1, 0, -14], [4, -10, -1, 11]]; 2.5 and -0.5 are ties.
  QGemmOp op = per_channel_gemm();
  op.output = requant_out(0.5, -1);
  const QGemmResult r = qgemm(op, ideal_policy());
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-2, 1, 0, -14, 4, -10, -1, 11}));
  EXPECT_EQ(r.labels[1], Label::tie);
  EXPECT_EQ(r.labels[6], Label::tie);
  EXPECT_EQ(r.labels[0], Label::clear);
}

TEST(QGemm, PerChannelUsesEachChannelsMultiplier) {
  // Every scheme sees the multiplier of its own column: element (r, n) equals requantize_element of
  // the accumulator above with scales (0.5, s_b[n], 0.5).
  QGemmOp op = per_channel_gemm();
  op.output = requant_out(0.5, -1);
  QGemmPolicy p;
  p.requantize = requantize_policy_for(RequantizeScheme::gemmlowp_double);
  const QGemmResult r = qgemm(op, p);
  const std::vector<std::int64_t> acc{-5, 5, 6, -13, 20, -18, -4, 12};
  const std::vector<double> sb{0.25, 0.5, 0.125, 1.0};
  for (std::size_t e = 0; e < acc.size(); ++e)
    EXPECT_EQ(
        r.y.get_int(static_cast<std::int64_t>(e)),
        requantize_element(acc[e], RequantizeScales{0.5, sb[e % 4], 0.5, DType::f32}, -1, DType::i8, p.requantize).q)
        << "element " << e;
}

// ---- Blocked along K -------------------------------------------------------------------------

// B blocked along K (axis 0 of [K, N]) with block 2: blocks k = {0, 1} and {2} (short), scales
//   block 0: [0.25, 0.25, 0.5, 0.5], block 1: [1.0, 0.5, 0.25, 0.125].
// Partial sums of a - za = [2, -1, 4] / [0, 6, -2]:
//   row 0: block 0 = [2-3, 4+2, -2+0, 0-1] = [-1, 6, -2, -1]; block 1 = 4*[-1, 1, 2, -3] = [-4, 4, 8, -12]
//   row 1: block 0 = [18, -12, 0, 6];                          block 1 = -2*[-1, 1, 2, -3] = [2, -2, -4, 6]
// v = 0.5 * (s0 * p0 + s1 * p1):
//   row 0: 0.5*[-0.25-4, 1.5+2, -1+2, -0.5-1.5] = [-2.125, 1.75, 0.5, -1]
//   row 1: 0.5*[4.5+2, -3-1, 0-1, 3+0.75]       = [3.25, -2, -0.5, 1.875]
QGemmOp blocked_gemm() {
  QGemmOp op = base_gemm();
  op.b.params = blocked(0, 2, {0.25, 0.25, 0.5, 0.5, 1.0, 0.5, 0.25, 0.125});
  return op;
}

TEST(QGemm, BlockedDequantizedF32) {
  QGemmOp op = blocked_gemm();
  op.output = float_out(DType::f32);
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(float_values(r.y), (std::vector<double>{-2.125, 1.75, 0.5, -1.0, 3.25, -2.0, -0.5, 1.875}));
  EXPECT_EQ(r.segments(), 2);
  EXPECT_EQ(r.accumulator(0, 0), -1);
  EXPECT_EQ(r.accumulator(0, 1), -4);
  EXPECT_EQ(r.accumulator(7, 1), 6);
  EXPECT_EQ(r.proof.longest_segment, 2);
}

TEST(QGemm, BlockedRequantizedI8Ideal) {
  // s_out = 0.5: v / 0.5 = [[-4.25, 3.5, 1, -2], [6.5, -4, -1, 3.75]] -> RNE [[-4, 4, 1, -2], [6, -4, -1, 4]]
  QGemmOp op = blocked_gemm();
  op.output = requant_out(0.5, 0);
  const QGemmResult r = qgemm(op, ideal_policy());
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-4, 4, 1, -2, 6, -4, -1, 4}));
  EXPECT_EQ(r.labels[1], Label::tie);
  EXPECT_EQ(r.labels[4], Label::tie);
  EXPECT_EQ(r.exact_value(0), Rational(-17, 4));
}

TEST(QGemm, BlockedRejectsOutputsWithoutOneAccumulator) {
  QGemmOp op = blocked_gemm();
  EXPECT_THROW(qgemm(op, QGemmPolicy{}), InputError);  // int32: no single accumulator
  op.output = requant_out(0.5, 0);
  QGemmPolicy p;
  p.requantize = requantize_policy_for(RequantizeScheme::tflite_single);
  EXPECT_THROW(qgemm(op, p), InputError);  // a fixed-point scheme takes one accumulator
}

TEST(QGemm, SegmentsAreTheUnionOfBothBlockGrids) {
  // K = 7, A blocked by 2 along K, B blocked by 3 along K: starts {0, 2, 4, 6} u {0, 3, 6} = {0, 2, 3, 4, 6}.
  const QuantParams a = blocked(-1, 2, std::vector<double>(4, 1.0));
  const QuantParams b = blocked(0, 3, std::vector<double>(3, 1.0));
  EXPECT_EQ(k_segment_starts(a, {1, 7}, b, {7, 1}, 0), (std::vector<std::int64_t>{0, 2, 3, 4, 6}));
}

// ---- int4 ------------------------------------------------------------------------------------

TEST(QGemm, PackedInt4WeightsWithOddK) {
  // B [N=3, K=3] (n_by_k) i4 = [[7, -8, 1], [-1, 2, -3], [0, 5, -6]], packed flat, element 0 in the low
  // nibble (ONNX), 9 nibbles -> 5 bytes with a padding nibble:
  //   (7, -8) -> 0x87 = 135, (1, -1) -> 0xF1 = 241, (2, -3) -> 0xD2 = 210, (0, 5) -> 0x50 = 80, (-6, pad) -> 0x0A = 10.
  // A (i8, given) = [[1, 2, 3], [-4, 0, 5]], zero points 0:
  //   row 0: [7-16+3, -1+4-9, 0+10-18] = [-6, -6, -8]; row 1: [-28+0+5, 4+0-15, 0+0-30] = [-23, -11, -30]
  QGemmOp op;
  op.a.values = ints(DType::i8, {2, 3}, {1, 2, 3, -4, 0, 5});
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::u8, {5}, {135, 241, 210, 80, 10});
  op.b.format = DType::i4;
  op.b.packing = onnx_int4_packing();
  op.b.shape = {3, 3};
  op.b.params = per_tensor(1.0);
  op.b_layout = WeightLayout::n_by_k;
  op.output = int32_out();
  EXPECT_EQ(int_values(qgemm(op, QGemmPolicy{}).y), (std::vector<std::int64_t>{-6, -6, -8, -23, -11, -30}));
}

// ---- Accumulators ----------------------------------------------------------------------------

QGemmOp u8s8_gemm(Shape a_shape, const std::vector<std::int64_t>& a, Shape b_shape,
                  const std::vector<std::int64_t>& b) {
  QGemmOp op;
  op.a.values = ints(DType::u8, std::move(a_shape), a);
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::i8, std::move(b_shape), b);
  op.b.params = per_tensor(1.0);
  op.output = int32_out();
  return op;
}

TEST(QGemm, Int32WrapAndInt16PairSaturationDifferWhereVpmaddubswSaturates) {
  // A (u8) = [[255, 255, 1, 1], [255, 1, 255, 1]]; B (s8, [4, 2]) columns [127, 127, 127, 127] and
  // [-128, -128, 1, 1]. Pairs are (k0, k1) and (k2, k3):
  //   (0,0): 255*127*2 = 64770 -> 32767 saturated, + 127*2 = 254: 33021; exact 64770 + 254 = 65024
  //   (0,1): -255*128*2 = -65280 -> -32768, + 2: -32766;                  exact -65280 + 2 = -65278
  //   (1,0): 255*127 + 127 = 32512 fits, twice: 65024 = exact
  //   (1,1): -255*128 - 128 = -32768 fits exactly, + 255 + 1: -32512 = exact
  const QGemmOp op =
      u8s8_gemm({2, 4}, {255, 255, 1, 1, 255, 1, 255, 1}, {4, 2}, {127, -128, 127, -128, 127, 1, 127, 1});
  QGemmPolicy wrap;
  wrap.accumulation = Accumulation::int32_wrap;
  const QGemmResult w = qgemm(op, wrap);
  EXPECT_EQ(int_values(w.y), (std::vector<std::int64_t>{65024, -65278, 65024, -32512}));
  for (const Label l : w.labels) EXPECT_EQ(l, Label::clear);

  QGemmPolicy pairs;
  pairs.accumulation = Accumulation::int16_pair_saturate;
  const QGemmResult p = qgemm(op, pairs);
  EXPECT_EQ(int_values(p.y), (std::vector<std::int64_t>{33021, -32766, 65024, -32512}));
  EXPECT_EQ(p.labels, (std::vector<Label>{Label::saturated, Label::saturated, Label::clear, Label::clear}));
  EXPECT_EQ(p.exact_value(0), Rational(65024));
}

TEST(QGemm, Int16PairsPadAnOddK) {
  // K = 3, all 255 x 127: pair (k0, k1) = 64770 -> 32767, then (k2, 0) = 32385: 65152 (exact 97155).
  const QGemmOp op = u8s8_gemm({1, 3}, {255, 255, 255}, {3, 1}, {127, 127, 127});
  QGemmPolicy pairs;
  pairs.accumulation = Accumulation::int16_pair_saturate;
  EXPECT_EQ(qgemm(op, pairs).y.get_int(0), 65152);
}

TEST(QGemm, CompensatedZeroPointMeetsPairSaturation) {
  // A (u8, za = 128) = [255, 255, 0, 0], B (s8) = [127, 127, 127, 127]:
  //   exact: (127*127)*2 + (-128*127)*2 = 32258 - 32512 = -254
  //   compensate + int16 pairs: raw pairs 64770 -> 32767 and 0, raw = 32767; correction -za*Σb = -128*508
  //   = -65024; 32767 - 65024 = -32257.
  QGemmOp op = u8s8_gemm({1, 4}, {255, 255, 0, 0}, {4, 1}, {127, 127, 127, 127});
  op.a.params = per_tensor(1.0, 128);
  QGemmPolicy p;
  p.accumulation = Accumulation::int16_pair_saturate;
  p.zero_points = ZeroPointCorrection::compensate;
  const QGemmResult r = qgemm(op, p);
  EXPECT_EQ(r.y.get_int(0), -32257);
  EXPECT_EQ(r.labels[0], Label::saturated);
  EXPECT_EQ(r.exact_value(0), Rational(-254));
  p.zero_points = ZeroPointCorrection::subtract_first;  // (a - za) is not a u8 byte: not what vpmaddubsw sees
  EXPECT_THROW(qgemm(op, p), InputError);
  p.accumulation = Accumulation::int32_wrap;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), -254);
}

TEST(QGemm, Int16PairsHoldForUnsignedBySignedBytesOnly) {
  // vpmaddubsw multiplies u8 by s8; MLAS multiplies other byte types with vpmaddwd after widening,
  // exact in int32. K = 2, every product the largest of its type pair:
  //   u8 x s8: 255 * 127 * 2 = 64770 -> 32767 (the pair saturates)
  //   s8 x s8: (-128) * (-128) * 2 = 32768 (one past INT16_MAX: a vpmaddubsw pair would give 32767)
  //   u8 x u8: 255 * 255 * 2 = 130050
  QGemmPolicy pairs;
  pairs.accumulation = Accumulation::int16_pair_saturate;
  EXPECT_EQ(qgemm(u8s8_gemm({1, 2}, {255, 255}, {2, 1}, {127, 127}), pairs).y.get_int(0), 32767);
  QGemmOp s8s8 = u8s8_gemm({1, 2}, {0, 0}, {2, 1}, {-128, -128});
  s8s8.a.values = ints(DType::i8, {1, 2}, {-128, -128});
  EXPECT_EQ(qgemm(s8s8, pairs).y.get_int(0), 32768);
  QGemmOp u8u8 = u8s8_gemm({1, 2}, {255, 255}, {2, 1}, {0, 0});
  u8u8.b.values = ints(DType::u8, {2, 1}, {255, 255});
  EXPECT_EQ(qgemm(u8u8, pairs).y.get_int(0), 130050);
  constexpr auto mlas = PairRule::u8s8_whole_k;
  auto acc = [](Accumulation a, PairRule r, DType x, DType w, bool zp) { return paired_accumulation(a, r, x, w, zp); };
  EXPECT_EQ(acc(Accumulation::int16_pair_saturate, mlas, DType::u8, DType::i8, true).accumulation,
            Accumulation::int16_pair_saturate);
  EXPECT_EQ(acc(Accumulation::int16_pair_saturate, mlas, DType::i8, DType::u8, false).accumulation,
            Accumulation::int32_wrap);
  EXPECT_EQ(acc(Accumulation::int32_saturate, mlas, DType::i8, DType::i8, false).accumulation,
            Accumulation::int32_saturate);
  // oneDNN's rules: s8 x s8 pairs shifted, on AVX2 only without zero points (else ref_gemm_s8x8s32).
  const auto avx2 = PairRule::x8s8_avx2_k_blocks, avx512 = PairRule::x8s8_avx512_k_blocks;
  EXPECT_TRUE(acc(Accumulation::int16_pair_saturate, avx2, DType::i8, DType::i8, false).shift_signed_activations);
  EXPECT_EQ(acc(Accumulation::int16_pair_saturate, avx2, DType::i8, DType::i8, true).accumulation,
            Accumulation::int32_wrap);
  EXPECT_TRUE(acc(Accumulation::int16_pair_saturate, avx512, DType::i8, DType::i8, true).shift_signed_activations);
  EXPECT_FALSE(acc(Accumulation::int16_pair_saturate, avx512, DType::u8, DType::i8, true).shift_signed_activations);
  EXPECT_EQ(acc(Accumulation::int16_pair_saturate, avx512, DType::u8, DType::u8, false).accumulation,
            Accumulation::int32_wrap);
}

TEST(QGemm, OneDnnGemmDriverPairsShiftedSignedSources) {
  // oneDNN's gemm_s8u8s32 without VNNI adds 128 to an s8 source (gemm_info.cpp::prepare_bo) and
  // compensates: A (s8) = [127, 127], B (s8) = [127, 127]. Exact: 127 * 127 * 2 = 32258, which fits
  // int16; the kernel sees (127 + 128) * 127 * 2 = 64770 -> 32767, then subtracts 128 * Σb = 32512:
  // 32767 - 32512 = 255. MLAS's rule widens s8 x s8 (exact).
  QGemmOp op = u8s8_gemm({1, 2}, {0, 0}, {2, 1}, {127, 127});
  op.a.values = ints(DType::i8, {1, 2}, {127, 127});
  QGemmPolicy p;
  p.accumulation = Accumulation::int16_pair_saturate;
  p.zero_points = ZeroPointCorrection::compensate;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 32258);
  for (const PairRule r : {PairRule::x8s8_avx2_k_blocks, PairRule::x8s8_avx512_k_blocks}) {
    p.pair_rule = r;
    const QGemmResult res = qgemm(op, p);
    EXPECT_EQ(res.y.get_int(0), 255) << name(r);
    EXPECT_EQ(res.exact_value(0), Rational(32258)) << name(r);
  }
  // With a source zero point of -1: on AVX-512 the shifted zero point is 127, Σ(a - za)(b - zb) is
  // unchanged exactly (128 * 127 * 2 = 32512), the correction -za'·Σb = -127 * 254 = -32258:
  // 32767 - 32258 = 509. On AVX2 a nonzero offset takes ref_gemm_s8x8s32: exact.
  op.a.params = per_tensor(1.0, -1);
  p.pair_rule = PairRule::x8s8_avx512_k_blocks;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 509);
  EXPECT_EQ(qgemm(op, p).exact_value(0), Rational(32512));
  p.pair_rule = PairRule::x8s8_avx2_k_blocks;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 32512);
}

// qconform's avx2-maddubs kernel (backends/vnni/vnni.hpp steps 1-3): s8 activations shifted by +128,
// every adjacent pair saturated, whatever the zero points. A (s8) = [127, 127] and B = [127, 127]:
// the shifted pair (127 + 128) * 127 * 2 = 64770 saturates to 32767, less 128 * Σb = 32512: 255.
// With za = -1 the shifted zero point is 127: 32767 - 127 * 254 = 509 (AVX2 oneDNN would go exact).
// K = 1000 is one run of pairs (no blocks): pair_block_starts is {0}.
TEST(QGemm, ShiftedWholeKPairsS8ActivationsWhateverTheZeroPoints) {
  QGemmOp op = u8s8_gemm({1, 2}, {0, 0}, {2, 1}, {127, 127});
  op.a.values = ints(DType::i8, {1, 2}, {127, 127});
  QGemmPolicy p;
  p.accumulation = Accumulation::int16_pair_saturate;
  p.zero_points = ZeroPointCorrection::compensate;
  p.pair_rule = PairRule::x8s8_shifted_whole_k;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 255);
  op.a.params = per_tensor(1.0, -1);
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 509);
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_shifted_whole_k, 1000), (std::vector<std::int64_t>{0}));
  // u8 activations pair unshifted; s8 weights against u8 weights widen (exact).
  EXPECT_FALSE(
      paired_accumulation(Accumulation::int16_pair_saturate, PairRule::x8s8_shifted_whole_k, DType::u8, DType::i8, true)
          .shift_signed_activations);
  EXPECT_EQ(paired_accumulation(Accumulation::int16_pair_saturate, PairRule::x8s8_shifted_whole_k, DType::i8, DType::u8,
                                false)
                .accumulation,
            Accumulation::int32_wrap);
}

TEST(QGemm, OneDnnGemmDriverRestartsPairsAtItsKBlocks) {
  // gemm_driver.cpp::get_k_padd. AVX2 (bk_traditional 256, bk 384): K = 257 -> blocks [0, 129) and
  // [129, 257); AVX-512 core (384, 768): K = 257 is one block, K = 769 -> [0, 385), [385, 769).
  EXPECT_EQ(pair_block_starts(PairRule::u8s8_whole_k, 1000), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx2_k_blocks, 256), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx2_k_blocks, 257), (std::vector<std::int64_t>{0, 129}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx2_k_blocks, 767), (std::vector<std::int64_t>{0, 384}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx2_k_blocks, 1000), (std::vector<std::int64_t>{0, 384, 768}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx512_k_blocks, 384), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx512_k_blocks, 769), (std::vector<std::int64_t>{0, 385}));
  EXPECT_EQ(pair_block_starts(PairRule::x8s8_avx512_k_blocks, 1536), (std::vector<std::int64_t>{0, 768}));
  // K = 257, A = 255 at k = 129, 130 and 0 elsewhere, B = 127: under AVX2 blocks k = 129 opens the
  // second block, so (129, 130) is a pair: 64770 -> 32767. Along the whole K the pairs are (128, 129)
  // and (130, 131), each 255 * 127 = 32385, exact: 64770. AVX-512 core: one block, the same 64770.
  std::vector<std::int64_t> a(257, 0), b(257, 127);
  a[129] = a[130] = 255;
  const QGemmOp op = u8s8_gemm({1, 257}, a, {257, 1}, b);
  QGemmPolicy p;
  p.accumulation = Accumulation::int16_pair_saturate;
  p.zero_points = ZeroPointCorrection::compensate;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 64770);
  p.pair_rule = PairRule::x8s8_avx512_k_blocks;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 64770);
  p.pair_rule = PairRule::x8s8_avx2_k_blocks;
  EXPECT_EQ(qgemm(op, p).y.get_int(0), 32767);
  EXPECT_EQ(qgemm(op, p).exact_value(0), Rational(64770));
}

QGemmOp all_max_gemm(std::int64_t k) {
  return u8s8_gemm({1, k}, std::vector<std::int64_t>(static_cast<std::size_t>(k), 255), {k, 1},
                   std::vector<std::int64_t>(static_cast<std::size_t>(k), 127));
}

TEST(QGemm, AccumulationBoundProofSwitchesLoopsAndArbitraryPrecision) {
  // 255 * 127 = 32385. K = 66311: 66311 * 32385 = 2147481735 <= 2^31 - 1 = 2147483647: int32 proven.
  {
    const QGemmResult r = qgemm(all_max_gemm(66311), QGemmPolicy{});
    EXPECT_TRUE(r.proof.int32_loop);
    EXPECT_TRUE(r.proof.policy_exact);
    EXPECT_EQ(r.y.get_int(0), 2147481735);
    EXPECT_EQ(r.labels[0], Label::clear);
  }
  // K = 66312: 2147481735 + 32385 = 2147514120 > 2^31 - 1. The int32 proof fails, the int64 one holds;
  // the element's exact sum leaves int32, so int32_wrap goes to accumulate_dot (arbitrary precision):
  // 2147514120 - 2^32 = -2147453176.
  {
    const QGemmResult r = qgemm(all_max_gemm(66312), QGemmPolicy{});
    EXPECT_FALSE(r.proof.int32_loop);
    EXPECT_TRUE(r.proof.int64_loop);
    EXPECT_FALSE(r.proof.policy_exact);
    EXPECT_EQ(r.proof.arbitrary_precision_dots, 1);
    EXPECT_EQ(r.y.get_int(0), -2147453176);
    EXPECT_EQ(r.labels[0], Label::saturated);
    EXPECT_EQ(r.exact_value(0), Rational(2147514120LL));
    EXPECT_EQ(r.exact_accumulator(0), BigInt(2147514120LL));
  }
  // int32_saturate clamps to 2^31 - 1; int64 holds the exact sum (proven: no arbitrary precision).
  {
    QGemmPolicy p;
    p.accumulation = Accumulation::int32_saturate;
    EXPECT_EQ(qgemm(all_max_gemm(66312), p).y.get_int(0), 2147483647);
    p.accumulation = Accumulation::int64;
    const QGemmResult r = qgemm(all_max_gemm(66312), p);
    EXPECT_TRUE(r.proof.policy_exact);
    EXPECT_EQ(r.proof.arbitrary_precision_dots, 0);
    EXPECT_EQ(r.accumulator(0), 2147514120LL);
  }
}

TEST(QGemm, AccumulationBoundMatchesTheProof) {
  // The engine's proof is accumulation_bound over the operands' actual ranges.
  EXPECT_FALSE(int32_accumulation_is_exact(66311, {0, 255}, {-128, 127}));  // 66311 * 255 * 128 > 2^31
  EXPECT_TRUE(accumulation_bound(Accumulation::int32_wrap, 66311, {255, 255}, {127, 127}).exact);
  EXPECT_FALSE(accumulation_bound(Accumulation::int32_wrap, 66312, {255, 255}, {127, 127}).exact);
}

// ---- Dynamic quantization ----------------------------------------------------------------------

TEST(QGemm, DynamicPerRowActivations) {
  // ONNX/ORT rule per row: scale = (max(0, xmax) - min(0, xmin)) / 255, zp = round(0 - xmin / scale).
  //   row 0 [0, 1.9921875]:     scale = 1.9921875 / 255 = 2^-7, zp = 0;  q = [0, 255]
  //   row 1 [-0.5, 1.4921875]:  scale = 1.9921875 / 255 = 2^-7, zp = 64; q = [-64 + 64, 191 + 64] = [0, 255]
  // B = [[1], [1]], s_b = 1: acc = [255 - 0, (0 - 64) + (255 - 64)] = [255, 127]; y = acc * 2^-7 = [1.9921875,
  // 0.9921875].
  QGemmOp op;
  op.a.values = floats(DType::f32, {2, 2}, {0.0, 1.9921875, -0.5, 1.4921875});
  op.a.format = DType::u8;
  op.a.quantization = ActivationQuantization::dynamic_per_row;
  op.b.values = ints(DType::i8, {2, 1}, {1, 1});
  op.b.params = per_tensor(1.0);
  op.output = float_out(DType::f32);
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(float_values(r.y), (std::vector<double>{1.9921875, 0.9921875}));
  EXPECT_EQ(r.accumulator(1), 127);
}

TEST(QGemm, DynamicPerRowActivationsTimesBlockedInt4Weights) {
  // W4A8 with float output (MLAS-style). A row [0, 1.9921875, 0.9921875]: scale 1.9921875 / 255 = 2^-7,
  // zp 0, q = [0, 255, 127]. B i4 [K=3, N=1] = [1, -2, 3], blocked along K by 2, scales [0.5, 0.25]:
  //   block 0: 0*1 + 255*(-2) = -510; block 1: 127*3 = 381
  //   v = 2^-7 * (0.5*(-510) + 0.25*381) = 2^-7 * (-159.75) = -1.248046875
  // (= 1.9921875*(-1) + 0.9921875*0.75 directly, as every quantization here is exact).
  QGemmOp op;
  op.a.values = floats(DType::f32, {1, 3}, {0.0, 1.9921875, 0.9921875});
  op.a.format = DType::u8;
  op.a.quantization = ActivationQuantization::dynamic_per_row;
  op.b.values = ints(DType::i4, {3, 1}, {1, -2, 3});
  op.b.params = blocked(0, 2, {0.5, 0.25});
  op.output = float_out(DType::f32);
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(r.y.get_double(0), -1.248046875);
  EXPECT_EQ(r.accumulator(0, 0), -510);
  EXPECT_EQ(r.accumulator(0, 1), 381);
}

// ---- The fast path against accumulate_dot ------------------------------------------------------

TEST(QGemm, EveryAccumulatorMatchesAccumulateDot) {
  // Not hand-derived: the engine's loops and proofs against the one definition of each accumulator.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  for (const std::int64_t K : {1, 2, 5, 37, 64}) {
    const std::int64_t M = 5, N = 6;
    std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
    for (auto& v : a) v = u8(rng);
    for (auto& v : b) v = s8(rng);
    const QGemmOp op = u8s8_gemm({M, K}, a, {K, N}, b);
    for (const Accumulation acc : kAllAccumulations) {
      QGemmPolicy p;
      p.accumulation = acc;
      const QGemmResult r = qgemm(op, p);
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          std::vector<std::int32_t> row, col;
          for (std::int64_t k = 0; k < K; ++k) {
            row.push_back(static_cast<std::int32_t>(a[static_cast<std::size_t>(m * K + k)]));
            col.push_back(static_cast<std::int32_t>(b[static_cast<std::size_t>(k * N + n)]));
          }
          const DotProduct d = accumulate_dot(row, col, acc);
          EXPECT_EQ(BigInt(r.accumulator(m * N + n)), d.value) << name(acc) << " K=" << K;
          EXPECT_EQ(r.exact_accumulator(m * N + n), d.exact);
        }
    }
  }
}

// ---- The fast output stages against their definitions -----------------------------------------

// Not hand-derived: the output stage's fast paths (decided only for clear or plainly saturated
// elements) against requantize_element / the Arith recipe and float_grid_label. Operands near their
// zero points keep the accumulators small (|acc| < ~300); with s_a = 1/64 and s_out = 8 the
// multiplier is s_b / 512, and the column scales give ties (s_b = 2^(8-j): m = 2^-1-j), near ties
// (s_b = 256 + 2^-11: m = 1/2 + 2^-20, so an odd acc lands within 2^-10 of a half) and arbitrary
// f32 multipliers.
QGemmOp random_per_channel_gemm(std::mt19937& rng, std::int64_t M, std::int64_t K, std::int64_t N) {
  std::uniform_int_distribution<int> near_zp(120, 140), small(-8, 8);
  std::uniform_real_distribution<float> scale(1.0f, 300.0f);
  std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
  for (auto& v : a) v = near_zp(rng);
  for (auto& v : b) v = small(rng);
  QGemmOp op = u8s8_gemm({M, K}, a, {K, N}, b);
  op.a.params = per_tensor(1.0 / 64, 131);
  std::vector<double> sb;
  for (std::int64_t n = 0; n < N; ++n)
    sb.push_back(n % 3 == 0 ? std::ldexp(1.0, 8 - static_cast<int>(n % 4)) : n % 3 == 1 ? 256 + 0x1p-11 : scale(rng));
  op.b.params = per_axis(1, sb);
  return op;
}

TEST(QGemm, FastRequantizationMatchesRequantizeElement) {
  std::mt19937 rng(11);
  const QGemmOp base = random_per_channel_gemm(rng, 40, 9, 10);
  std::array<int, kLabelCount> seen{};
  for (const RoundingMode mode : kAllRoundingModes)
    for (const ZeroPointAdd zpa : {ZeroPointAdd::int_after_rounding, ZeroPointAdd::float_before_rounding})
      for (const bool relu : {false, true}) {
        QGemmOp op = base;
        op.output = requant_out(8.0, -3, relu ? std::optional<IntRange>(IntRange{-3, 100}) : std::nullopt);
        QGemmPolicy p = ideal_policy();
        p.requantize.rounding = mode;
        p.requantize.zero_point = zpa;
        p.requantize.narrow_range = relu;
        const QGemmResult r = qgemm(op, p);
        RequantizePolicy rp = p.requantize;
        if (relu) rp.clip = std::make_pair(std::int64_t{-3}, std::int64_t{100});
        for (std::int64_t e = 0; e < r.y.size(); ++e) {
          const RequantizeScales s{1.0 / 64, op.b.params.scales[static_cast<std::size_t>(e % 10)], 8.0, DType::f32};
          const RequantizeElement want = requantize_element(r.accumulator(e), s, -3, DType::i8, rp);
          ASSERT_EQ(r.y.get_int(e), want.q) << name(mode) << " element " << e;
          ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], want.label) << name(mode) << " element " << e;
          ++seen[static_cast<std::size_t>(want.label)];
        }
      }
  // The data reaches every label the ideal scheme gives.
  for (const Label l : {Label::clear, Label::near_tie, Label::tie, Label::saturated})
    EXPECT_GT(seen[static_cast<std::size_t>(l)], 0) << name(l);
}

TEST(QGemm, FastDequantizationMatchesTheArithRecipe) {
  std::mt19937 rng(12);
  const QGemmOp base = random_per_channel_gemm(rng, 40, 9, 10);
  for (const DType out : {DType::f32, DType::f16, DType::bf16})
    for (const ComputeFormat::Kind compute :
         {ComputeFormat::Kind::exact, ComputeFormat::Kind::f32, ComputeFormat::Kind::f64, ComputeFormat::Kind::f16}) {
      QGemmOp op = base;
      op.output = float_out(out);
      QGemmPolicy p;
      p.dequantize.compute = {compute, 0};
      const QGemmResult r = qgemm(op, p);
      const Arith A = resolve_compute(p.dequantize.compute, DType::i32, DType::f32);
      for (std::int64_t e = 0; e < r.y.size(); ++e) {
        const double sb = op.b.params.scales[static_cast<std::size_t>(e % 10)];
        const ExactFloat acc = ExactFloat::finite(Rational(r.accumulator(e)));
        const ExactFloat scale =
            A.mul(A.convert(ExactFloat::finite(Rational(1, 64))), A.convert(ExactFloat::finite(Rational(sb))));
        const std::uint64_t want = encode_float(out, A.mul(A.convert(acc), scale), RoundingMode::rne, Overflow::ieee);
        ASSERT_EQ(r.y.bits(e), want) << name(out) << " " << A.name() << " element " << e;
        const Rational v = Rational(r.accumulator(e)) * Rational(1, 64) * Rational(sb);
        ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], float_grid_label(v, out)) << name(out) << " element " << e;
      }
    }
}

TEST(QGemm, FloatGridLabelAgreesWithDequantizeLabels) {
  // float_grid_label is the rational form of dequantize's exact_product_label: same verdicts on d * s.
  std::mt19937 rng(13);
  std::uniform_int_distribution<std::int64_t> d(-70000, 70000);
  std::uniform_int_distribution<int> e(-30, 10);
  for (int i = 0; i < 20000; ++i) {
    const double s = i % 2 ? std::ldexp(1.0, e(rng)) : std::ldexp(static_cast<double>(d(rng) | 1), e(rng));
    const std::int64_t x = d(rng);
    if (s <= 0) continue;
    for (const DType out : {DType::f32, DType::f16, DType::bf16}) {
      if (abs(Rational(x) * Rational(s)) > max_finite(out)) continue;  // the output overflows: saturated
      ASSERT_EQ(float_grid_label(Rational(x) * Rational(s), out), exact_product_label(x, s, out))
          << x << " * " << s << " in " << name(out);
    }
  }
}

// qgemm(op, policy, &only) is the whole op's result at those elements, for every output kind and
// scheme, per tensor and per channel, with an int32 bias and under int16 pair saturation: the
// shortcut cause attribution takes, checked against the slow way round (the whole op).
TEST(QGemm, SelectedElementsAreTheWholeOpsElements) {
  std::mt19937_64 rng(20261125);
  int compared = 0;
  std::set<int> kinds;  // trial % 8 and whether pairs saturate, among the trials compared
  for (int trial = 0; trial < 160; ++trial) {
    const std::int64_t M = 1 + static_cast<std::int64_t>(rng() % 9), K = 1 + static_cast<std::int64_t>(rng() % 40),
                       N = 1 + static_cast<std::int64_t>(rng() % 7);
    QGemmOp op;
    std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
    for (auto& v : a) v = static_cast<std::int64_t>(rng() % 256);
    for (auto& v : b) v = static_cast<std::int64_t>(rng() % 256) - 128;
    op.a.values = ints(DType::u8, {M, K}, a);
    op.a.params = per_tensor(0.03125, static_cast<std::int64_t>(rng() % 256));
    op.b.values = ints(DType::i8, {K, N}, b);
    if (trial % 2) {
      std::vector<double> scales;
      for (std::int64_t n = 0; n < N; ++n)
        scales.push_back(std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024, -7));
      op.b.params = per_axis(1, scales);
    } else {
      op.b.params = per_tensor(0.0078125);
    }
    if (trial % 3 == 0) {
      std::vector<std::int64_t> bias;
      for (std::int64_t n = 0; n < N; ++n) bias.push_back(static_cast<std::int64_t>(rng() % 2001) - 1000);
      op.bias = ints(DType::i32, {N}, bias);
    }
    QGemmPolicy policy = ideal_policy();
    switch (trial % 4) {
      case 0:
        op.output = int32_out();
        break;
      case 1:
        op.output = float_out(DType::f32);
        break;
      default:
        op.output = requant_out(std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024, -2),
                                static_cast<std::int64_t>(rng() % 21) - 10);
        policy.requantize = requantize_policy_for(trial % 8 == 2 ? RequantizeScheme::gemmlowp_double
                                                                 : RequantizeScheme::float_multiplier);
        break;
    }
    if (trial % 5 == 0) {
      policy.accumulation = Accumulation::int16_pair_saturate;
      policy.zero_points = ZeroPointCorrection::compensate;
    }
    QGemmResult whole;
    try {
      whole = qgemm(op, policy);
    } catch (const InputError&) {
      continue;  // a combination the policy cannot express: nothing to compare
    }
    const std::vector<std::int64_t> only = some_elements(whole.y, rng);
    const QGemmResult part = qgemm(op, policy, &only);
    kinds.insert(trial % 8 + (trial % 5 == 0 ? 8 : 0));
    compared += expect_selected_equal_whole(part, whole, only, trial);
  }
  EXPECT_GT(compared, 800);
  EXPECT_GE(kinds.size(), 12u);  // every output kind and scheme, with and without pair saturation
}

}  // namespace
}  // namespace qc

namespace qc {
namespace {

// qgemm_accumulators for a few elements (each its own dot product: accumulate_elements) and for a
// third of them (their rows through accumulate_gemm), with one GemmOperandCache shared by every
// policy, then finish_output: the whole op's values and labels at those elements, under every
// accumulator, zero-point correction and pair rule, for u8 x s8, s8 x s8 (shifted pairs), i16 x
// i16 sums that leave int32 (wrap and saturate differ from the exact sum) and B in blocks along K
// (several segments per element). The slow way round is the whole op under the same policy.
TEST(QGemm, ElementAccumulatorsWithSharedOperandsAreTheWholeOpsElements) {
  std::mt19937_64 rng(20261202);
  struct Shape3 {
    DType a, b;
    std::int64_t M, K, N;
    bool blocked;
  };
  const Shape3 shapes[] = {{DType::u8, DType::i8, 12, 700, 20, false},
                           {DType::i8, DType::i8, 10, 300, 16, false},
                           {DType::i16, DType::i16, 9, 40, 11, false},
                           {DType::u8, DType::i8, 8, 96, 12, true}};
  const auto value = [&](DType t) -> std::int64_t {
    switch (t) {
      case DType::u8:
        return static_cast<std::int64_t>(rng() % 256);
      case DType::i8:
        return static_cast<std::int64_t>(rng() % 256) - 128;
      default:  // i16 near its ends, so that 40 products leave int32
        return (rng() % 2 ? 32767 : -32768) + static_cast<std::int64_t>(rng() % 64) * (rng() % 2 ? -1 : 1);
    }
  };
  int compared = 0, overflowed = 0;
  for (const Shape3& s : shapes) {
    QGemmOp op;
    std::vector<std::int64_t> a(static_cast<std::size_t>(s.M * s.K)), b(static_cast<std::size_t>(s.K * s.N));
    for (auto& v : a) v = std::clamp<std::int64_t>(value(s.a), -32768, 32767);
    for (auto& v : b) v = std::clamp<std::int64_t>(value(s.b), -32768, 32767);
    op.a.values = ints(s.a, {s.M, s.K}, a);
    op.a.params = per_tensor(0.03125, s.a == DType::u8 ? 131 : 3);
    op.b.values = ints(s.b, {s.K, s.N}, b);
    if (s.blocked) {
      std::vector<double> scales;
      for (std::int64_t k = 0; k < (s.K / 32) * s.N; ++k)
        scales.push_back(std::ldexp(1.0 + static_cast<double>(rng() % 64) / 64, -7));
      op.b.params = blocked(0, 32, scales);
    } else {
      op.b.params = per_tensor(0.0078125, s.b == DType::i8 ? -2 : 0);
    }
    op.output = requant_out(std::ldexp(1.0, s.a == DType::i16 ? 12 : -1), 5);
    GemmOperandCache operands;
    const std::int64_t E = s.M * s.N, S = s.blocked ? s.K / 32 : 1;
    std::vector<std::int64_t> few, third;
    for (std::int64_t e = E - 1; e >= 0; e -= 37) few.push_back(e);  // descending: any order
    for (std::int64_t e = 0; e < E; ++e)
      if (rng() % 3 == 0) third.push_back(e);
    for (const Accumulation acc : table_values<Accumulation>())
      for (const ZeroPointCorrection zp : table_values<ZeroPointCorrection>())
        for (const PairRule pairs : table_values<PairRule>()) {
          if (acc != Accumulation::int16_pair_saturate && pairs != PairRule::u8s8_whole_k) continue;
          QGemmPolicy policy = ideal_policy();
          policy.accumulation = acc;
          policy.zero_points = zp;
          policy.pair_rule = pairs;
          QGemmResult whole;
          try {
            whole = qgemm(op, policy);
          } catch (const InputError&) {
            continue;  // a combination the policy cannot express (pairs of i16, pairs minus zero points)
          }
          for (const auto* only : {&few, &third}) {
            const QGemmResult part =
                finish_output(qgemm_accumulators(op, policy, *only, &operands), op.bias, op.output, policy);
            const int trial = static_cast<int>(acc) * 100 + static_cast<int>(zp) * 10 + static_cast<int>(pairs);
            compared += expect_selected_equal_whole(part, whole, *only, trial);
            for (std::size_t j = 0; j < only->size(); ++j)
              for (std::int64_t seg = 0; seg < S; ++seg) {
                const auto i = static_cast<std::int64_t>(j);
                EXPECT_EQ(part.accumulator(i, seg), whole.accumulator((*only)[j], seg)) << trial;
                EXPECT_EQ(part.exact_accumulator(i, seg), whole.exact_accumulator((*only)[j], seg)) << trial;
              }
          }
          for (std::int64_t e = 0; e < E; ++e)
            overflowed += whole.accumulator(e, 0) != whole.exact_accumulator(e, 0) ? 1 : 0;
        }
  }
  EXPECT_GT(compared, 2000);
  EXPECT_GT(overflowed, 0);  // some sums left their accumulator, so the exact sums were compared too
}

}  // namespace
}  // namespace qc
