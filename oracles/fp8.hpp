// QuantizeLinear to float8 and DequantizeLinear from float8 (ONNX opset 19+: e4m3fn and e5m2),
// exactly, under a quantize or dequantize policy.
//
// Quantize: y = cast_f8(x / s, saturate). The zero point of a float8 output must be 0 and is not
// added (ONNX: "y_zero_point is usually not used for quantization to float8"; the reference
// implementation onnx/reference/ops/op_quantize_linear.py::_CommonQuantizeLinear._run ignores it
// for float8, so -0 stays -0). The quotient is formed as the policy's order says (x / s, or
// x * (1/s) for the reciprocal orders) in its compute format: `exact` rounds x/s once into float8;
// f32 (the ONNX reference: numpy divides two f32 arrays in f32, then ml_dtypes casts) rounds twice.
// The cast rounds ties to even (a float conversion; the policy's `rounding` is its float -> integer
// rounding and does not apply) and follows ONNX Cast's float8 table (docs/Operators.md "Cast", opset 19):
//                       e4m3fn sat   e4m3fn no-sat   e5m2 sat   e5m2 no-sat
//   NaN                 NaN          NaN             NaN        NaN
//   +-inf               +-448        NaN             +-57344    +-inf
//   rounds past max     +-448        NaN             +-57344    +-inf
// ("rounds past max": the value rounded to the format's precision exceeds the largest finite value,
// IEEE 754 7.4; the ONNX table writes it loosely as x > FLT_MAX).
//
// Dequantize: y = cast_out(float(q) * s) with the policy's compute format (ONNX reference:
// x.astype(float32) * scale in f32; exact: the product rounded once into the output). NaN stays
// NaN and e5m2's infinities stay infinite.
#pragma once

#include "oracles/dequantize.hpp"
#include "oracles/quantize.hpp"

namespace qc {

// Whether t is one of the float8 formats these ops take (f8e4m3fn, f8e5m2).
bool is_float8(DType t);

// y (of format `out`, a float8 format) for float x. p's zero points must all be 0.
// The fast path (fp8.cpp) decides each element on doubles where that is provably the definition's
// result and hands the rest to quantize_to_float8_element; OraclePath::slow takes that for every
// element. slow_elements counts the elements the definition evaluated.
QuantizeResult quantize_to_float8(const Tensor& x, const QuantParams& p, DType out, bool saturate,
                                  const QuantizePolicy& policy, bool want_labels = true,
                                  OraclePath path = OraclePath::fast);

struct Float8QuantizeElement {
  std::uint64_t bits = 0;  // y's bit pattern
  ExactFloat y;            // y's value
  ExactFloat exact;        // x / s, exactly
  ExactFloat quotient;     // the policy's quotient in its compute format (before the cast)
  Label label = Label::clear;
  std::vector<TraceStep> steps;
};
Float8QuantizeElement quantize_to_float8_element(double x, DType x_dtype, double scale, DType scale_dtype, DType out,
                                                 bool saturate, const QuantizePolicy& policy, bool trace = false);

// y (float format `out`) for float8 codes q. p's zero points must all be 0. Fast and slow paths as for
// quantize_to_float8.
DequantizeResult dequantize_from_float8(const Tensor& q, const QuantParams& p, DType out,
                                        const DequantizePolicy& policy, bool want_labels = true,
                                        OraclePath path = OraclePath::fast);
DequantizeElement dequantize_from_float8_element(std::uint64_t q_bits, DType q_dtype, double scale, DType scale_dtype,
                                                 DType out, const DequantizePolicy& policy, bool trace = false);

}  // namespace qc
