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
  div_then_add_int,      // round(x / s) + zp, zero point added in integers (ONNX)
  div_add_float,         // round(x / s + zp), zero point added in the compute format
  recip_then_add_int,    // round(x * (1/s)) + zp
  recip_add_float,       // round(x * (1/s) + zp)
  fma_recip,             // round(fma(x, 1/s, zp)), one rounding for the multiply-add
  round_then_add_float,  // round(x / s) + zp, the add in the compute format (MLAS scalar, MIGraphX GPU)
};
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
};
std::string_view name(NanRule n);
std::optional<NanRule> parse_nan_rule(std::string_view s);

struct QuantizePolicy {
  QuantizeOrder order = QuantizeOrder::div_then_add_int;
  ComputeFormat compute{};
  RoundingMode rounding = RoundingMode::rne;  // the final float -> integer rounding
  Clamp clamp = Clamp::int_after;
  bool narrow_range = false;                                  // signed: drop the most negative value
  std::optional<std::pair<std::int64_t, std::int64_t>> clip;  // explicit sub-range, e.g. int4 in int8
  NanRule nan = NanRule::unspecified;

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
