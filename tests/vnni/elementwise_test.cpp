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

// qadd (vnni.hpp QAddParams, MLAS qladd_avx2.cpp). ratio_a = 0.5, ratio_b = 0.25 and the folded
// constant 3 (zC 3 - (0.5·1 + 0.25·(-2)) = 3): t = fma(a, 0.5, fma(b, 0.25, 3)), every step exact,
// then ties to even and the clamp to u8. 19 elements: two 8-lane blocks and a tail of 3.
TEST_P(Elementwise, QAddIsMlasAvx2Arithmetic) {
  const std::vector<std::int32_t> a{5, 127, -128, 1, 3, 0, -7, 100, 2, 11, -1, 9, 4, 6, 8, 10, 12, 1, 127};
  const std::vector<std::int32_t> b{6, 127, -128, 0, 0, 2, -2, 1 << 30, -(1 << 30), 1, 1, 3, 2, 2, 2, 2, 2, 2, 127};
  // 2.5 + 1.5 + 3 = 7; 63.5 + 31.75 + 3 = 98.25 -> 98; -64 - 32 + 3 = -93 -> 0; 3.5 -> 4 (tie);
  // 4.5 -> 4 (tie); 0 + 0.5 + 3 = 3.5 -> 4; -3.5 - 0.5 + 3 = -1 -> 0; 2^28 + ... -> 255; -2^28 + 4 -> 0;
  // 5.5 + 0.25 + 3 = 8.75 -> 9; -0.5 + 0.25 + 3 = 2.75 -> 3; 4.5 + 0.75 + 3 = 8.25 -> 8; 2 + 0.5 + 3 = 5.5 -> 6;
  // 3 + 3.5 = 6.5 -> 6; 4 + 3.5 = 7.5 -> 8; 5 + 3.5 = 8.5 -> 8; 6 + 3.5 = 9.5 -> 10; 0.5 + 3.5 = 4; 98.25 -> 98.
  const std::vector<std::int32_t> expected{7, 98, 0, 4, 4, 4, 0, 255, 0, 9, 3, 8, 6, 6, 8, 8, 10, 4, 98};
  QAddParams p;
  p.ratio_a = 0.5f;
  p.ratio_b = 0.25f;
  p.fixed = 3.0f;
  p.lo = 0;
  p.hi = 255;
  std::vector<std::int32_t> out(a.size());
  qadd(GetParam(), a.data(), b.data(), a.size(), p, out.data());
  EXPECT_EQ(out, expected);
}

// The fused multiply-adds: ratio_a = fl(1/6) = 11184811·2^-26, ratio_b = 1, the folded constant
// 11097430·2^-19 (tests/oracle/qadd_test.cpp works them from qladd_avx2.cpp with zA = -127): a = -124
// gives fma(-124, ratio_a, constant) = 0.5 + 11·2^-24 -> 1, where a separate product would round
// -124·ratio_a to -10835286·2^-19 and the sum to 0.5 exactly -> 0. A one-element B (b_scalar) is
// folded first: constant + fl(6·1) = 6 + 11097430·2^-19 -> the same fma with a = -124 gives 6.5 + 11·2^-24 -> 7.
TEST_P(Elementwise, QAddFusesItsMultiplyAdds) {
  QAddParams p;
  p.ratio_a = 1.0f / 6.0f;
  p.ratio_b = 1.0f;
  p.fixed = std::ldexp(11097430.0f, -19);
  p.lo = -128;
  p.hi = 127;
  const std::vector<std::int32_t> a(11, -124), b(11, 0);
  std::vector<std::int32_t> out(a.size());
  qadd(GetParam(), a.data(), b.data(), a.size(), p, out.data());
  EXPECT_EQ(out, std::vector<std::int32_t>(11, 1));
  p.b_scalar = true;
  const std::int32_t six = 6;
  qadd(GetParam(), a.data(), &six, a.size(), p, out.data());
  EXPECT_EQ(out, std::vector<std::int32_t>(11, 7));
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
