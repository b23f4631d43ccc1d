// The oracle's packed integer GEMM (oracles/int_gemm.hpp), every build this machine can run, against
// the slow exact path: accumulate_dot (int_accumulate.hpp), which sums each product as an arbitrary
// precision integer. Shapes that are not multiples of any tile, every pair of byte formats, zero
// points per row/column and segment, blocked K, and worst-case operands long enough that an int32
// sum would overflow (the kernel must spill its pieces into int64).
#include "oracles/int_gemm.hpp"
#include "cases/generators.hpp"
#include "qconform/parallel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace qc::int_gemm_test {

using int_gemm::Isa;

// Skips (with the reason) a build this machine cannot run.
bool runnable(Isa isa) {
  const auto v = int_gemm::available();
  return std::find(v.begin(), v.end(), isa) != v.end();
}
#define QC_REQUIRE_ISA(isa)                                                              \
  if (!runnable(isa))                                                                    \
  GTEST_SKIP() << "this CPU lacks " << int_gemm::name(isa) << " (cpuid); the kernel is " \
               << "checked on machines that have it"

struct Format {
  const char* name;
  std::int32_t lo, hi;
};
constexpr Format kIntGemmFormats[] = {{"u8", 0, 255}, {"s8", -128, 127}, {"u4", 0, 15}, {"s4", -8, 7}};

// A problem with operands drawn from the formats, optional zero points (within the format, per row
// of A and per column of B, per segment) and the given segment starts.
struct OwnedProblem {
  std::vector<std::int32_t> a, bt;
  IntGemmProblem p;
};

OwnedProblem random_problem(SplitMix64& rng, std::int64_t R, std::int64_t N, std::int64_t K, Format fa, Format fb,
                            bool zero_points, std::vector<std::int64_t> starts) {
  OwnedProblem o;
  auto draw = [&](const Format& f) {
    // Mostly uniform, sometimes the format's extremes (the products that bound the lanes).
    const std::uint64_t c = rng.below(8);
    if (c == 0) return f.lo;
    if (c == 1) return f.hi;
    return static_cast<std::int32_t>(f.lo +
                                     static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(f.hi - f.lo + 1))));
  };
  o.a.resize(static_cast<std::size_t>(R * K));
  o.bt.resize(static_cast<std::size_t>(N * K));
  for (auto& v : o.a) v = draw(fa);
  for (auto& v : o.bt) v = draw(fb);
  o.p.rows = R;
  o.p.cols = N;
  o.p.depth = K;
  o.p.segment_starts = std::move(starts);
  const auto S = static_cast<std::size_t>(o.p.segment_starts.size());
  o.p.a_zero_points.assign(static_cast<std::size_t>(R) * S, 0);
  o.p.b_zero_points.assign(S * static_cast<std::size_t>(N), 0);
  if (zero_points) {
    for (auto& z : o.p.a_zero_points) z = draw(fa);
    for (auto& z : o.p.b_zero_points) z = draw(fb);
  }
  o.p.a = o.a;
  o.p.bt = o.bt;
  return o;
}

// The slow path's exact sum of one (row, column, segment).
BigInt slow_sum(const IntGemmProblem& p, bool subtract, std::int64_t r, std::int64_t n, std::int64_t s) {
  const std::int64_t S = p.segments(), k0 = p.segment_starts[static_cast<std::size_t>(s)], L = p.segment_length(s);
  std::vector<std::int32_t> a(static_cast<std::size_t>(L)), b(static_cast<std::size_t>(L));
  const std::int64_t za = subtract ? p.a_zero_points[static_cast<std::size_t>(r * S + s)] : 0;
  const std::int64_t zb = subtract ? p.b_zero_points[static_cast<std::size_t>(s * p.cols + n)] : 0;
  for (std::int64_t k = 0; k < L; ++k) {
    a[static_cast<std::size_t>(k)] =
        static_cast<std::int32_t>(p.a[static_cast<std::size_t>(r * p.depth + k0 + k)] - za);
    b[static_cast<std::size_t>(k)] =
        static_cast<std::int32_t>(p.bt[static_cast<std::size_t>(n * p.depth + k0 + k)] - zb);
  }
  return accumulate_dot(a, b, Accumulation::exact).exact;
}

void expect_all_match(const IntGemmProblem& p, bool subtract, Isa isa, const std::string& what) {
  const int_gemm::ByteOffsets off = int_gemm::byte_offsets(p);
  ASSERT_TRUE(off.ok) << what;
  // exact_sums writes every element without zeroing first (a segment's first piece stores): start
  // from a value no sum here can take (|sum| <= K * 255 * 128 < 2^40), so an element it skipped
  // or added into would show.
  AccumulatorValues out(static_cast<std::size_t>(p.rows * p.cols * p.segments()), std::int64_t{0x5a5a5a5a5a5a5a5a});
  // Every row is handed to `done` once, after its sums are final.
  std::vector<std::atomic<int>> reported(static_cast<std::size_t>(p.rows));
  const int_gemm::RowsDone done = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) reported[static_cast<std::size_t>(r)]++;
  };
  int_gemm::exact_sums(p, subtract, off, isa, out, &done);
  ASSERT_EQ(out.size(), static_cast<std::size_t>(p.rows * p.cols * p.segments()));
  if (p.cols > 0) {
    for (std::int64_t r = 0; r < p.rows; ++r) {
      ASSERT_EQ(reported[static_cast<std::size_t>(r)], 1) << what << " row " << r;
    }
  }
  // The same operands as bytes (IntGemmProblem::a_bytes), B as [N, K] and as [K, N]: the same sums.
  if (p.depth > 0) {
    const auto bytes = [](std::span<const std::int32_t> v) {
      std::vector<std::uint8_t> b(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) b[i] = static_cast<std::uint8_t>(v[i]);  // two's complement
      return b;
    };
    const std::vector<std::uint8_t> a8 = bytes(p.a), bt8 = bytes(p.bt);
    std::vector<std::uint8_t> b8(bt8.size());
    for (std::int64_t n = 0; n < p.cols; ++n)
      for (std::int64_t k = 0; k < p.depth; ++k)
        b8[static_cast<std::size_t>(k * p.cols + n)] = bt8[static_cast<std::size_t>(n * p.depth + k)];
    const bool a_signed = std::any_of(p.a.begin(), p.a.end(), [](std::int32_t v) { return v < 0; });
    const bool b_signed = std::any_of(p.bt.begin(), p.bt.end(), [](std::int32_t v) { return v < 0; });
    for (const bool k_by_n : {false, true}) {
      IntGemmProblem q = p;
      q.a = {};
      q.bt = {};
      q.a_bytes = {a8.data(), a_signed};
      q.b_bytes = {k_by_n ? b8.data() : bt8.data(), b_signed};
      q.b_k_by_n = k_by_n;
      AccumulatorValues from_bytes(out.size(), std::int64_t{0x5a5a5a5a5a5a5a5a});
      int_gemm::exact_sums(q, subtract, off, isa, from_bytes);
      ASSERT_TRUE(from_bytes == out) << what << " " << int_gemm::name(isa) << ": from bytes"
                                     << (k_by_n ? " [K, N]" : " [N, K]");
    }
  }
  int mismatches = 0;
  for (std::int64_t r = 0; r < p.rows; ++r)
    for (std::int64_t n = 0; n < p.cols; ++n)
      for (std::int64_t s = 0; s < p.segments(); ++s) {
        const std::int64_t got = out[static_cast<std::size_t>((r * p.cols + n) * p.segments() + s)];
        const BigInt want = slow_sum(p, subtract, r, n, s);
        if (BigInt(got) != want && ++mismatches <= 5)
          ADD_FAILURE() << what << " " << int_gemm::name(isa) << ": (" << r << ", " << n << ", segment " << s
                        << ") = " << got << ", the slow path gives " << want.str();
      }
}

class IntGemmIsa : public ::testing::TestWithParam<Isa> {};

// Every format pair, with and without zero points (subtracted first, or left in: raw sums), on
// shapes around the tiles (12 x 32, 6 x 16, 4 x 16) and K around the 4-byte groups and the pieces.
TEST_P(IntGemmIsa, RandomShapesEveryFormatPairMatchTheSlowPath) {
  QC_REQUIRE_ISA(GetParam());
  SplitMix64 rng(19);
  const std::int64_t shapes[][3] = {{1, 1, 1},    {13, 33, 5},   {12, 32, 4},  {7, 17, 3},
                                    {25, 65, 37}, {6, 16, 1025}, {3, 50, 2050}};
  for (const auto& sh : shapes)
    for (const Format& fa : kIntGemmFormats)
      for (const Format& fb : kIntGemmFormats)
        for (const bool zp : {false, true}) {
          OwnedProblem o = random_problem(rng, sh[0], sh[1], sh[2], fa, fb, zp, {0});
          const std::string what = std::to_string(sh[0]) + "x" + std::to_string(sh[1]) + "x" + std::to_string(sh[2]) +
                                   " " + fa.name + " x " + fb.name + (zp ? " with zero points" : "");
          expect_all_match(o.p, true, GetParam(), what + " subtracted");
          expect_all_match(o.p, false, GetParam(), what + " raw");
        }
}

// Blocked quantization: K cut into segments (one of them short, one longer than a piece), each with
// its own zero points.
TEST_P(IntGemmIsa, SegmentsWithTheirOwnZeroPoints) {
  QC_REQUIRE_ISA(GetParam());
  SplitMix64 rng(1919);
  for (const Format& fa : kIntGemmFormats) {
    OwnedProblem o = random_problem(rng, 14, 35, 1400, fa, kIntGemmFormats[1], true, {0, 32, 64, 1090, 1393});
    expect_all_match(o.p, true, GetParam(), std::string(fa.name) + " blocked");
    expect_all_match(o.p, false, GetParam(), std::string(fa.name) + " blocked raw");
  }
}

// All 255 x -128 (u8 x s8, no offsets) and all -128 x -128 (s8 x s8, A offset by 128) for K past
// what one int32 can hold: K * 255 * 128 > 2^31 from K = 65794, and the 66400 and 131101 here give
// -2,167,296,000 and -4,279,461,120 (u8 x s8), 1,087,897,600 and 2,147,958,784 (s8 x s8). Every
// element is checked against the slow path's sum of the first (all elements are equal).
TEST_P(IntGemmIsa, WorstCaseOperandsSpillIntoInt64) {
  QC_REQUIRE_ISA(GetParam());
  for (const std::int64_t K : {std::int64_t{66400}, std::int64_t{131101}})
    for (const std::int32_t a_value : {255, -128}) {
      const std::int64_t R = 13, N = 33;
      std::vector<std::int32_t> a(static_cast<std::size_t>(R * K), a_value), bt(static_cast<std::size_t>(N * K), -128);
      IntGemmProblem p;
      p.rows = R;
      p.cols = N;
      p.depth = K;
      p.a = a;
      p.bt = bt;
      p.a_zero_points.assign(static_cast<std::size_t>(R), 0);
      p.b_zero_points.assign(static_cast<std::size_t>(N), 0);
      const BigInt want = slow_sum(p, true, 0, 0, 0);
      EXPECT_EQ(want, BigInt(K) * a_value * -128);
      const int_gemm::ByteOffsets off = int_gemm::byte_offsets(p);
      ASSERT_TRUE(off.ok);
      AccumulatorValues out;
      int_gemm::exact_sums(p, true, off, GetParam(), out);
      for (const std::int64_t v : out) ASSERT_EQ(BigInt(v), want) << "K = " << K << ", a = " << a_value;
    }
}

// The rows are split across threads; the sums must not depend on how many.
TEST_P(IntGemmIsa, ThreadCountDoesNotChangeTheResult) {
  QC_REQUIRE_ISA(GetParam());
  SplitMix64 rng(7);
  OwnedProblem o = random_problem(rng, 301, 129, 300, kIntGemmFormats[0], kIntGemmFormats[1], true, {0});
  const int_gemm::ByteOffsets off = int_gemm::byte_offsets(o.p);
  AccumulatorValues one, two;
  set_worker_threads(1);
  int_gemm::exact_sums(o.p, true, off, GetParam(), one);
  set_worker_threads(2);
  int_gemm::exact_sums(o.p, true, off, GetParam(), two);
  set_worker_threads(0);
  EXPECT_EQ(one, two);
  expect_all_match(o.p, true, GetParam(), "301x129x300 u8 x s8");
}

INSTANTIATE_TEST_SUITE_P(Builds, IntGemmIsa, ::testing::Values(Isa::generic, Isa::avx2, Isa::avx512_vnni),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(int_gemm::name(i.param)); });

// Operands that do not fit bytes after one offset (a span over 256 values) are not the kernel's.
TEST(IntGemmOffsets, WiderSpansAreRefused) {
  std::vector<std::int32_t> a{0, 256}, b{1, 2};
  IntGemmProblem p;
  p.rows = 1;
  p.cols = 1;
  p.depth = 2;
  p.a = a;
  p.bt = b;
  p.a_zero_points = {0};
  p.b_zero_points = {0};
  EXPECT_FALSE(int_gemm::byte_offsets(p).ok);
  a = {-128, 127};
  EXPECT_TRUE(int_gemm::byte_offsets(p).ok);
  EXPECT_EQ(int_gemm::byte_offsets(p).ca, 128);  // s8 A: a + 128 is the u8 vpdpbusd takes
}

// accumulate_gemm with the chosen build (QCONFORM_ORACLE_ISA picks another; ctest runs these tests
// again under avx2 and generic): the policy's accumulator and the exact sum of each element against
// accumulate_dot under the same accumulator, with K long enough to wrap int32.
TEST(IntGemmThroughAccumulateGemm, AccumulatorsMatchAccumulateDot) {
  SplitMix64 rng(2026);
  for (const Accumulation acc :
       {Accumulation::exact, Accumulation::int64, Accumulation::int32_wrap, Accumulation::int32_saturate})
    for (const std::int64_t K : {std::int64_t{40}, std::int64_t{70000}}) {
      OwnedProblem o = random_problem(rng, 3, 5, K, kIntGemmFormats[0], kIntGemmFormats[1], true, {0});
      // Long K: operands at the extremes of one sign, so that the int32 models overflow.
      if (K > 1000) {
        std::fill(o.a.begin(), o.a.end(), 255);
        std::fill(o.bt.begin(), o.bt.end(), -128);
        std::fill(o.p.a_zero_points.begin(), o.p.a_zero_points.end(), 0);
        std::fill(o.p.b_zero_points.begin(), o.p.b_zero_points.end(), 0);
      }
      const IntGemmAccumulators got = accumulate_gemm(o.p, acc, ZeroPointCorrection::subtract_first);
      for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t n = 0; n < 5; ++n) {
          std::vector<std::int32_t> a, b;
          for (std::int64_t k = 0; k < K; ++k) {
            a.push_back(static_cast<std::int32_t>(o.a[static_cast<std::size_t>(r * K + k)] -
                                                  o.p.a_zero_points[static_cast<std::size_t>(r)]));
            b.push_back(static_cast<std::int32_t>(o.bt[static_cast<std::size_t>(n * K + k)] -
                                                  o.p.b_zero_points[static_cast<std::size_t>(n)]));
          }
          const DotProduct want = accumulate_dot(a, b, acc);
          EXPECT_EQ(BigInt(got.at(r, n, 0)), want.value) << name(acc) << " K=" << K << " (" << r << ", " << n << ")";
          EXPECT_EQ(got.exact(r, n, 0), want.exact) << name(acc) << " K=" << K;
        }
    }
}

}  // namespace qc::int_gemm_test
