// Pipelines: two lowerings of the same small graph, each evaluated exactly, returned side by side so
// a report can show where they part (docs/design.md "Pipelines").
//
//  * u8 x s8 rewrite. x86 without VNNI multiplies u8 by s8 (vpmaddubsw), so an s8 x s8 layer is run
//    with its activations shifted by +128 (values and zero point together), and a u8 x u8 layer
//    with its weights shifted by -128: (q + d) - (zp + d) = q - zp, so every dot product is
//    unchanged. TVM did this in python/tvm/relay/qnn/op/legalizations.py (_shift,
//    helper_change_dtypes_to_uint8_int8); oneDNN does the same for s8 x s8 with a compensation
//    term (doc/advanced_topics/int8_computations.md). The rewrite is exact under real-zero padding;
//    under quantized_zero padding it moves the padded taps (q = 0 means another real value after the
//    shift), which the comparison then shows.
//  * fused FC versus MatMul then bias add. Fused: acc + int32 bias, requantized once. Unfused:
//    the MatMul requantized to intermediate parameters (s_mid, zp_mid), then the bias added to
//    that int8 tensor's real value and the sum requantized to the output; the add is evaluated
//    exactly (the ideal scheme with the policy's rounding and clamp), so every difference comes
//    from the intermediate rounding. A fused clamp belongs to the last op of each lowering.
//  * Q -> DQ -> conv versus quantized conv then dequantize. QDQ: the input and the weights are
//    quantized and dequantized (exactly, or into a float format), convolved in exact arithmetic
//    (a float conv with unspecified summation order, taken at its ideal) with padded taps 0.0, an
//    int32 bias dequantized with scale s_x * s_w, and rounded once into the output format.
//    Quantized: qconv2d with the dequantized output stage under the policy.
#pragma once

#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"

#include <optional>
#include <vector>

namespace qc {

// ---- u8 x s8 rewrite -------------------------------------------------------------------------

// Values and zero points shifted by the same `delta` into format `to` (every value and zero
// point must fit `to`). Exact: q - zp is unchanged.
QuantizedOperand shift_quantized(const QuantizedOperand& x, std::int64_t delta, DType to);

// s8 x s8 -> u8 x s8: the activation, quantized under `quantize` into i8 if it is float, shifted by
// +128 into u8. The result carries integer activations and the op's weights, bias and output.
QGemmOp rewrite_s8s8_as_u8s8(const QGemmOp& op, const QuantizePolicy& quantize);
QConv2dOp rewrite_s8s8_as_u8s8(const QConv2dOp& op, const QuantizePolicy& quantize);
// u8 x u8 -> u8 x s8: the weights, quantized if float, shifted by -128 into i8.
QGemmOp rewrite_u8u8_as_u8s8(const QGemmOp& op, const QuantizePolicy& quantize);
QConv2dOp rewrite_u8u8_as_u8s8(const QConv2dOp& op, const QuantizePolicy& quantize);

struct LoweringPair {
  QLinearResult original, rewritten;
  std::int64_t mismatches = 0;  // elements whose output bits differ
};

// The op under `original`, and its u8 x s8 rewrite (activations shifted when they are i8, else the
// weights when both are u8) under `rewritten` (e.g. int16_pair_saturate with compensate).
LoweringPair compare_u8s8_rewrite(const QGemmOp& op, const QGemmPolicy& original, const QGemmPolicy& rewritten);
LoweringPair compare_u8s8_rewrite(const QConv2dOp& op, const QGemmPolicy& original, const QGemmPolicy& rewritten);

// ---- Fused FC versus MatMul + bias add ---------------------------------------------------------

struct IntermediateQParams {
  double scale = 1.0;  // exactly representable in the activations' scale format
  std::int64_t zero_point = 0;
  DType format = DType::i8;
};

struct FcLowerings {
  QLinearResult fused;   // acc + bias, requantized once
  QLinearResult matmul;  // the MatMul alone, requantized to the intermediate parameters
  Tensor unfused;        // intermediate + bias, requantized to the output
  std::vector<Label> unfused_labels;
  std::vector<Rational> unfused_exact;  // the bias add's exact pre-rounding values (output units)
  std::int64_t mismatches = 0;          // fused versus unfused
};

// fc: a requantized output and an optional i32 bias. Throws InputError otherwise.
FcLowerings compare_fused_fc(const QGemmOp& fc, const IntermediateQParams& mid, const QGemmPolicy& policy);

// ---- Q -> DQ -> conv versus quantized conv then dequantize -------------------------------------

struct QdqConvLowerings {
  Tensor qdq;                       // the float lowering, rounded once (RNE) into the output format
  std::vector<Rational> qdq_exact;  // its exact values
  std::vector<Label> qdq_labels;
  QLinearResult quantized;  // qconv2d with the dequantized output stage
  std::int64_t mismatches = 0;
};

// op: a dequantized output. dq_format: nullopt for exact dequantized reals, else the float format the
// QDQ graph's DequantizeLinear produces (under policy.dequantize).
QdqConvLowerings compare_qdq_conv(const QConv2dOp& op, const QGemmPolicy& policy, std::optional<DType> dq_format);

// Number of elements whose bits differ (same shape and format required).
std::int64_t count_bit_mismatches(const Tensor& a, const Tensor& b);

}  // namespace qc
