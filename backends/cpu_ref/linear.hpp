// cpu-ref's quantized GEMM (gemm.cpp) and convolution (conv.cpp), and what they share
// (linear.cpp): the operands as plain integers and the output stage. Written the way a client
// team's reference is written: integers, a few float operations, and one rounding routine. None
// of it calls the oracle; it uses only the vocabulary (Tensor, DType, QuantParams with
// ParamIndexer) and its own int4 unpacking and float rounding (formats.hpp). Under the claimed
// preset's Numerics (numerics.hpp):
//   quantize      cpu-ref's one quantize_linear (cpu_ref.cpp), for float operands;
//   dynamic (DRQ) ONNX DynamicQuantizeLinear's parameter rule, per tensor or per row (the rule
//                 travels with the op; cpu-ref implements ONNX's only);
//   accumulate    Σ (a - za)(b - zb) in an int32 accumulator that wraps (ONNX QLinearMatMul,
//                 MatMulInteger: "accumulation may overflow if and only if in 32 bits"; TFLite
//                 and FBGEMM accumulate in int32 too);
//   int32         the accumulator (+ int32 bias, added with the same wrapping addition);
//   dequantized   float(acc) * (s_a * s_b) in the dequantize type, per K segment, summed in
//                 segment order (+ float bias), then rounded to the output format;
//   requantized   the preset's routine (exact ties to even; gemmlowp; f32 multiplier), + zp,
//                 then the output range intersected with the fused activation's. Only the exact
//                 routine takes several K segments or a float bias (v = Σ_s acc_s s_a s_b + bias).
#pragma once

#include "backends/cpu_ref/numerics.hpp"
#include "qconform/backend.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace qc::cpu_ref {

// ---- Elementwise pieces (cpu_ref.cpp) ---------------------------------------------------------

// QuantizeLinear under `n`: the one quantize of cpu-ref, for the quantize op and the GEMM/conv operands.
Tensor quantize_linear(const QuantizeOp& op, const Numerics& n);

// round(acc * s_in * s_w / s_out), ties to even, exactly; saturated to ±2^40 (beyond every output).
std::int64_t requantize_exact(std::int64_t acc, double s_in, double s_w, double s_out);

// One term acc * s_a * s_b of a real value (a float bias is the term 1 * bias * 1).
struct ScaledTerm {
  std::int64_t acc = 0;
  double s_a = 1, s_b = 1;
};
// round(Σ terms / s_out), ties to even, exactly (several K blocks, or a float bias); saturated to
// ±2^40 like requantize_exact.
std::int64_t requantize_sum_exact(std::span<const ScaledTerm> terms, double s_out);

// v mod 2^32 as a signed 32-bit value: what an int32 accumulator that wraps holds.
std::int32_t wrap_int32(std::int64_t v);

// A Q31 multiplier: real ~= multiplier * 2^(shift - 31).
struct Q31 {
  std::int32_t multiplier = 0;
  int shift = 0;
};
// TFLite's QuantizeMultiplier (double-rounding build).
Q31 tflite_quantize_multiplier(double real);

// One accumulator (any int32 bias already added) under the preset's requantize routine, plus the
// zero point, before the output clamp. Throws std::invalid_argument outside the routine's domain
// (gemmlowp: a non-int32 accumulator, a multiplier of 2^30 or more).
std::int64_t requantize_value(const Numerics& n, std::int64_t acc, double s_a, double s_b, double s_out,
                              std::int64_t zp);
// Whether the routine can form its multiplier from scales of `scale_dtype`.
Availability check_requantize_scales(const Numerics& n, DType scale_dtype);

// ---- Operands (linear.cpp) ----------------------------------------------------------------------

// A quantized operand: one integer per element (row-major over `shape`) and its parameters.
struct IntOperand {
  Shape shape;
  std::vector<std::int32_t> q;
  QuantParams params;
};

// Whether cpu-ref can quantize this activation (the reason when not).
Availability check_activation(const ActivationOperand& a);
// Static: quantize_linear (or the integers as given); dynamic: the ONNX DynamicQuantizeLinear
// parameters per tensor, or per row of the [rows, K] view (then `shape` is that view).
IntOperand activation_integers(const ActivationOperand& a, const Numerics& n);

Availability check_weights(const QWeights& w);
// Unpacked int4, the integers as given, or float weights quantized with quantize_linear.
IntOperand weight_integers(const QWeights& w, const Numerics& n);

// ---- Output stage (linear.cpp) ------------------------------------------------------------------

// The integer results of a GEMM or convolution: output element e has `segments` int32
// accumulators acc[e * S + s], each worth scale_a[e * S + s] * scale_b[e * S + s] per unit, and
// bias index channel[e].
struct Accumulators {
  Shape shape;
  std::int64_t segments = 1;
  std::vector<std::int32_t> acc;
  std::vector<double> scale_a, scale_b;
  std::vector<std::int64_t> channel;
};

// Whether cpu-ref implements this output stage for `segments` K segments, activation scales of
// `scale_dtype` (which a dequantized output may compute in) and weight scales of `weight_scale_dtype`.
Availability check_output(const OutputStage& out, const std::optional<Tensor>& bias, std::int64_t segments,
                          DType scale_dtype, DType weight_scale_dtype, const Numerics& n);
Tensor output_stage(const Accumulators& acc, const std::optional<Tensor>& bias, const OutputStage& out,
                    DType scale_dtype, const Numerics& n);

// ---- The paths -----------------------------------------------------------------------------------

Availability supports_weight_only(const WeightOnlyGemmOp& op);  // weight_only.cpp
Tensor run_weight_only(const WeightOnlyGemmOp& op);
Availability supports_qgemm(const QGemmOp& op, const Numerics& n);  // gemm.cpp
Tensor run_qgemm(const QGemmOp& op, const Numerics& n);
Availability supports_qconv2d(const QConv2dOp& op, const Numerics& n);  // conv.cpp
Tensor run_qconv2d(const QConv2dOp& op, const Numerics& n);

Availability supports_conv2d(const Conv2dOp& op);  // float_conv.cpp
Tensor run_conv2d(const Conv2dOp& op);

}  // namespace qc::cpu_ref
