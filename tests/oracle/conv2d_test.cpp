// conv2d (float input; float or dequantized integer weights): hand-derived values.
#include "oracles/conv2d.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace conv2d_test {

// Named one by one: a using-directive would meet other test files' helpers of the same names (unity build).
using test::float_values;
using test::floats;
using test::ints;
using test::per_axis;
using test::per_tensor;

TEST(Conv2d, WeightOnlyPerChannelNhwc) {
  // NHWC input [1, 2, 2, 2]: pixels (0,0) = [1, 2], (0,1) = [3, 4], (1,0) = [5, 6], (1,1) = [7, 8].
  // i8 weights [2, 2, 1, 1] = [[1, -1], [2, 3]], per output channel: s = [0.5, 0.25], zp = [0, 1]:
  //   w0 = [1 * 0.5, -1 * 0.5] = [0.5, -0.5]; w1 = [(2 - 1) * 0.25, (3 - 1) * 0.25] = [0.25, 0.5].
  // Pixel [a, b]: oc0 = 0.5a - 0.5b = -0.5 for every pixel; oc1 = 0.25a + 0.5b = 1.25, 2.75, 4.25, 5.75.
  Conv2dOp op;
  op.input = floats(DType::f32, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  op.layout = ConvLayout::nhwc;
  op.weight.values = ints(DType::i8, {2, 2, 1, 1}, {1, -1, 2, 3});
  op.weight.params = per_axis(0, {0.5, 0.25}, {0, 1});
  const FloatConv2dResult r = conv2d(op, WeightOnlyPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(float_values(r.y), (std::vector<double>{-0.5, 1.25, -0.5, 2.75, -0.5, 4.25, -0.5, 5.75}));
}

TEST(Conv2d, WeightsDequantizedIntoF16WhenThePolicySaysSo) {
  // q = 1, s = f32(0.1) = 0.100000001490116119384765625. Exactly: w = s. Into f16 first (a kernel that
  // dequantizes to f16): f16's spacing below 0.125 is 2^-14, and 0.1 / 2^-14 = 1638.4..., so w =
  // 1638 * 2^-14 = 0.0999755859375. A 1x1 conv of x = 1 into f64 returns w itself.
  Conv2dOp op;
  op.input = floats(DType::f32, {1, 1, 1, 1}, {1.0});
  op.weight.values = ints(DType::i8, {1, 1, 1, 1}, {1});
  op.weight.params = per_tensor(static_cast<double>(0.1f));  // the f32 scale
  op.out = DType::f64;
  EXPECT_EQ(float_values(conv2d(op, WeightOnlyPolicy{}).y)[0], 0.100000001490116119384765625);
  WeightOnlyPolicy f16;
  f16.weight_format = DType::f16;
  EXPECT_EQ(float_values(conv2d(op, f16).y)[0], 0.0999755859375);
}

TEST(Conv2d, FloatWeightsDepthwise) {
  // groups = 2 = channels: channel 0 (x = 3) times w = 2 -> 6; channel 1 (x = 5) times w = -1 -> -5.
  Conv2dOp op;
  op.input = floats(DType::f32, {1, 2, 1, 1}, {3, 5});
  op.weight.values = floats(DType::f32, {2, 1, 1, 1}, {2, -1});
  op.geometry.groups = 2;
  EXPECT_EQ(float_values(conv2d(op, WeightOnlyPolicy{}).y), (std::vector<double>{6, -5}));
}

TEST(Conv2d, BadInputsAreInputErrors) {
  Conv2dOp op;
  op.input = ints(DType::i8, {1, 1, 1, 1}, {1});
  op.weight.values = floats(DType::f32, {1, 1, 1, 1}, {1});
  EXPECT_THROW((void)conv2d(op, WeightOnlyPolicy{}), InputError);  // an integer input
  op.input = floats(DType::f32, {1, 2, 1, 1}, {1, 2});
  op.weight.values = ints(DType::i8, {1, 2, 1, 1}, {1, 2});
  op.weight.params = per_axis(1, {0.5, 0.25});  // along the input channels: not a per-output-channel scale
  EXPECT_THROW((void)conv2d(op, WeightOnlyPolicy{}), InputError);
  op.weight.params = per_tensor(0.5);
  op.bias = floats(DType::f32, {2}, {1, 2});  // one output channel
  EXPECT_THROW((void)conv2d(op, WeightOnlyPolicy{}), InputError);
}

}  // namespace conv2d_test
}  // namespace qc
