// The float8 fast paths (oracles/fp8.cpp) against their definitions, quantize_to_float8_element and
// dequantize_from_float8_element (every step on exact rationals), on random and adversarial inputs:
// output bit patterns and labels must agree. Quantize: both float8 formats, saturate on and off, every
// order (divide and reciprocal), every compute format (exact, f64, f32, f16, bf16, scale_type,
// input_type, and fixed64, which the fast path leaves to the definition), inputs in f32, f64, f16 and
// bf16, scales across binades (powers of two and random significands), per-tensor, per-axis and
// blocked parameters; values x = m * s for m a float8 midpoint, the overflow threshold, the largest
// finite value, a near-tie band edge or a midpoint of the compute format, each rounded into the input
// format and moved one or two of its ulps either way; subnormals of float8 and of the input; NaN, +-inf
// and +-0. Dequantize: every code of both formats, scales as above, every compute format and float
// output. The hand-derived cases at the end run through the fast path and say how each value follows
// from the OCP 8-bit floating point definitions and ONNX Cast's float8 table.
//
// Budget: test::element_budget() elements per op (tests/oracle/both_paths.hpp) on 2 threads.
#include "cases/generators.hpp"
#include "oracles/fp8.hpp"
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
#include <string>
#include <vector>

namespace qc {
namespace fp8_property {

using test::element_budget;
using test::pick;
using K = ComputeFormat::Kind;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Config {
  DType in = DType::f32, out = DType::f8e4m3fn;
  bool saturate = true;
  QuantizePolicy quantize;
  DequantizePolicy dequantize;
  QuantParams params;
  Shape shape;
};

void random_params(SplitMix64& rng, Config& c) {
  QuantParams& p = c.params;
  p.scale_dtype = pick(rng, {DType::f32, DType::f32, DType::f32, DType::f64, DType::f16, DType::bf16});
  std::size_t count = 1;
  switch (rng.below(5)) {
    case 0:
      c.shape = {8, 256};
      p.axis = 0;
      count = 8;
      break;
    case 1:
      c.shape = {8, 256};
      p.axis = 1;
      p.block_size = 96;  // 3 blocks per row, the last short
      count = 8 * 3;
      break;
    default:
      c.shape = {2048};
  }
  const bool f16 = p.scale_dtype == DType::f16;
  for (std::size_t k = 0; k < count; ++k) {
    const int e = static_cast<int>(rng.in(f16 ? -14 : -30, f16 ? 12 : 30));
    const double m = rng.below(3) == 0 ? 1.0
                     : rng.below(2)    ? 1.0 + static_cast<double>(rng.below(8)) / 8.0
                                       : 1.0 + rng.uniform01();
    double s = round_into(p.scale_dtype, std::ldexp(m, e));
    if (!(s > 0) || !std::isfinite(s)) s = 1.0;
    p.scales.push_back(s);
  }
  if (rng.below(4) == 0) p.zero_points.assign(count, 0);  // a float8 zero point may be given, as 0
}

Config random_config(SplitMix64& rng) {
  Config c;
  c.in = pick(rng, {DType::f32, DType::f32, DType::f32, DType::f64, DType::f16, DType::bf16});
  c.out = pick(rng, {DType::f8e4m3fn, DType::f8e5m2});
  c.saturate = rng.below(2) == 0;
  c.quantize.order =
      pick(rng, {QuantizeOrder::div_then_add_int, QuantizeOrder::div_add_float, QuantizeOrder::recip_then_add_int,
                 QuantizeOrder::recip_add_float, QuantizeOrder::fma_recip, QuantizeOrder::round_then_add_float,
                 QuantizeOrder::recip_round_then_add_float});
  c.quantize.compute = {pick(rng, {K::exact, K::exact, K::f64, K::f32, K::f32, K::f16, K::f16, K::bf16, K::bf16,
                                   K::scale_type, K::input_type, K::fixed64}),
                        0};
  if (c.quantize.compute.kind == K::fixed64) c.quantize.compute.frac_bits = 24;
  random_params(rng, c);
  return c;
}

// v moved by `steps` units in the last place of format t (through its bit patterns; across zero, a
// step off -0 goes to the smallest negative subnormal).
double ulps_away(DType t, double v, int steps) {
  if (steps == 0 || !std::isfinite(v)) return v;
  const FloatLayout& l = info(t).fl;
  std::uint64_t b = double_to_float_bits(t, v);
  const bool neg = (b & sign_mask(l)) != 0;
  const std::uint64_t mag = b & (sign_mask(l) - 1);
  // Moving toward +inf grows a positive magnitude and shrinks a negative one.
  const bool grow = (steps > 0) != neg;
  const auto n = static_cast<std::uint64_t>(std::abs(steps));
  if (!grow && mag < n) return neg ? float_bits_to_double(t, n - mag) : -float_bits_to_double(t, n - mag);
  b = (b & sign_mask(l)) | (grow ? mag + n : mag - n);
  return float_bits_to_double(t, b);
}

// A point where some decision of the cast or of the compute format's rounding changes, in units of
// the scale: an output midpoint, the overflow threshold (max + half a step), the largest finite value,
// a near-tie band edge, or a midpoint of the compute format.
double decision_point(SplitMix64& rng, const Config& c) {
  const FloatLayout& l = info(c.out).fl;
  const double max = std::ldexp(static_cast<double>(max_significand(l)), max_exponent(l) - l.mant_bits);
  const int emin = 1 - l.bias, emax = max_exponent(l);
  const int e = static_cast<int>(rng.in(emin - 2, emax));
  const double step = std::ldexp(1.0, std::max(e, emin) - l.mant_bits);
  const double grid = std::ldexp(1.0, e) + step * static_cast<double>(rng.below(std::uint64_t{1} << l.mant_bits));
  switch (rng.below(7)) {
    case 0:
      return max + std::ldexp(1.0, emax - l.mant_bits - 1);  // the overflow threshold
    case 1:
      return max;
    case 2:
      return grid + step / 2 + pick(rng, {-1.0, 1.0}) * step / 1024;  // a near-tie band edge
    case 3: {
      // A midpoint of an IEEE compute format near a float8 midpoint: the double-rounding hazard.
      const DType a = pick(rng, {DType::f16, DType::bf16, DType::f32});
      const FloatLayout& al = info(a).fl;
      const double astep = std::ldexp(1.0, std::max(std::ilogb(grid), 1 - al.bias) - al.mant_bits);
      return grid + step / 2 + astep * static_cast<double>(rng.in(-2, 2)) + astep / 2;
    }
    default:
      return grid + step / 2;  // a float8 midpoint (below the smallest subnormal for e < emin)
  }
}

double random_x(SplitMix64& rng, const Config& c, double s) {
  switch (rng.below(12)) {
    case 0:
      return pick(rng, {std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, 0.0, -0.0});
    case 1: {  // the input's own subnormals and smallest normals
      const FloatLayout& l = info(c.in).fl;
      const double tiny = std::ldexp(1.0, 1 - l.bias - l.mant_bits);
      return (rng.below(2) ? 1 : -1) * tiny * static_cast<double>(rng.in(1, 1 << std::min(l.mant_bits + 1, 20)));
    }
    case 2:
    case 3: {  // uniform over the output's range, and past it
      const double max = c.out == DType::f8e4m3fn ? 448.0 : 57344.0;
      return round_into(c.in, (rng.uniform01() * 2.4 - 1.2) * max * s);
    }
    case 4: {  // any magnitude the output meets, log-uniform
      const double m = std::ldexp(1.0 + rng.uniform01(), static_cast<int>(rng.in(-20, 17)));
      return round_into(c.in, (rng.below(2) ? m : -m) * s);
    }
    default: {  // a decision point times s, rounded into the input format, then a few ulps either way
      const double m = decision_point(rng, c);
      const double x = round_into(c.in, (rng.below(2) ? m : -m) * s);
      return ulps_away(c.in, x, static_cast<int>(rng.in(-2, 2)));
    }
  }
}

std::string describe_quantize(const Config& c, double x, double s) {
  return "x=" + (std::isfinite(x) ? to_hexfloat(Rational(x)) : std::to_string(x)) + " (" + std::string(name(c.in)) +
         "), s=" + to_hexfloat(Rational(s)) + " (" + std::string(name(c.params.scale_dtype)) +
         "), out=" + std::string(name(c.out)) + (c.saturate ? " saturate" : " no saturation") +
         ", order=" + std::string(name(c.quantize.order)) + ", compute=" + to_string(c.quantize.compute);
}

// Runs `check(rng, failure)` on two threads until `budget` elements were compared; returns the first failure.
struct Tally : test::FirstFailure {
  std::atomic<std::int64_t> compared{0}, fast{0}, tensors{0};
  std::array<std::atomic<std::int64_t>, kLabelCount> by_label{};
  void count(const std::vector<Label>& labels, std::int64_t slow_elements) {
    for (const Label l : labels) ++by_label[static_cast<std::size_t>(l)];
    compared += static_cast<std::int64_t>(labels.size());
    fast += static_cast<std::int64_t>(labels.size()) - slow_elements;
    ++tensors;
  }
};

TEST(Float8Property, QuantizeFastPathEqualsDefinition) {
  const std::int64_t budget = element_budget();
  Tally tally;
  std::array<std::atomic<std::int64_t>, 8> by_compute{}, by_order{};
  std::array<std::atomic<std::int64_t>, 4> by_format{};  // out x saturate
  const auto start = std::chrono::steady_clock::now();
  test::run_on_two_threads([&](std::uint64_t seed) {
    SplitMix64 rng(seed * 0x5851F42D4C957F2Dull);
    while (!tally.failed && tally.compared.load() < budget) {
      const Config c = random_config(rng);
      Tensor x(c.in, c.shape);
      const ParamIndexer index(c.params, c.shape);
      for (std::int64_t i = 0; i < x.size(); ++i)
        x.set_double(i, random_x(rng, c, c.params.scales[static_cast<std::size_t>(index(i))]));
      const QuantizeResult fast =
          quantize_to_float8(x, c.params, c.out, c.saturate, c.quantize, true, OraclePath::fast);
      const QuantizeResult slow =
          quantize_to_float8(x, c.params, c.out, c.saturate, c.quantize, true, OraclePath::slow);
      if (slow.slow_elements != x.size()) {
        tally.fail("the slow path counted " + std::to_string(slow.slow_elements) + " of " + std::to_string(x.size()));
        return;
      }
      for (std::int64_t i = 0; i < x.size(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (fast.q.bits(i) != slow.q.bits(i) || fast.labels[u] != slow.labels[u]) {
          char buf[160];
          std::snprintf(buf, sizeof buf, ": fast 0x%02llx/%s, definition 0x%02llx/%s",
                        static_cast<unsigned long long>(fast.q.bits(i)), std::string(name(fast.labels[u])).c_str(),
                        static_cast<unsigned long long>(slow.q.bits(i)), std::string(name(slow.labels[u])).c_str());
          tally.fail(describe_quantize(c, x.get_double(i), c.params.scales[static_cast<std::size_t>(index(i))]) + buf);
          return;
        }
      }
      tally.count(slow.labels, fast.slow_elements);
      by_compute[static_cast<std::size_t>(c.quantize.compute.kind)] += x.size();
      by_order[static_cast<std::size_t>(c.quantize.order)] += x.size();
      by_format[(c.out == DType::f8e5m2 ? 2u : 0u) + (c.saturate ? 1u : 0u)] += x.size();
    }
  });
  EXPECT_FALSE(tally.failed) << tally.first_failure;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  test::print_path_summary(tally.compared, tally.tensors, 0, tally.fast, tally.by_label, seconds);
  std::string missing;
  for (const auto k : {K::exact, K::f64, K::f32, K::f16, K::bf16, K::scale_type, K::input_type, K::fixed64})
    if (by_compute[static_cast<std::size_t>(k)].load() == 0) missing += " compute " + to_string(ComputeFormat{k, 0});
  for (const auto& e : kQuantizeOrderTable)
    if (by_order[static_cast<std::size_t>(e.value)].load() == 0) missing += " order " + std::string(e.name);
  for (std::size_t f = 0; f < by_format.size(); ++f)
    if (by_format[f].load() == 0) missing += " format/saturate " + std::to_string(f);
  if (budget >= 1'000'000) {  // about 500 tensors: every choice is met
    EXPECT_TRUE(missing.empty()) << missing;
    // Every label the definition gives was met, so each of the fast path's label rules was compared.
    for (const Label l : {Label::clear, Label::tie, Label::near_tie, Label::saturated, Label::special})
      EXPECT_GT(tally.by_label[static_cast<std::size_t>(l)].load(), 0) << name(l);
  }
  EXPECT_GE(tally.compared.load(), budget);
  // The fast path decides nearly everything itself: only fixed64 compute (1 config in 12) and values
  // outside its ranges go to the definition.
  EXPECT_GT(tally.fast.load(), tally.compared.load() * 4 / 5);
}

TEST(Float8Property, DequantizeFastPathEqualsDefinition) {
  const std::int64_t budget = element_budget();
  Tally tally;
  std::array<std::atomic<std::int64_t>, 8> by_compute{};
  const auto start = std::chrono::steady_clock::now();
  test::run_on_two_threads([&](std::uint64_t seed) {
    SplitMix64 rng(seed * 0x2545F4914F6CDD1Dull);
    while (!tally.failed && tally.compared.load() < budget) {
      Config c;
      const DType in = pick(rng, {DType::f8e4m3fn, DType::f8e5m2});
      c.out = pick(rng, {DType::f32, DType::f32, DType::f16, DType::bf16, DType::f64, DType::f8e4m3fn, DType::f8e5m2});
      c.dequantize.compute = {
          pick(rng, {K::f32, K::f32, K::exact, K::f64, K::f16, K::bf16, K::scale_type, K::input_type, K::fixed64}), 0};
      if (c.dequantize.compute.kind == K::fixed64) c.dequantize.compute.frac_bits = 30;
      random_params(rng, c);
      Tensor q(in, c.shape);
      for (std::int64_t i = 0; i < q.size(); ++i) q.set_bits(i, rng.below(256));  // every code, NaN and inf included
      const DequantizeResult fast = dequantize_from_float8(q, c.params, c.out, c.dequantize, true, OraclePath::fast);
      const DequantizeResult slow = dequantize_from_float8(q, c.params, c.out, c.dequantize, true, OraclePath::slow);
      const ParamIndexer index(c.params, c.shape);
      for (std::int64_t i = 0; i < q.size(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (fast.y.bits(i) != slow.y.bits(i) || fast.labels[u] != slow.labels[u]) {
          char buf[200];
          std::snprintf(buf, sizeof buf,
                        "q=0x%02llx (%s), s=%a, out=%s, compute=%s: fast 0x%llx/%s, definition 0x%llx/%s",
                        static_cast<unsigned long long>(q.bits(i)), std::string(name(in)).c_str(),
                        c.params.scales[static_cast<std::size_t>(index(i))], std::string(name(c.out)).c_str(),
                        to_string(c.dequantize.compute).c_str(), static_cast<unsigned long long>(fast.y.bits(i)),
                        std::string(name(fast.labels[u])).c_str(), static_cast<unsigned long long>(slow.y.bits(i)),
                        std::string(name(slow.labels[u])).c_str());
          tally.fail(buf);
          return;
        }
      }
      tally.count(slow.labels, fast.slow_elements);
      by_compute[static_cast<std::size_t>(c.dequantize.compute.kind)] += q.size();
    }
  });
  EXPECT_FALSE(tally.failed) << tally.first_failure;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  test::print_path_summary(tally.compared, tally.tensors, 0, tally.fast, tally.by_label, seconds);
  if (budget >= 1'000'000) {
    for (const auto k : {K::exact, K::f64, K::f32, K::f16, K::bf16, K::scale_type, K::input_type, K::fixed64})
      EXPECT_GT(by_compute[static_cast<std::size_t>(k)].load(), 0) << to_string(ComputeFormat{k, 0});
    for (const Label l : {Label::clear, Label::tie, Label::near_tie, Label::saturated, Label::special})
      EXPECT_GT(tally.by_label[static_cast<std::size_t>(l)].load(), 0) << name(l);
  }
  EXPECT_GE(tally.compared.load(), budget);
  EXPECT_GT(tally.fast.load(), tally.compared.load() * 4 / 5);  // fixed64 (1 in 9) goes to the definition
}

// ---- Hand-derived cases, through the fast path ------------------------------------------------
//
// E4M3FN (OCP 8-bit FP, ONNX float8e4m3fn): bias 7, 3 fraction bits, no inf, S.1111.111 is NaN
// (0x7F), largest 1.110b * 2^8 = 448 (0x7E); subnormals k * 2^-9. A value 1.fff * 2^e is
// S.(e+7).fff: 0.5 = 0.0110.000 = 0x30, 1.0 = 0x38, 1.125 = 0x39.
// E5M2: bias 15, 2 fraction bits, IEEE inf 0x7C, largest 1.11b * 2^15 = 57344 (0x7B); subnormals
// k * 2^-16.

struct Case {
  double x, s;
  std::uint64_t bits;
  Label label;
};

void expect_fast(DType out, bool saturate, K compute, std::initializer_list<Case> cases, DType in = DType::f32) {
  Tensor x(in, {static_cast<std::int64_t>(cases.size())});
  QuantParams p;
  p.scale_dtype = DType::f32;
  p.axis = 0;  // a scale per element
  for (const Case& c : cases) {
    x.set_double(static_cast<std::int64_t>(p.scales.size()), c.x);
    p.scales.push_back(c.s);
  }
  QuantizePolicy pol;
  pol.compute = {compute, 0};
  const QuantizeResult r = quantize_to_float8(x, p, out, saturate, pol, true, OraclePath::fast);
  EXPECT_EQ(r.slow_elements, 0);
  std::int64_t i = 0;
  for (const Case& c : cases) {
    EXPECT_EQ(r.q.bits(i), c.bits) << "x=" << c.x << " s=" << c.s << " " << name(out);
    EXPECT_EQ(r.labels[static_cast<std::size_t>(i)], c.label) << "x=" << c.x << " s=" << c.s << " " << name(out);
    ++i;
  }
}

TEST(Float8FastPath, TiesAndNearTies) {
  // [0.5, 1) in E4M3 has step 2^-4: 0.5 * (1 + 1/16) = 0.53125 lies half-way between 0.5 (0x30, fraction
  // 000, even) and 0.5625 (0x31): a tie, to 0x30. One f32 ulp (2^-24) above, it rounds up to 0x31 and lies
  // 2^-24 / 2^-4 = 2^-20 of a step from the midpoint: near_tie.
  // [1, 2) has step 1/8, midpoint 1.0625, near-tie band +-2^-13 (1/1024 of a step). 3 * (1.0625 + 2^-13)
  // is exact in f32 (15 significant bits); divided by 3 it is the band's upper edge exactly (near_tie,
  // above the midpoint: 0x39). The next f32 up, 2^-22 higher, gives 2^-22 / 3 past the edge: clear; the
  // f32 below is inside: near_tie. (Quotients within a double of an edge come from f64 inputs: the
  // property test above meets them.)
  const double edge3 = 3 * (1.0625 + 0x1p-13);
  expect_fast(DType::f8e4m3fn, true, K::exact,
              {{0.53125, 1.0, 0x30, Label::tie},
               {0.53125 + 0x1p-24, 1.0, 0x31, Label::near_tie},
               {-0.53125, 1.0, 0xB0, Label::tie},
               {edge3, 3.0, 0x39, Label::near_tie},
               {edge3 + 0x1p-22, 3.0, 0x39, Label::clear},
               {edge3 - 0x1p-22, 3.0, 0x39, Label::near_tie},
               {1.0625 - 0x1p-13, 1.0, 0x38, Label::near_tie}});
  // E5M2, step 1/4 on [1, 2): 1.125 is half-way between 1.0 (0x3C, even) and 1.25 (0x3D).
  expect_fast(DType::f8e5m2, true, K::exact, {{1.125, 1.0, 0x3C, Label::tie}, {2.25, 2.0, 0x3C, Label::tie}});
}

TEST(Float8FastPath, ComputeFormatRoundsFirst) {
  // x / s = 1.0625 + 2^-12: exactly, above E4M3's midpoint 1.0625, so 1.125 (0x39); 2^-12 / 2^-3 = 2^-9
  // of a step away: clear. In f16 (step 2^-10 on [1, 2)) it is a quarter step above 1.0625, which f16
  // keeps; the cast then meets the tie and goes to the even 1.0 (0x38). f32 holds it exactly: 0x39.
  const double x = 1.0625 + 0x1p-12;
  expect_fast(DType::f8e4m3fn, true, K::exact, {{x, 1.0, 0x39, Label::clear}});
  expect_fast(DType::f8e4m3fn, true, K::f16, {{x, 1.0, 0x38, Label::clear}, {3 * x, 3.0, 0x38, Label::clear}});
  expect_fast(DType::f8e4m3fn, true, K::f32, {{x, 1.0, 0x39, Label::clear}});
  // 1.0625 + 2^-11 is an f16 midpoint, between 1.0625 (fraction ...0, even: kept) and 1.0625 + 2^-10; f16
  // gives 1.0625 and the cast the tie's even 0x38. 2^-23 higher (the next f32) f16 rounds up, and the
  // cast to 0x39. Exactly both are above the midpoint by 2^-11 / 2^-3 = 2^-8 of a step or more: clear.
  expect_fast(DType::f8e4m3fn, true, K::f16,
              {{1.0625 + 0x1p-11, 1.0, 0x38, Label::clear}, {1.0625 + 0x1p-11 + 0x1p-23, 1.0, 0x39, Label::clear}});
  // bf16 (8 significant bits, step 2^-7 on [1, 2)): 1.0625 + 2^-9 is a quarter step above 1.0625 -> 1.0625,
  // then the tie -> 0x38.
  expect_fast(DType::f8e4m3fn, true, K::bf16, {{1.0625 + 0x1p-9, 1.0, 0x38, Label::clear}});
}

TEST(Float8FastPath, OverflowAndSpecials) {
  // E4M3's grid continues past 448 = 1.110b * 2^8 to 480 = 1.111b * 2^8 (a NaN code), so 464 is the
  // midpoint: ties to even keep 448 (fraction 110), and |x/s| > 448 with y = 448 is `saturated`. The next
  // f32 above 464 (2^-15 higher) rounds to 480: past the largest value, +-448 when saturating (0x7E,
  // 0xFE), else NaN keeping the sign (ORT Float8E4M3FN: 0x7F, 0xFF).
  const double above = 464 + 0x1p-15;
  expect_fast(DType::f8e4m3fn, true, K::exact,
              {{464, 1.0, 0x7E, Label::saturated},
               {above, 1.0, 0x7E, Label::saturated},
               {-above, 1.0, 0xFE, Label::saturated},
               {448, 1.0, 0x7E, Label::clear},
               {kInf, 1.0, 0x7E, Label::special},
               {-kInf, 1.0, 0xFE, Label::special},
               {std::numeric_limits<double>::quiet_NaN(), 1.0, 0x7F, Label::special}});
  expect_fast(DType::f8e4m3fn, false, K::exact,
              {{464, 1.0, 0x7E, Label::saturated},
               {above, 1.0, 0x7F, Label::saturated},
               {-above, 1.0, 0xFF, Label::saturated},
               {kInf, 1.0, 0x7F, Label::special},
               {-kInf, 1.0, 0xFF, Label::special}});
  // E5M2: 61440 is half-way between 57344 = 1.11b * 2^15 (odd fraction) and 2^16 (even, past the range):
  // ties to even overflow, to +inf (0x7C) or +57344 (0x7B). The f32 below (2^-8 lower) stays at 57344.
  expect_fast(DType::f8e5m2, false, K::exact,
              {{61440, 1.0, 0x7C, Label::saturated},
               {-61440, 1.0, 0xFC, Label::saturated},
               {61440 - 0x1p-8, 1.0, 0x7B, Label::saturated},
               {-kInf, 1.0, 0xFC, Label::special}});
  expect_fast(DType::f8e5m2, true, K::exact, {{61440, 1.0, 0x7B, Label::saturated}});
}

TEST(Float8FastPath, Subnormals) {
  // E4M3's subnormal step is 2^-9: 3 * 2^-10 = 1.5 steps is a tie between 1 (odd) and 2 (even): 0x02.
  // E5M2's smallest subnormal is 2^-16: 2^-17 is half-way between 0 (even) and it: +-0 (0x00, 0x80).
  expect_fast(DType::f8e4m3fn, true, K::exact, {{3 * 0x1p-10, 1.0, 0x02, Label::tie}});
  expect_fast(DType::f8e5m2, true, K::exact,
              {{0x1p-17, 1.0, 0x00, Label::tie}, {-0x1p-17, 1.0, 0x80, Label::tie}, {-0.0, 1.0, 0x80, Label::clear}});
  // f32 subnormal input: 2^-140 / 2^-130 = 2^-10, E4M3's half subnormal step: the tie goes to 0.
  expect_fast(DType::f8e4m3fn, true, K::f32, {{0x1p-140, 0x1p-130, 0x00, Label::tie}});
}

TEST(Float8FastPath, Dequantize) {
  // E4M3 0x01 is 2^-9; times 2^-16 it is 2^-25, half of f16's smallest subnormal 2^-24: a tie between 0
  // (even) and 2^-24, so +0 (0x0000), and 0x81 gives -0 (0x8000). 0x7E = 448 times 2^8 = 114688 is
  // past f16's largest 65504 (and its overflow threshold 65520): inf (0x7C00), saturated. 0x7F is NaN:
  // f16's canonical NaN 0x7E00, special.
  Tensor q(DType::f8e4m3fn, {4});
  q.set_bits(0, 0x01);
  q.set_bits(1, 0x81);
  q.set_bits(2, 0x7E);
  q.set_bits(3, 0x7F);
  QuantParams p;
  p.scale_dtype = DType::f32;
  p.axis = 0;
  p.scales = {0x1p-16, 0x1p-16, 0x1p8, 1.0};
  DequantizePolicy pol;
  const DequantizeResult r = dequantize_from_float8(q, p, DType::f16, pol, true, OraclePath::fast);
  EXPECT_EQ(r.slow_elements, 0);
  EXPECT_EQ(r.y.bits(0), 0x0000u);
  EXPECT_EQ(r.y.bits(1), 0x8000u);
  EXPECT_EQ(r.y.bits(2), 0x7C00u);
  EXPECT_EQ(r.y.bits(3), 0x7E00u);
  EXPECT_EQ(r.labels, (std::vector<Label>{Label::tie, Label::tie, Label::saturated, Label::special}));
}

}  // namespace fp8_property
}  // namespace qc
