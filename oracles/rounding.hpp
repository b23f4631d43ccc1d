// Rounding modes and the one decision rule every path (fast and slow) uses.
#pragma once

#include "oracles/exact.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace qc {

enum class RoundingMode : std::uint8_t {
  rne,    // ties to even: nearbyint/rint, cvtps2dq, __float2int_rn, np.rint
  rna,    // ties away from zero: std::round, roundf
  rhu,    // ties toward +inf: floor(x + 0.5), (v + 2^(s-1)) >> s
  rhd,    // ties toward -inf: ceil(x - 0.5)
  rtz,    // toward zero: static_cast<int>(float)
  floor,  // toward -inf
  ceil,   // toward +inf
};

inline constexpr std::array<RoundingMode, 7> kAllRoundingModes = {
    RoundingMode::rne, RoundingMode::rna,   RoundingMode::rhu, RoundingMode::rhd,
    RoundingMode::rtz, RoundingMode::floor, RoundingMode::ceil};

std::string_view name(RoundingMode m);
std::string_view describe(RoundingMode m);
std::optional<RoundingMode> parse_rounding_mode(std::string_view s);

constexpr bool is_nearest(RoundingMode m) {
  return m == RoundingMode::rne || m == RoundingMode::rna || m == RoundingMode::rhu ||
         m == RoundingMode::rhd;
}

// Where a value v lies between floor(v) and floor(v) + 1.
enum class Fraction : std::uint8_t { zero, below_half, half, above_half };

// The single definition of every rounding mode. With v = floor(v) + f, 0 <= f < 1, given
// where f lies (zero, exactly one half, above one half; otherwise below), whether floor(v) is
// odd and whether floor(v) is negative (for a non-integer v, v < 0 iff floor(v) < 0), decide
// whether the result is floor(v) + 1 (true) or floor(v) (false). Written with bitwise
// operators so the fast path compiles it without data-dependent branches.
constexpr bool rounds_up(RoundingMode m, bool f_zero, bool f_half, bool f_above, bool floor_is_odd,
                         bool floor_is_negative) {
  switch (m) {
    case RoundingMode::rne: return f_above | (f_half & floor_is_odd);
    case RoundingMode::rna: return f_above | (f_half & !floor_is_negative);
    case RoundingMode::rhu: return f_above | f_half;
    case RoundingMode::rhd: return f_above;
    case RoundingMode::rtz: return !f_zero & floor_is_negative;
    case RoundingMode::floor: return false;
    case RoundingMode::ceil: return !f_zero;
  }
  return false;
}

constexpr bool rounds_up(RoundingMode m, Fraction f, bool floor_is_odd, bool floor_is_negative) {
  return rounds_up(m, f == Fraction::zero, f == Fraction::half, f == Fraction::above_half, floor_is_odd,
                   floor_is_negative);
}

// Exact: r rounded to an integer under m. Optionally reports where r lay (the label source).
BigInt round_to_integer(const Rational& r, RoundingMode m, Fraction* where = nullptr);

// floor(r) and the fraction class of r - floor(r), exactly.
BigInt floor_with_fraction(const Rational& r, Fraction& where);

}  // namespace qc
