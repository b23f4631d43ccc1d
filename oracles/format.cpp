#include "oracles/format.hpp"

#include "oracles/error.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace qc {
namespace {

constexpr FloatLayout kF64{11, 52, 1023, true, true};
constexpr FloatLayout kF32{8, 23, 127, true, true};
constexpr FloatLayout kF16{5, 10, 15, true, true};
constexpr FloatLayout kBF16{8, 7, 127, true, true};
// OCP 8-bit floating point spec v1.0: E4M3 has no infinities and one NaN mantissa (S.1111.111),
// so its largest finite value is 1.75 * 2^8 = 448; E5M2 is IEEE-like (max 57344).
constexpr FloatLayout kE4M3FN{4, 3, 7, false, false};
constexpr FloatLayout kE5M2{5, 2, 15, true, true};
constexpr FloatLayout kNone{};

constexpr std::int64_t kI32Min = -2147483648LL;

const std::array<FormatInfo, 13> kInfos = {{
    {DType::f64, "f64", true, 64, 8, true, 0, 0, kF64},
    {DType::f32, "f32", true, 32, 4, true, 0, 0, kF32},
    {DType::f16, "f16", true, 16, 2, true, 0, 0, kF16},
    {DType::bf16, "bf16", true, 16, 2, true, 0, 0, kBF16},
    {DType::f8e4m3fn, "f8e4m3fn", true, 8, 1, true, 0, 0, kE4M3FN},
    {DType::f8e5m2, "f8e5m2", true, 8, 1, true, 0, 0, kE5M2},
    {DType::i32, "i32", false, 32, 4, true, kI32Min, 2147483647LL, kNone},
    {DType::i16, "i16", false, 16, 2, true, -32768, 32767, kNone},
    {DType::u16, "u16", false, 16, 2, false, 0, 65535, kNone},
    {DType::i8, "i8", false, 8, 1, true, -128, 127, kNone},
    {DType::u8, "u8", false, 8, 1, false, 0, 255, kNone},
    {DType::i4, "i4", false, 4, 1, true, -8, 7, kNone},
    {DType::u4, "u4", false, 4, 1, false, 0, 15, kNone},
}};

int emax(const FloatLayout& l) {
  // e4m3fn keeps the all-ones exponent for finite values (only mantissa 111 is NaN).
  const int top = (1 << l.exp_bits) - 1;
  return (l.ieee_nan ? top - 1 : top) - l.bias;
}

// Largest finite mantissa (as an integer with p bits) at the top exponent.
std::uint64_t max_top_mantissa(const FloatLayout& l) {
  const std::uint64_t all = (std::uint64_t{1} << (l.mant_bits + 1)) - 1;
  return l.ieee_nan ? all : all - 1;  // e4m3fn: S.1111.111 is NaN, so 1.110
}

std::uint64_t nan_pattern(const FloatLayout& l) {
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  if (l.ieee_nan) return (exp_all << l.mant_bits) | (std::uint64_t{1} << (l.mant_bits - 1));
  return (exp_all << l.mant_bits) | ((std::uint64_t{1} << l.mant_bits) - 1);
}

std::uint64_t sign_bit(const FloatLayout& l) { return std::uint64_t{1} << (l.exp_bits + l.mant_bits); }

}  // namespace

const FormatInfo& info(DType t) { return kInfos[static_cast<std::size_t>(t)]; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (const FormatInfo& f : kInfos)
    if (f.name == s) return f.id;
  struct Alias {
    std::string_view name;
    DType t;
  };
  static constexpr Alias kAliases[] = {
      {"float64", DType::f64},       {"double", DType::f64},
      {"float32", DType::f32},       {"float", DType::f32},
      {"float16", DType::f16},       {"half", DType::f16},
      {"bfloat16", DType::bf16},     {"float8e4m3fn", DType::f8e4m3fn},
      {"float8e5m2", DType::f8e5m2}, {"int32", DType::i32},
      {"int16", DType::i16},         {"uint16", DType::u16},
      {"int8", DType::i8},           {"uint8", DType::u8},
      {"int4", DType::i4},           {"uint4", DType::u4},
  };
  for (const Alias& a : kAliases)
    if (a.name == s) return a.t;
  return std::nullopt;
}

ExactFloat decode_float(DType t, std::uint64_t pattern) {
  const FloatLayout& l = info(t).fl;
  const bool neg = (pattern & sign_bit(l)) != 0;
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

Rational max_finite(DType t) {
  const FloatLayout& l = info(t).fl;
  return Rational(BigInt(max_top_mantissa(l))) * pow2(emax(l) - l.mant_bits);
}

Rational min_subnormal(DType t) {
  const FloatLayout& l = info(t).fl;
  return pow2(1 - l.bias - l.mant_bits);
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
  const Rational maxf = max_finite(t);
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
  if (x.is_nan()) return nan_pattern(l);
  if (x.is_inf()) {
    if (o == Overflow::saturate || !l.has_inf) {
      if (!l.has_inf && o == Overflow::ieee) return nan_pattern(l);
      ExactFloat mf = ExactFloat::finite(x.negative ? Rational(-max_finite(t)) : max_finite(t));
      return encode_float(t, mf, m, o);
    }
    return (x.negative ? sign_bit(l) : 0) | (exp_all << l.mant_bits);
  }
  if (x.value == 0) return x.negative ? sign_bit(l) : 0;  // exact zeros keep their sign
  ExactFloat r = round_to_format(t, x.value, m, o);
  if (!r.is_finite()) return encode_float(t, r, m, o);
  const std::uint64_t sign = r.negative ? sign_bit(l) : 0;
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

double float_bits_to_double(DType t, std::uint64_t p) {
  switch (t) {
    case DType::f64:
      return std::bit_cast<double>(p);
    case DType::f32:
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(p)));
    case DType::bf16:
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(p << 16)));
    default:
      break;
  }
  const FloatLayout& l = info(t).fl;
  const bool neg = (p & sign_bit(l)) != 0;
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  const std::uint64_t ef = (p >> l.mant_bits) & exp_all;
  const std::uint64_t frac = p & ((std::uint64_t{1} << l.mant_bits) - 1);
  double v;
  if (l.ieee_nan && ef == exp_all) {
    v = frac ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!l.ieee_nan && ef == exp_all && frac == (std::uint64_t{1} << l.mant_bits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(frac), 1 - l.bias - l.mant_bits);
  } else {
    v = std::ldexp(static_cast<double>(frac | (std::uint64_t{1} << l.mant_bits)),
                   static_cast<int>(ef) - l.bias - l.mant_bits);
  }
  return neg ? -v : v;
}

std::uint64_t double_to_float_bits(DType t, double v) {
  switch (t) {
    case DType::f64:
      return std::bit_cast<std::uint64_t>(v);
    case DType::f32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(v));  // RNE
    default:
      break;  // narrower formats: one correct rounding (no double rounding via f32)
  }
  if (std::isnan(v)) return encode_float(t, ExactFloat::nan());
  if (std::isinf(v)) return encode_float(t, ExactFloat::inf(v < 0));
  return encode_float(t, ExactFloat::finite(Rational(v), std::signbit(v)));
}

std::int64_t int_min(DType t, bool narrow_range) {
  const FormatInfo& f = info(t);
  return narrow_range && f.is_signed ? f.int_min + 1 : f.int_min;
}

std::int64_t int_max(DType t) { return info(t).int_max; }

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
