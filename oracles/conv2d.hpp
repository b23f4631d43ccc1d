// conv2d: a 2-D convolution with float activations, exactly (docs/design.md "Float and weight-only
// convolution").
//
//   float input (f32, f16, bf16, f64: its exact values)
//   weights: float values used exactly (the k x k float convolution, ONNX Conv), or i8/u8/i4/u4
//            values (packed int4 unpacked) dequantized with their parameters, per tensor or per
//            output channel (axis 0 of OIHW): the weight-only (hybrid) convolution of StableHLO
//            (stablehlo spec, "convolution": a hybrid op dequantizes its quantized rhs and
//            computes in float)
//   --> Σ over the taps (Conv2dShape: stride, padding with the real 0, dilation, groups) + float bias
//   --> the exact sum rounded once (RNE) into the output format (float_conv2d.hpp).
//
// The dequantize step is weight_only.hpp's: the exact reals (q - zp) * s, or, with
// WeightOnlyPolicy::weight_format, the float values a kernel dequantizes them to (one definition:
// dequantized_values in qlinear.hpp). A float convolution's summation order is not specified, so a
// kernel is judged by its distance to this correctly rounded value or by the TOSA dot-product bound
// (weight_only.hpp, the `dot_product` expectation).
#pragma once

#include "oracles/float_conv2d.hpp"
#include "oracles/weight_only.hpp"

namespace qc {

// Throws InputError for a non-float input, bias or output, weight parameters that are neither per
// tensor nor per output channel, and shapes the convolution cannot take.
FloatConv2dResult conv2d(const Conv2dOp& op, const WeightOnlyPolicy& policy);

// The reals the weights stand for, OIHW: float values as they are, integer values dequantized.
std::vector<Rational> conv2d_weight_values(const Conv2dOp& op, const WeightOnlyPolicy& policy);

}  // namespace qc
