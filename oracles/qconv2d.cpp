#include "oracles/qconv2d.hpp"

#include "oracles/error.hpp"

#include <algorithm>
#include <string>

namespace qc {

std::string_view name(ConvLayout l) {
  switch (l) {
    case ConvLayout::nchw:
      return "nchw";
    case ConvLayout::nhwc:
      return "nhwc";
  }
  return "?";
}

std::string_view name(ConvPadding p) {
  switch (p) {
    case ConvPadding::real_zero:
      return "real_zero";
    case ConvPadding::quantized_zero:
      return "quantized_zero";
  }
  return "?";
}

Shape Conv2dShape::output_shape() const {
  return layout == ConvLayout::nchw ? Shape{batch, out_channels, out_height, out_width}
                                    : Shape{batch, out_height, out_width, out_channels};
}

std::int64_t Conv2dShape::input_index(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
  return layout == ConvLayout::nchw ? ((n * channels + c) * height + h) * width + w
                                    : ((n * height + h) * width + w) * channels + c;
}

std::int64_t Conv2dShape::output_index(std::int64_t n, std::int64_t oc, std::int64_t oh, std::int64_t ow) const {
  return layout == ConvLayout::nchw ? ((n * out_channels + oc) * out_height + oh) * out_width + ow
                                    : ((n * out_height + oh) * out_width + ow) * out_channels + oc;
}

std::int64_t Conv2dShape::weight_index(std::int64_t oc, std::int64_t ic, std::int64_t kh, std::int64_t kw) const {
  return ((oc * group_in_channels + ic) * kernel_h + kh) * kernel_w + kw;
}

std::int64_t Conv2dShape::tap_source(std::int64_t n, std::int64_t g, std::int64_t oh, std::int64_t ow,
                                     std::int64_t k) const {
  const std::int64_t kw = k % kernel_w, kh = (k / kernel_w) % kernel_h, ic = k / (kernel_w * kernel_h);
  const std::int64_t h = oh * geometry.stride_h - geometry.pad_top + kh * geometry.dilation_h;
  const std::int64_t w = ow * geometry.stride_w - geometry.pad_left + kw * geometry.dilation_w;
  if (h < 0 || h >= height || w < 0 || w >= width) return -1;
  return input_index(n, g * group_in_channels + ic, h, w);
}

namespace {

std::int64_t output_extent(std::int64_t in, std::int64_t pad0, std::int64_t pad1, std::int64_t kernel,
                           std::int64_t dilation, std::int64_t stride) {
  const std::int64_t span = in + pad0 + pad1 - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace

Conv2dShape resolve_conv2d(const Shape& input, ConvLayout layout, const Shape& weight, const Conv2dGeometry& g) {
  if (input.size() != 4) throw InputError("conv2d: input must be 4-D, got " + shape_str(input));
  if (weight.size() != 4) throw InputError("conv2d: weights must be OIHW (4-D), got " + shape_str(weight));
  if (g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1 || g.groups < 1 || g.pad_top < 0 ||
      g.pad_left < 0 || g.pad_bottom < 0 || g.pad_right < 0)
    throw InputError("conv2d: strides, dilations and groups must be >= 1 and paddings >= 0");
  Conv2dShape s;
  s.layout = layout;
  s.geometry = g;
  s.batch = input[0];
  s.channels = layout == ConvLayout::nchw ? input[1] : input[3];
  s.height = layout == ConvLayout::nchw ? input[2] : input[1];
  s.width = layout == ConvLayout::nchw ? input[3] : input[2];
  s.out_channels = weight[0];
  s.group_in_channels = weight[1];
  s.kernel_h = weight[2];
  s.kernel_w = weight[3];
  if (s.channels % g.groups != 0 || s.out_channels % g.groups != 0 || s.group_in_channels * g.groups != s.channels)
    throw InputError("conv2d: groups = " + std::to_string(g.groups) + " must divide C = " + std::to_string(s.channels) +
                     " and OC = " + std::to_string(s.out_channels) + ", and weights " + shape_str(weight) +
                     " must have C / groups input channels");
  if (s.kernel_h < 1 || s.kernel_w < 1) throw InputError("conv2d: empty kernel " + shape_str(weight));
  s.group_out_channels = s.out_channels / g.groups;
  s.out_height = output_extent(s.height, g.pad_top, g.pad_bottom, s.kernel_h, g.dilation_h, g.stride_h);
  s.out_width = output_extent(s.width, g.pad_left, g.pad_right, s.kernel_w, g.dilation_w, g.stride_w);
  if (s.out_height < 1 || s.out_width < 1)
    throw InputError("conv2d: the (dilated) kernel is larger than the padded input " + shape_str(input));
  return s;
}

namespace {

void require_per_tensor_input(const QuantizedOperand& x) {
  if (x.params.granularity() != Granularity::per_tensor)
    throw InputError("qconv2d: the input takes one scale and zero point (per tensor), got " +
                     std::string(name(x.params.granularity())));
}

void require_per_output_channel_weights(const QuantizedOperand& w) {
  const Granularity g = w.params.granularity();
  if (g == Granularity::per_tensor) return;
  if (g == Granularity::per_axis && (*w.params.axis == 0 || *w.params.axis == -4)) return;
  throw InputError("qconv2d: weight parameters are per tensor or per output channel (axis 0 of OIHW)");
}

void merge_proof(AccumulationProof& into, const AccumulationProof& p, bool first) {
  if (first) {
    into = p;
    return;
  }
  into.a_range = {std::min(into.a_range.lo, p.a_range.lo), std::max(into.a_range.hi, p.a_range.hi)};
  into.b_range = {std::min(into.b_range.lo, p.b_range.lo), std::max(into.b_range.hi, p.b_range.hi)};
  into.longest_segment = std::max(into.longest_segment, p.longest_segment);
  into.policy_exact = into.policy_exact && p.policy_exact;
  into.int32_loop = into.int32_loop && p.int32_loop;
  into.int64_loop = !into.int32_loop && (into.int64_loop || p.int64_loop);
  into.arbitrary_precision_dots += p.arbitrary_precision_dots;
}

// One group's im2col rows [N*OH*OW, K] of raw quantized input values, padded taps holding `pad`.
std::vector<std::int32_t> im2col(const Tensor& x, const Conv2dShape& cs, std::int64_t g, std::int32_t pad) {
  const std::int64_t K = cs.depth();
  std::vector<std::int32_t> rows(static_cast<std::size_t>(cs.batch * cs.out_height * cs.out_width * K));
  std::size_t i = 0;
  for (std::int64_t n = 0; n < cs.batch; ++n)
    for (std::int64_t oh = 0; oh < cs.out_height; ++oh)
      for (std::int64_t ow = 0; ow < cs.out_width; ++ow)
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t src = cs.tap_source(n, g, oh, ow, k);
          rows[i++] = src < 0 ? pad : static_cast<std::int32_t>(x.get_int(src));
        }
  return rows;
}

// One group's filters [OC / groups, K]: OIHW rows are already contiguous dot-product operands.
std::vector<std::int32_t> group_filters(const Tensor& w, const Conv2dShape& cs, std::int64_t g) {
  const std::int64_t K = cs.depth(), oc0 = g * cs.group_out_channels;
  std::vector<std::int32_t> f(static_cast<std::size_t>(cs.group_out_channels * K));
  for (std::int64_t j = 0; j < cs.group_out_channels * K; ++j)
    f[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(w.get_int(oc0 * K + j));
  return f;
}

}  // namespace

QLinearResult qconv2d(const QConv2dOp& op, const QConv2dPolicy& policy) {
  if (op.input.quantization == ActivationQuantization::dynamic_per_row)
    throw InputError("qconv2d: the input is quantized per tensor (static or dynamic), not per row");
  const QuantizedOperand qx = quantize_activation(op.input, policy.quantize);
  const QuantizedOperand qw = quantize_weights(op.weight, policy.quantize);
  require_per_tensor_input(qx);
  require_per_output_channel_weights(qw);
  const Conv2dShape cs = resolve_conv2d(qx.q.shape(), op.layout, qw.q.shape(), op.geometry);
  const std::int64_t zx = qx.params.zero_point(0);
  const auto pad = static_cast<std::int32_t>(op.padding == ConvPadding::real_zero ? zx : 0);
  const ParamIndexer w_param(qw.params, qw.q.shape());
  const std::int64_t K = cs.depth(), R = cs.batch * cs.out_height * cs.out_width, OCg = cs.group_out_channels;

  ScaledAccumulators sa;
  sa.shape = cs.output_shape();
  sa.segments = 1;
  const auto E = static_cast<std::size_t>(numel(sa.shape));
  sa.value.resize(E);
  sa.a_index.assign(E, 0);
  sa.b_index.resize(E);
  sa.channel.resize(E);
  for (std::int64_t g = 0; g < op.geometry.groups; ++g) {
    const std::vector<std::int32_t> a = im2col(qx.q, cs, g, pad);
    const std::vector<std::int32_t> bt = group_filters(qw.q, cs, g);
    IntGemmProblem p;
    p.rows = R;
    p.cols = OCg;
    p.depth = K;
    p.a = a;
    p.bt = bt;
    p.a_zero_points.assign(static_cast<std::size_t>(R), zx);
    p.b_zero_points.resize(static_cast<std::size_t>(OCg));
    for (std::int64_t j = 0; j < OCg; ++j)
      p.b_zero_points[static_cast<std::size_t>(j)] = qw.params.zero_point(w_param((g * OCg + j) * K));
    IntGemmAccumulators acc = accumulate_gemm(p, policy.accumulation, policy.zero_points);
    merge_proof(sa.proof, acc.proof, g == 0);
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t ow = r % cs.out_width, oh = (r / cs.out_width) % cs.out_height,
                         n = r / (cs.out_width * cs.out_height);
      for (std::int64_t j = 0; j < OCg; ++j) {
        const std::int64_t oc = g * OCg + j;
        const std::int64_t e = cs.output_index(n, oc, oh, ow);
        const auto ei = static_cast<std::size_t>(e);
        sa.value[ei] = acc.at(r, j, 0);
        if (acc.overflowed(r, j)) sa.exact_where_different.emplace(e, acc.exact(r, j, 0));
        sa.b_index[ei] = static_cast<std::int32_t>(w_param(oc * K));
        sa.channel[ei] = static_cast<std::int32_t>(oc);
      }
    }
  }
  return finish_output(std::move(sa), qx.params, qw.params, op.bias, op.output, policy);
}

}  // namespace qc
