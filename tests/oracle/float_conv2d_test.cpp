// float_conv2d_exact: hand-derived values of the exact float convolution rounded once.
#include "oracles/float_conv2d.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace float_conv2d_test {

std::vector<Rational> reals(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// x [1, 1, 3, 3] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]; w [1, 1, 3, 3] = [[1, 0, -1], [2, 1, 0], [0.5, 0, 0.25]];
// bias 0.5; padding 1 on every side, stride 1: a 3x3 output.
TEST(FloatConv2d, ThreeByThreeWithPaddingBorderAndCentre) {
  Conv2dGeometry g;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  const Conv2dShape cs = resolve_conv2d({1, 1, 3, 3}, ConvLayout::nchw, {1, 1, 3, 3}, g);
  const FloatConv2dResult r = float_conv2d_exact(cs, reals({1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                                 reals({1, 0, -1, 2, 1, 0, 0.5, 0, 0.25}), reals({0.5}), DType::f32);
  ASSERT_EQ(r.y.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(r.kernel_size, 9);
  // Output (0, 0) reads x[kh - 1][kw - 1]: only taps kh, kw >= 1 are inside.
  //   x[0][0] w[1][1] + x[0][1] w[1][2] + x[1][0] w[2][1] + x[1][1] w[2][2] = 1*1 + 2*0 + 4*0 + 5*0.25 = 2.25;
  //   + bias 0.5 = 2.75.
  EXPECT_EQ(r.y.get_double(0), 2.75);
  EXPECT_EQ(r.exact[0], Rational(11, 4));
  // Output (1, 1), every tap inside: 1*1 + 2*0 + 3*(-1) + 4*2 + 5*1 + 6*0 + 7*0.5 + 8*0 + 9*0.25 = 16.75; + 0.5.
  EXPECT_EQ(r.y.get_double(4), 17.25);
  // Output (2, 2) reads x[kh + 1][kw + 1]: taps kh, kw <= 1: 5*1 + 6*0 + 8*2 + 9*1 = 30; + 0.5 = 30.5.
  EXPECT_EQ(r.y.get_double(8), 30.5);
  // Its bound Σ|x||w| + |bias| is the same sum (all terms non-negative).
  EXPECT_EQ(r.bound[8], 30.5);
  EXPECT_TRUE(r.nonzero_bias);
}

TEST(FloatConv2d, RoundsOnceIntoTheOutputFormat) {
  // 2049 = 2048 + 1 lies half-way between the f16 neighbours 2048 and 2050 (spacing 2 in [2048, 4096)):
  // ties to even keeps 2048 (mantissa even), and the element is a tie.
  const Conv2dShape cs = resolve_conv2d({1, 1, 1, 1}, ConvLayout::nchw, {1, 1, 1, 1}, Conv2dGeometry{});
  const FloatConv2dResult r = float_conv2d_exact(cs, reals({2049}), reals({1}), {}, DType::f16);
  EXPECT_EQ(r.y.get_double(0), 2048.0);
  EXPECT_EQ(r.exact[0], Rational(2049));
  EXPECT_EQ(r.labels[0], Label::tie);
}

TEST(FloatConv2d, SizesThatDoNotMatchTheShapeAreAnInputError) {
  const Conv2dShape cs = resolve_conv2d({1, 1, 2, 2}, ConvLayout::nchw, {1, 1, 1, 1}, Conv2dGeometry{});
  EXPECT_THROW((void)float_conv2d_exact(cs, reals({1, 2, 3}), reals({1}), {}, DType::f32), InputError);
}

}  // namespace float_conv2d_test
}  // namespace qc
