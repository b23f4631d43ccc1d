// qconv2d: hand-derived vectors. Each expected value is derived in the comment above it.
#include "oracles/qconv2d.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace qc {
namespace {

using namespace qc::test;

Conv2dGeometry stride2_pad1() {
  Conv2dGeometry g;
  g.stride_h = g.stride_w = 2;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  return g;
}

// One channel, 4x4, u8 with zx = 10, s_x = 1: q = 11..26 row-major, so x - zx = 1..16:
//    1  2  3  4
//    5  6  7  8
//    9 10 11 12
//   13 14 15 16
// Weights [1, 1, 3, 3] (i8, zw = 0, s_w = 1): [[1, 0, -1], [2, 1, 0], [0, -1, 1]].
// Pad 1, stride 2: OH = OW = floor((4 + 2 - 3) / 2) + 1 = 2; windows start at rows/cols -1 and 1.
QConv2dOp single_channel_conv() {
  QConv2dOp op;
  std::vector<std::int64_t> q;
  for (int i = 0; i < 16; ++i) q.push_back(11 + i);
  op.input.values = ints(DType::u8, {1, 1, 4, 4}, q);
  op.input.params = per_tensor(1.0, 10);
  op.weight.values = ints(DType::i8, {1, 1, 3, 3}, {1, 0, -1, 2, 1, 0, 0, -1, 1});
  op.weight.params = per_tensor(1.0);
  op.geometry = stride2_pad1();
  op.output = int32_out();
  return op;
}

TEST(QConv2d, SingleChannelStride2Pad1RealZeroPadding) {
  // (0,0): rows -1..1, cols -1..1; only (0,0)=1, (0,1)=2, (1,0)=5, (1,1)=6 are inside:
  //        kernel row 1 [2, 1, 0] on [pad, 1, 2] -> 1; kernel row 2 [0, -1, 1] on [pad, 5, 6] -> 1: total 2
  // (0,1): rows -1..1, cols 1..3: [2, 3, 4]*[2, 1, 0] = 7, [6, 7, 8]*[0, -1, 1] = 1: total 8
  // (1,0): rows 1..3, cols -1..1: [pad, 5, 6]*[1, 0, -1] = -6, [pad, 9, 10]*[2, 1, 0] = 9,
  //        [pad, 13, 14]*[0, -1, 1] = 1: total 4
  // (1,1): [6, 7, 8]*[1, 0, -1] = -2, [10, 11, 12]*[2, 1, 0] = 31, [14, 15, 16]*[0, -1, 1] = 1: total 30
  const QLinearResult r = qconv2d(single_channel_conv(), QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{2, 8, 4, 30}));
}

TEST(QConv2d, SingleChannelQuantizedZeroPadding) {
  // Padded taps hold q = 0, i.e. x - zx = -10; each adds -10 * its weight:
  //   (0,0): padded weights: kernel row 0 (1 + 0 - 1 = 0), (1,0) = 2, (2,0) = 0: 2 - 10*2 = -18
  //   (0,1): window cols 1..3 are all inside the 4-wide image; only row -1 is padded, kernel row 0
  //          sums to 0: 8 + (-10)*0 = 8
  //   (1,0): padded column -1: weights (0,0) = 1, (1,0) = 2, (2,0) = 0: 4 - 10*3 = -26
  //   (1,1): no padded taps: 30
  QConv2dOp op = single_channel_conv();
  op.padding = ConvPadding::quantized_zero;
  EXPECT_EQ(int_values(qconv2d(op, QGemmPolicy{}).y), (std::vector<std::int64_t>{-18, 8, -26, 30}));
}

TEST(QConv2d, PaddingConventionsAgreeWithZeroInputZeroPoint) {
  // With zx = 0 the quantized zero is the real zero: shift the input down by 10 (q = 1..16, zx = 0).
  QConv2dOp op = single_channel_conv();
  std::vector<std::int64_t> q;
  for (int i = 0; i < 16; ++i) q.push_back(1 + i);
  op.input.values = ints(DType::u8, {1, 1, 4, 4}, q);
  op.input.params = per_tensor(1.0, 0);
  const QLinearResult real = qconv2d(op, QGemmPolicy{});
  op.padding = ConvPadding::quantized_zero;
  EXPECT_EQ(int_values(qconv2d(op, QGemmPolicy{}).y), int_values(real.y));
  EXPECT_EQ(int_values(real.y), (std::vector<std::int64_t>{2, 8, 4, 30}));
}

TEST(QConv2d, SingleChannelWithBiasAndDequantizedOutput) {
  // Bias 5 (i32, scale s_x*s_w): [7, 13, 9, 35]; with s_x = 0.5, s_w = 0.25 the dequantized f32 output is
  // 0.125 * [7, 13, 9, 35] = [0.875, 1.625, 1.125, 4.375].
  QConv2dOp op = single_channel_conv();
  op.input.params = per_tensor(0.5, 10);
  op.weight.params = per_tensor(0.25);
  op.bias = ints(DType::i32, {1}, {5});
  op.output = float_out(DType::f32);
  EXPECT_EQ(float_values(qconv2d(op, QGemmPolicy{}).y), (std::vector<double>{0.875, 1.625, 1.125, 4.375}));
}

// Grouped: C = 4, H = W = 3, groups = 2, OC = 2, u8 input with zx = 5 and channel c constant
// q = 6 + c, so x - zx = c + 1 = [1, 2, 3, 4] per channel. Weights [2, 2, 3, 3]:
//   oc 0 (channels 0, 1): ones(3x3) and K1 = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
//   oc 1 (channels 2, 3): P = [[0, 1, 0], [1, 1, 1], [0, 0, 2]] and -ones(3x3)
// Pad 1, stride 2 on 3x3: OH = OW = floor((3 + 2 - 3) / 2) + 1 = 2. Inside kernel taps:
//   (0,0): kh, kw in {1, 2};  (0,1): kh in {1, 2}, kw in {0, 1};  (1,0): kh in {0, 1}, kw in {1, 2};  (1,1): {0, 1}^2.
// oc 0 = 1 * 4 + 2 * (K1 over the inside taps):
//   (0,0): K1 5+6+8+9 = 28 -> 60;  (0,1): 4+5+7+8 = 24 -> 52;  (1,0): 2+3+5+6 = 16 -> 36;  (1,1): 1+2+4+5 = 12 -> 28
// oc 1 = 3 * (P over the inside taps) - 4 * 4:
//   (0,0): 1+1+0+2 = 4 -> -4;  (0,1): 1+1+0+0 = 2 -> -10;  (1,0): 1+0+1+1 = 3 -> -7;  (1,1): 0+1+1+1 = 3 -> -7
const std::vector<std::int64_t> kGroupedWeights = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  2,  3,  4,  5,  6,  7,  8,  9,  // oc 0
    0, 1, 0, 1, 1, 1, 0, 0, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1  // oc 1
};

QConv2dOp grouped_conv(ConvLayout layout) {
  QConv2dOp op;
  op.layout = layout;
  Shape shape = layout == ConvLayout::nchw ? Shape{1, 4, 3, 3} : Shape{1, 3, 3, 4};
  std::vector<std::int64_t> q(36);
  for (std::int64_t c = 0; c < 4; ++c)
    for (std::int64_t p = 0; p < 9; ++p)
      q[static_cast<std::size_t>(layout == ConvLayout::nchw ? c * 9 + p : p * 4 + c)] = 6 + c;
  op.input.values = ints(DType::u8, shape, q);
  op.input.params = per_tensor(1.0, 5);
  op.weight.values = ints(DType::i8, {2, 2, 3, 3}, kGroupedWeights);
  op.weight.params = per_tensor(1.0);
  op.geometry = stride2_pad1();
  op.geometry.groups = 2;
  op.output = int32_out();
  return op;
}

TEST(QConv2d, GroupedNchw) {
  const QLinearResult r = qconv2d(grouped_conv(ConvLayout::nchw), QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{60, 52, 36, 28, -4, -10, -7, -7}));
}

TEST(QConv2d, GroupedNhwcAgreesWithNchw) {
  // The same numbers in NHWC: output [1, 2, 2, 2] with channels last: (oh, ow, oc).
  const QLinearResult r = qconv2d(grouped_conv(ConvLayout::nhwc), QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{60, -4, 52, -10, 36, -7, 28, -7}));
}

TEST(QConv2d, DepthwisePerChannelScalesRequantized) {
  // groups = C = 2, OC = 2 (multiplier 1); channels x - zx = [1, 2] (q = [6, 7], zx = 5), 3x3.
  //   oc 0: K1 on channel 0 (value 1): the inside-tap sums 28, 24, 16, 12
  //   oc 1: ones on channel 1 (value 2): 4 inside taps -> 8 everywhere
  // s_x = 0.5, s_w = [0.25, 0.125] per output channel, s_out = 0.25, zp 0:
  //   oc 0: acc * 0.125 / 0.25 = acc / 2 = [14, 12, 8, 6]; oc 1: acc * 0.0625 / 0.25 = acc / 4 = 2.
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 2, 3, 3}, {6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7});
  op.input.params = per_tensor(0.5, 5);
  op.weight.values = ints(DType::i8, {2, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  op.weight.params = per_axis(0, {0.25, 0.125});
  op.geometry = stride2_pad1();
  op.geometry.groups = 2;
  op.output = requant_out(0.25, 0);
  const QLinearResult r = qconv2d(op, ideal_policy());
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{14, 12, 8, 6, 2, 2, 2, 2}));
  EXPECT_EQ(r.accumulator(0), 28);
  EXPECT_EQ(r.scale_product(4), Rational(1, 16));  // 0.5 * 0.125 for oc 1
}

TEST(QConv2d, Dilation) {
  // 5x5 input x - zx = 5r + c + 1, 2x2 ones kernel, dilation 2, no padding, stride 1:
  // OH = OW = 5 - 2*(2-1) - 1 + 1 = 3; out(oh, ow) = x[oh][ow] + x[oh][ow+2] + x[oh+2][ow] + x[oh+2][ow+2]
  //   = 4 * (5oh + ow + 1) + (0 + 2 + 10 + 12) = 20oh + 4ow + 28.
  QConv2dOp op;
  std::vector<std::int64_t> q;
  for (int i = 0; i < 25; ++i) q.push_back(i + 1);
  op.input.values = ints(DType::u8, {1, 1, 5, 5}, q);
  op.input.params = per_tensor(1.0, 0);
  op.weight.values = ints(DType::i8, {1, 1, 2, 2}, {1, 1, 1, 1});
  op.weight.params = per_tensor(1.0);
  op.geometry.dilation_h = op.geometry.dilation_w = 2;
  op.output = int32_out();
  EXPECT_EQ(int_values(qconv2d(op, QGemmPolicy{}).y), (std::vector<std::int64_t>{28, 32, 36, 48, 52, 56, 68, 72, 76}));
}

TEST(QConv2d, AsymmetricPadding) {
  // 2x2 ones (x - zx = 1), 2x2 ones kernel, pad_top = 1 only: OH = 2 + 1 - 2 + 1 = 2, OW = 1.
  //   (0,0): rows -1..0: 2 inside taps -> 2; (1,0): rows 0..1: 4.
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 1, 2, 2}, {1, 1, 1, 1});
  op.input.params = per_tensor(1.0, 0);
  op.weight.values = ints(DType::i8, {1, 1, 2, 2}, {1, 1, 1, 1});
  op.weight.params = per_tensor(1.0);
  op.geometry.pad_top = 1;
  op.output = int32_out();
  const QLinearResult r = qconv2d(op, QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{1, 1, 2, 1}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{2, 4}));
}

// Not hand-derived: the im2col + GEMM evaluation against a direct seven-loop convolution written
// from the ONNX Conv definition, on random NCHW data with groups, stride, dilation, asymmetric
// padding and both padding conventions; and NHWC against NCHW on the same numbers.
std::vector<std::int64_t> direct_conv(const std::vector<std::int64_t>& x, std::int64_t zx,
                                      const std::vector<std::int64_t>& w, const std::vector<std::int64_t>& zw, Shape in,
                                      Shape ws, const Conv2dGeometry& g, ConvPadding padding) {
  const std::int64_t N = in[0], C = in[1], H = in[2], W = in[3], OC = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const std::int64_t OH = (H + g.pad_top + g.pad_bottom - g.dilation_h * (KH - 1) - 1) / g.stride_h + 1;
  const std::int64_t OW = (W + g.pad_left + g.pad_right - g.dilation_w * (KW - 1) - 1) / g.stride_w + 1;
  const std::int64_t OCg = OC / g.groups;
  std::vector<std::int64_t> y;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < OC; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          std::int64_t acc = 0;
          for (std::int64_t ic = 0; ic < Cg; ++ic)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                const std::int64_t ww = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                const std::int64_t c = oc / OCg * Cg + ic;
                const bool inside = h >= 0 && h < H && ww >= 0 && ww < W;
                const std::int64_t xq = inside ? x[static_cast<std::size_t>(((n * C + c) * H + h) * W + ww)]
                                               : (padding == ConvPadding::real_zero ? zx : 0);
                acc += (xq - zx) * (w[static_cast<std::size_t>(((oc * Cg + ic) * KH + kh) * KW + kw)] -
                                    zw[static_cast<std::size_t>(oc)]);
              }
          y.push_back(acc);
        }
  return y;
}

TEST(QConv2d, MatchesADirectConvolution) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  const Shape in{2, 6, 7, 6}, ws{4, 3, 3, 2};
  std::vector<std::int64_t> x(static_cast<std::size_t>(numel(in))), w(static_cast<std::size_t>(numel(ws)));
  for (auto& v : x) v = u8(rng);
  for (auto& v : w) v = s8(rng);
  const std::vector<std::int64_t> zw{0, 3, -7, 0};
  Conv2dGeometry g;
  g.stride_h = 2;
  g.stride_w = 1;
  g.dilation_h = 1;
  g.dilation_w = 2;
  g.pad_top = 2;
  g.pad_left = 0;
  g.pad_bottom = 1;
  g.pad_right = 3;
  g.groups = 2;
  for (const ConvPadding padding : {ConvPadding::real_zero, ConvPadding::quantized_zero}) {
    QConv2dOp op;
    op.input.values = ints(DType::u8, in, x);
    op.input.params = per_tensor(1.0, 117);
    op.weight.values = ints(DType::i8, ws, w);
    op.weight.params = per_axis(0, {1.0, 0.5, 0.25, 2.0}, zw);
    op.geometry = g;
    op.padding = padding;
    op.output = int32_out();
    const QLinearResult nchw = qconv2d(op, QGemmPolicy{});
    EXPECT_EQ(int_values(nchw.y), direct_conv(x, 117, w, zw, in, ws, g, padding)) << name(padding);
    // The same input in NHWC: the output is the NCHW output with channels moved last.
    std::vector<std::int64_t> x_nhwc(x.size());
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t c = 0; c < 6; ++c)
        for (std::int64_t h = 0; h < 7; ++h)
          for (std::int64_t ww = 0; ww < 6; ++ww)
            x_nhwc[static_cast<std::size_t>(((n * 7 + h) * 6 + ww) * 6 + c)] =
                x[static_cast<std::size_t>(((n * 6 + c) * 7 + h) * 6 + ww)];
    op.layout = ConvLayout::nhwc;
    op.input.values = ints(DType::u8, {2, 7, 6, 6}, x_nhwc);
    const QLinearResult nhwc = qconv2d(op, QGemmPolicy{});
    const Shape& o = nchw.y.shape();  // [N, OC, OH, OW]
    for (std::int64_t n = 0; n < o[0]; ++n)
      for (std::int64_t oc = 0; oc < o[1]; ++oc)
        for (std::int64_t oh = 0; oh < o[2]; ++oh)
          for (std::int64_t ow = 0; ow < o[3]; ++ow)
            ASSERT_EQ(nhwc.y.get_int(((n * o[2] + oh) * o[3] + ow) * o[1] + oc),
                      nchw.y.get_int(((n * o[1] + oc) * o[2] + oh) * o[3] + ow));
  }
}

// Input [1, 3, 1, 2] (u8, all 255), weights [1, 3, 1, 2] (s8), one output, int16 pairs. The two
// depth orders list the six taps as
//   c_kh_kw: (c0,kw0) (c0,kw1) | (c1,kw0) (c1,kw1) | (c2,kw0) (c2,kw1)
//   kh_kw_c: (c0,kw0) (c1,kw0) | (c2,kw0) (c0,kw1) | (c1,kw1) (c2,kw1)
// Two weights of 127 (the rest 0) give 255 * 127 * 2 = 64770 exactly, or 32767 where they share a pair.
std::int64_t two_tap_pair_conv(std::int64_t first_c, std::int64_t first_kw, std::int64_t second_c,
                               std::int64_t second_kw, ConvDepthOrder order) {
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 3, 1, 2}, {255, 255, 255, 255, 255, 255});
  op.input.params = per_tensor(1.0);
  std::vector<std::int64_t> w(6, 0);
  w[static_cast<std::size_t>(first_c * 2 + first_kw)] = 127;  // OIHW: (c * KH + 0) * KW + kw
  w[static_cast<std::size_t>(second_c * 2 + second_kw)] = 127;
  op.weight.values = ints(DType::i8, {1, 3, 1, 2}, w);
  op.weight.params = per_tensor(1.0);
  op.output = int32_out();
  QGemmPolicy p;
  p.accumulation = Accumulation::int16_pair_saturate;
  p.conv_depth_order = order;
  return qconv2d(op, p).y.get_int(0);
}

TEST(QConv2d, Int16PairsFollowTheDepthOrder) {
  // (c0,kw0) + (c1,kw0): one pair along (kh, kw, c), two pairs along (c, kh, kw).
  EXPECT_EQ(two_tap_pair_conv(0, 0, 1, 0, ConvDepthOrder::kh_kw_c), 32767);
  EXPECT_EQ(two_tap_pair_conv(0, 0, 1, 0, ConvDepthOrder::c_kh_kw), 64770);
  // (c2,kw0) + (c0,kw1): with C = 3 the pair crosses from one tap to the next along (kh, kw, c).
  EXPECT_EQ(two_tap_pair_conv(2, 0, 0, 1, ConvDepthOrder::kh_kw_c), 32767);
  EXPECT_EQ(two_tap_pair_conv(2, 0, 0, 1, ConvDepthOrder::c_kh_kw), 64770);
  // (c1,kw0) + (c1,kw1): one pair along (c, kh, kw) only.
  EXPECT_EQ(two_tap_pair_conv(1, 0, 1, 1, ConvDepthOrder::c_kh_kw), 32767);
  EXPECT_EQ(two_tap_pair_conv(1, 0, 1, 1, ConvDepthOrder::kh_kw_c), 64770);
}

TEST(QConv2d, RejectsInconsistentGroups) {
  QConv2dOp op = grouped_conv(ConvLayout::nchw);
  op.geometry.groups = 3;  // does not divide C = 4
  EXPECT_THROW(qconv2d(op, QGemmPolicy{}), InputError);
}

// qconv2d(op, policy, &only) is the whole op's result at those elements, in both layouts, grouped
// and not, strided, padded and dilated, per tensor and per output channel, with a bias and a
// requantized output: the shortcut cause attribution takes, against the whole op.
TEST(QConv2d, SelectedElementsAreTheWholeOpsElements) {
  std::mt19937_64 rng(20261126);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return lo + static_cast<std::int64_t>(rng() % (hi - lo + 1)); };
  int compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    QConv2dOp op;
    op.layout = trial % 2 ? ConvLayout::nhwc : ConvLayout::nchw;
    op.geometry.groups = trial % 3 == 0 ? 2 : 1;
    const std::int64_t g = op.geometry.groups, N = pick(1, 2), C = g * pick(1, 3), H = pick(3, 7), W = pick(3, 7),
                       OC = g * pick(1, 3), KH = pick(1, 3), KW = pick(1, 3);
    op.geometry.stride_h = pick(1, 2);
    op.geometry.stride_w = pick(1, 2);
    op.geometry.pad_top = op.geometry.pad_left = pick(0, 1);
    op.geometry.pad_bottom = op.geometry.pad_right = pick(0, 1);
    op.geometry.dilation_h = trial % 4 == 3 ? 2 : 1;
    std::vector<std::int64_t> x(static_cast<std::size_t>(N * C * H * W)),
        w(static_cast<std::size_t>(OC * (C / g) * KH * KW));
    for (auto& v : x) v = pick(0, 255);
    for (auto& v : w) v = pick(-128, 127);
    op.input.values = ints(DType::u8, op.layout == ConvLayout::nchw ? Shape{N, C, H, W} : Shape{N, H, W, C}, x);
    op.input.params = per_tensor(0.0625, pick(0, 255));
    op.weight.values = ints(DType::i8, {OC, C / g, KH, KW}, w);
    if (trial % 2) {
      std::vector<double> scales;
      for (std::int64_t o = 0; o < OC; ++o)
        scales.push_back(std::ldexp(1.0 + static_cast<double>(pick(0, 1023)) / 1024, -6));
      op.weight.params = per_axis(0, scales);
    } else {
      op.weight.params = per_tensor(0.015625);
    }
    std::vector<std::int64_t> bias;
    for (std::int64_t o = 0; o < OC; ++o) bias.push_back(pick(-500, 500));
    op.bias = ints(DType::i32, {OC}, bias);
    op.output = trial % 3 == 1
                    ? int32_out()
                    : requant_out(std::ldexp(1.0 + static_cast<double>(pick(0, 1023)) / 1024, -1), pick(-10, 10));
    QLinearResult whole;
    try {
      whole = qconv2d(op, ideal_policy());
    } catch (const InputError&) {
      continue;  // a geometry with no output: nothing to compare
    }
    const std::vector<std::int64_t> only = some_elements(whole.y, rng);
    const QLinearResult part = qconv2d(op, ideal_policy(), &only);
    compared += expect_selected_equal_whole(part, whole, only, trial);
  }
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace qc
