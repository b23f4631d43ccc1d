// The fast quantize path against the slow (Boost.Multiprecision rational) path on random and
// adversarial elements: values, labels and "specified" flags must agree bit for bit, under
// random policies (every order, rounding mode, clamp, compute format the fast path takes),
// formats, scales and zero points.
//
// Budget: test::element_budget() elements (tests/oracle/both_paths.hpp) on 2 threads.
#include "cases/generators.hpp"
#include "oracles/quantize.hpp"
#include "tests/oracle/both_paths.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace qc {
namespace {

using test::element_budget;
using test::pick;

// A float of format t with random bits: every class of value (NaN, inf, subnormal, huge).
double random_bits_value(SplitMix64& rng, DType t) {
  const std::uint64_t bits = rng.next() & ((info(t).bits == 64) ? ~0ull : ((1ull << info(t).bits) - 1));
  return float_bits_to_double(t, bits);
}

// x near (k + 1/2) * s or near the saturation edges: ties, near ties and their neighbours.
double adversarial_value(SplitMix64& rng, DType t, double s, std::int64_t zp, DType out) {
  const double lo = static_cast<double>(int_min(out) - zp), hi = static_cast<double>(int_max(out) - zp);
  double target;
  switch (rng.below(4)) {
    case 0:
      target = (std::floor(lo + (hi - lo) * rng.uniform01()) + 0.5) * s;
      break;  // a tie
    case 1:
      target = (rng.below(2) ? lo - 0.5 : hi + 0.5) * s;
      break;  // saturation edge
    case 2:
      target = (std::floor(lo + (hi - lo) * rng.uniform01()) + rng.uniform01()) * s;
      break;
    default:
      target = (static_cast<double>(rng.below(7)) - 3.0 + 0.5) * s;
      break;  // small ties
  }
  double v = round_into(t, target);
  // Step a few ulps of t either way.
  const int steps = static_cast<int>(rng.below(5)) - 2;
  for (int i = 0; i < std::abs(steps); ++i) {
    const double toward = steps > 0 ? INFINITY : -INFINITY;
    v = t == DType::f32 ? std::nextafter(static_cast<float>(v), static_cast<float>(toward)) : std::nextafter(v, toward);
    v = round_into(t, v);
  }
  return v;
}

struct Config {
  DType in, out, scale_dtype;
  QuantizePolicy pol;
  QuantParams params;
  Shape shape;
};

Config random_config(SplitMix64& rng) {
  Config c;
  c.in = pick(rng, {DType::f32, DType::f32, DType::f32, DType::f64, DType::f16, DType::bf16});
  c.out = pick(rng, {DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i4, DType::u4});
  c.scale_dtype = pick(rng, {DType::f32, DType::f32, DType::f64, DType::f16, DType::bf16});
  c.pol.order = pick(rng, {QuantizeOrder::div_then_add_int, QuantizeOrder::div_add_float,
                           QuantizeOrder::recip_then_add_int, QuantizeOrder::recip_add_float, QuantizeOrder::fma_recip,
                           QuantizeOrder::round_then_add_float, QuantizeOrder::recip_round_then_add_float});
  using K = ComputeFormat::Kind;
  c.pol.compute = {pick(rng, {K::scale_type, K::input_type, K::f32, K::f64, K::f16, K::bf16, K::exact, K::exact}), 0};
  c.pol.rounding = kAllRoundingModes[rng.below(kAllRoundingModes.size())];
  c.pol.clamp = pick(rng, {Clamp::int_after, Clamp::int_after, Clamp::float_before, Clamp::wrap});
  c.pol.narrow_range = rng.below(8) == 0;
  c.pol.nan = pick(rng, {NanRule::unspecified, NanRule::to_qmin, NanRule::to_qmax, NanRule::to_zero_point,
                         NanRule::to_qmax_signed_qmin_unsigned});
  c.pol.cast = pick(rng, {IntCast::exact, IntCast::exact, IntCast::x86_int32, IntCast::x86_int64});
  if (rng.below(10) == 0) c.pol.clip = std::pair<std::int64_t, std::int64_t>{int_min(c.out) / 2, int_max(c.out) / 2};
  const bool per_axis = rng.below(4) == 0;
  c.shape = per_axis ? Shape{8, 512} : Shape{4096};
  const std::size_t nparams = per_axis ? 8 : 1;
  if (per_axis) c.params.axis = 0;
  c.params.scale_dtype = c.scale_dtype;
  for (std::size_t k = 0; k < nparams; ++k) {
    // Scales across many binades, with random mantissas (reciprocal-sensitive) or powers of two.
    // (f16 scales within its normal range).
    const int e =
        c.scale_dtype == DType::f16 ? static_cast<int>(rng.below(24)) - 14 : static_cast<int>(rng.below(40)) - 30;
    const double m = rng.below(4) == 0 ? 1.0 : 1.0 + rng.uniform01();
    c.params.scales.push_back(round_into(c.scale_dtype, std::ldexp(m, e)));
    const std::int64_t lo = int_min(c.out), hi = int_max(c.out);
    const std::int64_t zp =
        rng.below(3) == 0 ? 0 : lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
    c.params.zero_points.push_back(zp);
  }
  return c;
}

Tensor random_input(SplitMix64& rng, const Config& c) {
  Tensor x(c.in, c.shape);
  const ParamIndexer index(c.params, c.shape);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t k = index(i);
    double v;
    switch (rng.below(8)) {
      case 0:
        v = random_bits_value(rng, c.in);
        break;
      case 1:
        v = round_into(c.in, (rng.uniform01() - 0.5) * 1e3 * c.params.scales[static_cast<std::size_t>(k)]);
        break;
      default:
        v = adversarial_value(rng, c.in, c.params.scales[static_cast<std::size_t>(k)], c.params.zero_point(k), c.out);
    }
    x.set_double(i, v);
  }
  return x;
}

TEST(QuantizeProperty, FastPathEqualsSlowPath) {
  const std::int64_t budget = element_budget();
  std::atomic<std::int64_t> done{0}, fast_elements{0};
  std::mutex m;
  std::string first_failure;
  std::atomic<bool> failed{false};
  auto worker = [&](std::uint64_t seed) {
    SplitMix64 rng(seed);
    while (!failed && done.fetch_add(4096) < budget) {
      const Config c = random_config(rng);
      const Tensor x = random_input(rng, c);
      const QuantizeResult fast = quantize(x, c.params, c.out, c.pol, OraclePath::fast, true);
      const QuantizeResult slow = quantize(x, c.params, c.out, c.pol, OraclePath::slow, true);
      fast_elements += x.size() - fast.slow_elements;
      for (std::int64_t i = 0; i < x.size(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (fast.q.get_int(i) != slow.q.get_int(i) || fast.labels[u] != slow.labels[u] ||
            fast.specified[u] != slow.specified[u]) {
          std::lock_guard<std::mutex> lock(m);
          if (!failed.exchange(true)) {
            const std::int64_t k = ParamIndexer(c.params, c.shape)(i);
            first_failure =
                "x=" + std::to_string(x.get_double(i)) + " (" + to_hexfloat(Rational(x.get_double(i))) + ") in " +
                std::string(name(c.in)) + ", s=" + to_hexfloat(Rational(c.params.scales[static_cast<std::size_t>(k)])) +
                ", zp=" + std::to_string(c.params.zero_point(k)) + ", out=" + std::string(name(c.out)) +
                ", order=" + std::string(name(c.pol.order)) + ", compute=" + to_string(c.pol.compute) +
                ", rounding=" + std::string(name(c.pol.rounding)) + ", clamp=" + std::string(name(c.pol.clamp)) +
                ": fast " + std::to_string(fast.q.get_int(i)) + "/" + std::string(name(fast.labels[u])) + ", slow " +
                std::to_string(slow.q.get_int(i)) + "/" + std::string(name(slow.labels[u]));
          }
          return;
        }
      }
    }
  };
  test::run_on_two_threads(worker);
  EXPECT_FALSE(failed) << first_failure;
  std::printf("checked %lld elements, %lld of them on the fast path\n",
              static_cast<long long>(std::min(done.load(), budget)), static_cast<long long>(fast_elements.load()));
  // The fast path must actually have been exercised.
  EXPECT_GT(fast_elements.load(), budget / 2);
}

}  // namespace
}  // namespace qc
