#include "cases/generators.hpp"

#include "oracles/error.hpp"

#include <cmath>

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
  if ((dir > 0) != neg) b += 1;
  else b -= 1;
  return float_bits_to_double(t, b);
}
}  // namespace

void fill_uniform(Tensor& t, std::uint64_t seed, double low, double high) {
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.size(); ++i) {
    const double v = low + (high - low) * rng.uniform01();
    if (is_float(t.dtype())) t.set_double(i, to_format(t.dtype(), v));
    else t.set_int(i, static_cast<std::int64_t>(std::floor(v)));
  }
}

void fill_ties(Tensor& t, std::uint64_t seed, double scale, std::int64_t kmin, std::int64_t kmax) {
  if (!is_float(t.dtype())) throw InputError("generator 'ties' needs a float input dtype");
  if (kmax < kmin) throw InputError("generator 'ties': k_max < k_min");
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

}  // namespace qc
