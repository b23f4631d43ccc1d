// Seeded input generators. The PRNG is SplitMix64 (Steele, Lea, Flood: "Fast splittable
// pseudorandom number generators", OOPSLA 2014), implemented here so a seed gives the same
// bits on every machine and standard library (std::*_distribution does not).
#pragma once

#include "oracles/tensor.hpp"

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

 private:
  std::uint64_t state_;
};

// Uniform reals in [low, high), each rounded (ties to even) into t.
void fill_uniform(Tensor& t, std::uint64_t seed, double low, double high);
// Values whose quotient by `scale` is exactly k + 1/2 for integers k in [kmin, kmax], and the
// neighbours one ulp (of t's format) either side of each tie. Requires a float t.
void fill_ties(Tensor& t, std::uint64_t seed, double scale, std::int64_t kmin, std::int64_t kmax);

}  // namespace qc
