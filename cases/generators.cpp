#include "cases/generators.hpp"

#include "oracles/format.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace qc {

std::uint64_t SplitMix64::below(std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t v;
  do v = next();
  while (v >= limit);
  return v % n;
}

namespace {
double to_format(DType t, double v) { return float_bits_to_double(t, double_to_float_bits(t, v)); }

// The neighbour of v one ulp of format t toward +inf (dir > 0) or -inf.
double step_ulp(DType t, double v, int dir) {
  if (t == DType::f64) return std::nextafter(v, dir > 0 ? INFINITY : -INFINITY);
  if (t == DType::f32) return std::nextafter(static_cast<float>(v), dir > 0 ? INFINITY : -INFINITY);
  // Narrow formats: bits are ordered by magnitude within each sign.
  std::uint64_t b = double_to_float_bits(t, v);
  const std::uint64_t sign = std::uint64_t{1} << (info(t).bits - 1);
  const bool neg = (b & sign) != 0;
  const std::uint64_t mag = b & (sign - 1);
  if (mag == 0) return dir > 0 ? float_bits_to_double(t, 1) : float_bits_to_double(t, sign | 1);
  if ((dir > 0) != neg)
    b += 1;
  else
    b -= 1;
  return float_bits_to_double(t, b);
}
}  // namespace

void fill_uniform(Tensor& t, std::uint64_t seed, double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high) || !(low < high))
    throw InputError("generator 'uniform': needs finite low < high");
  // An integer tensor holds floor(v) for v in [low, high): every such value must fit its type.
  if (!is_float(t.dtype()) && (std::floor(low) < static_cast<double>(int_min(t.dtype())) ||
                               std::ceil(high) - 1 > static_cast<double>(int_max(t.dtype()))))
    throw InputError("generator 'uniform': [" + std::to_string(low) + ", " + std::to_string(high) +
                     ") holds values outside " + std::string(name(t.dtype())) + " [" +
                     std::to_string(int_min(t.dtype())) + ", " + std::to_string(int_max(t.dtype())) + "]");
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.size(); ++i) {
    const double v = low + (high - low) * rng.uniform01();
    if (is_float(t.dtype()))
      t.set_double(i, to_format(t.dtype(), v));
    else
      t.set_int(i, static_cast<std::int64_t>(std::floor(v)));
  }
}

void fill_ties(Tensor& t, std::uint64_t seed, double scale, std::int64_t kmin, std::int64_t kmax) {
  if (!is_float(t.dtype())) throw InputError("generator 'ties' needs a float input dtype");
  if (kmax < kmin) throw InputError("generator 'ties': k_max < k_min");
  // k + 1/2 is computed in double, exactly only for |k| <= 2^53; the bound also keeps the span
  // kmax - kmin + 1 from overflowing (a span of 2^64 wrapped to 0 and divided by it).
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  if (kmin < -kExact || kmax > kExact) throw InputError("generator 'ties': k_min and k_max must lie within +-2^53");
  SplitMix64 rng(seed);
  const auto span = static_cast<std::uint64_t>(kmax - kmin + 1);
  for (std::int64_t i = 0; i < t.size(); i += 3) {
    const auto k = kmin + static_cast<std::int64_t>(rng.below(span));
    // (k + 1/2) * scale, rounded into the format; for power-of-two scales this is an exact tie.
    const double tie = to_format(t.dtype(), (static_cast<double>(k) + 0.5) * scale);
    t.set_double(i, tie);
    if (i + 1 < t.size()) t.set_double(i + 1, step_ulp(t.dtype(), tie, -1));
    if (i + 2 < t.size()) t.set_double(i + 2, step_ulp(t.dtype(), tie, +1));
  }
}

void fill_normal(Tensor& t, std::uint64_t seed, double mean, double stddev) {
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.size(); ++i) {
    double sum = 0;
    for (int k = 0; k < 12; ++k) sum += rng.uniform01();
    const double v = mean + stddev * (sum - 6.0);
    if (is_float(t.dtype()))
      t.set_double(i, to_format(t.dtype(), v));
    else
      t.set_int(i, std::clamp<std::int64_t>(static_cast<std::int64_t>(std::nearbyint(v)), int_min(t.dtype()),
                                            int_max(t.dtype())));
  }
}

void fill_saturation_edges(Tensor& t, std::uint64_t seed, double scale, std::int64_t zero_point, DType out) {
  if (!is_float(t.dtype())) throw InputError("generator 'saturation' needs a float input dtype");
  if (!is_int(out)) throw InputError("generator 'saturation': 'output_dtype' must be an integer format");
  SplitMix64 rng(seed);
  const double lo = static_cast<double>(int_min(out) - zero_point), hi = static_cast<double>(int_max(out) - zero_point);
  const double anchors[] = {lo - 0.5, hi + 0.5, lo, hi, lo - 1.0, hi + 1.0, lo - 1000.0, hi + 1000.0};
  for (std::int64_t i = 0; i < t.size(); ++i) {
    const double a = to_format(t.dtype(), anchors[rng.below(std::size(anchors))] * scale);
    const int step = static_cast<int>(rng.below(3)) - 1;
    t.set_double(i, step == 0 ? a : step_ulp(t.dtype(), a, step));
  }
}

void fill_exhaustive(Tensor& t) {
  const int bits = info(t.dtype()).bits;
  if (bits > 16)
    throw InputError("generator 'exhaustive' needs a format of at most 16 bits, not " + std::string(name(t.dtype())));
  const std::uint64_t count = std::uint64_t{1} << bits;
  for (std::int64_t i = 0; i < t.size(); ++i) {
    const std::uint64_t pattern = static_cast<std::uint64_t>(i) % count;
    if (is_float(t.dtype())) {
      t.set_bits(i, pattern);
    } else if (info(t.dtype()).is_signed) {  // sign-extend the pattern
      const auto v = static_cast<std::int64_t>(pattern) - (pattern >= count / 2 ? static_cast<std::int64_t>(count) : 0);
      t.set_int(i, v);
    } else {
      t.set_int(i, static_cast<std::int64_t>(pattern));
    }
  }
}

void fill_specials(Tensor& t) {
  const DType d = t.dtype();
  if (!is_float(d)) throw InputError("generator 'specials' needs a float input dtype");
  const FloatLayout& l = info(d).fl;
  const double min_sub = float_bits_to_double(d, 1);
  const double max_sub = float_bits_to_double(d, (std::uint64_t{1} << l.mant_bits) - 1);
  const double min_norm = float_bits_to_double(d, std::uint64_t{1} << l.mant_bits);
  const double maxf = max_finite(d).convert_to<double>();
  std::vector<double> v = {std::numeric_limits<double>::quiet_NaN(),
                           0.0,
                           -0.0,
                           min_sub,
                           -min_sub,
                           max_sub,
                           -max_sub,
                           min_norm,
                           -min_norm,
                           1.0,
                           -1.0,
                           maxf,
                           -maxf};
  if (l.has_inf) {
    v.push_back(std::numeric_limits<double>::infinity());
    v.push_back(-std::numeric_limits<double>::infinity());
  }
  for (std::int64_t i = 0; i < t.size(); ++i) t.set_double(i, v[static_cast<std::size_t>(i) % v.size()]);
}

void fill_accumulator_stress(Tensor& t, std::uint64_t seed) {
  if (!is_int(t.dtype())) throw InputError("generator 'accumulator_stress' needs an integer dtype");
  SplitMix64 rng(seed);
  const std::int64_t lo = int_min(t.dtype()), hi = int_max(t.dtype());
  for (std::int64_t i = 0; i < t.size(); ++i) t.set_int(i, lo == 0 || rng.below(4) != 0 ? hi : lo);
}

namespace {

// The TOSA specification's generator for the dot-product data sets: an LCG on uint32 with
// multiplier m = (8*S + 1) * 0x705A5E75 and r = m + 1, each value
// sign(r) * (r & 0x7FFFFFFF) / 0x7FFFFFFF in f32, then r = r*m + 1.
class TosaSetData {
 public:
  explicit TosaSetData(std::uint32_t s) : m_((8 * s + 1) * 0x705A5E75u), r_(m_ + 1) {}
  float next() {
    const float sign = (r_ >> 31) == 0 ? 1.0f : -1.0f;
    const float v = sign * static_cast<float>(r_ & 0x7FFFFFFFu) / static_cast<float>(0x7FFFFFFF);
    r_ = r_ * m_ + 1;
    return v;
  }

 private:
  std::uint32_t m_, r_;
};

// exp(x) for |x| <= 2 by its Taylor series in f64 (terms until they vanish), so data set 3 is
// the same bits with every C library (the specification writes exp()).
double exp_series(double x) {
  double term = 1, sum = 1;
  for (int n = 1; n < 40; ++n) {
    term *= x / n;
    sum += term;
  }
  return sum;
}

}  // namespace

void fill_tosa_dot_product(Tensor& t, int set, int operand, std::int64_t ks, int k_axis, double bound) {
  if (!is_float(t.dtype())) throw InputError("generator 'tosa_dot_product' needs a float dtype");
  if (set < 0 || set > 5) throw InputError("generator 'tosa_dot_product': 'set' must be 0..5");
  if (operand < 0 || operand > 2) throw InputError("generator 'tosa_dot_product': 'operand' must be 0, 1 or 2");
  if (ks <= 0) throw InputError("generator 'tosa_dot_product': 'ks' must be positive");
  const int axis = k_axis < 0 ? k_axis + t.rank() : k_axis;
  if (axis < 0 || axis >= t.rank()) throw InputError("generator 'tosa_dot_product': 'k_axis' out of range");
  const auto s = static_cast<std::uint32_t>(set), p = static_cast<std::uint32_t>(operand);
  // Sets 0 and 4 draw from two sequences shared by the operands; the others from one per operand.
  TosaSetData d0(set == 0 || set == 4 ? 3 * s : 3 * s + p), d1(3 * s + 1);
  // As the TOSA reference model evaluates them: B / sqrt(KS) in double, the rest in float.
  const float B = static_cast<float>(bound);
  const auto KS = static_cast<double>(ks);
  std::vector<std::int64_t> c;
  for (std::int64_t i = 0; i < t.size(); ++i) {
    unravel(i, t.shape(), c);
    const std::int64_t k = c[static_cast<std::size_t>(axis)];
    float v = 0;
    switch (set) {
      case 0: {  // zeros: exactly one operand of each product is zero
        const float s0 = d0.next(), s1 = d1.next();
        v = p == 0 ? (s0 < 0 ? 0.f : s1) : p == 1 ? (s0 < 0 ? s1 : 0.f) : 0.f;
        break;
      }
      case 1: {  // large exponents
        const float s0 = d0.next(), s1 = d0.next();
        const float w = (s0 < 0 ? -0.75f : 0.75f) + 0.25f * s1;
        v = p != 2 ? static_cast<float>(B / std::sqrt(KS + 1) * w) : B * B / static_cast<float>(KS + 1) * w;
        break;
      }
      case 2: {  // small values onto a large one
        const float r = d0.next();
        v = p != 2 ? (k == 0 ? 1.f : static_cast<float>(r / std::sqrt(KS))) : 0.f;
        break;
      }
      case 3: {  // varying magnitudes onto a large one
        const float s0 = d0.next(), s1 = d0.next();
        v = p != 2 ? (k == 0 ? (s0 < 0 ? -16.f : 16.f) : static_cast<float>(exp_series(2.0 * s0)) * s1) : 0.f;
        break;
      }
      case 4: {  // a mixture of zero and non-zero products
        const float s0 = d0.next(), s1 = d1.next();
        const float big = static_cast<float>(B / std::sqrt(KS) * s1);
        if (p == 0)
          v = k == ks / 2 ? (s0 < 0 ? -0.5f : 0.5f) : (s0 < 0 ? 0.f : big);
        else if (p == 1)
          v = k == ks / 2 ? (s0 < 0 ? 0.5f : -0.5f) : (s0 < 0 ? big : 0.f);
        break;
      }
      default: {  // wide-range signed values
        const float r = d0.next();
        v = p != 2 ? static_cast<float>(B / std::sqrt(KS + 1) * r) : 0.f;
      }
    }
    t.set_double(i, to_format(t.dtype(), v));
  }
}

}  // namespace qc
