// How the hip backend turns a request into kernel launches, written once over an executor:
//   DeviceExec (backend.cpp)         launches the kernels (kernels.hpp) on a GPU stream;
//   HostExec (tests/hip/host_exec.hpp) runs the same element functions and GEMM phases on the CPU,
//                                    thread by thread, so the tests check this plan without a GPU.
// An executor provides Buffer<T> (get(), download()), upload(vector), alloc(n), one method per
// kernel with the arguments of kernels.hpp, gemm_path(M, N) and sync(). All arithmetic that
// decides an output element happens in those kernels; the plan only moves integers and
// parameters (every scale is an f32 or f16 value, exact in float).
#pragma once

#include "backends/hip/gemm_tile.hpp"
#include "backends/hip/numerics.hpp"
#include "qconform/ops.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace qc::gpu::plan {

// ---- Parameters ----------------------------------------------------------------------------------

// An axis of `shape` (negative: counted from the end) as row-major indexing sees it: its length,
// and the number of elements that follow each of its steps.
struct AxisExtent {
  std::int64_t length = 1, inner = 1;
};
inline int resolve_axis(int axis, const Shape& shape) {
  return axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
}
inline AxisExtent axis_extent(const Shape& shape, int axis) {
  const auto a = static_cast<std::size_t>(resolve_axis(axis, shape));
  AxisExtent e{shape[a], 1};
  for (std::size_t d = a + 1; d < shape.size(); ++d) e.inner *= shape[d];
  return e;
}

inline ParamLayout layout_of(const QuantParams& p, const Shape& shape) {
  ParamLayout l;
  if (p.granularity() == Granularity::per_tensor) return l;
  const AxisExtent e = axis_extent(shape, *p.axis);
  l.dim = e.length;
  l.inner = e.inner;
  if (p.block_size > 0) {
    l.block = p.block_size;
    l.nblocks = (l.dim + p.block_size - 1) / p.block_size;
  }
  return l;
}

// The requantize channel: the accumulator's axis (or none).
inline ParamLayout channel_layout(const RequantizeParams& p, const Shape& shape) {
  ParamLayout l;
  if (!p.axis) return l;
  const AxisExtent e = axis_extent(shape, *p.axis);
  l.dim = e.length;
  l.inner = e.inner;
  return l;
}

inline std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.get_double(i));
  return v;
}
inline std::vector<std::int32_t> ints(const Tensor& t) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t.get_int(i));
  return v;
}
inline std::vector<float> scales_of(const QuantParams& p) {
  return std::vector<float>(p.scales.begin(), p.scales.end());
}
inline std::vector<std::int32_t> zero_points_of(const QuantParams& p) {
  std::vector<std::int32_t> z(p.scales.size(), 0);
  for (std::size_t i = 0; i < p.zero_points.size() && i < z.size(); ++i)
    z[i] = static_cast<std::int32_t>(p.zero_points[i]);
  return z;
}

// The integer format of an operand: the values' own for integer values, else the quantized format.
inline DType activation_format(const ActivationOperand& a) {
  return is_int(a.values.dtype()) ? a.values.dtype() : a.format;
}
inline DType weight_format(const QWeights& w) {
  return w.packing || !is_int(w.values.dtype()) ? w.format : w.values.dtype();
}
inline Shape weight_shape(const QWeights& w) { return w.packing ? w.shape : w.values.shape(); }
// u8 values are stored as v - 128 to fit the signed bytes the dot products take.
inline std::int32_t shift_of(DType t) { return t == DType::u8 ? 128 : 0; }

constexpr std::int64_t kKAlign = 64;  // both GEMM paths' K step
inline std::int64_t padded(std::int64_t k) { return (k + kKAlign - 1) / kKAlign * kKAlign; }

// ---- Quantize, dequantize, requantize -------------------------------------------------------------

// A float tensor quantized by the quantize kernel: int32 values of format `out`.
template <class Exec>
typename Exec::template Buffer<std::int32_t> quantize_values(Exec& ex, const Tensor& x, const QuantParams& p, DType out,
                                                             const Recipe& recipe) {
  const auto xd = ex.upload(floats(x));
  const auto sd = ex.upload(scales_of(p));
  const auto zd = ex.upload(zero_points_of(p));
  auto q = ex.template alloc<std::int32_t>(static_cast<std::size_t>(x.size()));
  ex.quantize(xd.get(), x.size(), sd.get(), zd.get(), layout_of(p, x.shape()), p.scale_dtype == DType::f16,
              static_cast<std::int32_t>(int_min(out)), static_cast<std::int32_t>(int_max(out)), recipe, q.get());
  ex.sync();  // xd, sd and zd are freed on return
  return q;
}

template <class Exec>
Tensor run_quantize(Exec& ex, const QuantizeOp& op, const Recipe& recipe) {
  const std::vector<std::int32_t> q = quantize_values(ex, op.x, op.params, op.out, recipe).download();
  Tensor y(op.out, op.x.shape());
  for (std::int64_t i = 0; i < y.size(); ++i) y.set_int(i, q[static_cast<std::size_t>(i)]);
  return y;
}

template <class Exec>
Tensor run_dequantize(Exec& ex, const DequantizeOp& op, const Recipe& recipe) {
  const auto qd = ex.upload(ints(op.q));
  const auto zd = ex.upload(zero_points_of(op.params));
  const auto sd = ex.upload(scales_of(op.params));
  const auto n = static_cast<std::size_t>(op.q.size());
  const bool f16 = op.out == DType::f16;
  auto yd = ex.template alloc<std::uint32_t>(n);  // f32 bits, or f16 bits packed 2 bytes apart
  ex.dequantize(qd.get(), op.q.size(), sd.get(), zd.get(), layout_of(op.params, op.q.shape()),
                op.params.scale_dtype == DType::f16, recipe, f16, yd.get());
  ex.sync();
  const std::vector<std::uint32_t> v = yd.download();
  Tensor y(op.out, op.q.shape());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h = 0;
    if (f16) std::memcpy(&h, reinterpret_cast<const unsigned char*>(v.data()) + 2 * i, 2);
    y.set_bits(static_cast<std::int64_t>(i), f16 ? h : v[i]);
  }
  return y;
}

template <class Exec>
Tensor run_requantize(Exec& ex, const RequantizeOp& op, const Recipe& recipe) {
  const RequantizeParams& p = op.params;
  const auto accd = ex.upload(ints(op.acc));
  const auto wd = ex.upload(std::vector<float>(p.weight_scales.begin(), p.weight_scales.end()));
  const std::vector<std::int32_t> zps(p.output_zero_points.begin(), p.output_zero_points.end());
  const auto zd = ex.upload(zps);
  auto yd = ex.template alloc<std::int32_t>(static_cast<std::size_t>(op.acc.size()));
  ex.requantize(accd.get(), op.acc.size(), static_cast<float>(p.input_scale), wd.get(), p.weight_scales.size() > 1,
                zps.empty() ? nullptr : zd.get(), zps.size() > 1, channel_layout(p, op.acc.shape()),
                static_cast<float>(p.output_scale), static_cast<std::int32_t>(int_min(op.out)),
                static_cast<std::int32_t>(int_max(op.out)), recipe.rounding, yd.get());
  ex.sync();
  const auto v = yd.download();
  Tensor y(op.out, op.acc.shape());
  for (std::int64_t i = 0; i < y.size(); ++i) y.set_int(i, v[static_cast<std::size_t>(i)]);
  return y;
}

// ---- GEMM and convolution ---------------------------------------------------------------------------

// Integer weights (int32 per element, logical shape): uploaded, unpacked or quantized.
template <class Exec>
typename Exec::template Buffer<std::int32_t> weight_values(Exec& ex, const QWeights& w, const Recipe& recipe) {
  if (w.packing) {
    const Shape& shape = w.shape;
    // Pairs along the packing axis, or flat packing: one slice of every element.
    const AxisExtent pairs = w.packing->axis ? axis_extent(shape, *w.packing->axis) : AxisExtent{numel(shape), 1};
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(w.values.size()));
    for (std::int64_t i = 0; i < w.values.size(); ++i)
      bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(w.values.bits(i));
    const auto packed = ex.upload(bytes);
    auto v = ex.template alloc<std::int32_t>(static_cast<std::size_t>(numel(shape)));
    ex.unpack_int4(packed.get(), numel(shape), pairs.length, pairs.inner, w.packing->nibbles == NibbleOrder::low_first,
                   w.format == DType::i4, v.get());
    ex.sync();
    return v;
  }
  if (is_int(w.values.dtype())) return ex.upload(ints(w.values));
  return quantize_values(ex, w.values, w.params, w.format, recipe);
}

template <class Exec>
typename Exec::template Buffer<std::int32_t> activation_values(Exec& ex, const ActivationOperand& a,
                                                               const Recipe& recipe) {
  if (is_int(a.values.dtype())) return ex.upload(ints(a.values));
  return quantize_values(ex, a.values, a.params, a.format, recipe);
}

// Per output channel (column): weight scales, shifted zero points, biases.
struct ChannelParams {
  std::vector<float> w_scales;
  std::vector<std::int32_t> zb;
  std::vector<std::int32_t> bias_i32;
  std::vector<float> bias_f32;
};
inline ChannelParams channel_params(const QWeights& w, const std::optional<Tensor>& bias, std::int64_t channels) {
  ChannelParams c;
  const bool per_channel = w.params.granularity() == Granularity::per_axis;
  const std::int32_t shift = shift_of(weight_format(w));
  for (std::int64_t n = 0; n < channels; ++n) {
    const std::int64_t k = per_channel ? n : 0;
    c.w_scales.push_back(static_cast<float>(w.params.scales[static_cast<std::size_t>(k)]));
    c.zb.push_back(static_cast<std::int32_t>(w.params.zero_point(k)) - shift);
    if (bias && bias->dtype() == DType::i32) c.bias_i32.push_back(static_cast<std::int32_t>(bias->get_int(n)));
    if (bias && is_float(bias->dtype())) c.bias_f32.push_back(static_cast<float>(bias->get_double(n)));
  }
  return c;
}

// The epilogue's parameters; the caller sets the buffers (sums, zero points, biases, output).
inline Epilogue epilogue_for(const OutputStage& out, const ActivationOperand& a, const Recipe& recipe) {
  Epilogue e;
  switch (out.kind) {
    case qc::OutputKind::int32:
      e.kind = gpu::OutputKind::int32;
      break;
    case qc::OutputKind::dequantized:
      e.kind = out.format == DType::f16 ? gpu::OutputKind::f16 : gpu::OutputKind::f32;
      break;
    case qc::OutputKind::requantized: {
      e.kind = gpu::OutputKind::requantized;
      std::int64_t lo = int_min(out.format), hi = int_max(out.format);
      if (out.clamp) lo = std::max(lo, out.clamp->lo), hi = std::min(hi, out.clamp->hi);  // a fused activation
      e.lo = static_cast<std::int32_t>(lo);
      e.hi = static_cast<std::int32_t>(hi);
      e.out_scale = static_cast<float>(out.scale);
      e.out_zero_point = static_cast<std::int32_t>(out.zero_point);
      break;
    }
  }
  e.za = static_cast<std::int32_t>(a.params.zero_point(0)) - shift_of(activation_format(a));
  e.a_scale = static_cast<float>(a.params.scales[0]);
  e.rounding = recipe.rounding;
  return e;
}

// The output tensor from the output buffer (4 bytes per element): int32 values, f32 bits, or f16
// bits packed 2 bytes apart at its start.
inline Tensor output_tensor(const std::vector<std::int32_t>& v, DType format, const Shape& shape) {
  Tensor y(format, shape);
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (std::int64_t i = 0; i < y.size(); ++i) {
    if (format == DType::f16) {
      std::uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      y.set_bits(i, h);
    } else if (format == DType::f32) {
      y.set_bits(i, static_cast<std::uint32_t>(v[static_cast<std::size_t>(i)]));
    } else {
      y.set_int(i, v[static_cast<std::size_t>(i)]);
    }
  }
  return y;
}

// The buffers one epilogue reads and writes, kept alive until the launch has finished: the
// channel parameters (uploaded here), the compensation sums and the output.
template <class Exec>
struct EpilogueBuffers {
  typename Exec::template Buffer<float> w_scales;
  typename Exec::template Buffer<std::int32_t> zb, bias_i32;
  typename Exec::template Buffer<float> bias_f32;
  EpilogueBuffers(Exec& ex, const ChannelParams& c)
      : w_scales(ex.upload(c.w_scales)),
        zb(ex.upload(c.zb)),
        bias_i32(ex.upload(c.bias_i32)),
        bias_f32(ex.upload(c.bias_f32)) {}
  void attach(Epilogue& e, const ChannelParams& c, const std::int32_t* row_sums, const std::int32_t* col_sums,
              std::int32_t* out) const {
    e.w_scales = w_scales.get();
    e.zb = zb.get();
    e.bias_i32 = c.bias_i32.empty() ? nullptr : bias_i32.get();
    e.bias_f32 = c.bias_f32.empty() ? nullptr : bias_f32.get();
    e.row_sums = row_sums;
    e.col_sums = col_sums;
    e.out = out;
  }
};

// A [batch..., M, K] x [K, N] (or [N, K]) GEMM: both operands become shifted, K-padded byte
// matrices ([M][Kp] and [N][Kp]), then one GEMM launch with the compensation and the output stage.
template <class Exec>
Tensor run_gemm(Exec& ex, const QGemmOp& op, const Recipe& recipe) {
  const Shape& as = op.a.values.shape();
  const std::int64_t K = as.back(), M = K == 0 ? 0 : op.a.values.size() / K;
  const Shape bs = weight_shape(op.b);
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t N = k_by_n ? bs[1] : bs[0];
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(N);
  if (M == 0 || N == 0) return Tensor(op.output.format, ys);
  const std::int64_t Kp = padded(K);
  const auto a_int = activation_values(ex, op.a, recipe);
  const auto b_int = weight_values(ex, op.b, recipe);
  auto a8 = ex.template alloc<std::int8_t>(static_cast<std::size_t>(M * Kp));
  auto b8 = ex.template alloc<std::int8_t>(static_cast<std::size_t>(N * Kp));
  ex.to_operand(a_int.get(), M, K, K, 1, shift_of(activation_format(op.a)), a8.get(), Kp);
  ex.to_operand(b_int.get(), N, K, k_by_n ? 1 : K, k_by_n ? N : 1, shift_of(weight_format(op.b)), b8.get(), Kp);
  const DenseA A{a8.get(), Kp};
  auto rows = ex.template alloc<std::int32_t>(static_cast<std::size_t>(M));
  auto cols = ex.template alloc<std::int32_t>(static_cast<std::size_t>(N));
  ex.row_sums(A, M, K, rows.get());
  ex.col_sums(b8.get(), N, K, Kp, cols.get());
  const ChannelParams c = channel_params(op.b, op.bias, N);
  const EpilogueBuffers<Exec> eb(ex, c);
  auto yd = ex.template alloc<std::int32_t>(static_cast<std::size_t>(M * N));
  GemmArgs p{.M = M, .N = N, .K = K, .Kp = Kp, .b = b8.get(), .epilogue = epilogue_for(op.output, op.a, recipe)};
  eb.attach(p.epilogue, c, rows.get(), cols.get(), yd.get());
  p.epilogue.ldc = N;
  ex.gemm(A, p, ex.gemm_path(M, N));
  ex.sync();
  return output_tensor(yd.download(), op.output.format, ys);
}

// The convolution's geometry (ONNX Conv: OH = (H + pads - dilation * (KH - 1) - 1) / stride + 1).
inline ConvGeometry conv_geometry(const QConv2dOp& op) {
  const Shape& is = op.input.values.shape();
  const Shape ws = weight_shape(op.weight);  // OIHW
  const Conv2dGeometry& geo = op.geometry;
  ConvGeometry g;
  g.nhwc = op.layout == ConvLayout::nhwc;
  g.batch = is[0];
  g.channels = g.nhwc ? is[3] : is[1];
  g.height = g.nhwc ? is[1] : is[2];
  g.width = g.nhwc ? is[2] : is[3];
  g.out_channels = ws[0];
  g.group_channels = ws[1];
  g.kernel_h = ws[2];
  g.kernel_w = ws[3];
  g.stride_h = geo.stride_h;
  g.stride_w = geo.stride_w;
  g.pad_top = geo.pad_top;
  g.pad_left = geo.pad_left;
  g.dilation_h = geo.dilation_h;
  g.dilation_w = geo.dilation_w;
  g.out_h = (g.height + geo.pad_top + geo.pad_bottom - geo.dilation_h * (g.kernel_h - 1) - 1) / geo.stride_h + 1;
  g.out_w = (g.width + geo.pad_left + geo.pad_right - geo.dilation_w * (g.kernel_w - 1) - 1) / geo.stride_w + 1;
  return g;
}

// The implicit-GEMM convolution: the input stays in its layout as shifted bytes and the GEMM
// gathers its taps; the weights [OC][C/groups * KH * KW] are B, group g owning rows g * OC/groups ...
template <class Exec>
Tensor run_conv2d(Exec& ex, const QConv2dOp& op, const Recipe& recipe) {
  const ConvGeometry g = conv_geometry(op);
  const int groups = static_cast<int>(op.geometry.groups);
  const std::int64_t M = g.pixels(), K = g.depth(), OC = g.out_channels;
  const Shape ys = g.nhwc ? Shape{g.batch, g.out_h, g.out_w, OC} : Shape{g.batch, OC, g.out_h, g.out_w};
  if (M == 0 || OC == 0) return Tensor(op.output.format, ys);
  const std::int64_t Kp = padded(K);
  const std::int32_t a_shift = shift_of(activation_format(op.input));
  const auto x_int = activation_values(ex, op.input, recipe);
  const auto w_int = weight_values(ex, op.weight, recipe);
  const std::int64_t xn = op.input.values.size();
  auto x8 = ex.template alloc<std::int8_t>(static_cast<std::size_t>(xn));
  auto w8 = ex.template alloc<std::int8_t>(static_cast<std::size_t>(OC * Kp));
  ex.to_operand(x_int.get(), xn, 1, 1, 1, a_shift, x8.get(), 1);  // every element, shifted, in place
  ex.to_operand(w_int.get(), OC, K, K, 1, shift_of(weight_format(op.weight)), w8.get(), Kp);
  const std::int32_t za = static_cast<std::int32_t>(op.input.params.zero_point(0)) - a_shift;
  // A tap in the padding: the real value 0 is the zero point itself; a quantized 0 is stored as -shift.
  const ConvA A{x8.get(), g, op.padding == ConvPadding::real_zero ? za : -a_shift};
  auto rows = ex.template alloc<std::int32_t>(static_cast<std::size_t>(M * groups));
  auto cols = ex.template alloc<std::int32_t>(static_cast<std::size_t>(OC));
  ex.row_sums(A, M, K, groups, rows.get());
  ex.col_sums(w8.get(), OC, K, Kp, cols.get());
  const ChannelParams c = channel_params(op.weight, op.bias, OC);
  const EpilogueBuffers<Exec> eb(ex, c);
  auto yd = ex.template alloc<std::int32_t>(static_cast<std::size_t>(numel(ys)));
  GemmArgs p{.M = M,
             .N = OC / groups,
             .K = K,
             .Kp = Kp,
             .groups = groups,
             .b = w8.get(),
             .epilogue = epilogue_for(op.output, op.input, recipe)};
  eb.attach(p.epilogue, c, rows.get(), cols.get(), yd.get());
  p.epilogue.conv_output = true;
  p.epilogue.conv = g;
  ex.conv2d(A, p);
  ex.sync();
  return output_tensor(yd.download(), op.output.format, ys);
}

template <class Exec>
Tensor run(Exec& ex, const OpRequest& op, const Recipe& recipe) {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) return run_quantize(ex, *q, recipe);
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return run_dequantize(ex, *d, recipe);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return run_requantize(ex, *r, recipe);
  if (const auto* g = std::get_if<QGemmOp>(&op)) return run_gemm(ex, *g, recipe);
  return run_conv2d(ex, std::get<QConv2dOp>(op), recipe);
}

}  // namespace qc::gpu::plan
