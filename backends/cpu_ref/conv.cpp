// cpu-ref's quantized 2-D convolution: a direct loop over (n, oc, oh, ow) and the taps (ic, kh,
// kw), then the output stage (linear.hpp). ONNX QLinearConv / ConvInteger geometry:
//   input NCHW [N, C, H, W] or NHWC [N, H, W, C] (the output has the same layout), weights OIHW
//   [OC, C / groups, KH, KW]; output channel oc reads input channels g * C/groups .. of its group
//   g = oc / (OC / groups); depthwise is groups = C;
//   OH = (H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h + 1 (same for W);
//   tap (kh, kw) of output row oh reads input row oh * stride_h - pad_top + kh * dilation_h.
// A tap outside the image is either the real value 0 (real_zero: it contributes nothing, as in
// TFLite's reference and ONNX's reference, which subtracts the zero point before padding with 0),
// or the quantized value 0 (quantized_zero: a raw buffer padded with 0 bytes, worth -zx * s_x).
//
// Parameters: the input per tensor (static or dynamic), the weights per tensor or per output
// channel (ONNX QLinearConv). The accumulator is an int32 that wraps (onnx preset): the loop sums
// in int64, exact since |Σ| <= (C/groups)·KH·KW·65535² < 2^63 for any realistic filter, and the
// int32 accumulator is that sum mod 2^32 (wrapping addition is addition mod 2^32, in any order).
#include "backends/cpu_ref/linear.hpp"

#include <stdexcept>

namespace qc::cpu_ref {
namespace {

bool per_output_channel(const QuantParams& p) { return p.block_size == 0 && p.axis && (*p.axis == 0 || *p.axis == -4); }

}  // namespace

Availability supports_qconv2d(const QConv2dOp& op, const Numerics& n) {
  if (op.input.quantization == ActivationQuantization::dynamic_per_row)
    return {false, "a convolution input is quantized per tensor, not per row"};
  if (const Availability a = check_activation(op.input); !a.available) return a;
  if ((op.input.quantization == ActivationQuantization::static_params || is_int(op.input.values.dtype())) &&
      op.input.params.granularity() != Granularity::per_tensor)
    return {false, "cpu-ref quantizes a convolution input per tensor only"};
  if (const Availability w = check_weights(op.weight); !w.available) return w;
  if (op.weight.params.granularity() != Granularity::per_tensor && !per_output_channel(op.weight.params))
    return {false, "cpu-ref takes convolution weights per tensor or per output channel (axis 0 of OIHW)"};
  const DType scale_dtype =
      op.input.quantization == ActivationQuantization::static_params || is_int(op.input.values.dtype())
          ? op.input.params.scale_dtype
          : DType::f32;
  return check_output(op.output, op.bias, 1, scale_dtype, op.weight.params.scale_dtype, n);
}

Tensor run_qconv2d(const QConv2dOp& op, const Numerics& n) {
  const IntOperand x = activation_integers(op.input, n);
  const IntOperand w = weight_integers(op.weight, n);
  const bool nhwc = op.layout == ConvLayout::nhwc;
  const Conv2dGeometry& g = op.geometry;
  if (x.shape.size() != 4 || w.shape.size() != 4)
    throw std::invalid_argument("cpu-ref qconv2d: 4-D input and OIHW weights");
  const std::int64_t N = x.shape[0], C = nhwc ? x.shape[3] : x.shape[1];
  const std::int64_t H = nhwc ? x.shape[1] : x.shape[2], W = nhwc ? x.shape[2] : x.shape[3];
  const std::int64_t OC = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const std::int64_t OCG = OC / g.groups;  // output channels per group
  if (CG * g.groups != C || OCG * g.groups != OC) throw std::invalid_argument("cpu-ref qconv2d: bad groups");
  const std::int64_t OH = (H + g.pad_top + g.pad_bottom - g.dilation_h * (KH - 1) - 1) / g.stride_h + 1;
  const std::int64_t OW = (W + g.pad_left + g.pad_right - g.dilation_w * (KW - 1) - 1) / g.stride_w + 1;

  auto input_at = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t ww) {
    const std::int64_t i = nhwc ? ((n * H + h) * W + ww) * C + c : ((n * C + c) * H + h) * W + ww;
    return x.q[static_cast<std::size_t>(i)];
  };
  auto output_index = [&](std::int64_t n, std::int64_t oc, std::int64_t oh, std::int64_t ow) {
    return nhwc ? ((n * OH + oh) * OW + ow) * OC + oc : ((n * OC + oc) * OH + oh) * OW + ow;
  };

  const std::int64_t zx = x.params.zero_point(0);
  const double sx = x.params.scales[0];
  const ParamIndexer wi(w.params, w.shape);
  const std::int64_t filter = CG * KH * KW;  // weights of one output channel

  Accumulators acc;
  acc.shape = nhwc ? Shape{N, OH, OW, OC} : Shape{N, OC, OH, OW};
  const auto E = static_cast<std::size_t>(N * OC * OH * OW);
  acc.acc.resize(E);
  acc.scale_a.assign(E, sx);
  acc.scale_b.resize(E);
  acc.channel.resize(E);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < OC; ++oc) {
      const std::int64_t group = oc / OCG;
      const std::int64_t wp = wi(oc * filter);  // the weights' parameter index: per tensor or oc
      const std::int64_t zw = w.params.zero_point(wp);
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          std::int64_t sum = 0;
          for (std::int64_t ic = 0; ic < CG; ++ic)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                const std::int64_t ww = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                const bool inside = h >= 0 && h < H && ww >= 0 && ww < W;
                if (!inside && op.padding == ConvPadding::real_zero) continue;  // (zx - zx) * w = 0
                const std::int64_t xv = inside ? input_at(n, group * CG + ic, h, ww) : 0;
                const std::int64_t wv = w.q[static_cast<std::size_t>(((oc * CG + ic) * KH + kh) * KW + kw)];
                sum += (xv - zx) * (wv - zw);
              }
          const auto e = static_cast<std::size_t>(output_index(n, oc, oh, ow));
          acc.acc[e] = wrap_int32(sum);
          acc.scale_b[e] = w.params.scales[static_cast<std::size_t>(wp)];
          acc.channel[e] = oc;
        }
    }
  return output_stage(acc, op.bias, op.output, x.params.scale_dtype, n);
}

}  // namespace qc::cpu_ref
