#include "qconform/ops.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <string>

namespace qc {

std::string_view name(QParamsRecipe r) { return table_name(r); }

std::string_view name(QParamsScheme s) { return table_name(s); }

std::string_view name(ZeroPointChoice z) { return table_name(z); }

std::string_view name(ReduceRange r) { return table_name(r); }

std::string_view name(NibbleOrder o) { return table_name(o); }
std::string_view name(OddLength o) { return table_name(o); }
std::string_view name(OutOfRange o) { return table_name(o); }

std::string_view name(ActivationQuantization q) { return table_name(q); }

std::string_view name(OutputKind k) { return table_name(k); }

std::string_view name(WeightLayout l) { return table_name(l); }

GemmShape gemm_shape(const Shape& a_shape, const Shape& b_shape, WeightLayout layout) {
  if (a_shape.size() < 2) throw InputError("qgemm: A must be [batch..., M, K] (rank >= 2), got " + shape_str(a_shape));
  if (b_shape.size() != 2) throw InputError("qgemm: B must be 2-D, got " + shape_str(b_shape));
  GemmShape d;
  d.depth = a_shape.back();
  if (d.depth < 1) throw InputError("qgemm: K must be at least 1, got A " + shape_str(a_shape));
  d.rows = numel(a_shape) / d.depth;
  d.b_k_axis = layout == WeightLayout::k_by_n ? 0 : 1;
  d.cols = b_shape[static_cast<std::size_t>(1 - d.b_k_axis)];
  if (b_shape[static_cast<std::size_t>(d.b_k_axis)] != d.depth)
    throw InputError("qgemm: A " + shape_str(a_shape) + " and B " + shape_str(b_shape) + " (" +
                     std::string(name(layout)) + ") disagree on K");
  d.out_shape = Shape(a_shape.begin(), a_shape.end() - 1);
  d.out_shape.push_back(d.cols);
  return d;
}

BatchedGemmShape batched_gemm_shape(const Shape& a_shape, const Shape& b_shape, WeightLayout layout) {
  BatchedGemmShape d;
  if (b_shape.size() <= 2) {
    static_cast<GemmShape&>(d) = gemm_shape(a_shape, b_shape, layout);
    d.batch = Shape(a_shape.begin(), a_shape.end() - 2);
    d.m = a_shape[a_shape.size() - 2];
    d.batches = numel(d.batch);
    d.a_batch.resize(static_cast<std::size_t>(d.batches));
    for (std::int64_t i = 0; i < d.batches; ++i) d.a_batch[static_cast<std::size_t>(i)] = i;
    d.b_batch.assign(static_cast<std::size_t>(d.batches), 0);
    return d;
  }
  if (a_shape.size() < 2) throw InputError("qgemm: A must be [batch..., M, K] (rank >= 2), got " + shape_str(a_shape));
  const Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
  // The last two dimensions as a 2-D GEMM (this checks K).
  static_cast<GemmShape&>(d) =
      gemm_shape({a_shape[a_shape.size() - 2], a_shape.back()}, Shape(b_shape.end() - 2, b_shape.end()), layout);
  d.batched_b = true;
  d.m = d.rows;
  // numpy.matmul: "broadcast together as if the matrices were elements" (numpy.org numpy.matmul).
  const std::size_t rank = std::max(a_batch.size(), b_batch.size());
  d.batch.assign(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a_batch.size() ? 1 : a_batch[i - (rank - a_batch.size())];
    const std::int64_t y = i < rank - b_batch.size() ? 1 : b_batch[i - (rank - b_batch.size())];
    if (x != y && x != 1 && y != 1)
      throw InputError("qgemm: the batch dimensions of A " + shape_str(a_shape) + " and B " + shape_str(b_shape) +
                       " do not broadcast (numpy.matmul: aligned from the right, each pair equal or one of them 1)");
    d.batch[i] = x == 1 ? y : x;
  }
  d.batches = numel(d.batch);
  d.rows = d.batches * d.m;
  d.out_shape = d.batch;
  d.out_shape.push_back(d.m);
  d.out_shape.push_back(d.cols);
  // Flat batch index of each operand: the output's batch coordinates, 0 where the operand has 1.
  d.a_batch.resize(static_cast<std::size_t>(d.batches));
  d.b_batch.resize(static_cast<std::size_t>(d.batches));
  for (std::int64_t i = 0; i < d.batches; ++i) {
    std::int64_t rest = i, ai = 0, bi = 0, a_stride = 1, b_stride = 1;
    for (std::size_t j = rank; j-- > 0;) {
      const std::int64_t c = rest % d.batch[j];
      rest /= d.batch[j];
      if (j >= rank - a_batch.size()) {
        const std::int64_t extent = a_batch[j - (rank - a_batch.size())];
        ai += (extent == 1 ? 0 : c) * a_stride;
        a_stride *= extent;
      }
      if (j >= rank - b_batch.size()) {
        const std::int64_t extent = b_batch[j - (rank - b_batch.size())];
        bi += (extent == 1 ? 0 : c) * b_stride;
        b_stride *= extent;
      }
    }
    d.a_batch[static_cast<std::size_t>(i)] = ai;
    d.b_batch[static_cast<std::size_t>(i)] = bi;
  }
  return d;
}

std::string_view name(ConvLayout l) { return table_name(l); }

std::string_view name(ConvPadding p) { return table_name(p); }

std::string_view name(MxFormat f) { return table_name(f); }
std::string_view name(MxScaleRule r) { return table_name(r); }

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

MxQuantizeOp mx_gemm_quantize_request(const MxGemmOp& op, MxGemmSide side) {
  const MxGemmOperand& o = side == MxGemmSide::a ? op.a : op.b;
  MxQuantizeOp q;
  q.x = o.values;
  q.blocking.format = o.format;
  q.blocking.axis = side == MxGemmSide::a ? -1 : op.b_layout == WeightLayout::k_by_n ? 0 : 1;
  q.blocking.block_size = op.block_size;
  q.blocking.global_scale = o.global_scale;
  q.scale_rule = op.scale_rule;
  q.element_rounding = op.element_rounding;
  return q;
}

std::string_view op_name(const OpRequest& op) {
  struct Visitor {
    std::string_view operator()(const QuantizeOp&) const { return "quantize"; }
    std::string_view operator()(const DequantizeOp&) const { return "dequantize"; }
    std::string_view operator()(const RequantizeOp&) const { return "requantize"; }
    std::string_view operator()(const QGemmOp&) const { return "qgemm"; }
    std::string_view operator()(const QConv2dOp&) const { return "qconv2d"; }
    std::string_view operator()(const WeightOnlyGemmOp&) const { return "weight_only_gemm"; }
    std::string_view operator()(const ChooseQParamsOp&) const { return "choose_qparams"; }
    std::string_view operator()(const Conv2dOp&) const { return "conv2d"; }
    std::string_view operator()(const MxQuantizeOp&) const { return "mx_quantize"; }
    std::string_view operator()(const MxDequantizeOp&) const { return "mx_dequantize"; }
    std::string_view operator()(const MxGemmOp&) const { return "mx_gemm"; }
    std::string_view operator()(const QAddOp&) const { return "qadd"; }
  };
  return std::visit(Visitor{}, op);
}

const Tensor& op_input(const OpRequest& op) {
  struct Visitor {
    const Tensor& operator()(const QuantizeOp& o) const { return o.x; }
    const Tensor& operator()(const DequantizeOp& o) const { return o.q; }
    const Tensor& operator()(const RequantizeOp& o) const { return o.acc; }
    const Tensor& operator()(const QGemmOp& o) const { return o.a.values; }
    const Tensor& operator()(const QConv2dOp& o) const { return o.input.values; }
    const Tensor& operator()(const WeightOnlyGemmOp& o) const { return o.a; }
    const Tensor& operator()(const ChooseQParamsOp& o) const { return o.profile; }
    const Tensor& operator()(const Conv2dOp& o) const { return o.input; }
    const Tensor& operator()(const MxQuantizeOp& o) const { return o.x; }
    const Tensor& operator()(const MxDequantizeOp& o) const { return o.elements; }
    const Tensor& operator()(const MxGemmOp& o) const { return o.a.values; }
    const Tensor& operator()(const QAddOp& o) const { return o.a; }
  };
  return std::visit(Visitor{}, op);
}

DType op_output_dtype(const OpRequest& op) {
  struct Visitor {
    DType operator()(const QuantizeOp& o) const { return o.out; }
    DType operator()(const DequantizeOp& o) const { return o.out; }
    DType operator()(const RequantizeOp& o) const { return o.out; }
    DType operator()(const QGemmOp& o) const { return o.output.format; }
    DType operator()(const QConv2dOp& o) const { return o.output.format; }
    DType operator()(const WeightOnlyGemmOp& o) const { return o.out; }
    DType operator()(const ChooseQParamsOp&) const { return DType::f64; }
    DType operator()(const Conv2dOp& o) const { return o.out; }
    DType operator()(const MxQuantizeOp&) const { return DType::f32; }
    DType operator()(const MxDequantizeOp&) const { return DType::f32; }
    DType operator()(const MxGemmOp& o) const { return o.out; }
    DType operator()(const QAddOp& o) const { return o.output.format; }
  };
  return std::visit(Visitor{}, op);
}

Shape op_output_shape(const OpRequest& op) {
  struct Visitor {
    Shape operator()(const QuantizeOp& o) const { return o.x.shape(); }
    Shape operator()(const DequantizeOp& o) const { return o.q.shape(); }
    Shape operator()(const RequantizeOp& o) const { return o.acc.shape(); }
    Shape operator()(const QGemmOp& o) const {
      return batched_gemm_shape(o.a.values.shape(), logical_shape(o.b), o.b_layout).out_shape;
    }
    Shape operator()(const QConv2dOp& o) const {
      return resolve_conv2d(o.input.values.shape(), o.layout, logical_shape(o.weight), o.geometry).output_shape();
    }
    Shape operator()(const WeightOnlyGemmOp& o) const {
      return gemm_shape(o.a.shape(), logical_shape(o.b), o.b_layout).out_shape;
    }
    Shape operator()(const ChooseQParamsOp& o) const {
      if (!o.axis) return {2};
      const Shape& s = o.profile.shape();
      const int rank = static_cast<int>(s.size());
      const int a = resolve_axis(*o.axis, rank);
      if (a < 0 || a >= rank)
        throw InputError("choose_qparams: axis " + std::to_string(*o.axis) + " is outside the profile's rank " +
                         std::to_string(rank));
      return {s[static_cast<std::size_t>(a)], 2};
    }
    Shape operator()(const Conv2dOp& o) const {
      return resolve_conv2d(o.input.shape(), o.layout, logical_shape(o.weight), o.geometry).output_shape();
    }
    Shape operator()(const MxQuantizeOp& o) const { return o.x.shape(); }
    Shape operator()(const MxDequantizeOp& o) const { return o.elements.shape(); }
    Shape operator()(const MxGemmOp& o) const {
      return gemm_shape(o.a.values.shape(), o.b.values.shape(), o.b_layout).out_shape;
    }
    Shape operator()(const QAddOp& o) const { return o.a.shape(); }  // B broadcasts over A
  };
  return std::visit(Visitor{}, op);
}

}  // namespace qc
