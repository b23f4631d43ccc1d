// qconv2d: the full quantized 2-D convolution path (docs/design.md "Quantized GEMM and
// convolution paths"), exactly, with the same operand quantization, accumulation and output
// stage as qgemm (qlinear.hpp, one definition).
//
// Layouts. The input is NCHW [N, C, H, W] or NHWC [N, H, W, C]; the output has the input's layout.
// Weights are always OIHW [OC, C / groups, KH, KW] (ONNX Conv, PyTorch); bring HWIO/OHWI weights to
// OIHW before calling. groups divides C and OC; depthwise is groups = C (OC = C * multiplier).
//
// Geometry (ONNX Conv): OH = floor((H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h) + 1,
// input row of tap kh for output row oh: oh * stride_h - pad_top + kh * dilation_h (same for W).
//
// Dot product order. Output (n, oc, oh, ow) in group g = oc / (OC / groups) is the dot product of
// the input taps and the weights of one filter (ic within the group), in the policy's
// ConvDepthOrder: k = (ic * KH + kh) * KW + kw (c_kh_kw, the OIHW flattening) or
// (kh * KW + kw) * C + ic (kh_kw_c, the NHWC im2col). The order matters only for order-dependent
// accumulators (int32_saturate, int16_pair_saturate, whose pairs are (2j, 2j+1) in this order).
//
// Padding convention. Taps outside the image are
//   real_zero       the real value 0, i.e. the quantized input zero point (TFLite reference
//                   integer_ops/conv.h skips out-of-image taps; onnx/reference/ops/op_qlinear_conv.py
//                   subtracts the zero point and then pads with 0),
//   quantized_zero  the quantized value q = 0, real value -zx * s_x (a raw buffer padded with 0 bytes).
// They agree when the input zero point is 0.
//
// Parameters: the input per tensor (static, or dynamic per tensor); the weights per tensor or per
// output channel (axis 0 of OIHW; ONNX QLinearConv "per-output-channel w only"). A bias [OC] is i32
// with scale s_x * s_w[oc] or a float tensor.
#pragma once

#include "oracles/qlinear.hpp"

#include <string_view>

namespace qc {

using QConv2dPolicy = QGemmPolicy;

// With `only`, the result holds the output elements only[j] (flat indices, any order) alone, as
// qgemm does (qgemm.hpp).
QLinearResult qconv2d(const QConv2dOp& op, const QConv2dPolicy& policy,
                      const std::vector<std::int64_t>* only = nullptr);

// The integer stage of output elements `only` alone and the operands' parameters:
// qconv2d(op, policy, &only) is finish_output of it (qgemm_accumulators in qgemm.hpp).
LinearAccumulators qconv2d_accumulators(const QConv2dOp& op, const QConv2dPolicy& policy,
                                        const std::vector<std::int64_t>& only);

// The dot product of output element e (flat index into the output): its receptive field and its
// filter, in the policy's ConvDepthOrder.
DotTerms qconv2d_terms(const QConv2dOp& op, const QConv2dPolicy& policy, std::int64_t e);

}  // namespace qc
