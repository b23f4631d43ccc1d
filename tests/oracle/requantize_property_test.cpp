// The fast requantize path against the slow path (requantize_element: exact rationals for the
// ideal value, the float recipes and the labels) on random and adversarial elements: outputs and
// labels must agree bit for bit, and where the slow path raises an InputError the fast path must
// raise the same one. Policies are random over every scheme, every derivation the scheme accepts,
// every multiplier order and format, product format, rounding mode, zero-point placement and clamp,
// with narrow ranges and clips; scales are random across binades (random significands and powers
// of two) in f32, f64, f16 and bf16; accumulators are random, and adversarial: exact ties of the
// ideal value and their neighbours, values next to integers, the saturation edges, INT32_MIN/MAX,
// zero, and TOSA's REQUIRE boundaries.
//
// Budget: test::element_budget() elements (tests/oracle/both_paths.hpp) on 2 threads.
#include "cases/generators.hpp"
#include "oracles/requantize.hpp"
#include "qconform/error.hpp"
#include "tests/oracle/both_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace qc {
namespace {

using test::element_budget;
using test::pick;

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

std::int64_t uniform(SplitMix64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo) + 1));
}

// A positive scale of format t: 2^e times a random significand, a short one (few bits: exact ties
// of the ideal value then fall inside the output range), or exactly a power of two.
double random_scale(SplitMix64& rng, DType t, int e_lo, int e_hi, bool short_significand) {
  const int e = static_cast<int>(uniform(rng, e_lo, e_hi));
  double m = 1.0;
  switch (short_significand ? rng.below(2) : rng.below(4)) {
    case 0:
      break;
    case 1:
      m = 1.0 + static_cast<double>(rng.below(16)) / 16.0;
      break;
    default:
      m = 1.0 + rng.uniform01();
  }
  return round_into(t, std::ldexp(m, e));
}

ComputeFormat random_format(SplitMix64& rng, bool for_product) {
  using K = ComputeFormat::Kind;
  if (for_product)
    return {pick(rng, {K::f32, K::f32, K::f32, K::f64, K::f64, K::exact, K::exact, K::f16, K::bf16, K::scale_type,
                       K::input_type}),
            0};
  return {pick(rng, {K::f32, K::f32, K::f64, K::f64, K::exact, K::f16, K::bf16, K::scale_type}), 0};
}

struct Config {
  DType acc_dtype = DType::i32, out = DType::i8;
  RequantizePolicy pol;
  RequantizeParams params;
  Shape shape;
  bool extremes = false;  // this tensor also gets INT32_MIN/MAX and TOSA REQUIRE boundaries
};

constexpr std::array<MultiplierDerivation, 8> kAllDerivations = {
    MultiplierDerivation::tflite,        MultiplierDerivation::tflite_single_round,
    MultiplierDerivation::fp32_mantissa, MultiplierDerivation::qnnpack_q31,
    MultiplierDerivation::tosa_scale32,  MultiplierDerivation::tosa_scale16,
    MultiplierDerivation::glow,          MultiplierDerivation::fbgemm};

// Every (scheme, derivation) pair scheme_accepts, and each scheme without a derivation once.
std::vector<std::pair<RequantizeScheme, MultiplierDerivation>> scheme_derivation_pairs() {
  std::vector<std::pair<RequantizeScheme, MultiplierDerivation>> pairs;
  for (const RequantizeScheme s : kAllRequantizeSchemes) {
    if (!scheme_uses_derivation(s)) pairs.emplace_back(s, requantize_policy_for(s).derivation);
    for (const MultiplierDerivation d : kAllDerivations)
      if (scheme_accepts(s, d)) pairs.emplace_back(s, d);
  }
  return pairs;
}

// pair: the (scheme, derivation) pair to use, an index into scheme_derivation_pairs(); or -1 for
// a random scheme (the ones whose fast path is its own arithmetic, not the shared fixed-point
// kernels, more often) with a random accepted derivation.
RequantizePolicy random_policy(SplitMix64& rng, int pair) {
  using S = RequantizeScheme;
  RequantizeScheme s;
  std::optional<MultiplierDerivation> derivation;
  if (pair >= 0) {
    const auto pairs = scheme_derivation_pairs();
    s = pairs[static_cast<std::size_t>(pair)].first;
    derivation = pairs[static_cast<std::size_t>(pair)].second;
  } else {
    s = rng.below(2) == 0 ? pick(rng, {S::ideal, S::float_multiplier, S::float_multiplier, S::xnnpack_fp32})
                          : kAllRequantizeSchemes[rng.below(kAllRequantizeSchemes.size())];
  }
  RequantizePolicy p = requantize_policy_for(s);
  if (derivation) p.derivation = *derivation;
  if (rng.below(3) != 0) {  // beyond the scheme's own choices
    if (scheme_uses_derivation(s) && !derivation) {
      std::vector<MultiplierDerivation> ok;
      for (const MultiplierDerivation d : kAllDerivations)
        if (scheme_accepts(s, d)) ok.push_back(d);
      p.derivation = ok[rng.below(ok.size())];
    }
    if (s != RequantizeScheme::ideal) {
      p.multiplier_order = s == RequantizeScheme::float_multiplier && rng.below(4) == 0
                               ? MultiplierOrder::per_op
                               : pick(rng, {MultiplierOrder::left_to_right, MultiplierOrder::product_then_divide});
      p.multiplier_format = random_format(rng, false);
    }
    p.product_format = random_format(rng, true);
    p.zero_point = pick(rng, {ZeroPointAdd::int_after_rounding, ZeroPointAdd::float_before_rounding});
    p.rounding = kAllRoundingModes[rng.below(kAllRoundingModes.size())];
    p.clamp = pick(rng, {Clamp::int_after, Clamp::float_before, Clamp::wrap});
  }
  p.narrow_range = rng.below(8) == 0;
  return p;
}

Config random_config(SplitMix64& rng, const RequantizePolicy& policy) {
  Config c;
  c.out =
      pick(rng, {DType::i8, DType::i8, DType::u8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i4, DType::u4});
  c.acc_dtype = rng.below(10) == 0 ? pick(rng, {DType::i16, DType::u16, DType::i8, DType::u8}) : DType::i32;
  c.pol = policy;
  if (rng.below(10) == 0) {
    const std::int64_t lo = int_min(c.out), hi = int_max(c.out);
    c.pol.clip = rng.below(2) == 0 ? std::pair<std::int64_t, std::int64_t>{std::max<std::int64_t>(lo, 0),
                                                                           std::min<std::int64_t>(hi, 6)}
                                   : std::pair<std::int64_t, std::int64_t>{lo / 2, hi / 2};
  }
  c.extremes = rng.below(4) == 0;
  RequantizeParams& p = c.params;
  p.scale_dtype = pick(rng, {DType::f32, DType::f32, DType::f32, DType::f32, DType::f64, DType::f16, DType::bf16});
  // f16 has few binades: keep its scales representable.
  const bool narrow = p.scale_dtype == DType::f16;
  const bool short_significands = rng.below(3) == 0;  // many exact ties inside the output range
  p.input_scale = random_scale(rng, p.scale_dtype, narrow ? -12 : -24, 2, short_significands);
  p.output_scale = random_scale(rng, p.scale_dtype, narrow ? -10 : -16, 4, short_significands);
  const int layout = static_cast<int>(rng.below(8));
  std::size_t channels = 1;
  if (layout == 0) {  // channels outermost: runs of 512
    c.shape = {8, 512};
    p.axis = 0;
    channels = 8;
  } else if (layout == 1) {  // channels innermost: runs of one element
    c.shape = {512, 8};
    p.axis = -1;
    channels = 8;
  } else {
    c.shape = {4096};
  }
  const bool per_channel_scales = channels > 1 && rng.below(4) != 0;
  const bool per_channel_zps = channels > 1 && rng.below(2) == 0;
  p.weight_scales.clear();
  for (std::size_t k = 0; k < (per_channel_scales ? channels : 1); ++k)
    p.weight_scales.push_back(random_scale(rng, p.scale_dtype, narrow ? -12 : -16, 2, short_significands));
  // TOSA's REQUIREs on the value (|value| < 2^(shift-1); apply_scale_16's result within int32) only
  // bite for multipliers near or above 1: make those common for the TOSA schemes.
  const bool tosa = c.pol.scheme == RequantizeScheme::tosa_single || c.pol.scheme == RequantizeScheme::tosa_double ||
                    c.pol.scheme == RequantizeScheme::tosa_scale16;
  if (tosa && rng.below(2) == 0) {
    const double o = std::ldexp(p.input_scale * p.weight_scales[0], -static_cast<int>(uniform(rng, -2, 6)));
    if (o > 0 && std::isfinite(round_into(p.scale_dtype, o)) && round_into(p.scale_dtype, o) > 0)
      p.output_scale = round_into(p.scale_dtype, o);
  }
  const std::int64_t lo = int_min(c.out), hi = int_max(c.out);
  const std::size_t nzp = per_channel_zps ? channels : rng.below(4) == 0 ? 0 : 1;
  for (std::size_t k = 0; k < nzp; ++k)
    p.output_zero_points.push_back(pick(rng, {0, 1, 2, 3}) == 0 ? 0
                                   : rng.below(8) == 0          ? pick(rng, {lo, hi})
                                                                : uniform(rng, lo, hi));
  return c;
}

// A positive rational multiplier num / den (coprime, both below 2^62) whose products acc * num / den
// the generator aims at: the ideal multiplier, the float multiplier as formed, a fixed-point
// scheme's M * 2^-shift.
struct Multiplier {
  std::int64_t num = 0, den = 0;
};

std::optional<Multiplier> multiplier_of(const Rational& m) {
  if (m <= 0 || msb(numerator(m)) >= 62 || msb(denominator(m)) >= 62) return std::nullopt;
  return Multiplier{numerator(m).convert_to<std::int64_t>(), denominator(m).convert_to<std::int64_t>()};
}

// Per channel: the multipliers to aim at and the output range in units of the ideal value (values
// beyond it saturate).
struct Target {
  double m = 1;  // the ideal multiplier, approximately
  std::vector<Multiplier> exact;
  std::int64_t lo_less_zp = 0, hi_less_zp = 0;
  int tosa_shift = 0;  // the TOSA schemes' right shift (their REQUIRE on the value), else 0
};

std::int64_t clamp_acc(double v) {
  if (!(v > -0x1p62 && v < 0x1p62)) return v > 0 ? kInt32Max : kInt32Min;
  return std::clamp<std::int64_t>(std::llround(v), kInt32Min, kInt32Max);
}

// x^-1 modulo n, for coprime x and n >= 1 (extended Euclid).
std::int64_t inverse_mod(std::int64_t x, std::int64_t n) {
  __int128 r0 = n, r1 = x % n, s0 = 0, s1 = 1;
  while (r1 != 0) {
    const __int128 q = r0 / r1;
    const __int128 r2 = r0 - q * r1, s2 = s0 - q * s1;
    r0 = r1, r1 = r2, s0 = s1, s1 = s2;
  }
  __int128 v = s0 % n;
  if (v < 0) v += n;
  return static_cast<std::int64_t>(v);
}

// An int32 acc with acc * num / den = (an integer near k) + rho / den exactly, if there is one:
// acc = a0 + den * q with a0 = rho * num^-1 mod den.
std::optional<std::int64_t> acc_with_fraction(const Multiplier& m, std::int64_t rho, std::int64_t k) {
  const auto a0 = static_cast<std::int64_t>(static_cast<__int128>(rho) * inverse_mod(m.num, m.den) % m.den);
  // v(a0 + den*q) = a0*num/den + q*num: q near (k - a0*num/den) / num.
  const double q_ideal =
      (static_cast<double>(k) - static_cast<double>(a0) * static_cast<double>(m.num) / static_cast<double>(m.den)) /
      static_cast<double>(m.num);
  const double q_lo =
      std::ceil((static_cast<double>(kInt32Min) - static_cast<double>(a0)) / static_cast<double>(m.den));
  const double q_hi =
      std::floor((static_cast<double>(kInt32Max) - static_cast<double>(a0)) / static_cast<double>(m.den));
  if (q_lo > q_hi) return std::nullopt;
  const double q = std::clamp(std::round(q_ideal), q_lo, q_hi);
  const __int128 acc = a0 + static_cast<__int128>(m.den) * static_cast<__int128>(q);
  if (acc < kInt32Min || acc > kInt32Max) return std::nullopt;
  return static_cast<std::int64_t>(acc);
}

std::int64_t adversarial_acc(SplitMix64& rng, const Target& t, bool extremes) {
  const auto near = [&](std::int64_t v) {
    return std::clamp<std::int64_t>(v + uniform(rng, -2, 2), kInt32Min, kInt32Max);
  };
  const auto in_range = [&] { return uniform(rng, t.lo_less_zp - 2, t.hi_less_zp + 2); };
  switch (rng.below(extremes ? 8 : 6)) {
    case 0:
    case 1: {  // exactly on (or one unit of 1/den off) a tie, an integer, or the near-tie boundary 1/2 +- 2^-10
      if (!t.exact.empty()) {
        const Multiplier& m = t.exact[rng.below(t.exact.size())];
        const std::int64_t half = m.den / 2, step = m.den / 1024;
        std::int64_t rho = 0;
        switch (rng.below(4)) {
          case 0:
            rho = half;
            break;
          case 1:
            rho = 0;
            break;
          default:
            rho = half + (rng.below(2) ? step : -step) + (m.den % 1024 == 0 ? 0 : uniform(rng, -1, 1));
        }
        if (rng.below(3) == 0) rho += uniform(rng, -1, 1);
        rho = ((rho % m.den) + m.den) % m.den;
        if (const auto acc = acc_with_fraction(m, rho, in_range())) return *acc;
      }
      [[fallthrough]];
    }
    case 2:  // near a tie k + 1/2 of the ideal value, inside (or just outside) the output range
      return near(clamp_acc((static_cast<double>(in_range()) + 0.5) / t.m));
    case 3:  // the saturation edges hi + 1/2 and lo - 1/2
      return near(clamp_acc(
          (rng.below(2) ? static_cast<double>(t.hi_less_zp) + 0.5 : static_cast<double>(t.lo_less_zp) - 0.5) / t.m));
    case 4:
      return pick(rng, {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{2}, std::int64_t{-2}});
    case 5:
      return static_cast<std::int32_t>(rng.next());  // any int32
    case 6:
      return pick(rng, {kInt32Min, kInt32Max, kInt32Min + 1, kInt32Max - 1});
    default:  // TOSA: a value at the edge of -2^(shift-1) <= value < 2^(shift-1)
      if (t.tosa_shift >= 2 && t.tosa_shift <= 32) {
        const std::int64_t half = std::int64_t{1} << (t.tosa_shift - 1);
        return std::clamp<std::int64_t>(pick(rng, {-half - 1, -half, half - 1, half}), kInt32Min, kInt32Max);
      }
      return pick(rng, {kInt32Min, kInt32Max});
  }
}

Target target_of(const Config& c, std::size_t k) {
  Target t;
  const RequantizeParams& p = c.params;
  const double w = p.weight_scales[p.weight_scales.size() == 1 ? 0 : k];
  const Rational m = Rational(p.input_scale) * Rational(w) / Rational(p.output_scale);
  t.m = m.convert_to<double>();
  if (const auto e = multiplier_of(m)) t.exact.push_back(*e);
  try {  // the multiplier as the scheme forms and derives it
    const RequantizeMultiplier formed = prepare_multiplier({p.input_scale, w, p.output_scale, p.scale_dtype}, c.pol);
    if (formed.formed.is_finite() && formed.formed.value != m)
      if (const auto e = multiplier_of(formed.formed.value)) t.exact.push_back(*e);
    if (formed.fixed) {
      if (const auto e = multiplier_of(Rational(formed.fixed->multiplier) * pow2(-formed.fixed->right_shift)))
        t.exact.push_back(*e);
      if (c.pol.scheme == RequantizeScheme::tosa_single || c.pol.scheme == RequantizeScheme::tosa_double ||
          c.pol.scheme == RequantizeScheme::tosa_scale16)
        t.tosa_shift = formed.fixed->right_shift;
    }
  } catch (const InputError&) {
  }
  const std::int64_t zp = p.output_zero_points.empty()       ? 0
                          : p.output_zero_points.size() == 1 ? p.output_zero_points[0]
                                                             : p.output_zero_points[k];
  std::int64_t lo = int_min(c.out, c.pol.narrow_range), hi = int_max(c.out);
  if (c.pol.clip) lo = std::max(lo, c.pol.clip->first), hi = std::min(hi, c.pol.clip->second);
  t.lo_less_zp = lo - zp;
  t.hi_less_zp = hi - zp;
  return t;
}

Tensor random_accumulators(SplitMix64& rng, const Config& c) {
  Tensor acc(c.acc_dtype, c.shape);
  const std::size_t channels = c.params.axis ? 8 : 1;
  std::vector<Target> targets;
  for (std::size_t k = 0; k < channels; ++k) targets.push_back(target_of(c, k));
  const std::int64_t inner = c.params.axis && *c.params.axis == -1 ? 1 : 512;
  const std::int64_t lo = int_min(c.acc_dtype), hi = int_max(c.acc_dtype);
  for (std::int64_t i = 0; i < acc.size(); ++i) {
    const std::size_t k = channels == 1 ? 0 : static_cast<std::size_t>((i / inner) % 8);
    std::int64_t v = adversarial_acc(rng, targets[k], c.extremes);
    if (c.acc_dtype != DType::i32) v = rng.below(2) == 0 ? std::clamp(v, lo, hi) : uniform(rng, lo, hi);
    acc.set_int(i, v);
  }
  return acc;
}

std::string describe(const Config& c, const Tensor& acc, std::int64_t i) {
  const RequantizeParams& p = c.params;
  std::string s = "acc[" + std::to_string(i) + "]=" + std::to_string(acc.get_int(i)) + " (" +
                  std::string(name(acc.dtype())) + ", shape " + shape_str(c.shape) +
                  "), out=" + std::string(name(c.out)) + ", policy " + to_string(c.pol) + ", scales " +
                  std::string(name(p.scale_dtype)) + " in=" + to_hexfloat(Rational(p.input_scale)) + " w={";
  for (const double w : p.weight_scales) s += to_hexfloat(Rational(w)) + " ";
  s += "} out=" + to_hexfloat(Rational(p.output_scale)) + ", zp={";
  for (const std::int64_t z : p.output_zero_points) s += std::to_string(z) + " ";
  return s + "}" + (p.axis ? ", axis " + std::to_string(*p.axis) : std::string());
}

TEST(RequantizeProperty, FastPathEqualsSlowPath) {
  const std::int64_t budget = element_budget();
  std::atomic<std::int64_t> claimed{0}, compared{0}, fast_elements{0}, error_tensors{0}, tensors{0};
  std::array<std::atomic<std::int64_t>, kLabelCount> by_label{};
  const auto pairs = scheme_derivation_pairs();
  // Per pair: elements compared, and tensors on which both paths raised the same error.
  std::vector<std::atomic<std::int64_t>> by_pair(pairs.size()), errors_by_pair(pairs.size());
  const auto pair_of = [&](const RequantizePolicy& p) {
    for (std::size_t k = 0; k < pairs.size(); ++k)
      if (pairs[k].first == p.scheme && (!scheme_uses_derivation(p.scheme) || pairs[k].second == p.derivation))
        return k;
    return pairs.size();
  };
  std::mutex mu;
  std::string first_failure;
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::atomic<std::size_t> next_pair{0};  // pair turns taken, shared by the threads
  auto worker = [&](std::uint64_t seed) {
    SplitMix64 rng(seed);
    // Until `budget` elements were compared (tensors that raise an error compare none), with a cap
    // on the tensors tried should nearly every one raise an error.
    while (!failed && compared.load() < budget && claimed.fetch_add(4096) < 4 * budget) {
      // Every other tensor takes the next (scheme, derivation) pair in turn, so that each is covered
      // once there were as many turns as pairs (at 10^6 elements, about twice over).
      const int pair = rng.below(2) == 0 ? static_cast<int>(next_pair.fetch_add(1) % pairs.size()) : -1;
      const RequantizePolicy policy = random_policy(rng, pair);
      Config c = random_config(rng, policy);
      // Mostly parameters the scheme can represent: a multiplier its derivation rejects makes the
      // whole tensor an (identical) error on both paths, which checks little.
      for (int tries = 0; tries < 8; ++tries) {
        bool ok = true;
        for (const double w : c.params.weight_scales) {
          try {
            (void)prepare_multiplier({c.params.input_scale, w, c.params.output_scale, c.params.scale_dtype}, c.pol);
          } catch (const InputError&) {
            ok = false;
          }
        }
        if (ok || rng.below(8) == 0) break;
        c = random_config(rng, policy);
      }
      const Tensor acc = random_accumulators(rng, c);
      ++tensors;
      const auto [slow, fast, slow_error, fast_error] =
          test::run_both_paths([&](OraclePath path) { return requantize(acc, c.params, c.out, c.pol, path, true); });
      const auto fail = [&](const std::string& what) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_failure = what;
      };
      if (slow_error != fast_error) {
        fail("errors differ: slow \"" + slow_error + "\", fast \"" + fast_error + "\"; " + describe(c, acc, 0));
        return;
      }
      if (!slow_error.empty()) {
        ++error_tensors;
        ++errors_by_pair[pair_of(c.pol)];
        continue;
      }
      fast_elements += acc.size() - fast.slow_elements;
      compared += acc.size();
      by_pair[pair_of(c.pol)] += acc.size();
      std::array<std::int64_t, kLabelCount> counts{};
      for (const Label l : slow.labels) ++counts[static_cast<std::size_t>(l)];
      for (std::size_t l = 0; l < counts.size(); ++l) by_label[l] += counts[l];
      for (std::int64_t i = 0; i < acc.size(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (fast.q.get_int(i) != slow.q.get_int(i) || fast.labels[u] != slow.labels[u]) {
          fail(describe(c, acc, i) + ": fast " + std::to_string(fast.q.get_int(i)) + "/" +
               std::string(name(fast.labels[u])) + ", slow " + std::to_string(slow.q.get_int(i)) + "/" +
               std::string(name(slow.labels[u])));
          return;
        }
      }
      // Without labels the fast path skips their pass: the outputs must not change.
      if (rng.below(4) == 0) {
        const RequantizeResult values = requantize(acc, c.params, c.out, c.pol, OraclePath::fast, false);
        for (std::int64_t i = 0; i < acc.size(); ++i)
          if (values.q.get_int(i) != slow.q.get_int(i)) {
            fail(describe(c, acc, i) + " (without labels): fast " + std::to_string(values.q.get_int(i)) + ", slow " +
                 std::to_string(slow.q.get_int(i)));
            return;
          }
      }
    }
  };
  test::run_on_two_threads(worker);
  EXPECT_FALSE(failed) << first_failure;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  test::print_path_summary(compared, tensors, error_tensors, fast_elements, by_label, seconds);
  // Every pair was exercised: elements compared, or (for the pairs whose derivation can never
  // meet the scheme's preconditions, such as qnnpack_q31 with a 24-bit fp32_mantissa multiplier)
  // the same error raised on both paths.
  std::size_t compared_pairs = 0, exercised_pairs = 0;
  std::string errors_only, missing;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const std::string pair_name = " " + std::string(name(pairs[k].first)) + "/" + std::string(name(pairs[k].second));
    if (by_pair[k].load() > 0) ++compared_pairs;
    if (by_pair[k].load() > 0 || errors_by_pair[k].load() > 0) ++exercised_pairs;
    if (by_pair[k].load() == 0) (errors_by_pair[k].load() > 0 ? errors_only : missing) += pair_name;
  }
  std::printf("(scheme, derivation) pairs: %zu of %zu compared, %zu exercised%s%s%s%s\n", compared_pairs, pairs.size(),
              exercised_pairs, errors_only.empty() ? "" : "; errors only:", errors_only.c_str(),
              missing.empty() ? "" : "; never:", missing.c_str());
  if (next_pair.load() >= pairs.size()) {
    EXPECT_EQ(exercised_pairs, pairs.size()) << "never exercised:" << missing;
  }
  // Enough elements were compared, and the fast path actually took most of them.
  EXPECT_GE(compared.load(), budget);
  EXPECT_GT(fast_elements.load(), compared.load() / 2);
}

}  // namespace
}  // namespace qc
