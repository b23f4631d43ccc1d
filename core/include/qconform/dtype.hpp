// Number formats: the vocabulary every layer uses (the oracle, the backends, the case files), and
// fast conversion between a format's bit patterns and doubles. Every value of every format here is
// exact in a double. Part of the core: no exact-arithmetic library is needed to use it; the oracle's
// exact conversions (any rounding mode, rationals) are in oracles/format.hpp.
#pragma once

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

// Layout facts: the largest unbiased exponent of a finite value, the largest finite significand
// (p bits, at that exponent), the canonical quiet NaN and the sign bit.
int max_exponent(const FloatLayout& l);
std::uint64_t max_significand(const FloatLayout& l);
std::uint64_t canonical_nan_bits(const FloatLayout& l);
std::uint64_t sign_mask(const FloatLayout& l);

const FormatInfo& info(DType t);
inline std::string_view name(DType t) { return info(t).name; }
inline bool is_float(DType t) { return info(t).is_float; }
inline bool is_int(DType t) { return !info(t).is_float; }
// Accepts the short names ("f32", "i8", "u4", "f8e4m3fn") and the ONNX/numpy spellings
// ("float32", "int8", "uint4", "float8e4m3fn", "float16", "bfloat16").
std::optional<DType> parse_dtype(std::string_view s);

// Fast exact decode for every float format (all fit in a double exactly).
double float_bits_to_double(DType t, std::uint64_t pattern);
// Bits of v correctly rounded (ties to even) into float format t, with IEEE overflow (to inf, or to
// NaN in a format without inf). A NaN gives the format's canonical quiet NaN (f32/f64 keep the payload
// the hardware conversion keeps).
std::uint64_t double_to_float_bits(DType t, double v);
// v correctly rounded (ties to even) into format t, as a double; integer formats leave v unchanged.
double round_into(DType t, double v);

// Range of integer format t (narrow range drops the most negative value of a signed type).
std::int64_t int_min(DType t, bool narrow_range = false);
std::int64_t int_max(DType t);
// Whether v is a value of integer format t: whole and inside its range (NaN, 1.5 and, for i8, 300
// are not; a cast would make them undefined or wrap them).
bool is_int_value(DType t, double v);

}  // namespace qc
