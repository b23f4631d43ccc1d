// cpu-ref's quantized GEMM and convolution against outputs derived by hand (never the oracle):
// each expected value is worked out in the comment above it.
#include "backends/cpu_ref/cpu_ref.hpp"
#include "cpu_ref_test_util.hpp"

#include "cases/case.hpp"
#include "harness/runner.hpp"
#include "oracles/int4.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qc {
namespace {

using testing::int_values;
using testing::per_tensor;

Tensor ints(DType t, Shape shape, const std::vector<std::int64_t>& v) {
  Tensor x(t, std::move(shape));
  EXPECT_EQ(x.size(), static_cast<std::int64_t>(v.size()));
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_int(i, v[static_cast<std::size_t>(i)]);
  return x;
}

Tensor floats(DType t, Shape shape, const std::vector<double>& v) {
  Tensor x(t, std::move(shape));
  EXPECT_EQ(x.size(), static_cast<std::int64_t>(v.size()));
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_double(i, v[static_cast<std::size_t>(i)]);
  return x;
}

QuantParams per_axis(std::vector<double> scales, std::vector<std::int64_t> zps, int axis, std::int64_t block = 0) {
  QuantParams p;
  p.scales = std::move(scales);
  p.zero_points = std::move(zps);
  p.axis = axis;
  p.block_size = block;
  return p;
}

ActivationOperand int_activation(Tensor q, QuantParams p) {
  ActivationOperand a;
  a.values = std::move(q);
  a.params = std::move(p);
  return a;
}

QWeights int_weights(Tensor q, QuantParams p) {
  QWeights w;
  w.format = q.dtype();
  w.shape = q.shape();
  w.values = std::move(q);
  w.params = std::move(p);
  return w;
}

OutputStage int32_out() { return {}; }
OutputStage dequantized_out(DType t = DType::f32) { return {OutputKind::dequantized, t, 1.0, 0, std::nullopt}; }
OutputStage requantized_out(DType t, double scale, std::int64_t zp, std::optional<IntRange> clamp = std::nullopt) {
  return {OutputKind::requantized, t, scale, zp, clamp};
}

Tensor run(const OpRequest& op) {
  CpuRefBackend cpu;
  const Availability a = cpu.supports(op);
  EXPECT_TRUE(a.available) << a.reason;
  return cpu.run(op);
}

std::vector<double> double_values(const Tensor& y) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < y.size(); ++i) v.push_back(y.get_double(i));
  return v;
}

// The 2x3x4 GEMM used below: A (u8, zp 128) = 128 + [[2, -4, 8, 1], [6, 0, -3, 4]] and
// B = [[1, -2, 3], [4, -5, 6], [7, -8, 9], [10, -11, 12]] give the accumulators
//   row 0: 2*1 - 4*4 + 8*7 + 1*10 = 52,  2*-2 - 4*-5 + 8*-8 + 1*-11 = -59,  2*3 - 4*6 + 8*9 + 1*12 = 66
//   row 1: 6*1 + 0 - 3*7 + 4*10 = 25,    6*-2 + 0 - 3*-8 + 4*-11 = -32,     6*3 + 0 - 3*9 + 4*12 = 39
const std::vector<std::int64_t> kA = {130, 124, 136, 129, 134, 128, 125, 132};
const std::vector<std::int64_t> kB = {1, -2, 3, 4, -5, 6, 7, -8, 9, 10, -11, 12};

TEST(CpuRefGemm, MatMulIntegerPerTensor) {
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {2, 4}, kA), per_tensor(1.0, 128));
  g.b = int_weights(ints(DType::i8, {4, 3}, kB), per_tensor(1.0, 0));
  g.output = int32_out();
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{52, -59, 66, 25, -32, 39}));
}

TEST(CpuRefGemm, MatMulIntegerWeightZeroPoint) {
  // b - zb = b + 1 adds the row sums of A - za (2 - 4 + 8 + 1 = 7 and 6 + 0 - 3 + 4 = 7).
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {2, 4}, kA), per_tensor(1.0, 128));
  g.b = int_weights(ints(DType::i8, {4, 3}, kB), per_tensor(1.0, -1));
  g.output = int32_out();
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{59, -52, 73, 32, -25, 46}));
}

TEST(CpuRefGemm, TransposedWeightsGiveTheSameProduct) {
  // B stored [N, K] (n_by_k): the transpose of kB, same accumulators.
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {2, 4}, kA), per_tensor(1.0, 128));
  g.b = int_weights(ints(DType::i8, {3, 4}, {1, 4, 7, 10, -2, -5, -8, -11, 3, 6, 9, 12}), per_tensor(1.0, 0));
  g.b_layout = WeightLayout::n_by_k;
  g.output = int32_out();
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{52, -59, 66, 25, -32, 39}));
}

TEST(CpuRefGemm, RequantizeTiesToEven) {
  // A = [[1, 1, 0, 0], [1, 0, 1, 0]], B = [[2, 6, -2], [0, 4, 10], [1, 3, -5], [7, 1, 1]]:
  // accumulators [[2, 10, 8], [3, 9, -7]]; s_a * s_b / s_out = 0.5 * 0.5 / 1 = 1/4:
  // 0.5 -> 0 (tie, even), 2.5 -> 2 (tie, even), 2 -> 2, 0.75 -> 1, 2.25 -> 2, -1.75 -> -2.
  QGemmOp g;
  g.a = int_activation(ints(DType::i8, {2, 4}, {1, 1, 0, 0, 1, 0, 1, 0}), per_tensor(0.5));
  g.b = int_weights(ints(DType::i8, {4, 3}, {2, 6, -2, 0, 4, 10, 1, 3, -5, 7, 1, 1}), per_tensor(0.5));
  g.output = requantized_out(DType::i8, 1.0, 0);
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{0, 2, 2, 1, 2, -2}));
}

TEST(CpuRefGemm, QuantizedActivationPerChannelBiasAndRelu) {
  // A = [[0.5, -1, 2, 0.25], [1.5, 0, -0.75, 1]] / 0.25 + 128 = kA; accumulators as above, + int32
  // bias [1, -2, 3]: [[53, -61, 69], [26, -34, 42]]. s_a * s_b[n] / s_out = 0.25 * [0.5, 0.25,
  // 0.125] / 0.5 = [1/4, 1/8, 1/16]:
  //   row 0: 13.25 -> 13, -7.625 -> -8, 4.3125 -> 4;  row 1: 6.5 -> 6 (tie), -4.25 -> -4, 2.625 -> 3
  // + zp 3 = [[16, -5, 7], [9, -1, 6]]; the fused ReLU clamps below at q(0) = 3: [[16, 3, 7], [9, 3, 6]].
  QGemmOp g;
  g.a.values = floats(DType::f32, {2, 4}, {0.5, -1.0, 2.0, 0.25, 1.5, 0.0, -0.75, 1.0});
  g.a.format = DType::u8;
  g.a.params = per_tensor(0.25, 128);
  g.b = int_weights(ints(DType::i8, {4, 3}, kB), per_axis({0.5, 0.25, 0.125}, {0, 0, 0}, 1));
  g.bias = ints(DType::i32, {3}, {1, -2, 3});
  g.output = requantized_out(DType::i8, 0.5, 3, IntRange{3, 127});
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{16, 3, 7, 9, 3, 6}));
}

TEST(CpuRefGemm, DequantizedPerChannel) {
  // float(acc) * (0.25 * s_b[n]) with s_b = [0.5, 0.25, 0.125], all exact in f32:
  // [52/8, -59/16, 66/32, 25/8, -32/16, 39/32] = [6.5, -3.6875, 2.0625, 3.125, -2, 1.21875].
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {2, 4}, kA), per_tensor(0.25, 128));
  g.b = int_weights(ints(DType::i8, {4, 3}, kB), per_axis({0.5, 0.25, 0.125}, {0, 0, 0}, 1));
  g.output = dequantized_out();
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{6.5, -3.6875, 2.0625, 3.125, -2.0, 1.21875}));
}

TEST(CpuRefGemm, DequantizedRoundsInTheScaleType) {
  // One accumulator 52 with f32 scales 0.1f and 0.3f: ONNX multiplies in the scale's type, so the
  // output is float(52) * (0.1f * 0.3f) with each product rounded to f32, then (f16 output)
  // rounded once more to f16.
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {1, 4}, {130, 124, 136, 129}), per_tensor(static_cast<double>(0.1f), 128));
  g.b = int_weights(ints(DType::i8, {4, 1}, {1, 4, 7, 10}), per_tensor(static_cast<double>(0.3f)));
  g.output = dequantized_out();
  const float p = 0.1f * 0.3f;
  const float y = 52.0f * p;
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{y}));
  g.output = dequantized_out(DType::f16);
  EXPECT_EQ(run(g).bits(0), double_to_float_bits(DType::f16, y));
}

TEST(CpuRefGemm, BlockedWeightsWithShortLastBlock) {
  // K = 4, block size 3 along K: block 0 is k = 0..2 (scale 0.5, zp 0), block 1 is k = 3 (scale
  // 0.25, zp -1). A = [1, 2, 3, 4], B = [1, 1, 1, 1]:
  //   block 0: (1 + 2 + 3) * 1 = 6, times 0.5 = 3;  block 1: 4 * (1 + 1) = 8, times 0.25 = 2;  y = 5.
  // Requantized with s_out = 2: 5 / 2 = 2.5, a tie, to 2; with s_out = 4: 1.25 -> 1.
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {1, 4}, {1, 2, 3, 4}), per_tensor(1.0));
  g.b = int_weights(ints(DType::i8, {4, 1}, {1, 1, 1, 1}), per_axis({0.5, 0.25}, {0, -1}, 0, 3));
  g.output = dequantized_out();
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{5.0}));
  g.output = requantized_out(DType::i8, 2.0, 0);
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{2}));
  g.output = requantized_out(DType::i8, 4.0, 0);
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{1}));
}

TEST(CpuRefGemm, FloatBiasIsAddedToTheRealValue) {
  // A = [1, 2], B = [1, 1] (scales 0.5, 0.5): acc = 3, v = 0.75. With an f32 bias:
  //   +0.25 -> 1.0 / 0.5 = 2;  -0.5 -> 0.25 / 0.5 = 0.5, a tie, to 0;  +0.125 -> 1.75 -> 2.
  for (const auto& [bias, expected] : std::vector<std::pair<double, std::int64_t>>{{0.25, 2}, {-0.5, 0}, {0.125, 2}}) {
    QGemmOp g;
    g.a = int_activation(ints(DType::i8, {1, 2}, {1, 2}), per_tensor(0.5));
    g.b = int_weights(ints(DType::i8, {2, 1}, {1, 1}), per_tensor(0.5));
    g.bias = floats(DType::f32, {1}, {bias});
    g.output = requantized_out(DType::i8, 0.5, 0);
    EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{expected})) << "bias " << bias;
  }
}

TEST(CpuRefGemm, Int32AccumulatorWraps) {
  // i16 x i16: 3 * 32767^2 = 3 * 1073676289 = 3221028867 > 2^31 - 1, so the int32 accumulator
  // wraps to 3221028867 - 2^32 = -1073938429 (ONNX: accumulation may overflow only in 32 bits).
  QGemmOp g;
  g.a = int_activation(ints(DType::i16, {1, 3}, {32767, 32767, 32767}), per_tensor(1.0));
  g.b = int_weights(ints(DType::i16, {3, 1}, {32767, 32767, 32767}), per_tensor(1.0));
  g.output = int32_out();
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{-1073938429}));
  // Two products, 2147352578, fit; an int32 bias of 200000 wraps the sum: 2147552578 - 2^32.
  g.a = int_activation(ints(DType::i16, {1, 2}, {32767, 32767}), per_tensor(1.0));
  g.b = int_weights(ints(DType::i16, {2, 1}, {32767, 32767}), per_tensor(1.0));
  g.bias = ints(DType::i32, {1}, {200000});
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{-2147414718}));
}

TEST(CpuRefGemm, PackedInt4Weights) {
  // int4 B = [1, -2, 3] (K = 3, N = 1) packed ONNX-style: byte 0 = (-2 & 0xF) << 4 | 1 = 0xE1,
  // byte 1 = 3 (the high nibble pads). zp -1: b - zb = [2, -1, 4]; A = [1, 1, 1]: acc = 5.
  QGemmOp g;
  g.a = int_activation(ints(DType::u8, {1, 3}, {1, 1, 1}), per_tensor(1.0));
  g.b.values = ints(DType::u8, {2}, {0xE1, 0x03});
  g.b.format = DType::i4;
  g.b.packing = onnx_int4_packing();
  g.b.shape = {3, 1};
  g.b.params = per_tensor(1.0, -1);
  g.output = int32_out();
  EXPECT_EQ(int_values(run(g)), (std::vector<std::int64_t>{5}));
}

TEST(CpuRefGemm, DynamicQuantizeLinearPerTensorAndPerRow) {
  // Row 0 = [-1, 0, 0.5, 3], row 1 = [-0.5, 1.5, 0.25, 0]; B = [1, 1, 1, 1] (scale 1), so the
  // output is Σ (q - zp) * scale.
  // Per tensor: [min, max] = [-1, 3], scale = f32(4 / 255) = s, zp = round(0 - (-1) / s) =
  // round(63.749996) = 64. Row 0: x / s = [-63.75, 0, 31.875, 191.25] (just below each in f32)
  // -> [-64, 0, 32, 191], sum 159. Row 1: [-31.875, 95.625, 15.9375, 0] -> [-32, 96, 16, 0], sum 80.
  // Per row: row 0 as above (159 * s); row 1 spans [-0.5, 1.5], scale s / 2 (exactly: f32(2 / 255)
  // is half of f32(4 / 255)), zp 64, x / (s / 2) = [-63.75, 191.25, 31.875, 0] -> sum 159 again.
  const float s = 4.0f / 255.0f;
  QGemmOp g;
  g.a.values = floats(DType::f32, {2, 4}, {-1.0, 0.0, 0.5, 3.0, -0.5, 1.5, 0.25, 0.0});
  g.a.format = DType::u8;
  g.a.quantization = ActivationQuantization::dynamic_per_tensor;
  g.b = int_weights(ints(DType::i8, {4, 1}, {1, 1, 1, 1}), per_tensor(1.0));
  g.output = dequantized_out();
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{159.0f * s, 80.0f * s}));
  g.a.quantization = ActivationQuantization::dynamic_per_row;
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{159.0f * s, 159.0f * (s / 2)}));
}

TEST(CpuRefGemm, DynamicAllZeroUsesScaleOne) {
  // max == min == 0: scale 1, zp 0 (onnx/reference/ops/op_dynamic_quantize_linear.py); every
  // quantized value is 0 and so is the output.
  QGemmOp g;
  g.a.values = floats(DType::f32, {1, 2}, {0.0, 0.0});
  g.a.format = DType::u8;
  g.a.quantization = ActivationQuantization::dynamic_per_tensor;
  g.b = int_weights(ints(DType::i8, {2, 1}, {5, -7}), per_tensor(0.5));
  g.output = dequantized_out();
  EXPECT_EQ(double_values(run(g)), (std::vector<double>{0.0}));
}

TEST(CpuRefGemm, SkipsWhatItDoesNotClaim) {
  CpuRefBackend cpu;
  QGemmOp g;
  g.a.values = floats(DType::f32, {1, 2}, {0.5, 1.0});
  g.a.format = DType::u8;
  g.a.quantization = ActivationQuantization::dynamic_per_tensor;
  g.a.rule.recipe = QParamsRecipe::gemmlowp;  // TFLite's parameter choice, not ONNX's
  g.a.rule.zero_point = ZeroPointChoice::smaller_error;
  g.b = int_weights(ints(DType::i8, {2, 1}, {1, 1}), per_tensor(1.0));
  g.output = dequantized_out();
  EXPECT_FALSE(cpu.supports(g).available);
  // Blocked weights have one accumulator per block: no int32 output.
  QGemmOp b;
  b.a = int_activation(ints(DType::u8, {1, 4}, {1, 2, 3, 4}), per_tensor(1.0));
  b.b = int_weights(ints(DType::i8, {4, 1}, {1, 1, 1, 1}), per_axis({0.5, 0.25}, {0, 0}, 0, 3));
  b.output = int32_out();
  EXPECT_FALSE(cpu.supports(b).available);
}

// ---- Convolution ---------------------------------------------------------------------------------

QConv2dOp conv(Tensor x, QuantParams xp, Tensor w, QuantParams wp) {
  QConv2dOp c;
  c.input = int_activation(std::move(x), std::move(xp));
  c.weight = int_weights(std::move(w), std::move(wp));
  c.output = int32_out();
  return c;
}

TEST(CpuRefConv, Nchw2x2Kernel) {
  // x - zx = [[0, 1, 2], [3, 4, 5], [6, 7, 8]] (u8 1..9, zp 1), kernel [[1, 2], [3, 4]]:
  //   (0,0): 0 + 2 + 9 + 16 = 27   (0,1): 1 + 4 + 12 + 20 = 37
  //   (1,0): 3 + 8 + 18 + 28 = 57  (1,1): 4 + 10 + 21 + 32 = 67
  QConv2dOp c = conv(ints(DType::u8, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), per_tensor(1.0, 1),
                     ints(DType::i8, {1, 1, 2, 2}, {1, 2, 3, 4}), per_tensor(1.0));
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{27, 37, 57, 67}));
}

TEST(CpuRefConv, NhwcReadsChannelsLast) {
  // NHWC [1, 2, 2, 2]: pixel (h, w) holds (c0, c1) = (1, 2), (3, 4), (5, 6), (7, 8). The kernel
  // takes c0 at (0, 0) and c1 at (1, 1): 1 + 8 = 9.
  QConv2dOp c = conv(ints(DType::u8, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), per_tensor(1.0),
                     ints(DType::i8, {1, 2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 1}), per_tensor(1.0));
  c.layout = ConvLayout::nhwc;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{9}));
}

TEST(CpuRefConv, PaddingConventions) {
  // x - zx = [[0, 1], [2, 3]] (u8 5..8, zp 5), a 3x3 kernel of ones, padding 1: every output's
  // window holds the 4 pixels (sum 6) and 5 padded taps.
  //   real_zero: padded taps are worth 0 -> 6;  quantized_zero: each is (0 - 5) -> 6 - 25 = -19.
  QConv2dOp c = conv(ints(DType::u8, {1, 1, 2, 2}, {5, 6, 7, 8}), per_tensor(1.0, 5),
                     ints(DType::i8, {1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), per_tensor(1.0));
  c.geometry.pad_top = c.geometry.pad_left = c.geometry.pad_bottom = c.geometry.pad_right = 1;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{6, 6, 6, 6}));
  c.padding = ConvPadding::quantized_zero;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{-19, -19, -19, -19}));
}

TEST(CpuRefConv, StrideAndDilation) {
  // x = 0..15 as 4x4, a 2x2 kernel of ones.
  // Stride 2: (0,0) 0+1+4+5 = 10, (0,1) 2+3+6+7 = 18, (1,0) 8+9+12+13 = 42, (1,1) 10+11+14+15 = 50.
  // Dilation 2 (taps 2 apart), stride 1: (0,0) 0+2+8+10 = 20, (0,1) 1+3+9+11 = 24,
  // (1,0) 4+6+12+14 = 36, (1,1) 5+7+13+15 = 40.
  std::vector<std::int64_t> x;
  for (int i = 0; i < 16; ++i) x.push_back(i);
  QConv2dOp c = conv(ints(DType::u8, {1, 1, 4, 4}, x), per_tensor(1.0), ints(DType::i8, {1, 1, 2, 2}, {1, 1, 1, 1}),
                     per_tensor(1.0));
  c.geometry.stride_h = c.geometry.stride_w = 2;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{10, 18, 42, 50}));
  c.geometry.stride_h = c.geometry.stride_w = 1;
  c.geometry.dilation_h = c.geometry.dilation_w = 2;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{20, 24, 36, 40}));
}

TEST(CpuRefConv, DepthwisePerChannelZeroPointsAndScales) {
  // groups = 2 on two channels [1, 2, 3, 4] and [10, 20, 30, 40], 1x1 kernels 2 and 3 with zero
  // points 1 and -1: channel 0 is (2 - 1) * x = x, channel 1 is (3 + 1) * x = 4x.
  QConv2dOp c = conv(ints(DType::u8, {1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40}), per_tensor(1.0),
                     ints(DType::i8, {2, 1, 1, 1}, {2, 3}), per_axis({1.0, 1.0}, {1, -1}, 0));
  c.geometry.groups = 2;
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{1, 2, 3, 4, 40, 80, 120, 160}));
  // Requantized with s_x = 0.5, s_w = [0.25, 0.125], s_out = 1: channel 0 acc / 8 = [0.125, 0.25,
  // 0.375, 0.5] -> [0, 0, 0, 0] (0.5 ties to 0); channel 1 acc / 16 = [2.5, 5, 7.5, 10] -> [2, 5, 8, 10].
  c.input.params = per_tensor(0.5);
  c.weight.params = per_axis({0.25, 0.125}, {1, -1}, 0);
  c.output = requantized_out(DType::i8, 1.0, 0);
  EXPECT_EQ(int_values(run(c)), (std::vector<std::int64_t>{0, 0, 0, 0, 2, 5, 8, 10}));
}

// ---- The pipelines suite's lowerings ------------------------------------------------------------
// cases/pipelines.json chains lowerings and states which must agree (same_outputs_as) and where
// they part (differs_from); the runner checks the statements. Here they are checked on cpu-ref
// against values derived by hand in the suite's descriptions, independently of the runner's count.
TEST(CpuRefPipelines, TheSuitesStatementsHoldWithTheHandDerivedOutputs) {
  const Suite suite = load_suite(std::string(QCONFORM_SOURCE_DIR) + "/cases/pipelines.json");
  CpuRefBackend cpu;
  std::map<std::string, std::vector<double>> out;
  RunOptions opt;
  opt.on_output = [&](const Case& c, const BackendResult&, const Tensor& t) { out[c.name] = double_values(t); };
  const RunReport r = run_cases({suite}, {&cpu}, opt);
  EXPECT_EQ(exit_code(r), 0);
  int statements = 0;
  for (const CaseResult& c : r.cases) {
    EXPECT_EQ(c.backends.at(0).verdict, Verdict::pass) << c.id << ": " << c.backends.at(0).reason;
    for (std::size_t k = 0; k < c.agreements.size(); ++k) {
      ++statements;
      EXPECT_EQ(c.agreements[k].status, AgreementStatus::holds) << c.id << ": " << c.agreements[k].reason;
      EXPECT_EQ(c.backends.at(0).agreements.at(k).status, AgreementStatus::holds) << c.id;
    }
  }
  EXPECT_EQ(statements, 9);  // 7, and the 3x3 QDQ chain's same_outputs_as and differs_from
  // Fused FC: one rounding. Lowered through the (0.3, 0) intermediate: two, and elements 0, 7 and
  // 11 move by one LSB.
  EXPECT_EQ(out.at("fc_fused"), (std::vector<double>{11, -47, -50, 14, -47, 2, 84, 63, -22, -69, -61, -38}));
  EXPECT_EQ(out.at("fc_bias_then_requantize"), out.at("fc_fused"));
  EXPECT_EQ(out.at("fc_lowered_matmul_requantized"),
            (std::vector<double>{7, -30, -41, 10, -30, 2, 68, 61, -18, -59, -42, -32}));
  EXPECT_EQ(out.at("fc_lowered_bias_add"), (std::vector<double>{10, -47, -50, 14, -47, 2, 84, 62, -22, -69, -61, -39}));
  EXPECT_EQ(out.at("fc_matmul_integer_bias"),
            (std::vector<double>{3176, -7536, -24063, 4085, -7459, 1855, 21542, 10770, -10064, -16670, -9841, -18119}));
  // The zero-byte padding hazard: the border outputs (row or column 0 or 4 of each 5x5 channel)
  // differ, except element 53 (channel 2, row 0, column 3), saturated at -128 both ways.
  const std::vector<double>& s8 = out.at("s8s8_conv_zero_byte_padding");
  const std::vector<double>& u8 = out.at("u8s8_rewrite_conv_zero_byte_padding");
  ASSERT_EQ(s8.size(), 75u);
  for (std::size_t i = 0; i < 75; ++i) {
    const std::size_t row = (i % 25) / 5, col = i % 5;
    const bool border = row == 0 || row == 4 || col == 0 || col == 4;
    EXPECT_EQ(s8[i] != u8[i], border && i != 53) << i;
  }
  EXPECT_EQ(s8[53], -128);
  EXPECT_EQ(u8[53], -128);
  EXPECT_EQ(out.at("u8s8_rewrite_conv"), out.at("s8s8_conv"));
  EXPECT_EQ(out.at("u8s8_rewrite_gemm"), out.at("s8s8_gemm"));
  EXPECT_EQ(out.at("qdq_conv1x1_float"), out.at("qconv_then_dequantize"));
  // The 3x3 chain: exact with power-of-two scales (the case's description); with an input scale of
  // 0.05, 33 of 75 elements apart (derived with plain loops in python/tests/test_conv2d.py).
  EXPECT_EQ(out.at("qdq3x3_conv_float"), out.at("qconv3x3_then_dequantize"));
  const std::vector<double>& f = out.at("qdq3x3_s005_conv_float");
  const std::vector<double>& q = out.at("qconv3x3_s005_then_dequantize");
  ASSERT_EQ(f.size(), 75u);
  int apart = 0;
  for (std::size_t i = 0; i < f.size(); ++i) apart += f[i] != q[i] ? 1 : 0;
  EXPECT_EQ(apart, 33);
}

}  // namespace
}  // namespace qc
