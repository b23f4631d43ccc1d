// Number formats: the vocabulary every layer uses, and exact conversion between bit patterns
// and rationals. Every finite value of every float format here is a dyadic rational, so decode
// is exact and encode rounds correctly under any RoundingMode.
#pragma once

#include "oracles/exact.hpp"
#include "oracles/rounding.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qc {

enum class DType : std::uint8_t { f64, f32, f16, bf16, f8e4m3fn, f8e5m2, i32, i16, u16, i8, u8, i4, u4 };

inline constexpr std::array<DType, 13> kAllDTypes = {
    DType::f64, DType::f32, DType::f16, DType::bf16, DType::f8e4m3fn, DType::f8e5m2, DType::i32,
    DType::i16, DType::u16, DType::i8,  DType::u8,   DType::i4,       DType::u4};

struct FloatLayout {
  int exp_bits = 0;
  int mant_bits = 0;  // stored fraction bits; precision p = mant_bits + 1
  int bias = 0;
  bool has_inf = true;   // false: e4m3fn (no inf; only S.1111.111 is NaN)
  bool ieee_nan = true;  // true: all-ones exponent with nonzero fraction is NaN
};

struct FormatInfo {
  DType id;
  std::string_view name;
  bool is_float;
  int bits;           // value bits (4 for i4/u4, which are stored one per byte)
  int storage_bytes;  // bytes per element in a Tensor
  bool is_signed;
  std::int64_t int_min, int_max;  // integer formats only
  FloatLayout fl;                 // float formats only
};

const FormatInfo& info(DType t);
inline std::string_view name(DType t) { return info(t).name; }
inline bool is_float(DType t) { return info(t).is_float; }
inline bool is_int(DType t) { return !info(t).is_float; }
// Accepts the short names ("f32", "i8", "u4", "f8e4m3fn") and the ONNX/numpy spellings
// ("float32", "int8", "uint4", "float8e4m3fn", "float16", "bfloat16").
std::optional<DType> parse_dtype(std::string_view s);

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

Rational max_finite(DType t);
Rational min_subnormal(DType t);

// Fast exact decode for every float format (all fit in a double exactly).
double float_bits_to_double(DType t, std::uint64_t pattern);
// Bits of v correctly rounded (ties to even) into float format t, with IEEE overflow.
std::uint64_t double_to_float_bits(DType t, double v);

// Integer conversion of an exact integer to format t.
enum class IntOverflow : std::uint8_t { saturate, wrap };
std::int64_t int_convert(DType t, const BigInt& v, IntOverflow o, bool narrow_range = false);
// Range of integer format t (narrow range drops the most negative value of a signed type).
std::int64_t int_min(DType t, bool narrow_range = false);
std::int64_t int_max(DType t);

}  // namespace qc
