// Rounding modes and the one decision rule every path (fast and slow) uses.
#pragma once

#include "oracles/exact.hpp"
#include "qconform/rounding_mode.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace qc {

// Where a value v lies between floor(v) and floor(v) + 1.
enum class Fraction : std::uint8_t { zero, below_half, half, above_half };

// The single definition of every rounding mode. With v = floor(v) + f, 0 <= f < 1, given
// where f lies (zero, exactly one half, above one half; otherwise below), whether floor(v) is
// odd and whether floor(v) is negative (for a non-integer v, v < 0 iff floor(v) < 0), decide
// whether the result is floor(v) + 1 (1) or floor(v) (0). The inputs are 0/1 integers and only
// bitwise operators are used, so vector code (the fast quantize kernel) compiles it into masks.
template <class I>
constexpr I rounds_up_bits(RoundingMode m, I f_zero, I f_half, I f_above, I floor_is_odd, I floor_is_negative) {
  switch (m) {
    case RoundingMode::rne:
      return f_above | (f_half & floor_is_odd);
    case RoundingMode::rna:
      return f_above | (f_half & (I{1} ^ floor_is_negative));
    case RoundingMode::rhu:
      return f_above | f_half;
    case RoundingMode::rhd:
      return f_above;
    case RoundingMode::rtz:
      return (I{1} ^ f_zero) & floor_is_negative;
    case RoundingMode::floor:
      return I{0};
    case RoundingMode::ceil:
      return I{1} ^ f_zero;
  }
  return I{0};
}

constexpr bool rounds_up(RoundingMode m, bool f_zero, bool f_half, bool f_above, bool floor_is_odd,
                         bool floor_is_negative) {
  return rounds_up_bits<unsigned>(m, f_zero, f_half, f_above, floor_is_odd, floor_is_negative) != 0;
}

constexpr bool rounds_up(RoundingMode m, Fraction f, bool floor_is_odd, bool floor_is_negative) {
  return rounds_up(m, f == Fraction::zero, f == Fraction::half, f == Fraction::above_half, floor_is_odd,
                   floor_is_negative);
}

// Where a value lies, in words ("exactly half-way (a tie)"), for traces.
std::string_view describe(Fraction f);

// Exact: r rounded to an integer under m. Optionally reports where r lay (the label source).
BigInt round_to_integer(const Rational& r, RoundingMode m, Fraction* where = nullptr);

// floor(r) and the fraction class of r - floor(r), exactly.
BigInt floor_with_fraction(const Rational& r, Fraction& where);

}  // namespace qc
