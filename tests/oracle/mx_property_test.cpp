// mx_quantize's and mx_dequantize's fast paths (oracles/mx.cpp) against their definitions (every step
// on exact rationals, OraclePath::slow), on random and adversarial blocks: every format, every scale
// rule, both element roundings, inputs in f32, f16 and bf16, blocks along either axis with a short
// last block. Values are chosen around the block's scale: element-grid midpoints and near-tie band
// edges, the format's largest magnitude and its overflow threshold (max + half a step), subnormal
// elements and values below half the smallest; a block's largest magnitude where a rule's decision
// changes (powers of two for ceil, (2 - 2^-(mbits+1)) * 2^k for even, max * 2^k for rceil) and at the
// E8M0 edges (clamped to 2^-127; 2^127 for MXINT8); blocks of zeros, of f32 subnormals, holding NaN
// or +-inf. NVFP4: power-of-two and random per-tensor scales, given or from the tensor's amax, and
// the extreme ones (2^-149, 2^127; an all-zero or infinite tensor amax) that the fast path leaves to the
// definition. Element codes, scale codes, f32 values, labels and the per-tensor scale must agree, as must
// the InputError of an invalid op. Dequantize: random codes (every scale code, NaN and negative E4M3
// ones included) against the definition. The hand-derived cases at the end run through the fast path
// and say how each value follows from the OCP MX v1.0 text.
//
// Budget: test::element_budget() elements per op (tests/oracle/both_paths.hpp) on 2 threads.
#include "cases/generators.hpp"
#include "oracles/mx.hpp"
#include "qconform/error.hpp"
#include "tests/oracle/both_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace qc {
namespace mx_property {

using test::element_budget;
using test::pick;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr MxFormat kFormats[] = {MxFormat::mxfp8_e4m3, MxFormat::mxfp8_e5m2, MxFormat::mxfp6_e3m2, MxFormat::mxfp6_e2m3,
                                 MxFormat::mxfp4,      MxFormat::mxint8,     MxFormat::nvfp4};
constexpr MxScaleRule kRules[] = {MxScaleRule::floor, MxScaleRule::ceil, MxScaleRule::even, MxScaleRule::rceil};

// v moved by `steps` units in the last place of float format t (through its bit patterns).
double ulps_away(DType t, double v, int steps) {
  if (steps == 0 || !std::isfinite(v) || v == 0) return v;
  const FloatLayout& l = info(t).fl;
  const std::uint64_t b = double_to_float_bits(t, v);
  const std::uint64_t mag = b & (sign_mask(l) - 1);
  const bool grow = (steps > 0) == (v > 0);
  const auto n = static_cast<std::uint64_t>(std::abs(steps));
  if (!grow && mag < n) return 0.0;
  const double r = float_bits_to_double(t, (b & sign_mask(l)) | (grow ? mag + n : mag - n));
  return std::isfinite(r) ? r : v;
}

// A value of e's grid (in units of the block scale) where a decision changes: a midpoint, a near-tie
// band edge, the largest magnitude, the overflow threshold, a subnormal midpoint or a value below half
// the smallest subnormal step.
double element_point(SplitMix64& rng, const MxElement& e) {
  const int lo = e.is_int ? -6 : e.emin - 2;
  const int ex = static_cast<int>(rng.in(lo, e.emax));
  const int q = e.is_int ? -6 : std::max(ex, e.emin) - e.mbits;  // the step at 2^ex
  const double step = std::ldexp(1.0, q);
  const double base = e.is_int ? step * static_cast<double>(rng.below(128))
                               : (ex < e.emin ? 0.0 : std::ldexp(1.0, ex)) +
                                     step * static_cast<double>(rng.below(std::uint64_t{1} << e.mbits));
  switch (rng.below(8)) {
    case 0:
      return e.max + std::ldexp(1.0, e.is_int ? -7 : e.emax - e.mbits - 1);  // the overflow threshold
    case 1:
      return e.max;
    case 2:
      return base + step / 2 + pick(rng, {-1.0, 1.0}) * step / 1024;  // a near-tie band edge
    case 3:
      return std::ldexp(1.0, q) * rng.uniform01() / 4;  // below half a step (of a subnormal when ex < emin)
    case 4:
      return base + step * rng.uniform01();
    default:
      return base + step / 2;  // a midpoint
  }
}

// A block's largest magnitude near where a scale rule decides, about 2^k.
double amax_point(SplitMix64& rng, const MxElement& e, int k) {
  switch (rng.below(4)) {
    case 0:
      return std::ldexp(1.0, k);  // ceil and rceil: a power of two
    case 1:
      return std::ldexp(2.0 - std::ldexp(1.0, -(e.mbits + 1)), k - 1);  // even: the carry edge
    case 2:
      return std::ldexp(e.max, k - e.emax);  // rceil: amax * f32(1 / max) near a power of two
    default:
      return std::ldexp(1.0 + rng.uniform01(), k);
  }
}

struct Config {
  MxQuantizeOp op;
  Shape shape;
};

// A random op: format, scale rule, rounding, blocks along the last axis or axis 0 (some short), the
// input format and, for NVFP4, a per-tensor scale or none; fill_blocks gives x its values.
Config random_config(SplitMix64& rng) {
  Config c;
  MxQuantizeOp& op = c.op;
  const MxFormat f = kFormats[rng.below(std::size(kFormats))];
  op.blocking.format = f;
  op.scale_rule = f == MxFormat::mxint8 ? MxScaleRule::floor : kRules[rng.below(std::size(kRules))];
  op.element_rounding = rng.below(2) ? RoundingMode::rne : RoundingMode::rna;
  op.blocking.block_size = f == MxFormat::nvfp4 ? 16 : 32;
  if (rng.below(4) == 0) op.blocking.block_size = pick(rng, {std::int64_t{7}, std::int64_t{12}, std::int64_t{40}});
  switch (rng.below(3)) {
    case 0:
      c.shape = {4, 100};  // the last block of each row short
      op.blocking.axis = -1;
      break;
    case 1:
      c.shape = {72, 6};
      op.blocking.axis = 0;
      break;
    default:
      c.shape = {512};
      op.blocking.axis = -1;
  }
  if (f == MxFormat::nvfp4) {
    switch (rng.below(8)) {
      case 0:
      case 1:
      case 2:
        break;  // from the tensor's amax
      case 3:
        op.blocking.global_scale = std::ldexp(1.0, static_cast<int>(rng.in(-30, 30)));
        break;
      case 4:
        op.blocking.global_scale =
            pick(rng, {0x1p-149, 0x1p-140, 0x1p127, 0x1.fffffep127, round_into(DType::f32, 1.0 / 2688)});
        break;
      default:
        op.blocking.global_scale =
            round_into(DType::f32, std::ldexp(1.0 + rng.uniform01(), static_cast<int>(rng.in(-40, 20))));
    }
  }
  const DType in = pick(rng, {DType::f32, DType::f32, DType::f16, DType::bf16});
  op.x = Tensor(in, c.shape);
  return c;
}

// Fills x block by block: each block picks a scale exponent and a kind.
void fill_blocks(SplitMix64& rng, Config& c) {
  MxQuantizeOp& op = c.op;
  const MxElement& e = mx_element(op.blocking.format);
  const DType in = op.x.dtype();
  const FloatLayout& il = info(in).fl;
  const int in_min = 1 - il.bias - il.mant_bits, in_max = max_exponent(il);  // smallest subnormal, largest binade
  QuantParams blocks;
  blocks.axis = op.blocking.axis;
  blocks.block_size = op.blocking.block_size;
  const ParamIndexer block_of(blocks, op.x.shape());
  const std::int64_t nblocks = numel(mx_scale_shape(op.blocking, op.x.shape()));
  const bool nvfp4 = op.blocking.format == MxFormat::nvfp4;
  // NVFP4: elements are placed against g * s8 for a power-of-two g (the scale given, or 1).
  const double g = op.blocking.global_scale ? *op.blocking.global_scale : 1.0;
  struct Plan {
    int kind = 0;
    double unit = 1;  // what element points are multiplied by
    double amax = 0;  // a value placed once in the block (0: none)
  };
  std::vector<Plan> plans(static_cast<std::size_t>(nblocks));
  for (Plan& p : plans) {
    p.kind = static_cast<int>(rng.below(16));
    int s = static_cast<int>(rng.in(-20, 20));
    if (p.kind == 1) s = pick(rng, {-127, -126, -125, -130, -140, 127 - e.emax, 126 - e.emax});  // E8M0 edges
    if (nvfp4) {
      const double s8 = float_bits_to_double(DType::f8e4m3fn, rng.in(8, 0x7E));
      p.unit = round_into(DType::f32, s8 * g * (p.kind == 2 ? std::ldexp(1.0, s) : 1.0));
      p.amax = p.unit * 6;
    } else {
      p.unit = std::ldexp(1.0, s);
      p.amax = amax_point(rng, e, s + e.emax + static_cast<int>(rng.in(-1, 1)));
    }
  }
  for (std::int64_t i = 0; i < op.x.size(); ++i) {
    Plan& p = plans[static_cast<std::size_t>(block_of(i))];
    double v = 0;
    switch (p.kind) {
      case 3:  // a zero block
        v = rng.below(2) ? 0.0 : -0.0;
        break;
      case 4:  // NaN or inf somewhere in the block
        v = rng.below(6) == 0 ? pick(rng, {kNaN, kInf, -kInf}) : element_point(rng, e) * p.unit;
        break;
      case 5:  // the input's own subnormals and smallest normals
        v = std::ldexp(static_cast<double>(rng.in(1, 1 << std::min(il.mant_bits + 1, 20))), in_min);
        break;
      case 6:  // any magnitude of the input format, log-uniform
        v = std::ldexp(1.0 + rng.uniform01(), static_cast<int>(rng.in(in_min, in_max)));
        break;
      default:
        if (p.amax != 0 && rng.below(8) == 0) {
          v = p.amax;
          p.amax = 0;
        } else {
          v = element_point(rng, e) * p.unit;
        }
    }
    if (rng.below(2)) v = -v;
    v = round_into(in, v);
    if (rng.below(3) == 0) v = ulps_away(in, v, static_cast<int>(rng.in(-2, 2)));
    op.x.set_double(i, v);
  }
}

// Runs on two threads until `budget` elements were compared; keeps the first failure.
struct Tally : test::FirstFailure {
  std::atomic<std::int64_t> compared{0}, fast{0}, tensors{0}, errors{0};
  std::array<std::atomic<std::int64_t>, kLabelCount> by_label{};
  std::array<std::atomic<std::int64_t>, 7 * 4 * 2> by_config{};  // format x rule x rounding
};

std::string describe(const MxQuantizeOp& op, std::int64_t i) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "x[%lld]=%a (%s), %s, rule %s, %s, block %lld, global %s", static_cast<long long>(i),
                op.x.get_double(i), std::string(name(op.x.dtype())).c_str(),
                std::string(name(op.blocking.format)).c_str(), std::string(name(op.scale_rule)).c_str(),
                std::string(name(op.element_rounding)).c_str(), static_cast<long long>(op.blocking.block_size),
                op.blocking.global_scale ? std::to_string(*op.blocking.global_scale).c_str() : "none");
  return buf;
}

void compare(const Config& c, Tally& tally) {
  const auto r = test::run_both_paths([&](OraclePath path) { return mx_quantize(c.op, path); });
  if (r.slow_error != r.fast_error) {
    tally.fail("errors differ: definition '" + r.slow_error + "', fast '" + r.fast_error + "'");
    return;
  }
  if (!r.slow_error.empty()) {
    ++tally.errors;
    return;
  }
  const MxQuantizeResult& s = r.slow;
  const MxQuantizeResult& f = r.fast;
  if (s.slow_elements != c.op.x.size()) {
    tally.fail("the definition counted " + std::to_string(s.slow_elements) + " slow elements");
    return;
  }
  if (s.global_scale != f.global_scale) {
    tally.fail("global scales differ: " + describe(c.op, 0));
    return;
  }
  for (std::int64_t k = 0; k < s.scales.size(); ++k)
    if (s.scales.bits(k) != f.scales.bits(k)) {
      char buf[80];
      std::snprintf(buf, sizeof buf, ": scale %lld fast 0x%02llx, definition 0x%02llx", static_cast<long long>(k),
                    static_cast<unsigned long long>(f.scales.bits(k)),
                    static_cast<unsigned long long>(s.scales.bits(k)));
      tally.fail(describe(c.op, 0) + buf);
      return;
    }
  for (std::int64_t i = 0; i < c.op.x.size(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (s.y.bits(i) != f.y.bits(i) || s.elements.bits(i) != f.elements.bits(i) || s.labels[u] != f.labels[u]) {
      char buf[200];
      std::snprintf(buf, sizeof buf, ": fast y 0x%08llx code 0x%02llx %s, definition y 0x%08llx code 0x%02llx %s",
                    static_cast<unsigned long long>(f.y.bits(i)), static_cast<unsigned long long>(f.elements.bits(i)),
                    std::string(name(f.labels[u])).c_str(), static_cast<unsigned long long>(s.y.bits(i)),
                    static_cast<unsigned long long>(s.elements.bits(i)), std::string(name(s.labels[u])).c_str());
      tally.fail(describe(c.op, i) + buf);
      return;
    }
  }
  for (const Label l : s.labels) ++tally.by_label[static_cast<std::size_t>(l)];
  tally.compared += c.op.x.size();
  tally.fast += c.op.x.size() - f.slow_elements;
  ++tally.tensors;
  tally.by_config[(static_cast<std::size_t>(c.op.blocking.format) * 4 + static_cast<std::size_t>(c.op.scale_rule)) * 2 +
                  (c.op.element_rounding == RoundingMode::rna ? 1 : 0)] += c.op.x.size();
}

TEST(MxProperty, QuantizeFastPathEqualsDefinition) {
  const std::int64_t budget = element_budget();
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  test::run_on_two_threads([&](std::uint64_t seed) {
    SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull + 0x6D78);
    while (!tally.failed && tally.compared.load() < budget) {
      Config c = random_config(rng);
      fill_blocks(rng, c);
      // Now and then an invalid op (MXINT8 with another rule, a non-f32 global scale, a rounding the
      // formats do not take): both paths must raise the same InputError.
      if (rng.below(64) == 0) {
        switch (rng.below(3)) {
          case 0:
            c.op.blocking.format = MxFormat::mxint8;
            c.op.scale_rule = MxScaleRule::ceil;
            break;
          case 1:
            c.op.blocking.format = MxFormat::nvfp4;
            c.op.blocking.global_scale = 0.1;
            break;
          default:
            c.op.element_rounding = RoundingMode::floor;
        }
      }
      // Now and then an NVFP4 tensor whose amax makes g zero or infinite (the definition decides).
      if (c.op.blocking.format == MxFormat::nvfp4 && !c.op.blocking.global_scale && rng.below(16) == 0) {
        const bool zeros = rng.below(2);
        for (std::int64_t i = 0; i < c.op.x.size(); ++i)
          if (zeros || rng.below(100) == 0) c.op.x.set_double(i, zeros ? 0.0 : kInf);
      }
      compare(c, tally);
    }
  });
  EXPECT_FALSE(tally.failed) << tally.first_failure;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  test::print_path_summary(tally.compared, tally.tensors + tally.errors, tally.errors, tally.fast, tally.by_label,
                           seconds);
  if (budget >= 1'000'000) {  // about 2500 tensors: every format, rule and rounding is met
    std::string missing;
    for (const MxFormat f : kFormats)
      for (const MxScaleRule rule : kRules)
        for (int m = 0; m < 2; ++m) {
          if (f == MxFormat::mxint8 && rule != MxScaleRule::floor) continue;
          if (tally
                  .by_config[(static_cast<std::size_t>(f) * 4 + static_cast<std::size_t>(rule)) * 2 +
                             static_cast<std::size_t>(m)]
                  .load() == 0)
            missing += " " + std::string(name(f)) + "/" + std::string(name(rule)) + (m ? "/rna" : "/rne");
        }
    EXPECT_TRUE(missing.empty()) << missing;
    for (const Label l : {Label::clear, Label::tie, Label::near_tie, Label::saturated, Label::special})
      EXPECT_GT(tally.by_label[static_cast<std::size_t>(l)].load(), 0) << name(l);
    EXPECT_GT(tally.errors.load(), 0);
  }
  EXPECT_GE(tally.compared.load(), budget);
  // Only NVFP4 tensors and blocks with an extreme or non-finite scale go to the definition.
  EXPECT_GT(tally.fast.load(), tally.compared.load() * 19 / 20);
}

TEST(MxProperty, DequantizeFastPathEqualsDefinition) {
  const std::int64_t budget = element_budget();
  std::atomic<std::int64_t> compared{0}, tensors{0}, errors{0};
  std::mutex mu;
  std::string first_failure;
  std::atomic<bool> failed{false};
  test::run_on_two_threads([&](std::uint64_t seed) {
    SplitMix64 rng(seed * 0x2545F4914F6CDD1Dull + 0x6D78);
    while (!failed && compared.load() < budget) {
      MxDequantizeOp op;
      const MxFormat f = kFormats[rng.below(std::size(kFormats))];
      op.blocking.format = f;
      op.blocking.block_size = pick(rng, {std::int64_t{32}, std::int64_t{16}, std::int64_t{7}});
      if (f == MxFormat::nvfp4)
        op.blocking.global_scale =
            pick(rng, {1.0, 0x1p-149, 0x1.fffffep127, 0x1p-20,
                       round_into(DType::f32, std::ldexp(1.0 + rng.uniform01(), static_cast<int>(rng.in(-60, 60))))});
      const int bits = mx_element(f).bits;
      op.elements = Tensor(DType::u8, {4, 64});
      for (std::int64_t i = 0; i < op.elements.size(); ++i)
        op.elements.set_bits(i, rng.below(std::uint64_t{1} << bits));
      if (rng.below(32) == 0 && bits < 8) op.elements.set_bits(3, std::uint64_t{1} << bits);  // too wide: an error
      op.scales = Tensor(DType::u8, mx_scale_shape(op.blocking, op.elements.shape()));
      for (std::int64_t k = 0; k < op.scales.size(); ++k)
        op.scales.set_bits(k,
                           rng.below(4) == 0 ? pick(rng, {0u, 1u, 0x7Eu, 0x7Fu, 0x80u, 0xFEu, 0xFFu}) : rng.below(256));
      const auto r = test::run_both_paths([&](OraclePath path) { return mx_dequantize(op, path); });
      std::string failure;
      if (r.slow_error != r.fast_error) failure = "errors differ: '" + r.slow_error + "' / '" + r.fast_error + "'";
      if (r.slow_error.empty() && failure.empty())
        for (std::int64_t i = 0; i < op.elements.size(); ++i)
          if (r.slow.bits(i) != r.fast.bits(i)) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "%s element 0x%02llx, scale 0x%02llx: fast 0x%08llx, definition 0x%08llx",
                          std::string(name(f)).c_str(), static_cast<unsigned long long>(op.elements.bits(i)),
                          static_cast<unsigned long long>(op.scales.bits(0)),
                          static_cast<unsigned long long>(r.fast.bits(i)),
                          static_cast<unsigned long long>(r.slow.bits(i)));
            failure = buf;
            break;
          }
      if (!failure.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_failure = failure;
        return;
      }
      if (!r.slow_error.empty()) ++errors;
      compared += op.elements.size();
      ++tensors;
    }
  });
  EXPECT_FALSE(failed) << first_failure;
  EXPECT_GE(compared.load(), budget);
  if (budget >= 1'000'000) {
    EXPECT_GT(errors.load(), 0);
  }
}

// ---- Hand-derived cases, through the fast path ------------------------------------------------
//
// OCP MX v1.0 6.3: X = 2^(floor(log2 amax) - emax_elem), clamped to 2^-127 (E8M0 code e + 127);
// P_i = V_i / X rounded to nearest even on the element grid, clamped to the largest magnitude.

MxQuantizeResult quantize_fast(const std::vector<double>& x, MxFormat f, RoundingMode m = RoundingMode::rne,
                               std::optional<double> global = std::nullopt) {
  MxQuantizeOp op;
  op.x = Tensor(DType::f32, {static_cast<std::int64_t>(x.size())});
  for (std::size_t i = 0; i < x.size(); ++i) op.x.set_double(static_cast<std::int64_t>(i), x[i]);
  op.blocking = {f, -1, f == MxFormat::nvfp4 ? 16 : 32, global};
  op.element_rounding = m;
  MxQuantizeResult r = mx_quantize(op, OraclePath::fast);
  EXPECT_EQ(r.slow_elements, 0);
  return r;
}

std::vector<double> values(const MxQuantizeResult& r) {
  std::vector<double> y;
  for (std::int64_t i = 0; i < r.y.size(); ++i) y.push_back(r.y.get_double(i));
  return y;
}
std::vector<std::uint64_t> codes(const MxQuantizeResult& r) {
  std::vector<std::uint64_t> c;
  for (std::int64_t i = 0; i < r.elements.size(); ++i) c.push_back(r.elements.bits(i));
  return c;
}

using V = std::vector<double>;
using C = std::vector<std::uint64_t>;
using L = std::vector<Label>;

TEST(MxFastPath, Mxfp6E3M2) {
  // E3M2: emax 4, emin -2, 2 fraction bits, max 1.75 * 2^4 = 28. amax 40: floor(log2 40) = 5, X = 2^(5-4)
  // = 2 (code 128). 40 / 2 = 20 = 1.01b * 2^4: code 0.111.01 = 0x1D (field 4 - (-2) + 1 = 7), exact.
  // 26 / 2 = 13 lies half-way between 12 = 1.10b * 2^3 (even) and 14 = 1.11b * 2^3: ties to even 12
  // (y 24, code 0.110.10 = 0x1A), away 14 (y 28, 0x1B). 27 / 2 = 13.5 -> 14 (y 28): 0.75 of a step, clear.
  const MxQuantizeResult r = quantize_fast({40, 26, 27, -26}, MxFormat::mxfp6_e3m2);
  EXPECT_EQ(r.scales.bits(0), 128u);
  EXPECT_EQ(values(r), (V{40, 24, 28, -24}));
  EXPECT_EQ(codes(r), (C{0x1D, 0x1A, 0x1B, 0x3A}));
  EXPECT_EQ(r.labels, (L{Label::clear, Label::tie, Label::clear, Label::tie}));
  EXPECT_EQ(values(quantize_fast({40, 26, -26}, MxFormat::mxfp6_e3m2, RoundingMode::rna)), (V{40, 28, -28}));
}

TEST(MxFastPath, Mxint8) {
  // MXINT8 (5.3.3): k * 2^-6, |k| <= 127, emax 0. amax 1.99: floor(log2) = 0, X = 1. 1.99 > 127/64 =
  // 1.984375 saturates (k 127, 0x7F). 0.5 + 2^-7 is k = 32.5: ties to even 32 (0x20); -1.5 is k = -96,
  // two's complement 0xA0.
  const MxQuantizeResult r = quantize_fast({1.99, 0.5 + 0x1p-7, -1.5, 0}, MxFormat::mxint8);
  EXPECT_EQ(r.scales.bits(0), 127u);
  EXPECT_EQ(values(r), (V{127.0 / 64, 0.5, -1.5, 0}));
  EXPECT_EQ(codes(r), (C{0x7F, 0x20, 0xA0, 0x00}));
  EXPECT_EQ(r.labels, (L{Label::saturated, Label::tie, Label::clear, Label::clear}));
}

TEST(MxFastPath, E8M0FloorClamp) {
  // MXFP4 (E2M1, emax 2) block of amax 2^-130 (an f32 subnormal): floor(log2) - 2 = -132 < -127, clamped:
  // X = 2^-127, code 0. 2^-130 / 2^-127 = 0.125, below half the smallest E2M1 step (0.5): 0, keeping x's
  // sign (-0: code 0x8).
  const MxQuantizeResult r = quantize_fast({0x1p-130, -0x1p-130}, MxFormat::mxfp4);
  EXPECT_EQ(r.scales.bits(0), 0u);
  EXPECT_EQ(r.y.bits(0), 0x00000000u);
  EXPECT_EQ(r.y.bits(1), 0x80000000u);
  EXPECT_EQ(codes(r), (C{0x0, 0x8}));
}

TEST(MxFastPath, NanInABlock) {
  // 6.3: a block holding NaN (or inf) gets the NaN scale 0xFF; every value of it is NaN.
  const MxQuantizeResult r = quantize_fast({1, kNaN, 3}, MxFormat::mxfp8_e4m3);
  EXPECT_EQ(r.scales.bits(0), 0xFFu);
  for (std::int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(r.y.get_double(i)));
  EXPECT_EQ(r.labels, (L{Label::special, Label::special, Label::special}));
}

TEST(MxFastPath, Nvfp4) {
  // NVFP4 with g = 1: amax 2688 = 6 * 448, so block_scale = 448 (E4M3 0x7E) and t = 448. 2240 / 448 = 5
  // lies half-way between 4 (E2M1 0.11.0 = 0x6, even) and 6 (0x7): 4, y 1792. 560 / 448 = 1.25 between
  // 1 (0x2) and 1.5 (0x3): 1, y 448.
  const MxQuantizeResult r = quantize_fast({2688, 2240, 560, -2688}, MxFormat::nvfp4, RoundingMode::rne, 1.0);
  EXPECT_EQ(r.scales.bits(0), 0x7Eu);
  EXPECT_EQ(values(r), (V{2688, 1792, 448, -2688}));
  EXPECT_EQ(codes(r), (C{0x7, 0x6, 0x2, 0xF}));
  EXPECT_EQ(r.labels, (L{Label::clear, Label::tie, Label::tie, Label::clear}));
}

}  // namespace mx_property
}  // namespace qc
