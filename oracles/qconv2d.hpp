// qconv2d: the full quantized 2-D convolution path (DESIGN.md §3.5), exactly, with the same
// operand quantization, accumulation and output stage as qgemm (qlinear.hpp, one definition).
//
// Layouts. The input is NCHW [N, C, H, W] or NHWC [N, H, W, C]; the output has the input's layout.
// Weights are always OIHW [OC, C / groups, KH, KW] (ONNX Conv, PyTorch); bring HWIO/OHWI weights to
// OIHW before calling. groups divides C and OC; depthwise is groups = C (OC = C * multiplier).
//
// Geometry (ONNX Conv): OH = floor((H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h) + 1,
// input row of tap kh for output row oh: oh * stride_h - pad_top + kh * dilation_h (same for W).
//
// Dot product order. Output (n, oc, oh, ow) in group g = oc / (OC / groups) is the dot product over
// k = (ic * KH + kh) * KW + kw (the OIHW flattening of one filter; ic within the group) of the
// input tap and the weight. The order matters only for order-dependent accumulators
// (int32_saturate, int16_pair_saturate, whose pairs are (2j, 2j+1) in this order).
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

enum class ConvLayout : std::uint8_t { nchw, nhwc };
enum class ConvPadding : std::uint8_t { real_zero, quantized_zero };
std::string_view name(ConvLayout l);
std::string_view name(ConvPadding p);

struct Conv2dGeometry {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
};

// Resolved sizes and the index arithmetic of one convolution: the single definition of which input
// element each tap reads, shared by qconv2d and the float convolution of pipelines.hpp.
struct Conv2dShape {
  ConvLayout layout = ConvLayout::nchw;
  Conv2dGeometry geometry;
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  std::int64_t out_height = 0, out_width = 0;
  std::int64_t group_in_channels = 0, group_out_channels = 0;

  std::int64_t depth() const { return group_in_channels * kernel_h * kernel_w; }  // K of one dot product
  Shape output_shape() const;
  std::int64_t input_index(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const;
  std::int64_t output_index(std::int64_t n, std::int64_t oc, std::int64_t oh, std::int64_t ow) const;
  std::int64_t weight_index(std::int64_t oc, std::int64_t ic, std::int64_t kh, std::int64_t kw) const;  // OIHW
  // The input element that tap k of output (n, group g, oh, ow) reads, or -1 for a padded tap.
  std::int64_t tap_source(std::int64_t n, std::int64_t g, std::int64_t oh, std::int64_t ow, std::int64_t k) const;
};

// Throws InputError for inconsistent shapes or geometry.
Conv2dShape resolve_conv2d(const Shape& input, ConvLayout layout, const Shape& weight, const Conv2dGeometry& g);

struct QConv2dOp {
  ActivationOperand input;  // [N, C, H, W] or [N, H, W, C]
  ConvLayout layout = ConvLayout::nchw;
  QWeights weight;             // OIHW
  std::optional<Tensor> bias;  // [OC]
  Conv2dGeometry geometry;
  ConvPadding padding = ConvPadding::real_zero;
  OutputStage output;
};

using QConv2dPolicy = QGemmPolicy;

QLinearResult qconv2d(const QConv2dOp& op, const QConv2dPolicy& policy);

}  // namespace qc
