#include "backends/vnni/backend.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qc {
namespace {

constexpr float kMinNormal = 0x1p-126f;

bool per_tensor(const QuantParams& p) { return p.granularity() == Granularity::per_tensor; }

// Float activations are quantized as production CPU libraries do before their int8 kernels
// (MLAS MlasQuantizeLinear): f32 x / s, clamp in float to [qmin - zp, qmax - zp], round to nearest
// even (cvtps2dq), + zp; max_ps semantics send NaN to qmin. The claimed presets say the same.
template <class T>
std::vector<T> quantize_activations(const ActivationOperand& a) {
  const Tensor& x = a.values;
  std::vector<T> q(static_cast<std::size_t>(x.size()));
  if (is_int(x.dtype())) {
    for (std::int64_t i = 0; i < x.size(); ++i) q[static_cast<std::size_t>(i)] = static_cast<T>(x.get_int(i));
    return q;
  }
  const auto s = static_cast<float>(a.params.scales[0]);
  const auto zp = static_cast<std::int32_t>(a.params.zero_point(0));
  const float lo = static_cast<float>(int_min(a.format) - zp), hi = static_cast<float>(int_max(a.format) - zp);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    float v = static_cast<float>(x.get_double(i)) / s;
    v = std::isnan(v) ? lo : std::min(std::max(v, lo), hi);
    q[static_cast<std::size_t>(i)] = static_cast<T>(static_cast<std::int32_t>(std::nearbyint(v)) + zp);
  }
  return q;
}

vnni::WeightType weight_type(DType t) {
  return t == DType::i4 ? vnni::WeightType::s4 : t == DType::u4 ? vnni::WeightType::u4 : vnni::WeightType::s8;
}

// The shared quantization spec of a GEMM or conv request; `channels` output columns.
vnni::QuantSpec quant_spec(const ActivationOperand& a, const QWeights& w, const std::optional<Tensor>& bias,
                           const OutputStage& out, std::int64_t channels) {
  vnni::QuantSpec q;
  q.a_type = a.format == DType::i8 ? vnni::ActivationType::s8 : vnni::ActivationType::u8;
  q.a_zero_point = static_cast<std::int32_t>(a.params.zero_point(0));
  q.a_scale = static_cast<float>(a.params.scales[0]);
  q.w_type = weight_type(w.format);
  q.w_scales.clear();
  for (double s : w.params.scales) q.w_scales.push_back(static_cast<float>(s));
  for (std::int64_t z : w.params.zero_points) q.w_zero_points.push_back(static_cast<std::int32_t>(z));
  if (bias) {
    for (std::int64_t i = 0; i < channels; ++i) {
      if (bias->dtype() == DType::i32)
        q.bias.push_back(static_cast<std::int32_t>(bias->get_int(i)));
      else
        q.bias_f32.push_back(static_cast<float>(bias->get_double(i)));
    }
  }
  switch (out.kind) {
    case OutputKind::int32:
      q.output.kind = vnni::OutputKind::int32;
      break;
    case OutputKind::dequantized:
      q.output.kind = vnni::OutputKind::f32;
      break;
    case OutputKind::requantized:
      q.output.kind = out.format == DType::u8 ? vnni::OutputKind::u8 : vnni::OutputKind::s8;
      q.output.scale = static_cast<float>(out.scale);
      q.output.zero_point = static_cast<std::int32_t>(out.zero_point);
      if (out.clamp) {
        q.output.min = static_cast<std::int32_t>(out.clamp->lo);
        q.output.max = static_cast<std::int32_t>(out.clamp->hi);
      }
      break;
  }
  return q;
}

Availability check_common(vnni::Isa isa, const ActivationOperand& a, const QWeights& w, int n_axis,
                          const std::optional<Tensor>& bias, const OutputStage& out) {
  if (a.quantization != ActivationQuantization::static_params)
    return {false, "dynamic activation quantization is done before the kernel (not by it)"};
  if (a.format != DType::u8 && a.format != DType::i8) return {false, "activations must be u8 or s8"};
  if (!per_tensor(a.params)) return {false, "activations must be quantized per tensor"};
  if (isa == vnni::Isa::avx2_maddubs && a.format == DType::i8)
    return {false,
            "avx2-maddubs pairs the +128-shifted s8 activations, which its claimed preset does not model; use u8"};
  if (w.format != DType::i8 && w.format != DType::i4 && w.format != DType::u4)
    return {false, "weights must be s8, s4 or u4"};
  if (!w.packing && !is_int(w.values.dtype())) return {false, "weights must be given quantized (integers)"};
  if (w.params.granularity() == Granularity::blocked)
    return {false, "blocked (K-group) weight scales are not supported"};
  if (w.params.granularity() == Granularity::per_axis) {
    const int rank = static_cast<int>(w.shape.size());
    const int axis = *w.params.axis < 0 ? *w.params.axis + rank : *w.params.axis;
    if (axis != n_axis) return {false, "per-channel weight scales must run along the output channels"};
  }
  if (w.packing && w.packing->nibbles != NibbleOrder::low_first)
    return {false, "int4 weights must be packed low nibble first"};
  if (bias && bias->dtype() != DType::i32 && !(is_float(bias->dtype()) && out.kind == OutputKind::dequantized))
    return {false, "bias must be int32 (or float for a dequantized output)"};
  if (out.kind == OutputKind::dequantized && out.format != DType::f32) return {false, "dequantized output is f32 only"};
  if (out.kind == OutputKind::requantized && out.format != DType::u8 && out.format != DType::i8)
    return {false, "requantized output is u8 or s8 only"};
  const float s = static_cast<float>(a.params.scales[0]);
  if (!(std::fabs(s) >= kMinNormal)) return {false, "activation scale below the f32 normal range"};
  return {};
}

std::vector<std::int8_t> weight_bytes(const QWeights& w) {
  std::vector<std::int8_t> v(static_cast<std::size_t>(w.values.size()));
  for (std::int64_t i = 0; i < w.values.size(); ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(w.values.get_int(i));
  return v;
}

std::vector<std::uint8_t> packed_bytes(const QWeights& w) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(w.values.size()));
  for (std::int64_t i = 0; i < w.values.size(); ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(w.values.bits(i));
  return v;
}

template <class A, class Out>
void gemm_into(const vnni::PackedWeights& pw, std::int64_t m, const std::vector<A>& a, std::int64_t k, Tensor& y,
               std::int64_t n) {
  vnni::gemm<A, Out>(pw, m, a.data(), k, y.data<Out>(), n);
}

template <class A>
void dispatch_gemm(const vnni::PackedWeights& pw, std::int64_t m, const std::vector<A>& a, std::int64_t k, Tensor& y,
                   std::int64_t n) {
  switch (y.dtype()) {
    case DType::i32:
      gemm_into<A, std::int32_t>(pw, m, a, k, y, n);
      break;
    case DType::f32:
      gemm_into<A, float>(pw, m, a, k, y, n);
      break;
    case DType::u8:
      gemm_into<A, std::uint8_t>(pw, m, a, k, y, n);
      break;
    case DType::i8:
      gemm_into<A, std::int8_t>(pw, m, a, k, y, n);
      break;
    default:
      throw std::invalid_argument("vnni: unsupported output format");
  }
}

template <class A>
void dispatch_conv(const vnni::PackedConv2d& pc, const std::vector<A>& a, Tensor& y) {
  switch (y.dtype()) {
    case DType::i32:
      vnni::conv2d<A, std::int32_t>(pc, a.data(), y.data<std::int32_t>());
      break;
    case DType::f32:
      vnni::conv2d<A, float>(pc, a.data(), y.data<float>());
      break;
    case DType::u8:
      vnni::conv2d<A, std::uint8_t>(pc, a.data(), y.data<std::uint8_t>());
      break;
    case DType::i8:
      vnni::conv2d<A, std::int8_t>(pc, a.data(), y.data<std::int8_t>());
      break;
    default:
      throw std::invalid_argument("vnni: unsupported output format");
  }
}

Tensor run_gemm(vnni::Isa isa, const QGemmOp& op) {
  const Shape& as = op.a.values.shape();
  const std::int64_t k = as.back();
  const std::int64_t m = op.a.values.size() / k;
  // The weights' logical shape: QWeights::shape is set only for packed weights (infer and Python
  // build unpacked requests without it).
  const Shape& bs = logical_shape(op.b);
  const std::int64_t n = op.b_layout == WeightLayout::k_by_n ? bs[1] : bs[0];
  vnni::GemmParams gp;
  gp.n = n;
  gp.k = k;
  gp.w_layout = op.b_layout == WeightLayout::k_by_n ? vnni::WeightLayout::k_by_n : vnni::WeightLayout::n_by_k;
  gp.quant = quant_spec(op.a, op.b, op.bias, op.output, n);
  const vnni::PackedWeights pw = op.b.packing ? vnni::pack_weights_int4(gp, packed_bytes(op.b), isa)
                                              : vnni::pack_weights(gp, weight_bytes(op.b), isa);
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(n);
  Tensor y(op.output.format, ys);
  if (op.a.format == DType::i8)
    dispatch_gemm(pw, m, quantize_activations<std::int8_t>(op.a), k, y, n);
  else
    dispatch_gemm(pw, m, quantize_activations<std::uint8_t>(op.a), k, y, n);
  return y;
}

Tensor run_conv(vnni::Isa isa, const QConv2dOp& op) {
  const Shape& is = op.input.values.shape();   // NHWC
  const Shape& ws = logical_shape(op.weight);  // OIHW
  vnni::Conv2dParams cp;
  cp.batch = is[0];
  cp.height = is[1];
  cp.width = is[2];
  cp.channels = is[3];
  cp.out_channels = ws[0];
  cp.kernel_h = ws[2];
  cp.kernel_w = ws[3];
  const Conv2dGeometry& g = op.geometry;
  cp.stride_h = g.stride_h;
  cp.stride_w = g.stride_w;
  cp.pad_top = g.pad_top;
  cp.pad_left = g.pad_left;
  cp.pad_bottom = g.pad_bottom;
  cp.pad_right = g.pad_right;
  cp.dilation_h = g.dilation_h;
  cp.dilation_w = g.dilation_w;
  cp.groups = g.groups;
  cp.k_order = vnni::ConvKOrder::chw;  // the OIHW flattening: the pairs the oracle's order forms
  cp.quant = quant_spec(op.input, op.weight, op.bias, op.output, cp.out_channels);
  const vnni::PackedConv2d pc = op.weight.packing ? vnni::pack_conv2d_int4(cp, packed_bytes(op.weight), isa)
                                                  : vnni::pack_conv2d(cp, weight_bytes(op.weight), isa);
  Tensor y(op.output.format, {cp.batch, pc.out_h, pc.out_w, cp.out_channels});
  if (op.input.format == DType::i8)
    dispatch_conv(pc, quantize_activations<std::int8_t>(op.input), y);
  else
    dispatch_conv(pc, quantize_activations<std::uint8_t>(op.input), y);
  return y;
}

}  // namespace

std::string VnniBackend::name() const {
  return isa_ == vnni::Isa::avx2_maddubs ? "avx2-maddubs" : std::string(vnni::name(isa_));
}

std::string VnniBackend::description() const {
  switch (isa_) {
    case vnni::Isa::vnni512:
      return "AVX512-VNNI vpdpbusd int8 GEMM/conv, 12x32 register tile, f32 epilogue";
    case vnni::Isa::avxvnni:
      return "AVX-VNNI (256-bit) vpdpbusd int8 GEMM/conv, f32 epilogue";
    case vnni::Isa::avx2_maddubs:
      return "AVX2 vpmaddubsw+vpmaddwd int8 GEMM/conv (int16 pair saturation), f32 epilogue";
    case vnni::Isa::scalar:
      return "portable model of the vnni512 arithmetic";
  }
  return "";
}

std::string VnniBackend::claim() const { return isa_ == vnni::Isa::avx2_maddubs ? "x86-avx2-vpmaddubsw" : "x86-vnni"; }

Availability VnniBackend::availability() const {
  if (auto missing = vnni::missing_feature(isa_)) return {false, "CPU lacks " + *missing};
  return {};
}

Availability VnniBackend::supports(const OpRequest& op) const {
  if (const auto* g = std::get_if<QGemmOp>(&op))
    return check_common(isa_, g->a, g->b, g->b_layout == WeightLayout::k_by_n ? 1 : 0, g->bias, g->output);
  if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    if (c->layout != ConvLayout::nhwc) return {false, "conv input must be NHWC"};
    if (c->padding != ConvPadding::real_zero) return {false, "padded taps hold the activation zero point (real zero)"};
    return check_common(isa_, c->input, c->weight, 0, c->bias, c->output);
  }
  return {false, "the vnni kernels implement qgemm and qconv2d only"};
}

Tensor VnniBackend::run(const OpRequest& op) {
  if (const auto* g = std::get_if<QGemmOp>(&op)) return run_gemm(isa_, *g);
  return run_conv(isa_, std::get<QConv2dOp>(op));
}

}  // namespace qc
