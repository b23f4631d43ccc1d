#include "oracles/rounding.hpp"

namespace qc {

std::string_view describe(Fraction f) {
  switch (f) {
    case Fraction::zero:
      return "an integer";
    case Fraction::below_half:
      return "below the half-way point";
    case Fraction::half:
      return "exactly half-way (a tie)";
    case Fraction::above_half:
      return "above the half-way point";
  }
  return "?";
}

BigInt floor_with_fraction(const Rational& r, Fraction& where) {
  const BigInt& n = numerator(r);
  const BigInt& d = denominator(r);  // always > 0 in cpp_rational
  BigInt q = n / d;                  // truncates toward zero
  BigInt rem = n - q * d;
  if (rem < 0) {
    q -= 1;
    rem += d;
  }
  if (rem == 0) {
    where = Fraction::zero;
  } else {
    BigInt twice = rem * 2;
    where = twice < d ? Fraction::below_half : twice == d ? Fraction::half : Fraction::above_half;
  }
  return q;
}

BigInt round_to_integer(const Rational& r, RoundingMode m, Fraction* where) {
  Fraction f;
  BigInt fl = floor_with_fraction(r, f);
  if (where) *where = f;
  const bool odd = bit_test(fl < 0 ? BigInt(-fl) : fl, 0);
  if (rounds_up(m, f, odd, fl < 0)) fl += 1;
  return fl;
}

}  // namespace qc
