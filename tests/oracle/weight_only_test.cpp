// Weight-only (hybrid) GEMM and the TOSA dot-product check: hand-derived vectors; the statistical
// check is exercised with real summation orders.
#include "oracles/weight_only.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace qc {
namespace {

using namespace qc::test;

TEST(WeightOnly, ExactValueIsAnF32Tie) {
  // Weights q = [2, 4] (i8, [K=2, N=1]), s = 0.5, zp 0: w = [1, 2].
  //   row 0: a = [1, 2^-25]:   1 + 2^-24 = exactly between 1 and 1 + 2^-23 (f32 neighbours) -> RNE 1
  //   row 1: a = [1, 3*2^-25]: 1 + 3*2^-24, between 1 + 2^-23 and 1 + 2^-22 -> RNE 1 + 2^-22 (even)
  WeightOnlyGemmOp op;
  op.a = floats(DType::f32, {2, 2}, {1.0, 0x1p-25, 1.0, 0x3p-25});
  op.b.values = ints(DType::i8, {2, 1}, {2, 4});
  op.b.params = per_tensor(0.5);
  const WeightOnlyResult r = weight_only_gemm(op, WeightOnlyPolicy{});
  EXPECT_EQ(r.exact[0], Rational(1) + Rational(1, 1 << 24));
  EXPECT_EQ(float_values(r.y), (std::vector<double>{1.0, 1.0 + 0x1p-22}));
  EXPECT_EQ(r.labels, (std::vector<Label>{Label::tie, Label::tie}));
  EXPECT_EQ(r.bound[0], 1.0 + 0x1p-24);  // all terms positive: the bound is the value
  // One ulp away from the correctly rounded value (1 + 2^-23, the other neighbour of the tie):
  EXPECT_EQ(ulp_distance(DType::f32, double_to_float_bits(DType::f32, 1.0 + 0x1p-23), r.y.bits(0)), 1);
}

TEST(WeightOnly, BlockedInt4WeightsWithShortLastBlock) {
  // i4 weights [K=3, N=2] = [[1, -2], [3, 4], [-8, 7]], blocked along K by 2 (blocks {0, 1} and {2}),
  // scales [[0.5, 0.25], [2, 0.125]]: w = [[0.5, -0.5], [1.5, 1], [-16, 0.875]].
  //   y0 = 1.5*0.5 - 2*1.5 + 0.25*(-16) = 0.75 - 3 - 4 = -6.25     (bound 0.75 + 3 + 4 = 7.75)
  //   y1 = 1.5*(-0.5) - 2*1 + 0.25*0.875 = -0.75 - 2 + 0.21875 = -2.53125   (bound 2.96875)
  WeightOnlyGemmOp op;
  op.a = floats(DType::f32, {1, 3}, {1.5, -2.0, 0.25});
  op.b.values = ints(DType::i4, {3, 2}, {1, -2, 3, 4, -8, 7});
  op.b.params = blocked(0, 2, {0.5, 0.25, 2.0, 0.125});
  const WeightOnlyResult r = weight_only_gemm(op, WeightOnlyPolicy{});
  EXPECT_EQ(float_values(r.y), (std::vector<double>{-6.25, -2.53125}));
  EXPECT_EQ(r.bound, (std::vector<double>{7.75, 2.96875}));
  EXPECT_EQ(float_values(r.weights), (std::vector<double>{0.5, -0.5, 1.5, 1.0, -16.0, 0.875}));
  // Global-max bound (local_bound = false): max |a| = 2 for every k: 2*(0.5 + 1.5 + 16) = 36, 2*(0.5 + 1 + 0.875)
  // = 4.75.
  EXPECT_EQ(weight_only_bounds(op, WeightOnlyPolicy{}, BoundKind::global_max), (std::vector<double>{36.0, 4.75}));
}

TEST(WeightOnly, WeightsDequantizedIntoAFloatFormat) {
  // q = 3 with s = 0.1f: exactly 3 * 0.100000001490116...; dequantized into f16 (f32 compute: 0.3f, then
  // f16): the f16 neighbours of 0.3 are 1228 * 2^-12 = 0.2998046875 and 1229 * 2^-12 = 0.300048828125;
  // 0.3f = 0.30000001192... is nearer the second. With a = [1]: y = 0.300048828125 (exact in f32).
  WeightOnlyGemmOp op;
  op.a = floats(DType::f32, {1, 1}, {1.0});
  op.b.values = ints(DType::i8, {1, 1}, {3});
  op.b.params = per_tensor(static_cast<double>(0.1f));
  WeightOnlyPolicy p;
  p.weight_format = DType::f16;
  EXPECT_EQ(weight_only_gemm(op, p).y.get_double(0), 0.300048828125);
}

// ---- TOSA DOT_PRODUCT --------------------------------------------------------------------------

struct DotProductCase {
  WeightOnlyGemmOp op;
  WeightOnlyResult oracle;
  std::vector<float> a, w;  // [M, K] and [K, N] as the kernels below see them
  std::int64_t M = 32, K = 64, N = 32;
};

DotProductCase random_case() {
  // 32 x 32 = 1024 dot products (TOSA asks for at least MIN_DOT_PRODUCTS = 1000) of length 64.
  DotProductCase c;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> act(-1.0f, 1.0f);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<double> a;
  for (std::int64_t i = 0; i < c.M * c.K; ++i) a.push_back(act(rng));
  std::vector<std::int64_t> w;
  for (std::int64_t i = 0; i < c.K * c.N; ++i) w.push_back(q(rng));
  std::vector<double> scales;
  for (std::int64_t n = 0; n < c.N; ++n) scales.push_back(std::ldexp(1.0, -7 - static_cast<int>(n % 3)));
  c.op.a = floats(DType::f32, {c.M, c.K}, a);
  c.op.b.values = ints(DType::i8, {c.K, c.N}, w);
  c.op.b.params = per_axis(1, scales);
  c.oracle = weight_only_gemm(c.op, WeightOnlyPolicy{});
  for (const double v : a) c.a.push_back(static_cast<float>(v));
  for (std::int64_t i = 0; i < c.oracle.weights.size(); ++i)
    c.w.push_back(static_cast<float>(c.oracle.weights.get_double(i)));
  return c;
}

// An f32 kernel: sum over k in the given order, one rounding per multiply and per add (no FMA:
// the tests build with -ffp-contract=off).
template <class Order>
Tensor f32_kernel(const DotProductCase& c, Order order) {
  Tensor y(DType::f32, {c.M, c.N});
  for (std::int64_t m = 0; m < c.M; ++m)
    for (std::int64_t n = 0; n < c.N; ++n) y.set_double(m * c.N + n, order(c, m, n));
  return y;
}

float reversed_sum(const DotProductCase& c, std::int64_t m, std::int64_t n) {
  float s = 0;
  for (std::int64_t k = c.K - 1; k >= 0; --k)
    s += c.a[static_cast<std::size_t>(m * c.K + k)] * c.w[static_cast<std::size_t>(k * c.N + n)];
  return s;
}

float blocked_sum(const DotProductCase& c, std::int64_t m, std::int64_t n) {  // 8 partial sums, then added
  float part[8] = {};
  for (std::int64_t k = 0; k < c.K; ++k)
    part[k % 8] += c.a[static_cast<std::size_t>(m * c.K + k)] * c.w[static_cast<std::size_t>(k * c.N + n)];
  float s = 0;
  for (const float p : part) s += p;
  return s;
}

float dropped_last_product(const DotProductCase& c, std::int64_t m, std::int64_t n) {
  float s = 0;
  for (std::int64_t k = 0; k + 1 < c.K; ++k)
    s += c.a[static_cast<std::size_t>(m * c.K + k)] * c.w[static_cast<std::size_t>(k * c.N + n)];
  return s;
}

DotProductCheck ksb_check(const DotProductCase& c) {
  DotProductCheck check;
  check.revision = TosaDotProductRevision::ksb;
  check.kernel_size_bound = tosa_kernel_size_bound(c.oracle.kernel_size, c.oracle.nonzero_bias);  // 64, no bias
  check.error_format = DType::f32;
  return check;
}

TEST(WeightOnly, DotProductCheckAcceptsReorderedF32Sums) {
  const DotProductCase c = random_case();
  for (const auto& y : {f32_kernel(c, reversed_sum), f32_kernel(c, blocked_sum)}) {
    const DotProductVerdict v = check_dot_product(c.oracle.exact, c.oracle.bound, y, ksb_check(c));
    EXPECT_TRUE(v.pass) << v.reason;
    EXPECT_EQ(v.abs_limit, 128);                          // 2 * ksb
    EXPECT_DOUBLE_EQ(v.variance_limit, 1.6 * 64 * 1024);  // 4 * 0.4 * ksb * T
    // A correct f32 sum errs by at most (K - 1) f32 roundings of the bound: |out_err| <= 2 * 63 << 128.
    for (const double e : v.errors) EXPECT_LE(std::abs(e), 126.0);
  }
  // The older revision (abs_bound = KS, variance 0.4 * KS * T) accepts them too.
  DotProductCheck ks = ksb_check(c);
  ks.revision = TosaDotProductRevision::ks;
  EXPECT_TRUE(check_dot_product(c.oracle.exact, c.oracle.bound, f32_kernel(c, reversed_sum), ks).pass);
}

TEST(WeightOnly, DotProductCheckRejectsAWrongSum) {
  // Dropping a product errs by |a_63 * w_63|, a sizeable fraction of the bound: far beyond 2 * ksb
  // units of bound * 2^-24.
  const DotProductCase c = random_case();
  const DotProductVerdict v =
      check_dot_product(c.oracle.exact, c.oracle.bound, f32_kernel(c, dropped_last_product), ksb_check(c));
  EXPECT_FALSE(v.pass);
  EXPECT_GE(v.first_failure, 0);
  EXPECT_FALSE(v.reason.empty());
}

TEST(WeightOnly, DotProductCheckRejectsHalfPrecisionAccumulation) {
  // Rounding every partial sum to f16 (10 fraction bits instead of 23) multiplies the errors by ~2^13.
  const DotProductCase c = random_case();
  Tensor y(DType::f32, {c.M, c.N});
  for (std::int64_t m = 0; m < c.M; ++m)
    for (std::int64_t n = 0; n < c.N; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < c.K; ++k)
        s = float_bits_to_double(
            DType::f16,
            double_to_float_bits(DType::f16, s + static_cast<double>(c.a[static_cast<std::size_t>(m * c.K + k)]) *
                                                     c.w[static_cast<std::size_t>(k * c.N + n)]));
      y.set_double(m * c.N + n, s);
    }
  EXPECT_FALSE(check_dot_product(c.oracle.exact, c.oracle.bound, y, ksb_check(c)).pass);
}

TEST(WeightOnly, DotProductCheckZeroBoundNeedsZero) {
  // A zero bound (all products zero) requires reference and implementation to be exactly 0.
  const std::vector<Rational> ref{0, Rational(1, 2)};
  const std::vector<double> bound{0.0, 1.0};
  DotProductCheck check;
  check.kernel_size_bound = 1;
  EXPECT_TRUE(check_dot_product(ref, bound, floats(DType::f32, {2}, {0.0, 0.5}), check).pass);
  const DotProductVerdict v = check_dot_product(ref, bound, floats(DType::f32, {2}, {0x1p-149, 0.5}), check);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_failure, 0);
}

TEST(WeightOnly, DotProductErrorUnits) {
  // One element, ref = 1, bound = 1, imp = 1 + 2^-23 (one f32 ulp): out_err = 2^-23 / (1 * 2^-24) = 2.
  const std::vector<Rational> ref{1};
  const std::vector<double> bound{1.0};
  DotProductCheck check;
  check.kernel_size_bound = 1;  // abs limit 2 (ksb): exactly at the limit passes; variance 1.6 * 1 < 4 fails
  const DotProductVerdict v = check_dot_product(ref, bound, floats(DType::f32, {1}, {1.0 + 0x1p-23}), check);
  EXPECT_EQ(v.errors[0], 2.0);
  EXPECT_EQ(v.first_failure, -1);  // not an element failure...
  EXPECT_FALSE(v.pass);            // ...but the variance 4 exceeds 1.6 * ksb * T = 1.6
}

}  // namespace
}  // namespace qc
