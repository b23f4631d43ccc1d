// Numerics policies: every choice real implementations make differently, as types.
// A policy is evaluated bit-exactly by the oracle: each intermediate operation is computed
// exactly and then rounded to the policy's compute format (IEEE round-to-nearest-even, the
// default floating-point environment), exactly as an implementation following that recipe.
#pragma once

#include "oracles/format.hpp"
#include "oracles/rounding.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace qc {

// The format intermediates are rounded to.
struct ComputeFormat {
  enum class Kind : std::uint8_t {
    exact,  // no intermediate rounding (the real-number definition)
    f64,
    f32,
    f16,
    bf16,
    scale_type,  // the scale's own format (ONNX: "precision of the division ... type of y_scale")
    input_type,  // the input's own format (MIGraphX reference: x type == scale type)
    fixed64,     // int64 fixed point with `frac_bits` fraction bits, truncated (a C cast)
  };
  Kind kind = Kind::scale_type;
  int frac_bits = 0;

  bool operator==(const ComputeFormat&) const = default;
};
std::string to_string(const ComputeFormat& c);
std::optional<ComputeFormat> parse_compute_format(std::string_view s);

// Quantize: float -> int.
enum class QuantizeOrder : std::uint8_t {
  div_then_add_int,            // round(x / s) + zp, zero point added in integers (ONNX)
  div_add_float,               // round(x / s + zp), zero point added in the compute format
  recip_then_add_int,          // round(x * (1/s)) + zp
  recip_add_float,             // round(x * (1/s) + zp)
  fma_recip,                   // round(fma(x, 1/s, zp)), one rounding for the multiply-add
  round_then_add_float,        // round(x / s) + zp, the add in the compute format (MLAS scalar, MIGraphX GPU)
  recip_round_then_add_float,  // round(x * (1/s)) + zp, the add in the compute format (PyTorch quantize_val)
};
// The orders that add the zero point after rounding, in the compute format.
inline bool adds_zp_in_float_after_rounding(QuantizeOrder o) {
  return o == QuantizeOrder::round_then_add_float || o == QuantizeOrder::recip_round_then_add_float;
}
std::string_view name(QuantizeOrder o);
std::string_view formula(QuantizeOrder o);
std::optional<QuantizeOrder> parse_quantize_order(std::string_view s);

enum class Clamp : std::uint8_t {
  int_after,     // saturate the integer result
  float_before,  // clamp in the compute format before rounding (MLAS, XNNPACK, StableHLO)
  wrap,          // no clamp: two's-complement wrap of the integer (a plain cast)
};
std::string_view name(Clamp c);
std::optional<Clamp> parse_clamp(std::string_view s);

enum class NanRule : std::uint8_t {
  unspecified,  // the spec leaves it open: any output is accepted, the element is labelled special
  to_qmin,
  to_qmax,
  to_zero_point,
  to_zero,
  error,  // NaN input is an input error
  // x86 minps/maxps return their second operand when the first is NaN, so a float clamp written
  // min(v, qmax), preceded for unsigned outputs by max(v, 0), sends NaN to qmax for a signed
  // output and to qmin (0) for an unsigned one (oneDNN 2.x jit reorder: saturate_f32).
  to_qmax_signed_qmin_unsigned,
};
std::string_view name(NanRule n);
std::optional<NanRule> parse_nan_rule(std::string_view s);

// How the rounded value becomes an integer. Code that converts a float with a C cast
// (static_cast<int32_t>, static_cast<int64_t>) compiles on x86-64 to cvttss2si/cvttsd2si, which
// give the "integer indefinite" value, the most negative integer, for NaN, infinities and values
// out of range (Intel SDM vol. 2, CVTTSS2SI). What follows the cast sees that value: a zero point
// added in that integer type wraps, and the clamp then takes it to qmin.
enum class IntCast : std::uint8_t {
  exact,      // the rounded real value, however large (then the clamp); NaN follows the NaN rule
  x86_int32,  // a cast to int32 on x86: NaN, +-inf and values outside int32 give INT32_MIN
  x86_int64,  // a cast to int64 on x86: NaN, +-inf and values outside int64 give INT64_MIN
};
std::string_view name(IntCast c);
std::optional<IntCast> parse_int_cast(std::string_view s);

struct QuantizePolicy {
  QuantizeOrder order = QuantizeOrder::div_then_add_int;
  ComputeFormat compute{};
  RoundingMode rounding = RoundingMode::rne;  // the final float -> integer rounding
  Clamp clamp = Clamp::int_after;
  bool narrow_range = false;                                  // signed: drop the most negative value
  std::optional<std::pair<std::int64_t, std::int64_t>> clip;  // explicit sub-range, e.g. int4 in int8
  NanRule nan = NanRule::unspecified;  // under a cast other than exact, NaN goes through the cast
  IntCast cast = IntCast::exact;

  bool operator==(const QuantizePolicy&) const = default;
};

// The integer range an output may take: the format's range (narrow range drops the most
// negative value of a signed format), intersected with an explicit clip. Throws InputError when
// the clip leaves nothing.
struct OutputRange {
  std::int64_t lo, hi;
};
OutputRange output_range(DType out, bool narrow_range,
                         const std::optional<std::pair<std::int64_t, std::int64_t>>& clip);

// Dequantize: int -> float.
enum class DequantizeOrder : std::uint8_t {
  sub_int_then_mul,    // (q - zp) * s, subtraction in integers (exact)
  sub_float_then_mul,  // (float(q) - float(zp)) * s, subtraction in the compute format
  mul_then_sub,        // q*s - zp*s
  fma,                 // fma(q, s, -(zp*s))
};
std::string_view name(DequantizeOrder o);
std::string_view formula(DequantizeOrder o);
std::optional<DequantizeOrder> parse_dequantize_order(std::string_view s);

struct DequantizePolicy {
  DequantizeOrder order = DequantizeOrder::sub_int_then_mul;
  ComputeFormat compute{ComputeFormat::Kind::f32, 0};
  bool operator==(const DequantizePolicy&) const = default;
};

}  // namespace qc
