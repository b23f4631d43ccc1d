// The exact 2-D convolution of real values, rounded once: the one definition of a float
// convolution in the oracle. compare_qdq_conv (pipelines.hpp) evaluates the Q -> DQ -> float conv
// lowering with it; its inputs are the dequantized reals.
//
//   y[n, oc, oh, ow] = Σ_k x[tap_source(n, g, oh, ow, k)] · w[oc, k]  (+ bias[oc])
//
// over the taps k of one output (Conv2dShape: stride, padding, dilation, groups; a padded tap adds
// the real 0, as ONNX Conv's zero padding does), evaluated exactly and rounded once (RNE, IEEE
// overflow) into the output format: the correctly rounded value of the ideal float convolution
// (ONNX Conv, StableHLO convolution: the summation order is unspecified, so the exact sum is the
// reference and a kernel is judged by distance or by the TOSA dot-product bound, weight_only.hpp).
#pragma once

#include "oracles/exact.hpp"
#include "oracles/labels.hpp"
#include "qconform/ops.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <vector>

namespace qc {

struct FloatConv2dResult {
  Tensor y;                      // the exact values correctly rounded into the output format, cs.output_shape()
  std::vector<Rational> exact;   // per element, in y's order
  std::vector<double> bound;     // per element: Σ |x| · |w| + |bias|, rounded to f64 (TOSA's bound)
  std::vector<Label> labels;     // tie / near_tie / clear on the output grid; saturated: y not finite
  std::int64_t kernel_size = 0;  // taps per output (C / groups · kh · kw)
  bool nonzero_bias = false;
};

// x: the input's reals in its layout's row-major order; w: the weights' reals, OIHW; bias: one per
// output channel, or empty. Throws InputError when the sizes do not match cs.
FloatConv2dResult float_conv2d_exact(const Conv2dShape& cs, const std::vector<Rational>& x,
                                     const std::vector<Rational>& w, const std::vector<Rational>& bias, DType out);

}  // namespace qc
