// The presets cpu-ref can claim. Each is the handful of choices a reference implementation makes
// in its own code (divide or multiply by the reciprocal, which float type, which rounding call,
// which requantize routine), written here as data so one plain implementation serves all of them.
// cpu-ref carries these choices out itself and never calls the oracle; the harness checks that
// the result equals the oracle under the named preset (tests/harness/cpu_ref_claims_test.cpp).
#pragma once

#include "qconform/tensor.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace qc::cpu_ref {

// The float type an operation is carried out in.
enum class FloatType : std::uint8_t {
  scale_type,  // the scale's own type (ONNX: "the scale's type sets the precision")
  f32,         // float
  f64,         // double
};

// How an int32 accumulator becomes an output integer.
enum class RequantizeRoutine : std::uint8_t {
  exact,           // round(acc * s_a * s_b / s_out) exactly, ties to even, + zp (ONNX QLinearMatMul/Conv)
  gemmlowp,        // TFLite MultiplyByQuantizedMultiplier: a Q31 multiplier, SaturatingRoundingDoublingHighMul
                   // then RoundingDivideByPOT, + zp in int32
  f32_multiplier,  // nearbyint(float(acc) * m) + zp with m = (s_a * s_b) / s_out in float (FBGEMM ReQuantizeOutput)
};

struct Numerics {
  std::string_view preset;       // the preset claimed (oracles/presets.cpp)
  std::string_view description;  // one line, for `qconform list backends`
  // Quantize: y = saturate(round(x / s) + zp), or x * (1 / s) when `reciprocal`.
  bool reciprocal = false;
  FloatType quantize_in = FloatType::scale_type;
  bool ties_away = false;    // std::round; otherwise std::nearbyint (ties to even)
  bool nan_to_qmax = false;  // a NaN input gives qmax; otherwise qmin
  // Dequantize: float(q - zp) * s, and a GEMM's dequantized output float(acc) * (s_a * s_b).
  FloatType dequantize_in = FloatType::scale_type;
  RequantizeRoutine requantize = RequantizeRoutine::exact;
};

// Every preset cpu-ref implements, `onnx` (its default) first.
std::span<const Numerics> claimable();
// The numerics for `preset`; nullptr when cpu-ref does not implement it.
const Numerics* find_numerics(std::string_view preset);
// "onnx, tflite-reference, ..." for messages.
std::string claimable_list();

// IEEE arithmetic in one float type T (f64, f32, f16 or bf16), on values already in T. Each
// operation is done in double and rounded once to T: for f32, f16 and bf16 a double result of
// +, -, * or / rounded again to T equals T's own correctly rounded result, because double has at
// least 2p + 2 bits for each of them (Figueroa, "When is double rounding innocuous?", 1995); for
// T = f64 the double operation is T's own.
struct FloatIn {
  DType t = DType::f32;
  double round(double v) const;  // v rounded to T (nearest, ties to even)
  double mul(double a, double b) const { return round(a * b); }
  double div(double a, double b) const { return round(a / b); }
  double add(double a, double b) const { return round(a + b); }
};
// The type `f` names for a tensor whose scales are `scale_dtype`.
FloatIn float_in(FloatType f, DType scale_dtype);

}  // namespace qc::cpu_ref
