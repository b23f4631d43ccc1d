// Seeded input generators. The PRNG is SplitMix64 (Steele, Lea, Flood: "Fast splittable
// pseudorandom number generators", OOPSLA 2014), implemented here so a seed gives the same
// bits on every machine and standard library (std::*_distribution does not).
#pragma once

#include "qconform/tensor.hpp"

#include <cstdint>

namespace qc {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  // Uniform integer in [0, n) by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t n);
  // Uniform integer in [lo, hi] (lo <= hi, hi - lo < 2^63).
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

 private:
  std::uint64_t state_;
};

// Every generator below is a fixed sequence of IEEE operations on that PRNG's output (no libm
// call whose last bit may differ between C libraries), so a seed gives the same bits
// everywhere.

// Uniform reals in [low, high), each rounded (ties to even) into t.
void fill_uniform(Tensor& t, std::uint64_t seed, double low, double high);
// Values whose quotient by `scale` is exactly k + 1/2 for integers k in [kmin, kmax], and the
// neighbours one ulp (of t's format) either side of each tie. Requires a float t.
void fill_ties(Tensor& t, std::uint64_t seed, double scale, std::int64_t kmin, std::int64_t kmax);
// Approximately normal reals: the Irwin-Hall sum of 12 uniforms minus 6 (mean 0, variance 1),
// scaled and shifted; no libm, so bit-reproducible.
void fill_normal(Tensor& t, std::uint64_t seed, double mean, double stddev);
// Values around the saturation edges of quantizing with (scale, zero_point) into `out`: the
// real values of (qmin - zp - 1/2) and (qmax - zp + 1/2) steps and one ulp either side, plus
// values far outside and at the edges themselves.
void fill_saturation_edges(Tensor& t, std::uint64_t seed, double scale, std::int64_t zero_point, DType out);
// Every value of t's format in bit-pattern order (f16, bf16: 65536; f8, i8, u8: 256; i4, u4:
// 16), repeated if the tensor is larger.
void fill_exhaustive(Tensor& t);
// The special values of a float format, cycled: NaN, +-inf, +-0, +-min subnormal, +-max
// subnormal, +-min normal, +-1, +-max finite (formats without inf skip it).
void fill_specials(Tensor& t);
// Integer operands at the extremes of their range with random signs: for u8 every value is 255,
// for i8 +127 or -128, so adjacent u8 x s8 pairs overflow int16 (vpmaddubsw) and long
// dot products overflow int32.
void fill_accumulator_stress(Tensor& t, std::uint64_t seed);

// The TOSA dot-product compliance data sets (TOSA specification, "Dot product accuracy
// requirements", tosa_mi_data(S, KS, p, k, i)): S = 0 zeros in products, 1 large exponents,
// 2 small values onto a large one, 3 varying magnitudes onto a large one, 4 a mixture of zero
// and non-zero products, 5 wide-range signed values. `operand` is p (0: first input, 1:
// second, 2: bias), `ks` the dot-product length and `k_axis` the axis whose coordinate is k.
// `bound` is B, the range parameter for the data and accumulator formats.
void fill_tosa_dot_product(Tensor& t, int set, int operand, std::int64_t ks, int k_axis, double bound);

}  // namespace qc
