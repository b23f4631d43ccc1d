// cpu-ref's quantized GEMM (gemm.cpp) and convolution (conv.cpp), and what they share
// (linear.cpp): the operands as plain integers and the output stage. Written the way a client
// team's reference is written: integers, a few float operations in the scale's type, and one
// exact rounding. None of it calls the oracle; it uses only the vocabulary (Tensor, DType,
// QuantParams with ParamIndexer, unpack_int4). It implements the `onnx` preset:
//   quantize      ONNX QuantizeLinear, cpu-ref's one quantize_linear (cpu_ref.cpp);
//   dynamic (DRQ) ONNX DynamicQuantizeLinear's parameter rule, per tensor or per row;
//   accumulate    Σ (a - za)(b - zb) in an int32 accumulator that wraps (ONNX QLinearMatMul,
//                 MatMulInteger: "accumulation may overflow if and only if in 32 bits");
//   int32         the accumulator (+ int32 bias, added with the same wrapping addition);
//   dequantized   float(acc) * (s_a * s_b) in the scale's type, per K segment, summed in segment
//                 order (+ float bias), then rounded to the output format;
//   requantized   round(v / s_out) + zp exactly, ties to even, v = Σ_s acc_s s_a s_b (+ bias),
//                 then the output range intersected with the fused activation's.
#pragma once

#include "backends/backend.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace qc::cpu_ref {

// ---- Elementwise pieces (cpu_ref.cpp) ---------------------------------------------------------

// ONNX QuantizeLinear: the one quantize of cpu-ref, for the quantize op and the GEMM/conv operands.
Tensor quantize_linear(const QuantizeOp& op);

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
IntOperand activation_integers(const ActivationOperand& a);

Availability check_weights(const QWeights& w);
// Unpacked int4, the integers as given, or float weights quantized with quantize_linear.
IntOperand weight_integers(const QWeights& w);

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

// Whether cpu-ref implements this output stage for `segments` K segments and activation scales
// of `scale_dtype` (the dequantized output computes in that type).
Availability check_output(const OutputStage& out, const std::optional<Tensor>& bias, std::int64_t segments,
                          DType scale_dtype);
Tensor output_stage(const Accumulators& acc, const std::optional<Tensor>& bias, const OutputStage& out,
                    DType scale_dtype);

// ---- The paths -----------------------------------------------------------------------------------

Availability supports_weight_only(const WeightOnlyGemmOp& op);  // weight_only.cpp
Tensor run_weight_only(const WeightOnlyGemmOp& op);
Availability supports_qgemm(const QGemmOp& op);  // gemm.cpp
Tensor run_qgemm(const QGemmOp& op);
Availability supports_qconv2d(const QConv2dOp& op);  // conv.cpp
Tensor run_qconv2d(const QConv2dOp& op);

}  // namespace qc::cpu_ref
