// The x86 backend's quantize, dequantize and requantize kernels (vnni.hpp "Elementwise") on every
// ISA this CPU runs, against the formulas written out here in plain float arithmetic: MLAS's
// quantize (fl(x / s), clamp with vmaxps/vminps semantics, round to nearest even, + zp), the
// dequantize fl(float(q - zp) * s) and XNNPACK's fp32 requantize. Lengths that are not multiples of
// the vector width exercise the tails; long inputs run on every worker thread.
#include "backends/vnni/vnni.hpp"
#include "qconform/parallel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace qc::vnni {
namespace {

// vmaxps(v, lo): lo where v is NaN; then vminps with hi.
float clamp_ps(float v, float lo, float hi) {
  const float m = std::isnan(v) ? lo : (v > lo ? v : lo);
  return m < hi ? m : hi;
}
std::int32_t rne(float v) { return static_cast<std::int32_t>(std::nearbyint(v)); }

std::vector<float> quantize_inputs(std::size_t n, float s) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-300.0f, 300.0f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = u(rng) * s;
  // Exact ties of x / s (when exact in f32), saturation, specials.
  const float special[] = {0.5f * s, -0.5f * s, 2.5f * s,   -2.5f * s, 127.5f * s,    -128.5f * s,
                           1e30f,    -1e30f,    INFINITY,   -INFINITY, std::nanf(""), 0.0f,
                           -0.0f,    1e-40f,    255.5f * s, 126.5f * s};
  for (std::size_t i = 0; i < std::size(special) && i < n; ++i) x[i * 3 % n] = special[i];
  return x;
}

class Elementwise : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (auto missing = missing_feature(GetParam())) GTEST_SKIP() << "CPU lacks " << *missing;
  }
};

TEST_P(Elementwise, QuantizeIsMlasArithmetic) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{17}, std::size_t{1003}})
    for (const float s : {0.1f, 0.5f, 3.0f})
      for (const std::int32_t zp : {0, -3, 128}) {
        const std::int32_t qmin = zp == 128 ? 0 : -128, qmax = zp == 128 ? 255 : 127;
        const ElementwiseParams p{s, zp, static_cast<float>(qmin - zp), static_cast<float>(qmax - zp)};
        const std::vector<float> x = quantize_inputs(n, s);
        std::vector<std::int32_t> q(n);
        quantize(GetParam(), x.data(), n, p, q.data());
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(q[i], rne(clamp_ps(x[i] / s, p.lo, p.hi)) + zp) << "x " << x[i] << " s " << s << " zp " << zp;
      }
}

TEST_P(Elementwise, NanBecomesQminAndTiesGoToEven) {
  const ElementwiseParams p{1.0f, 0, -128.0f, 127.0f};
  const float x[] = {std::nanf(""), 0.5f, 1.5f, 2.5f, -2.5f, 127.5f, -128.5f, 1e9f};
  std::int32_t q[8];
  quantize(GetParam(), x, 8, p, q);
  const std::int32_t want[] = {-128, 0, 2, 2, -2, 127, -128, 127};  // by hand
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want[i]) << "x " << x[i];
}

TEST_P(Elementwise, DequantizeIsOneF32Product) {
  std::vector<std::int32_t> q;
  for (std::int32_t v = -300; v <= 300; ++v) q.push_back(v);
  q.push_back((1 << 24) + 1);  // float(q - zp) rounds past 2^24, as cvtdq2ps does
  q.push_back(std::numeric_limits<std::int32_t>::max());
  for (const float s : {0.1f, 0.3f, 3.0f})
    for (const std::int32_t zp : {0, 5}) {
      const ElementwiseParams p{s, zp};
      std::vector<float> y(q.size());
      dequantize(GetParam(), q.data(), q.size(), p, y.data());
      for (std::size_t i = 0; i < q.size(); ++i) {
        const float want = static_cast<float>(q[i] - zp) * s;
        ASSERT_EQ(y[i], want) << "q " << q[i];
      }
    }
}

TEST_P(Elementwise, RequantizeIsXnnpackFp32) {
  std::vector<std::int32_t> acc;
  for (std::int32_t v = -2000; v <= 2000; v += 3) acc.push_back(v);
  for (const std::int32_t v : {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
                               (1 << 24) + 3, -(1 << 24) - 3})
    acc.push_back(v);
  // Multipliers fl(fl(s_in * s_w) / s_out).
  for (const float m : {0.25f * 0.5f / 0.5f, 0.02f * 0.013f / 0.11f, 1.0f / 3.0f})
    for (const std::int32_t zp : {0, 3}) {
      const ElementwiseParams p{m, zp, static_cast<float>(-128 - zp), static_cast<float>(127 - zp)};
      std::vector<std::int32_t> q(acc.size());
      requantize(GetParam(), acc.data(), acc.size(), p, q.data());
      for (std::size_t i = 0; i < acc.size(); ++i)
        ASSERT_EQ(q[i], rne(clamp_ps(static_cast<float>(acc[i]) * m, p.lo, p.hi)) + zp) << "acc " << acc[i];
    }
}

TEST_P(Elementwise, TheThreadCountDoesNotChangeTheResult) {
  const std::size_t n = (std::size_t{1} << 18) + 5;  // several parallel ranges
  const ElementwiseParams p{0.1f, 3, -131.0f, 124.0f};
  const std::vector<float> x = quantize_inputs(n, 0.1f);
  std::vector<std::int32_t> one(n), many(n);
  const int before = worker_threads();
  set_worker_threads(1);
  quantize(GetParam(), x.data(), n, p, one.data());
  set_worker_threads(4);
  quantize(GetParam(), x.data(), n, p, many.data());
  set_worker_threads(before);
  EXPECT_EQ(one, many);
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, Elementwise, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return std::string(name(info.param)); });

}  // namespace
}  // namespace qc::vnni
