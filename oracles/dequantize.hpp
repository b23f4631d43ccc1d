// DequantizeLinear under any DequantizePolicy, exactly.
//
// y = cast_out(f(q, zp, s)) where f is the policy's order evaluated in its compute format
// (every intermediate operation rounded to nearest even, as an IEEE implementation of that
// recipe would) and cast_out rounds the result into the output float format, ties to even,
// with IEEE overflow to inf (NaN for f8e4m3fn). When the compute format is wider than the
// output this is a second rounding, exactly as the ONNX reference's final astype or ORT CPU's
// C++ static_cast<OutT> of an fp32 product (docs/numerics.md "Dequantize in real
// implementations").
//
// Orders (policy.hpp DequantizeOrder), with d = q - zp:
//   sub_int_then_mul    (q - zp) * s, the subtraction exact in integers, then float(d) * s
//                       (ORT CPU, XNNPACK, FBGEMM, TFLite reference, TVM, Glow)
//   sub_float_then_mul  (float(q) - float(zp)) * s (ONNX reference, PyTorch CUDA per-tensor,
//                       MIGraphX)
//   mul_then_sub        q*s - zp*s (TFLite NEON without FMA)
//   fma                 fma(q, s, -(zp*s)) (TFLite NEON with __ARM_FEATURE_FMA)
//
// Labels describe the exact real value (q - zp) * s against the output format's grid, where
// implementations that round differently part ways:
//   tie       it lies exactly on a midpoint between two neighbours of the output format
//   near_tie  within kNearTieDistance output steps of such a midpoint
//   saturated the policy's result is not finite (an intermediate or the cast overflowed)
//   clear     otherwise (also for an exact 0)
// `special` is never produced: integer inputs have no NaN, inf or subnormal.
//
// Two paths give identical results: the slow path evaluates every step on Boost rationals
// (with an optional trace); the fast path uses the hardware's f32/f64 arithmetic where that is
// provably the policy's arithmetic (f32 or f64 compute; exact compute when the f64 product is
// exact) and hands an element to the slow path when a bound does not hold.
#pragma once

#include "oracles/quantize.hpp"

#include <cstdint>
#include <vector>

namespace qc {

struct DequantizeResult {
  Tensor y;                        // float output of the requested format, shape of q
  std::vector<Label> labels;       // empty unless requested
  std::int64_t slow_elements = 0;  // how many elements the fast path handed to the slow path
};

// q: an integer tensor (i32, i16, u16, i8, u8, i4, u4); p: its scales and zero points (validated
// against q); out: a float format (f64, f32, f16, bf16, and also f8). Throws InputError for a
// non-integer input, a non-float output or invalid parameters.
DequantizeResult dequantize(const Tensor& q, const QuantParams& p, DType out, const DequantizePolicy& policy,
                            OraclePath path = OraclePath::fast, bool want_labels = true);

struct DequantizeElement {
  std::uint64_t bits = 0;  // the output's bit pattern in `out`
  ExactFloat y;            // the output's value
  ExactFloat exact;        // the real number (q - zp) * s
  ExactFloat computed;     // the policy's result in its compute format, before the cast to `out`
  Label label = Label::clear;
  std::vector<TraceStep> steps;
};

// One element, every step (for `qconform explain`). `scale` must be exactly representable in
// `scale_dtype`; `q_dtype` is the input's integer format (it only matters for
// ComputeFormat::input_type, which resolves to f32 for integers).
DequantizeElement dequantize_element(std::int64_t q, DType q_dtype, double scale, DType scale_dtype, std::int64_t zp,
                                     DType out, const DequantizePolicy& policy, bool trace = false);

// Where the exact value d * s lies relative to the rounding boundaries of float format `out`
// (tie, near_tie or clear); the single definition both paths use. |d| < 2^40 (any difference of
// two values of the supported integer formats), s a finite positive double.
Label exact_product_label(std::int64_t d, double s, DType out);

}  // namespace qc
