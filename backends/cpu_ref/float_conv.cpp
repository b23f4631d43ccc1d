// cpu-ref's conv2d (a float input; float weights, or integer weights dequantized): a direct loop
// as a client's reference writes it, on its own index arithmetic (not the oracle's Conv2dShape).
// ONNX Conv geometry: input NCHW or NHWC (the output in the same layout), weights OIHW
// [OC, C / groups, KH, KW], zero padding, OH = (H + pad_top + pad_bottom - dilation_h·(KH - 1) - 1)
// / stride_h + 1, tap (kh, kw) of row oh reads row oh·stride_h - pad_top + kh·dilation_h.
// Arithmetic: every weight w = (q - zp)·s and every product x·w in long double (exact: 24-bit by
// 24-bit mantissas fit its 64), summed in tap order in long double, + bias, then stored: to double
// and rounded once to the output format. The summation order is cpu-ref's own; the harness judges
// it by distance to the exact value or by the TOSA dot-product bound.
#include "backends/cpu_ref/formats.hpp"
#include "backends/cpu_ref/linear.hpp"

namespace qc::cpu_ref {

Availability supports_conv2d(const Conv2dOp& op) {
  if (!is_float(op.input.dtype()) || op.input.dtype() == DType::f8e4m3fn || op.input.dtype() == DType::f8e5m2)
    return {false, "cpu-ref's conv2d takes f64, f32, f16 or bf16 input"};
  if (op.out != DType::f32 && op.out != DType::f16 && op.out != DType::bf16 && op.out != DType::f64)
    return {false, "cpu-ref's conv2d outputs f64, f32, f16 or bf16"};
  const Shape& ws = logical_shape(op.weight);
  if (op.input.rank() != 4 || ws.size() != 4) return {false, "conv2d: input and weights are 4-D"};
  const QuantParams& p = op.weight.params;
  const bool float_weights = !op.weight.packing && is_float(op.weight.values.dtype());
  if (!float_weights && p.block_size != 0) return {false, "cpu-ref's conv2d weights are per tensor or per channel"};
  if (!float_weights && p.axis && !(*p.axis == 0 || *p.axis == -4))
    return {false, "cpu-ref's conv2d weights are per output channel (axis 0) at most"};
  return {};
}

Tensor run_conv2d(const Conv2dOp& op) {
  const bool nchw = op.layout == ConvLayout::nchw;
  const Shape& is = op.input.shape();
  const Shape& ws = logical_shape(op.weight);
  const std::int64_t N = is[0], C = nchw ? is[1] : is[3], H = nchw ? is[2] : is[1], W = nchw ? is[3] : is[2];
  const std::int64_t OC = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  const Conv2dGeometry& g = op.geometry;
  const std::int64_t OH = (H + g.pad_top + g.pad_bottom - g.dilation_h * (KH - 1) - 1) / g.stride_h + 1;
  const std::int64_t OW = (W + g.pad_left + g.pad_right - g.dilation_w * (KW - 1) - 1) / g.stride_w + 1;
  const std::int64_t OCG = OC / g.groups;

  // The weights as long doubles, OIHW.
  std::vector<long double> w(static_cast<std::size_t>(OC * CG * KH * KW));
  const bool float_weights = !op.weight.packing && is_float(op.weight.values.dtype());
  const Tensor q = op.weight.packing
                       ? unpack_nibbles(op.weight.values, op.weight.format, op.weight.shape, *op.weight.packing)
                       : op.weight.values;
  const QuantParams& p = op.weight.params;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(w.size()); ++i) {
    if (float_weights) {
      w[static_cast<std::size_t>(i)] = q.get_double(i);
    } else {
      const std::size_t c = p.scales.size() == 1 ? 0 : static_cast<std::size_t>(i / (CG * KH * KW));  // its channel
      const std::int64_t zp = p.zero_points.empty() ? 0 : p.zero_points[p.zero_points.size() == 1 ? 0 : c];
      w[static_cast<std::size_t>(i)] = static_cast<long double>(q.get_int(i) - zp) * p.scales[c];
    }
  }
  auto x_at = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t x) {
    return nchw ? ((n * C + c) * H + h) * W + x : ((n * H + h) * W + x) * C + c;
  };
  Tensor y(op.out, nchw ? Shape{N, OC, OH, OW} : Shape{N, OH, OW, OC});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < OC; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          long double acc = 0;
          const std::int64_t c0 = (oc / OCG) * CG;  // the group's first input channel
          for (std::int64_t ic = 0; ic < CG; ++ic)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                const std::int64_t x = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                if (h < 0 || h >= H || x < 0 || x >= W) continue;  // zero padding
                acc += static_cast<long double>(op.input.get_double(x_at(n, c0 + ic, h, x))) *
                       w[static_cast<std::size_t>(((oc * CG + ic) * KH + kh) * KW + kw)];
              }
          if (op.bias) acc += op.bias->get_double(oc);
          y.set_bits(nchw ? ((n * OC + oc) * OH + oh) * OW + ow : ((n * OH + oh) * OW + ow) * OC + oc,
                     to_format_bits(op.out, static_cast<double>(acc)));
        }
  return y;
}

}  // namespace qc::cpu_ref
