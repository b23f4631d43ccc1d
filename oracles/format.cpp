#include "oracles/format.hpp"

#include "qconform/error.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

namespace qc {

ExactFloat decode_float(DType t, std::uint64_t pattern) {
  const FloatLayout& l = info(t).fl;
  const bool neg = (pattern & sign_mask(l)) != 0;
  const std::uint64_t exp_field = (pattern >> l.mant_bits) & ((std::uint64_t{1} << l.exp_bits) - 1);
  const std::uint64_t frac = pattern & ((std::uint64_t{1} << l.mant_bits) - 1);
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  if (l.ieee_nan && exp_field == exp_all) {
    if (frac != 0) return ExactFloat::nan();
    return ExactFloat::inf(neg);
  }
  if (!l.ieee_nan && exp_field == exp_all && frac == (std::uint64_t{1} << l.mant_bits) - 1) return ExactFloat::nan();
  BigInt m = frac;
  int e;
  if (exp_field == 0) {
    e = 1 - l.bias - l.mant_bits;  // subnormal
  } else {
    m += BigInt(1) << l.mant_bits;
    e = static_cast<int>(exp_field) - l.bias - l.mant_bits;
  }
  Rational v = Rational(m) * pow2(e);
  if (neg) v = -v;
  return ExactFloat::finite(v, neg);
}

namespace {

// One entry per DType (kAllDTypes order is the enum's), built once: the slow paths ask for these
// per element, and building a rational each time was a large share of their time.
template <class Make>
std::array<Rational, kAllDTypes.size()> per_dtype(Make make) {
  std::array<Rational, kAllDTypes.size()> r;
  for (DType t : kAllDTypes) r[static_cast<std::size_t>(t)] = make(info(t).fl);
  return r;
}

}  // namespace

const Rational& max_finite(DType t) {
  static const auto table = per_dtype(
      [](const FloatLayout& l) { return Rational(BigInt(max_significand(l))) * pow2(max_exponent(l) - l.mant_bits); });
  return table[static_cast<std::size_t>(t)];
}

const Rational& min_subnormal(DType t) {
  static const auto table = per_dtype([](const FloatLayout& l) { return pow2(1 - l.bias - l.mant_bits); });
  return table[static_cast<std::size_t>(t)];
}

ExactFloat round_to_format(DType t, const Rational& v, RoundingMode m, Overflow o) {
  const FloatLayout& l = info(t).fl;
  if (v == 0) return ExactFloat::finite(0);
  const int emin = 1 - l.bias;
  const int e = std::max(floor_log2(v), emin);
  const int quantum = e - l.mant_bits;  // value of one unit in the last place at this binade
  BigInt n = round_to_integer(v * pow2(-quantum), m);
  const bool neg = v < 0;
  if (n == 0) return ExactFloat::finite(0, neg);
  Rational r = Rational(n) * pow2(quantum);
  const Rational& maxf = max_finite(t);
  if (abs(r) > maxf) {
    // IEEE 754 7.4: nearest modes go to inf; directed modes go to inf only when they round
    // away from zero for this sign, else to the largest finite value.
    bool to_inf = o == Overflow::ieee &&
                  (is_nearest(m) || (m == RoundingMode::ceil && !neg) || (m == RoundingMode::floor && neg));
    if (!to_inf) return ExactFloat::finite(neg ? Rational(-maxf) : maxf);
    if (!l.has_inf) return ExactFloat::nan();
    return ExactFloat::inf(neg);
  }
  return ExactFloat::finite(r, neg);
}

std::uint64_t encode_float(DType t, const ExactFloat& x, RoundingMode m, Overflow o) {
  const FloatLayout& l = info(t).fl;
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  if (x.is_nan()) return canonical_nan_bits(l);
  if (x.is_inf()) {
    if (o == Overflow::saturate || !l.has_inf) {
      if (!l.has_inf && o == Overflow::ieee) return canonical_nan_bits(l);
      ExactFloat mf = ExactFloat::finite(x.negative ? Rational(-max_finite(t)) : max_finite(t));
      return encode_float(t, mf, m, o);
    }
    return (x.negative ? sign_mask(l) : 0) | (exp_all << l.mant_bits);
  }
  if (x.value == 0) return x.negative ? sign_mask(l) : 0;  // exact zeros keep their sign
  ExactFloat r = round_to_format(t, x.value, m, o);
  if (!r.is_finite()) return encode_float(t, r, m, o);
  const std::uint64_t sign = r.negative ? sign_mask(l) : 0;
  if (r.value == 0) return sign;
  const Rational a = abs(r.value);
  const int emin = 1 - l.bias;
  const int e = floor_log2(a);
  if (e < emin) {  // subnormal: a = frac * 2^(emin - mant_bits)
    BigInt frac = numerator(a * pow2(l.mant_bits - emin));
    return sign | frac.convert_to<std::uint64_t>();
  }
  BigInt mant = numerator(a * pow2(l.mant_bits - e));  // exact integer in [2^mb, 2^(mb+1))
  std::uint64_t frac = (mant - (BigInt(1) << l.mant_bits)).convert_to<std::uint64_t>();
  std::uint64_t biased = static_cast<std::uint64_t>(e + l.bias);
  return sign | (biased << l.mant_bits) | frac;
}

std::int64_t int_convert(DType t, const BigInt& v, IntOverflow o, bool narrow_range) {
  const std::int64_t lo = int_min(t, narrow_range);
  const std::int64_t hi = int_max(t);
  if (o == IntOverflow::saturate) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v.convert_to<std::int64_t>();
  }
  // Wrap: two's complement truncation to the format's bits (the C++ cast of an in-range int).
  const FormatInfo& f = info(t);
  const BigInt mod = BigInt(1) << f.bits;
  BigInt r = v % mod;
  if (r < 0) r += mod;
  if (f.is_signed && r >= (mod >> 1)) r -= mod;
  return r.convert_to<std::int64_t>();
}

}  // namespace qc
