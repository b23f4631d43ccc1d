#include "oracles/ieee.hpp"

namespace qc {

std::string Arith::name() const {
  switch (kind_) {
    case Kind::exact:
      return "exact";
    case Kind::floating:
      return std::string(qc::name(type_));
    case Kind::fixed:
      return "fixed64:" + std::to_string(frac_bits_);
  }
  return "?";
}

ExactFloat Arith::round(const Rational& v) const {
  switch (kind_) {
    case Kind::exact:
      return ExactFloat::finite(v);
    case Kind::floating:
      return round_to_format(type_, v);
    case Kind::fixed: {
      // int64 fixed point: truncate toward zero onto the 2^-frac grid (a C cast), saturating.
      BigInt n = round_to_integer(v * pow2(frac_bits_), RoundingMode::rtz);
      const BigInt lim = (BigInt(1) << 63) - 1;
      if (n > lim) n = lim;
      if (n < -lim - 1) n = -lim - 1;
      return ExactFloat::finite(Rational(n) * pow2(-frac_bits_));
    }
  }
  return ExactFloat::nan();
}

ExactFloat Arith::convert(const ExactFloat& a) const {
  if (!a.is_finite()) return a;
  ExactFloat r = round(a.value);
  if (r.is_finite() && r.value == 0 && a.negative) r.negative = true;
  return r;
}

// IEEE 754 6.3: an exact zero sum is +0 under round-to-nearest, unless both operands are -0.
ExactFloat Arith::add(const ExactFloat& a, const ExactFloat& b) const {
  if (a.is_nan() || b.is_nan()) return ExactFloat::nan();
  if (a.is_inf() && b.is_inf()) return a.negative == b.negative ? a : ExactFloat::nan();
  if (a.is_inf()) return a;
  if (b.is_inf()) return b;
  Rational s = a.value + b.value;
  if (s == 0) return ExactFloat::finite(0, a.negative && b.negative && a.value == 0 && b.value == 0);
  return round(s);
}

ExactFloat Arith::sub(const ExactFloat& a, const ExactFloat& b) const {
  ExactFloat nb = b;
  if (!nb.is_nan()) {
    nb.negative = !nb.negative;
    if (nb.is_finite()) nb.value = -nb.value;
  }
  return add(a, nb);
}

ExactFloat Arith::mul(const ExactFloat& a, const ExactFloat& b) const {
  if (a.is_nan() || b.is_nan()) return ExactFloat::nan();
  const bool neg = a.negative != b.negative;
  const bool a_zero = a.is_finite() && a.value == 0;
  const bool b_zero = b.is_finite() && b.value == 0;
  if ((a.is_inf() && b_zero) || (b.is_inf() && a_zero)) return ExactFloat::nan();
  if (a.is_inf() || b.is_inf()) return ExactFloat::inf(neg);
  ExactFloat r = round(a.value * b.value);
  if (r.is_finite() && r.value == 0) r.negative = neg;
  return r;
}

ExactFloat Arith::div(const ExactFloat& a, const ExactFloat& b) const {
  if (a.is_nan() || b.is_nan()) return ExactFloat::nan();
  const bool neg = a.negative != b.negative;
  const bool a_zero = a.is_finite() && a.value == 0;
  const bool b_zero = b.is_finite() && b.value == 0;
  if ((a.is_inf() && b.is_inf()) || (a_zero && b_zero)) return ExactFloat::nan();
  if (a.is_inf()) return ExactFloat::inf(neg);
  if (b.is_inf()) return ExactFloat::finite(0, neg);
  if (b_zero) return ExactFloat::inf(neg);
  ExactFloat r = round(a.value / b.value);
  if (r.is_finite() && r.value == 0) r.negative = neg;
  return r;
}

ExactFloat Arith::fma(const ExactFloat& a, const ExactFloat& b, const ExactFloat& c) const {
  // The product is exact (never rounded): compute it in exact arithmetic, then one rounding.
  ExactFloat p = Arith::exact().mul(a, b);
  return add(p, c);
}

std::string to_string(const ExactFloat& v) {
  if (v.is_nan()) return "NaN";
  if (v.is_inf()) return v.negative ? "-inf" : "+inf";
  if (v.value == 0) return v.negative ? "-0" : "0";
  std::string s = to_decimal(v.value, 40);
  std::string h = to_hexfloat(v.value);
  return h.empty() ? s : s + " (" + h + ")";
}

}  // namespace qc
