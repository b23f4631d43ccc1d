// Number formats: the vocabulary every layer uses, and exact conversion between bit patterns
// and rationals. Every finite value of every float format here is a dyadic rational, so decode
// is exact and encode rounds correctly under any RoundingMode.
#pragma once

#include "oracles/exact.hpp"
#include "oracles/rounding.hpp"
#include "qconform/dtype.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qc {

// A float value with its special cases, in exact arithmetic.
struct ExactFloat {
  enum class Kind : std::uint8_t { finite, inf, nan };
  Kind kind = Kind::finite;
  bool negative = false;  // sign of inf, and of zero (-0)
  Rational value;         // finite only; carries the sign for nonzero values

  static ExactFloat nan() { return {Kind::nan, false, 0}; }
  static ExactFloat inf(bool neg) { return {Kind::inf, neg, 0}; }
  static ExactFloat finite(Rational v, bool neg_zero = false) {
    bool neg = v < 0 || (v == 0 && neg_zero);
    return {Kind::finite, neg, std::move(v)};
  }
  bool is_nan() const { return kind == Kind::nan; }
  bool is_inf() const { return kind == Kind::inf; }
  bool is_finite() const { return kind == Kind::finite; }
};

// -(v): an exact sign flip (the unary minus of C), not a subtraction from zero; NaN stays NaN.
inline ExactFloat negate(ExactFloat v) {
  if (v.is_nan()) return v;
  v.negative = !v.negative;
  if (v.is_finite()) v.value = -v.value;
  return v;
}

// What to do with a finite value whose rounded magnitude exceeds the format's largest finite
// value. ieee: to inf under nearest modes and under the directed mode pointing away from zero,
// else to max finite (IEEE 754 7.4); a format without inf gives NaN (ONNX Cast, saturate=0).
// saturate: to max finite (ONNX Cast saturate=1, SATFINITE).
enum class Overflow : std::uint8_t { ieee, saturate };

// Exact value of a float bit pattern (low `bits` bits of `pattern`).
ExactFloat decode_float(DType t, std::uint64_t pattern);
// Correctly rounded encode into float format t.
std::uint64_t encode_float(DType t, const ExactFloat& x, RoundingMode m = RoundingMode::rne,
                           Overflow o = Overflow::ieee);
// Round a finite rational to format t and return the exact result (the value an IEEE
// operation in format t would produce). Sets `overflowed` when the result left the range.
ExactFloat round_to_format(DType t, const Rational& v, RoundingMode m = RoundingMode::rne, Overflow o = Overflow::ieee);

// The largest finite value and the smallest subnormal of float format t (computed once per format).
const Rational& max_finite(DType t);
const Rational& min_subnormal(DType t);

// Integer conversion of an exact integer to format t.
enum class IntOverflow : std::uint8_t { saturate, wrap };
std::int64_t int_convert(DType t, const BigInt& v, IntOverflow o, bool narrow_range = false);

}  // namespace qc
