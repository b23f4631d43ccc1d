// The oracle on several threads computes what it computes on one: ranges cover the work in order,
// a range's exception reaches the caller, and qgemm's accumulation and output stages (split by rows
// and by elements) give the same values and labels for any thread count.
#include "qconform/parallel.hpp"
#include "oracles/qgemm.hpp"
#include "qconform/error.hpp"
#include "tests/oracle/qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <random>

namespace qc {
namespace {

using namespace test;

// Restores the thread count a test changed.
struct ThreadsFor {
  explicit ThreadsFor(int n) { set_worker_threads(n); }
  ~ThreadsFor() { set_worker_threads(0); }
};

TEST(ParallelRanges, CoverTheWorkInOrderAndRethrow) {
  ThreadsFor three(3);
  std::mutex m;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  parallel_ranges(10, 1, [&](std::int64_t b, std::int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    ranges.emplace_back(b, e);
  });
  std::sort(ranges.begin(), ranges.end());
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges.front().first, 0);
  for (std::size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
  EXPECT_EQ(ranges.back().second, 10);
  // Fewer than min_per_thread per thread: one range, on the calling thread.
  int calls = 0;
  parallel_ranges(10, 8, [&](std::int64_t b, std::int64_t e) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
  });
  EXPECT_EQ(calls, 1);
  // An error in a range other than the caller's still reaches the caller.
  EXPECT_THROW(parallel_ranges(9, 1,
                               [&](std::int64_t b, std::int64_t) {
                                 if (b > 0) throw InputError("range " + std::to_string(b));
                               }),
               InputError);
  EXPECT_THROW(set_worker_threads(-1), InputError);
}

TEST(QGemm, ResultsDoNotDependOnTheThreadCount) {
  std::mt19937_64 rng(20261127);
  // 1024 rows of depth 64 into 64 columns: enough rows for the accumulation and enough elements for
  // the output stage to split (oracles/parallel.hpp).
  const std::int64_t M = 1024, K = 64, N = 64;
  std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
  for (auto& v : a) v = static_cast<std::int64_t>(rng() % 256);
  for (auto& v : b) v = static_cast<std::int64_t>(rng() % 256) - 128;
  std::vector<double> scales;
  std::vector<std::int64_t> bias;
  for (std::int64_t n = 0; n < N; ++n) {
    scales.push_back(std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024, -7));
    bias.push_back(static_cast<std::int64_t>(rng() % 2001) - 1000);
  }
  int compared = 0;
  for (int variant = 0; variant < 4; ++variant) {
    QGemmOp op;
    op.a.values = ints(DType::u8, {M, K}, a);
    op.a.params = per_tensor(0.03125, 131);
    op.b.values = ints(DType::i8, {K, N}, b);
    op.b.params = per_axis(1, scales);
    op.bias = ints(DType::i32, {N}, bias);
    QGemmPolicy policy = ideal_policy();
    op.output = variant == 0 ? float_out(DType::f32) : requant_out(0.25, -3);
    if (variant == 2) policy.requantize = requantize_policy_for(RequantizeScheme::gemmlowp_double);
    if (variant == 3) {  // pairs saturate: accumulators the slow path decides
      policy.accumulation = Accumulation::int16_pair_saturate;
      policy.zero_points = ZeroPointCorrection::compensate;
    }
    QGemmResult one, three;
    {
      ThreadsFor t(1);
      one = qgemm(op, policy);
    }
    {
      ThreadsFor t(3);
      three = qgemm(op, policy);
    }
    SCOPED_TRACE("variant " + std::to_string(variant));
    ASSERT_EQ(one.y.bytes().size(), three.y.bytes().size());
    EXPECT_TRUE(std::equal(one.y.bytes().begin(), one.y.bytes().end(), three.y.bytes().begin()));
    EXPECT_EQ(one.labels, three.labels);
    compared += static_cast<int>(one.y.size());
  }
  EXPECT_EQ(compared, 4 * M * N);
}

}  // namespace
}  // namespace qc
