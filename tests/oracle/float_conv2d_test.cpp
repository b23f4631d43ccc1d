// float_conv2d_exact: hand-derived values of the exact float convolution rounded once.
#include "oracles/float_conv2d.hpp"
#include "oracles/format.hpp"
#include "oracles/qlinear.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

// The convolution summed here, tap by tap in rationals, straight from the definition: every output,
// its exact value, its label and its bound must be the oracle's, whichever path the oracle takes
// (machine integers for dyadic operands whose sums fit, rationals otherwise).
void expect_definition(const Conv2dShape& cs, const std::vector<Rational>& x, const std::vector<Rational>& w,
                       const std::vector<Rational>& bias, DType out) {
  const FloatConv2dResult r = float_conv2d_exact(cs, x, w, bias, out);
  const std::int64_t K = cs.depth();
  for (std::int64_t n = 0; n < cs.batch; ++n)
    for (std::int64_t oc = 0; oc < cs.out_channels; ++oc)
      for (std::int64_t oh = 0; oh < cs.out_height; ++oh)
        for (std::int64_t ow = 0; ow < cs.out_width; ++ow) {
          Rational v = bias.empty() ? Rational(0) : bias[static_cast<std::size_t>(oc)];
          Rational b = abs(v);
          for (std::int64_t k = 0; k < K; ++k) {
            const std::int64_t src = cs.tap_source(n, oc / cs.group_out_channels, oh, ow, k);
            if (src < 0) continue;
            const Rational p = x[static_cast<std::size_t>(src)] * w[static_cast<std::size_t>(oc * K + k)];
            v += p;
            b += abs(p);
          }
          const std::int64_t o = cs.output_index(n, oc, oh, ow);
          const auto i = static_cast<std::size_t>(o);
          ASSERT_EQ(r.exact[i], v) << "output " << o;
          ASSERT_EQ(r.y.bits(o), encode_float(out, ExactFloat::finite(v), RoundingMode::rne, Overflow::ieee)) << o;
          // Past the largest finite value the element is saturated (the rounded value is infinite).
          const bool finite = decode_float(out, r.y.bits(o)).is_finite();
          ASSERT_EQ(r.labels[i], finite ? float_grid_label(v, out) : Label::saturated) << o;
          ASSERT_EQ(r.bound[i], round_to_format(DType::f64, b).value.convert_to<double>()) << o;
        }
}

// f32 values of wide exponent range (weights per channel 2^-30 .. 2^10, inputs with f32 rounding
// residues), a grouped strided dilated padded convolution with a bias finer than every product.
TEST(FloatConv2d, IntegerSumsAreTheDefinitionsValues) {
  Conv2dGeometry g;
  g.stride_h = 2;
  g.dilation_w = 2;
  g.pad_top = g.pad_left = 1;
  g.pad_bottom = g.pad_right = 2;
  g.groups = 2;
  const Conv2dShape cs = resolve_conv2d({2, 4, 7, 6}, ConvLayout::nchw, {6, 2, 3, 2}, g);
  std::uint64_t state = 12345;
  const auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(static_cast<std::int32_t>(state >> 33)) / 1048576.0;
  };
  std::vector<Rational> x, w, bias;
  for (int i = 0; i < 2 * 4 * 7 * 6; ++i) x.emplace_back(static_cast<float>(next() * 0.37));
  for (int oc = 0; oc < 6; ++oc)
    for (int k = 0; k < 2 * 3 * 2; ++k) w.emplace_back(static_cast<float>(next() * std::ldexp(1.0, oc * 8 - 30)));
  for (int oc = 0; oc < 6; ++oc) bias.emplace_back(static_cast<float>(next() * std::ldexp(1.0, -60)));
  expect_definition(cs, x, w, bias, DType::f32);
  expect_definition(cs, x, w, {}, DType::f16);
  // Exact cancellation: a zero sum; and a non-dyadic weight (one third), which only rationals hold.
  w[0] = Rational(1, 3);
  expect_definition(cs, x, w, bias, DType::f32);
}

}  // namespace float_conv2d_test
}  // namespace qc
