// The x86 backend's float convolution (vnni.hpp float_conv2d: im2col feeding float_gemm) on every
// ISA this CPU runs: small cases worked by hand (padding, stride, groups, dilation, NCHW and NHWC,
// bias), the summation order the header states (an FMA per tap, taps ascending), and larger random
// convolutions against the oracle's exact convolution (oracles/float_conv2d.hpp): bit for bit where
// every partial sum is exact in f32, within the TOSA dot-product bound where it is not.
#include "oracles/float_conv2d.hpp"
#include "backends/vnni/vnni.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace qc::vnni {
namespace float_conv2d_test {

class FloatConv2d : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (auto missing = missing_feature(GetParam())) GTEST_SKIP() << "CPU lacks " << *missing;
  }
  std::vector<float> run(const FloatConv2dParams& p, const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>& bias = {}) {
    const auto [oh, ow] = float_conv2d_output_size(p);
    std::vector<float> y(static_cast<std::size_t>(p.batch * p.out_channels * oh * ow), -1.0f);
    float_conv2d(GetParam(), p, x.data(), w.data(), bias.empty() ? nullptr : bias.data(), y.data());
    return y;
  }
};

// Input 1x1x3x3 = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], weights 1x1x2x2 = [[1, 2], [3, 4]].
TEST_P(FloatConv2d, HandWorkedValidAndPaddedStrided) {
  FloatConv2dParams p;
  p.channels = 1;
  p.height = p.width = 3;
  p.out_channels = 1;
  p.kernel_h = p.kernel_w = 2;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 2, 3, 4};
  // No padding, stride 1: 2x2 outputs, e.g. (0, 0) = 1·1 + 2·2 + 4·3 + 5·4 = 37.
  EXPECT_EQ(run(p, x, w), (std::vector<float>{37, 47, 67, 77}));
  // Padding 1 on every side, stride 2: OH = (3 + 2 - 1 - 1) / 2 + 1 = 2. Output (0, 0) reads rows
  // and columns -1..0, so only tap (1, 1): 1·4 = 4; (0, 1): 2·3 + 3·4 = 18; (1, 0): 4·2 + 7·4 = 36;
  // (1, 1): 5·1 + 6·2 + 8·3 + 9·4 = 77. Bias 0.5 on top.
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  p.stride_h = p.stride_w = 2;
  EXPECT_EQ(run(p, x, w, {0.5f}), (std::vector<float>{4.5f, 18.5f, 36.5f, 77.5f}));
}

// NHWC [1, 1, 3, 2]: pixels (c0, c1) = (1, 10), (2, 20), (3, 30). Two groups of one channel, a
// 1x2 kernel dilated by 2 along W (taps at w and w + 2): OW = (3 - 2·1 - 1) / 1 + 1 = 1.
// oc 0 (channel 0, weights [1, -1]): 1 - 3 = -2, + bias 1 = -1.
// oc 1 (channel 1, weights [0.5, 0.25]): 10·0.5 + 30·0.25 = 12.5, + bias -0.5 = 12.
TEST_P(FloatConv2d, HandWorkedGroupedDilatedNhwc) {
  FloatConv2dParams p;
  p.nchw = false;
  p.channels = 2;
  p.height = 1;
  p.width = 3;
  p.out_channels = 2;
  p.kernel_h = 1;
  p.kernel_w = 2;
  p.dilation_w = 2;
  p.groups = 2;
  EXPECT_EQ(run(p, {1, 10, 2, 20, 3, 30}, {1, -1, 0.5f, 0.25f}, {1, -0.5f}), (std::vector<float>{-1, 12}));
  // The same in NCHW: channel 0 is [1, 2, 3], channel 1 is [10, 20, 30]; one output per channel.
  p.nchw = true;
  EXPECT_EQ(run(p, {1, 2, 3, 10, 20, 30}, {1, -1, 0.5f, 0.25f}, {1, -0.5f}), (std::vector<float>{-1, 12}));
}

// The order the header states: y = fma(x1, w1, fma(x0, w0, +0)). With x = [1 + 2^-12, -1] and
// w = [1 + 2^-12, 1] the exact sum is (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24. The first FMA rounds
// 1 + 2^-11 + 2^-24 to f32, where 2^-24 is half an ulp of 1 (2^-23): a tie, to the even
// 1 + 2^-11; the second adds -1 exactly: 2^-11. (Taps in the other order would give the exact
// 2^-11 + 2^-24, which f32 holds.)
TEST_P(FloatConv2d, TapsAscendingOneFmaEach) {
  FloatConv2dParams p;
  p.channels = 1;
  p.height = 1;
  p.width = 2;
  p.out_channels = 1;
  p.kernel_h = 1;
  p.kernel_w = 2;
  const float e = std::ldexp(1.0f, -12);
  EXPECT_EQ(run(p, {1 + e, -1}, {1 + e, 1}), (std::vector<float>{std::ldexp(1.0f, -11)}));
}

TEST(FloatConv2dGeometry, ImpossibleGeometryIsAnInputErrorNamingTheField) {
  FloatConv2dParams p;
  p.channels = 3;
  p.height = p.width = 4;
  p.out_channels = 2;
  p.groups = 2;
  try {
    (void)float_conv2d_output_size(p);
    FAIL() << "groups = 2 with 3 channels was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("groups = 2 must divide channels (3)"), std::string::npos) << e.what();
  }
  p.groups = 1;
  p.kernel_h = 6;
  EXPECT_THROW((void)float_conv2d_output_size(p), InputError);
}

struct RandomConv {
  FloatConv2dParams p;
  std::vector<float> x, w, bias;
};

// Values k·2^-e with small integers k: with `integers` every product is an integer times a fixed
// power of two and every partial sum stays far below 2^24 of those units, so any order is exact.
RandomConv random_conv(std::uint32_t seed, bool nchw, bool integers) {
  std::mt19937 rng(seed);
  RandomConv r;
  FloatConv2dParams& p = r.p;
  p.nchw = nchw;
  p.batch = 2;
  p.channels = 6;
  p.height = 9;
  p.width = 11;
  p.out_channels = 4;
  p.kernel_h = 3;
  p.kernel_w = 2;
  p.stride_h = 2;
  p.pad_top = 1;
  p.pad_left = 2;
  p.pad_right = 1;
  p.dilation_w = 2;
  p.groups = 2;
  std::uniform_int_distribution<int> small(-64, 64);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  const auto value = [&](float unit) { return integers ? static_cast<float>(small(rng)) * unit : real(rng); };
  r.x.resize(static_cast<std::size_t>(p.batch * p.channels * p.height * p.width));
  for (float& v : r.x) v = value(0.0625f);
  r.w.resize(static_cast<std::size_t>(p.out_channels * (p.channels / p.groups) * p.kernel_h * p.kernel_w));
  for (float& v : r.w) v = value(0.03125f);
  for (std::int64_t oc = 0; oc < p.out_channels; ++oc) r.bias.push_back(value(0.5f));
  return r;
}

// The oracle's exact convolution of the same f32 values (its own tap indexing, Conv2dShape).
FloatConv2dResult exact_conv(const RandomConv& r) {
  const FloatConv2dParams& p = r.p;
  Conv2dGeometry g;
  g.stride_h = p.stride_h;
  g.stride_w = p.stride_w;
  g.pad_top = p.pad_top;
  g.pad_left = p.pad_left;
  g.pad_bottom = p.pad_bottom;
  g.pad_right = p.pad_right;
  g.dilation_h = p.dilation_h;
  g.dilation_w = p.dilation_w;
  g.groups = p.groups;
  const Shape in =
      p.nchw ? Shape{p.batch, p.channels, p.height, p.width} : Shape{p.batch, p.height, p.width, p.channels};
  const Conv2dShape cs = resolve_conv2d(in, p.nchw ? ConvLayout::nchw : ConvLayout::nhwc,
                                        {p.out_channels, p.channels / p.groups, p.kernel_h, p.kernel_w}, g);
  const auto rationals = [](const std::vector<float>& v) {
    std::vector<Rational> out;
    for (float f : v) out.emplace_back(static_cast<double>(f));
    return out;
  };
  return float_conv2d_exact(cs, rationals(r.x), rationals(r.w), rationals(r.bias), DType::f32);
}

TEST_P(FloatConv2d, ExactWhereEveryPartialSumIsExact) {
  // Products are integers times 2^-9 below 64·64 = 2^12 of them; 3·3·2 = 18 taps and a bias of at
  // most 32 = 2^14 units stay below 2^24 units: every f32 step is exact, in any order.
  for (const bool nchw : {true, false}) {
    const RandomConv r = random_conv(11, nchw, true);
    const FloatConv2dResult ref = exact_conv(r);
    const std::vector<float> y = run(r.p, r.x, r.w, r.bias);
    ASSERT_EQ(static_cast<std::int64_t>(y.size()), ref.y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], static_cast<float>(ref.y.get_double(static_cast<std::int64_t>(i))))
          << (nchw ? "nchw" : "nhwc") << " element " << i;
  }
}

TEST_P(FloatConv2d, WithinTheTosaDotProductBoundOnRealValues) {
  for (const bool nchw : {true, false}) {
    const RandomConv r = random_conv(12, nchw, false);
    const FloatConv2dResult ref = exact_conv(r);
    const std::vector<float> y = run(r.p, r.x, r.w, r.bias);
    Tensor got(DType::f32, ref.y.shape());
    for (std::int64_t i = 0; i < got.size(); ++i) got.set_double(i, y[static_cast<std::size_t>(i)]);
    const DotProductCheck check{TosaDotProductRevision::ksb, tosa_kernel_size_bound(ref.kernel_size, true), -1,
                                DType::f32};
    const DotProductVerdict v = check_dot_product(ref.exact, ref.bound, got, check);
    EXPECT_TRUE(v.pass) << (nchw ? "nchw" : "nhwc") << ": " << v.reason;
  }
}

// The im2col rows and the GEMM rows split across the worker threads; one thread gives the same bits.
TEST_P(FloatConv2d, SameBitsOnOneThread) {
  const RandomConv r = random_conv(13, true, false);
  const std::vector<float> many = run(r.p, r.x, r.w, r.bias);
  set_worker_threads(1);
  const std::vector<float> one = run(r.p, r.x, r.w, r.bias);
  set_worker_threads(0);
  EXPECT_EQ(many, one);
}

INSTANTIATE_TEST_SUITE_P(Isas, FloatConv2d, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return std::string(name(info.param)); });

}  // namespace float_conv2d_test
}  // namespace qc::vnni
