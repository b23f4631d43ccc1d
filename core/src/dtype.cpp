// Number formats (qconform/dtype.hpp) and rounding-mode names: the core's vocabulary. Everything here
// is plain integer and IEEE double arithmetic; the oracle's exact conversions build on these layouts.
#include "qconform/dtype.hpp"
#include "qconform/rounding_mode.hpp"

#include <bit>
#include <cmath>
#include <limits>

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

}  // namespace

int max_exponent(const FloatLayout& l) {
  // e4m3fn keeps the all-ones exponent for finite values (only mantissa 111 is NaN).
  const int top = (1 << l.exp_bits) - 1;
  return (l.ieee_nan ? top - 1 : top) - l.bias;
}

std::uint64_t max_significand(const FloatLayout& l) {
  const std::uint64_t all = (std::uint64_t{1} << (l.mant_bits + 1)) - 1;
  return l.ieee_nan ? all : all - 1;  // e4m3fn: S.1111.111 is NaN, so 1.110
}

std::uint64_t canonical_nan_bits(const FloatLayout& l) {
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  if (l.ieee_nan) return (exp_all << l.mant_bits) | (std::uint64_t{1} << (l.mant_bits - 1));
  return (exp_all << l.mant_bits) | ((std::uint64_t{1} << l.mant_bits) - 1);
}

std::uint64_t sign_mask(const FloatLayout& l) { return std::uint64_t{1} << (l.exp_bits + l.mant_bits); }

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
  const bool neg = (p & sign_mask(l)) != 0;
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

double round_into(DType t, double v) { return is_float(t) ? float_bits_to_double(t, double_to_float_bits(t, v)) : v; }

std::uint64_t double_to_float_bits(DType t, double v) {
  switch (t) {
    case DType::f64:
      return std::bit_cast<std::uint64_t>(v);
    case DType::f32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(v));  // RNE
    default:
      break;  // narrower formats: one correct rounding from the double (no double rounding via f32)
  }
  const FloatLayout& l = info(t).fl;
  const std::uint64_t exp_all = (std::uint64_t{1} << l.exp_bits) - 1;
  if (std::isnan(v)) return canonical_nan_bits(l);
  const std::uint64_t sign = std::signbit(v) ? sign_mask(l) : 0;
  const auto overflow = [&] { return l.has_inf ? sign | (exp_all << l.mant_bits) : canonical_nan_bits(l); };
  if (std::isinf(v)) return overflow();
  // |v| = M * 2^(E - 52) with M the 53-bit significand. A double subnormal (|v| < 2^-1022) is far
  // below half the smallest subnormal of every format here, so it rounds to a signed zero.
  const std::uint64_t d = std::bit_cast<std::uint64_t>(v);
  const auto ef = static_cast<int>((d >> 52) & 0x7ff);
  if (ef == 0) return sign;
  const std::uint64_t M = (d & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  const int E = ef - 1023;
  // One unit in the last place of the target at |v|'s binade (clamped to the subnormal quantum),
  // then n = |v| / 2^quantum rounded to nearest, ties to even, in integers.
  const int emin = 1 - l.bias;
  int quantum = std::max(E, emin) - l.mant_bits;
  const int shift = quantum - (E - 52);  // >= 52 - mant_bits > 0 for every narrow format
  std::uint64_t n = 0;
  if (shift < 54) {
    const std::uint64_t q = M >> shift, rem = M & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    n = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
  }
  if (n == 0) return sign;
  if (n == (std::uint64_t{1} << (l.mant_bits + 1))) {  // rounded up into the next binade
    n >>= 1;
    ++quantum;
  }
  if (n < (std::uint64_t{1} << l.mant_bits)) return sign | n;  // subnormal (quantum is the minimum)
  const int e = quantum + l.mant_bits;
  if (e > max_exponent(l) || (e == max_exponent(l) && n > max_significand(l))) return overflow();
  const auto biased = static_cast<std::uint64_t>(e + l.bias);
  return sign | (biased << l.mant_bits) | (n - (std::uint64_t{1} << l.mant_bits));
}

std::int64_t int_min(DType t, bool narrow_range) {
  const FormatInfo& f = info(t);
  return narrow_range && f.is_signed ? f.int_min + 1 : f.int_min;
}

std::int64_t int_max(DType t) { return info(t).int_max; }
std::string_view name(RoundingMode m) { return table_name(m); }

std::string_view describe(RoundingMode m) { return table_description(m); }

std::optional<RoundingMode> parse_rounding_mode(std::string_view s) {
  for (RoundingMode m : kAllRoundingModes)
    if (name(m) == s) return m;
  if (s == "half_to_even" || s == "nearest_even") return RoundingMode::rne;
  if (s == "half_away" || s == "round") return RoundingMode::rna;
  if (s == "half_up") return RoundingMode::rhu;
  if (s == "half_down") return RoundingMode::rhd;
  if (s == "trunc" || s == "truncate") return RoundingMode::rtz;
  return std::nullopt;
}

bool is_int_value(DType t, double v) {
  return v == std::floor(v) && v >= static_cast<double>(int_min(t)) && v <= static_cast<double>(int_max(t));
}

}  // namespace qc
