// qgemm's requantized output stage against its definition, element by element: the ideal scheme's
// row kernel (oracles/requantize_rows.hpp, through finish_output) and the per-element evaluation it
// hands flagged elements to. Nothing here is hand-derived: every expected value and label is
// requantize_element (oracles/requantize.cpp, exact rationals) on the accumulator the result reports,
// with the scales read from the op's own parameters, and `saturated` where the accumulation
// overflowed (qlinear.hpp). The generator aims at the kernel's decision boundaries: dyadic
// multipliers (exact ties), multipliers 1/2 + 2^-20 (odd accumulators land within 2^-10 of a half:
// near ties), multipliers beyond 2^40 and below 2^-40 (the kernel's clamp and its small values),
// f64 scales beyond the kernel's factor range (flagged rows and columns), zero accumulators, int64
// sums beyond int32 and int32 sums that wrap. Run on every kernel build: QCONFORM_ORACLE_ISA=avx2 and
// generic (tests/oracle/CMakeLists.txt).
#include "oracles/qgemm.hpp"
#include "oracles/requantize_rows.hpp"
#include "qconform/parallel.hpp"
#include "tests/oracle/both_paths.hpp"
#include "tests/oracle/qlinear_test_util.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace qc {
namespace qgemm_output_test {

using test::element_budget;
using test::ints;

struct Trial {
  QGemmOp op;
  QGemmPolicy policy;
  std::string what;  // how to rebuild it, for failure messages
};

// One of the column scales the header lists, in f32 (or, with `wide`, f64 beyond the kernel's range).
double pick_scale(SplitMix64& rng, bool wide) {
  switch (rng.below(wide ? 7 : 6)) {
    case 0:
      return std::ldexp(1.0, static_cast<int>(rng.below(12)) - 4);  // dyadic: ties
    case 1:
      return 256 + 0x1p-11;  // with s_a = 1/64 and s_out = 8: m = 1/2 + 2^-20, near ties
    case 2:
      return 0x1p40;  // with s_out = 2^-20: beyond the kernel's clamp
    case 3:
      return 0x1p-40;  // below 1/4 for every accumulator here
    case 4:
    case 5:
      return static_cast<double>(static_cast<float>(0.001 + static_cast<double>(rng.below(1u << 20)) * 1e-6));
    default:
      return rng.below(2) ? 0x1p-600 : 0x1p600;  // f64 only: the kernel flags it
  }
}

Trial make_trial(SplitMix64& rng) {
  Trial t;
  QGemmOp& op = t.op;
  const bool wide_ints = rng.below(5) == 0;  // i16 operands: int64 sums beyond int32
  const bool wide_scales = rng.below(6) == 0;
  const bool batched = rng.below(6) == 0;
  const std::int64_t M = 1 + static_cast<std::int64_t>(rng.below(24)), K = 1 + static_cast<std::int64_t>(rng.below(48));
  const std::int64_t N = rng.below(5) == 0 ? 1 + static_cast<std::int64_t>(rng.below(7))  // below the row kernel's 8
                                           : 8 + static_cast<std::int64_t>(rng.below(60));
  const std::int64_t batches = batched ? 2 : 1;
  const DType a_type = wide_ints ? DType::i16 : rng.below(2) ? DType::u8 : DType::i8;
  const DType b_type = wide_ints ? DType::i16 : DType::i8;
  const std::int64_t za = wide_ints ? 0 : a_type == DType::u8 ? 128 : 0;
  std::vector<std::int64_t> a(static_cast<std::size_t>(batches * M * K)), b(static_cast<std::size_t>(batches * K * N));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t row = static_cast<std::int64_t>(i) / K;
    if (row % 5 == 3) {
      a[i] = za;  // a row of zero accumulators
    } else if (wide_ints) {
      a[i] = static_cast<std::int64_t>(rng.below(60001)) - 30000;
    } else {
      const std::int64_t spread = rng.below(2) ? 8 : 128;  // near the zero point (small sums) or anywhere
      a[i] = std::clamp<std::int64_t>(za + static_cast<std::int64_t>(rng.below(2 * spread)) - spread,
                                      a_type == DType::u8 ? 0 : -128, a_type == DType::u8 ? 255 : 127);
    }
  }
  for (auto& v : b)
    v = wide_ints ? static_cast<std::int64_t>(rng.below(60001)) - 30000
                  : static_cast<std::int64_t>(rng.below(256)) - 128;
  const Shape a_shape = batched ? Shape{batches, M, K} : Shape{M, K};
  const Shape b_shape = batched ? Shape{batches, K, N} : Shape{K, N};
  op.a.values = ints(a_type, a_shape, a);
  op.b.values = ints(b_type, b_shape, b);
  op.b.format = b_type;
  op.b.shape = b_shape;
  const DType scale_dtype = wide_scales ? DType::f64 : DType::f32;
  // A: per tensor, or per row (axis rank - 2) with some rows' scales out of the kernel's range.
  if (rng.below(3) == 0) {
    std::vector<double> sa;
    for (std::int64_t r = 0; r < M; ++r)
      sa.push_back(wide_scales && r % 4 == 1 ? 0x1p-600 : std::ldexp(1.0, -static_cast<int>(rng.below(8))));
    op.a.params = test::per_axis(batched ? 1 : 0, sa, std::vector<std::int64_t>(static_cast<std::size_t>(M), za));
  } else {
    op.a.params = test::per_tensor(1.0 / 64, za);
  }
  op.a.params.scale_dtype = scale_dtype;
  // B: per tensor or per column (the last axis).
  if (rng.below(4) == 0) {
    op.b.params = test::per_tensor(pick_scale(rng, wide_scales));
  } else {
    std::vector<double> sb;
    for (std::int64_t n = 0; n < N; ++n) sb.push_back(pick_scale(rng, wide_scales));
    op.b.params = test::per_axis(batched ? 2 : 1, sb);
  }
  op.b.params.scale_dtype = scale_dtype;
  if (rng.below(4) == 0) {
    std::vector<std::int64_t> bias;
    for (std::int64_t n = 0; n < N; ++n) bias.push_back(static_cast<std::int64_t>(rng.below(4001)) - 2000);
    op.bias = ints(DType::i32, {N}, bias);
  }
  const DType out = test::pick(rng, {DType::i8, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i4});
  const std::int64_t zp = int_min(out) + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(
                                             std::min<std::int64_t>(int_max(out) - int_min(out), 1000) + 1)));
  const double s_out = test::pick(rng, {8.0, 0.5, 0x1p-20, 3.0, 0.1});
  std::optional<IntRange> fused;
  if (rng.below(4) == 0) fused = IntRange{zp - 3, zp + 40};
  op.output = test::requant_out(static_cast<double>(static_cast<float>(s_out)), zp, fused, out);

  QGemmPolicy& p = t.policy;
  p.requantize.scheme = RequantizeScheme::ideal;
  p.requantize.rounding =
      test::pick(rng, {RoundingMode::rne, RoundingMode::rne, RoundingMode::rna, RoundingMode::rhu, RoundingMode::rhd,
                       RoundingMode::rtz, RoundingMode::floor, RoundingMode::ceil});
  p.requantize.zero_point = rng.below(2) ? ZeroPointAdd::int_after_rounding : ZeroPointAdd::float_before_rounding;
  p.requantize.clamp = test::pick(rng, {Clamp::int_after, Clamp::int_after, Clamp::float_before, Clamp::wrap});
  p.requantize.narrow_range = rng.below(4) == 0;
  if (rng.below(6) == 0) p.requantize.clip = std::make_pair(int_min(out) + 2, int_max(out) - 5);
  p.accumulation = wide_ints && rng.below(2) ? Accumulation::int32_wrap
                   : rng.below(2)            ? Accumulation::int64
                                             : Accumulation::int32_wrap;
  t.what = "M " + std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N) +
           (batched ? " batched" : "") + " a " + std::string(name(a_type)) + " out " + std::string(name(out)) + " zp " +
           std::to_string(zp) + " s_out " + std::to_string(s_out) + " scales " + std::string(name(scale_dtype)) +
           " rounding " + std::string(name(p.requantize.rounding)) + " clamp " + std::string(name(p.requantize.clamp)) +
           " accumulation " + std::string(name(p.accumulation)) + (op.bias ? " bias" : "");
  return t;
}

// The scale of A, of B at output element e of [batch, M, N] (2-D: batch 0), read from the op.
double a_scale(const QGemmOp& op, std::int64_t e, std::int64_t N) {
  const QuantParams& p = op.a.params;
  if (!p.axis) return p.scales[0];
  const std::int64_t M = op.a.values.shape()[op.a.values.shape().size() - 2];
  return p.scales[static_cast<std::size_t>((e / N) % M)];
}
double b_scale(const QGemmOp& op, std::int64_t e, std::int64_t N) {
  const QuantParams& p = op.b.params;
  return p.axis ? p.scales[static_cast<std::size_t>(e % N)] : p.scales[0];
}

TEST(QGemmOutputProperty, RequantizedOutputEqualsTheDefinition) {
  const std::int64_t budget = element_budget() / 4;  // each element costs an exact evaluation
  SplitMix64 rng(20261127);
  std::int64_t compared = 0, rows_path = 0;
  std::array<std::int64_t, kLabelCount> seen{};
  for (int trial = 0; compared < budget && trial < 100000; ++trial) {
    const Trial t = make_trial(rng);
    QGemmResult r;
    try {
      r = qgemm(t.op, t.policy);
    } catch (const InputError&) {
      continue;  // e.g. a clip that leaves no value: the definition raises it too (qgemm_test.cpp)
    }
    const std::int64_t cols = r.y.shape().back();
    if (cols >= 8 && t.policy.requantize.clamp != Clamp::wrap && t.op.output.format != DType::i4)
      rows_path += r.y.size();
    RequantizePolicy rp = t.policy.requantize;
    if (t.op.output.clamp)
      rp.clip = rp.clip ? std::make_pair(std::max(rp.clip->first, t.op.output.clamp->lo),
                                         std::min(rp.clip->second, t.op.output.clamp->hi))
                        : std::make_pair(t.op.output.clamp->lo, t.op.output.clamp->hi);
    for (std::int64_t e = 0; e < r.y.size(); ++e) {
      const std::int64_t acc = add_in_accumulator(t.policy.accumulation, r.accumulator(e), r.int_bias(e));
      const bool overflowed = r.exact_accumulator(e) != BigInt(r.accumulator(e));  // the accumulation's own
      const RequantizeScales s{a_scale(t.op, e, cols), b_scale(t.op, e, cols), t.op.output.scale,
                               t.op.a.params.scale_dtype};
      const RequantizeElement want = requantize_element(acc, s, t.op.output.zero_point, t.op.output.format, rp);
      const Label want_label = overflowed ? Label::saturated : want.label;
      ASSERT_EQ(r.y.get_int(e), want.q) << t.what << ", element " << e << ", accumulator " << acc;
      ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], want_label)
          << t.what << ", element " << e << ", accumulator " << acc;
      ++seen[static_cast<std::size_t>(want_label)];
    }
    compared += r.y.size();
  }
  EXPECT_GE(compared, budget);
  EXPECT_GE(rows_path, compared / 3);  // most elements go through the row kernel
  for (const Label l : {Label::clear, Label::near_tie, Label::tie, Label::saturated})
    EXPECT_GT(seen[static_cast<std::size_t>(l)], 0) << name(l);
}

// Every build of the row kernel this machine runs against the definition, on rows of accumulators
// spread over the kernel's whole input range (zero, ties, up to 2^51 - 1, and beyond, which the
// kernel must refuse), with factors that include NaN (an unusable scale: every element flagged).
TEST(QGemmOutputProperty, EveryRowKernelBuildDecidesOnlyWhatTheDefinitionGives) {
  SplitMix64 rng(7);
  const std::int64_t n = 96;
  std::int64_t decided = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const double sa = std::ldexp(1.0 + static_cast<double>(rng.below(16)) / 16, -static_cast<int>(rng.below(10)));
    const double sy = test::pick(rng, {1.0, 8.0, 0.1, 3.0, 0x1p-30});
    std::vector<double> sb(static_cast<std::size_t>(n)), cf(static_cast<std::size_t>(n));
    std::vector<std::int64_t> acc(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      sb[static_cast<std::size_t>(i)] = test::pick(rng, {0.5, 0.25, 256 + 0x1p-11, 0.00123, 1e-9, 1e9});
      cf[static_cast<std::size_t>(i)] = sb[static_cast<std::size_t>(i)] / sy;  // as qlinear.cpp forms it
      switch (rng.below(5)) {
        case 0:
          acc[static_cast<std::size_t>(i)] = 0;
          break;
        case 1:
          acc[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(rng.below(1u << 12)) - (1 << 11);
          break;
        case 2:
          acc[static_cast<std::size_t>(i)] =
              (rng.below(2) ? 1 : -1) * ((std::int64_t{1} << 51) - 1 - static_cast<std::int64_t>(rng.below(1000)));
          break;
        default:
          acc[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(rng.next() >> 20) - (std::int64_t{1} << 43);
      }
    }
    if (trial % 3 == 1) {
      // Decision boundaries behind inexact factors (s_out = 3: fl(s_b / 3) is not s_b / 3): with s_a = 1
      // and s_b = 1/2, acc = 3 (2m + 1) gives v = m + 1/2 exactly, a tie; with s_b = 2^-11,
      // acc = 3 (2048 m + 1026) gives v = m + 1/2 + 2^-10, the edge of the near-tie band, and one
      // either side of it lies just inside or outside. Only an error bound that holds keeps these right.
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const std::int64_t m = static_cast<std::int64_t>(rng.below(1u << 21)) - (1 << 20);
        const bool tie = rng.below(2) == 0;
        sb[k] = tie ? 0.5 : 0x1p-11;
        acc[k] = tie ? 3 * (2 * m + 1) : 3 * (2048 * m + 1026) + static_cast<std::int64_t>(rng.below(3)) - 1;
      }
    }
    const double row_scale = trial % 3 == 1 ? 1.0 : sa, out_scale = trial % 3 == 1 ? 3.0 : sy;
    for (std::int64_t i = 0; i < n; ++i) cf[static_cast<std::size_t>(i)] = sb[static_cast<std::size_t>(i)] / out_scale;
    if (trial % 10 == 0) cf[static_cast<std::size_t>(rng.below(n))] = std::numeric_limits<double>::quiet_NaN();
    const bool beyond = trial % 25 == 0;
    if (beyond) acc[static_cast<std::size_t>(rng.below(n))] = (std::int64_t{1} << 51) + 5;
    RequantizePolicy p;
    p.scheme = RequantizeScheme::ideal;
    p.rounding = test::pick(rng, {RoundingMode::rne, RoundingMode::rna, RoundingMode::rtz, RoundingMode::floor,
                                  RoundingMode::ceil, RoundingMode::rhd});
    p.zero_point = rng.below(2) ? ZeroPointAdd::int_after_rounding : ZeroPointAdd::float_before_rounding;
    const std::int64_t zp = static_cast<std::int64_t>(rng.below(200)) - 100;
    requantize_rows::Params params;
    params.row_factor = row_scale;
    params.zp = static_cast<double>(zp);
    params.zp_before = p.zero_point == ZeroPointAdd::float_before_rounding;
    const std::pair<std::int64_t, std::int64_t> range =
        test::pick(rng, {std::pair<std::int64_t, std::int64_t>{-32768, 32767}, {-100, 100}, {0, 255}});
    p.clip = range;  // the definition's range: i16 clipped
    params.lo = static_cast<double>(range.first);
    params.hi = static_cast<double>(range.second);
    params.mode = p.rounding;
    for (const requantize_rows::Variant& v : requantize_rows::variants()) {
      std::vector<std::int16_t> y(static_cast<std::size_t>(n));
      std::vector<Label> labels(static_cast<std::size_t>(n));
      std::vector<std::int64_t> q(static_cast<std::size_t>(n)), code(static_cast<std::size_t>(n));
      const std::int64_t flagged =
          v.kernel(params, acc.data(), cf.data(),
                   {n, requantize_rows::Out::s16, y.data(), labels.data(), q.data(), code.data()});
      if (beyond) {
        EXPECT_EQ(flagged, -1) << v.isa << ": an accumulator beyond 2^51 must refuse the row";
        continue;
      }
      ASSERT_GE(flagged, 0) << v.isa;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (code[k] & requantize_rows::kFlagged) continue;
        const RequantizeElement want =
            requantize_element(acc[k], RequantizeScales{row_scale, sb[k], out_scale, DType::f64}, zp, DType::i16, p);
        ASSERT_EQ(y[k], want.q) << v.isa << " trial " << trial << " acc " << acc[k] << " s_b " << sb[k];
        ASSERT_EQ(labels[k], want.label) << v.isa << " trial " << trial << " acc " << acc[k] << " s_b " << sb[k];
        if (acc[k] != 0) {
          EXPECT_FALSE(std::isnan(cf[k])) << v.isa << ": a NaN factor must flag its element";
        }
        ++decided;
      }
    }
  }
  EXPECT_GT(decided, 400 * 96 / 2);
}

// The sums behind the output stage, for the shapes its row path sees (B given [K, N] and transposed
// in 16 x 16 tiles, or [N, K]; full tiles and edges): each exact accumulator against the sum of
// (a - za)(b - zb) taken here in int64 from the op's own values.
TEST(QGemmOutputProperty, AccumulatorsAreTheExactSumsOfTheOperands) {
  SplitMix64 rng(99);
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t M = 1 + static_cast<std::int64_t>(rng.below(20)),
                       K = 1 + static_cast<std::int64_t>(rng.below(70)),
                       N = 1 + static_cast<std::int64_t>(rng.below(70));
    const bool n_by_k = rng.below(3) == 0;
    const std::int64_t za = static_cast<std::int64_t>(rng.below(256)), zb = static_cast<std::int64_t>(rng.below(9)) - 4;
    std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
    for (auto& v : a) v = static_cast<std::int64_t>(rng.below(256));
    for (auto& v : b) v = static_cast<std::int64_t>(rng.below(256)) - 128;
    QGemmOp op;
    op.a.values = ints(DType::u8, {M, K}, a);
    op.a.params = test::per_tensor(0.5, za);
    op.b.values = ints(DType::i8, n_by_k ? Shape{N, K} : Shape{K, N}, b);
    op.b.format = DType::i8;
    op.b.shape = op.b.values.shape();
    op.b.params = test::per_tensor(0.25, zb);
    op.b_layout = n_by_k ? WeightLayout::n_by_k : WeightLayout::k_by_n;
    op.output = test::requant_out(4.0, 0);
    QGemmPolicy p;
    p.requantize.scheme = RequantizeScheme::ideal;
    p.accumulation = Accumulation::int64;
    const QGemmResult r = qgemm(op, p);
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t sum = 0;
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t bv = b[static_cast<std::size_t>(n_by_k ? n * K + k : k * N + n)];
          sum += (a[static_cast<std::size_t>(m * K + k)] - za) * (bv - zb);
        }
        ASSERT_EQ(r.exact_accumulator(m * N + n), BigInt(sum))
            << "M " << M << " K " << K << " N " << N << (n_by_k ? " [N, K]" : " [K, N]") << ", row " << m << ", column "
            << n;
      }
  }
}

// Enough rows for several of the sums' row groups per thread (int_gemm.hpp: the output stage takes
// each group as it is finished, on its thread), with per-row and per-column scales, a bias and
// near-tie multipliers: every element against its definition, on one thread and on two.
TEST(QGemmOutputProperty, RowGroupsRequantizedAsTheSumsFinishThem) {
  SplitMix64 rng(7);
  const std::int64_t M = 1000, K = 37, N = 264;
  std::vector<std::int64_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N)), bias;
  for (auto& v : a) v = static_cast<std::int64_t>(rng.below(256));
  for (auto& v : b) v = static_cast<std::int64_t>(rng.below(256)) - 128;
  for (std::int64_t n = 0; n < N; ++n) bias.push_back(static_cast<std::int64_t>(rng.below(4001)) - 2000);
  std::vector<double> sa, sb;
  for (std::int64_t m = 0; m < M; ++m) sa.push_back(std::ldexp(1.0, -static_cast<int>(rng.below(8))));
  for (std::int64_t n = 0; n < N; ++n) sb.push_back(pick_scale(rng, false));
  QGemmOp op;
  op.a.values = ints(DType::u8, {M, K}, a);
  op.a.params = test::per_axis(0, sa, std::vector<std::int64_t>(static_cast<std::size_t>(M), 128));
  op.b.values = ints(DType::i8, {K, N}, b);
  op.b.format = DType::i8;
  op.b.shape = op.b.values.shape();
  op.b.params = test::per_axis(1, sb);
  op.bias = ints(DType::i32, {N}, bias);
  op.output = test::requant_out(0.5, 3);
  QGemmPolicy p;
  p.requantize.scheme = RequantizeScheme::ideal;
  for (const int threads : {1, 2}) {
    set_worker_threads(threads);
    const QGemmResult r = qgemm(op, p);
    set_worker_threads(0);
    for (std::int64_t e = 0; e < r.y.size(); ++e) {
      std::int64_t sum = 0;
      for (std::int64_t k = 0; k < K; ++k)
        sum += (a[static_cast<std::size_t>(e / N * K + k)] - 128) * b[static_cast<std::size_t>(k * N + e % N)];
      ASSERT_EQ(r.accumulator(e), sum) << threads << " threads, element " << e;
      const std::int64_t acc = add_in_accumulator(p.accumulation, r.accumulator(e), r.int_bias(e));
      const RequantizeScales s{a_scale(op, e, N), b_scale(op, e, N), op.output.scale, op.a.params.scale_dtype};
      const RequantizeElement want = requantize_element(acc, s, op.output.zero_point, op.output.format, p.requantize);
      ASSERT_EQ(r.y.get_int(e), want.q) << threads << " threads, element " << e;
      ASSERT_EQ(r.labels[static_cast<std::size_t>(e)], want.label) << threads << " threads, element " << e;
    }
  }
}

// No rows, or no columns: byte operands with nothing to pack (one of them holds no bytes at all).
TEST(QGemmOutputProperty, EmptyRowsOrColumnsGiveAnEmptyOutput) {
  for (const auto& [M, N] : {std::pair<std::int64_t, std::int64_t>{0, 9}, {9, 0}}) {
    const std::int64_t K = 5;
    QGemmOp op;
    op.a.values = ints(DType::u8, {M, K}, std::vector<std::int64_t>(static_cast<std::size_t>(M * K), 3));
    op.a.params = test::per_tensor(0.5, 128);
    op.b.values = ints(DType::i8, {K, N}, std::vector<std::int64_t>(static_cast<std::size_t>(K * N), -2));
    op.b.format = DType::i8;
    op.b.shape = op.b.values.shape();
    op.b.params = test::per_tensor(0.25);
    op.output = test::requant_out(4.0, 0);
    QGemmPolicy p;
    p.requantize.scheme = RequantizeScheme::ideal;
    const QGemmResult r = qgemm(op, p);
    EXPECT_EQ(r.y.shape(), (Shape{M, N}));
    EXPECT_EQ(r.y.size(), 0);
  }
}

}  // namespace qgemm_output_test
}  // namespace qc
