#include "backends/vnni/backend.hpp"

#include "oracles/qadd.hpp"
#include "qconform/error.hpp"

#include "backends/host/qparams.hpp"

#include "qconform/qparams.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>

namespace qc {
namespace {

constexpr float kMinNormal = 0x1p-126f;

bool per_tensor(const QuantParams& p) { return p.granularity() == Granularity::per_tensor; }

// Float activations are quantized as production CPU libraries do before their int8 kernels
// (MLAS MlasQuantizeLinear), by the kernels' own quantize (vnni::quantize). The claimed presets say
// the same.
template <class T>
std::vector<T> quantize_activations(vnni::Isa isa, const ActivationOperand& a) {
  const Tensor& x = a.values;
  const auto n = static_cast<std::size_t>(x.size());
  std::vector<std::int32_t> q(n);
  if (is_int(x.dtype())) {
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int32_t>(x.get_int(static_cast<std::int64_t>(i)));
  } else {
    std::vector<float> xf(n);
    for (std::size_t i = 0; i < n; ++i) xf[i] = static_cast<float>(x.get_double(static_cast<std::int64_t>(i)));
    const auto zp = static_cast<std::int32_t>(a.params.zero_point(0));
    const vnni::ElementwiseParams p{static_cast<float>(a.params.scales[0]), zp,
                                    static_cast<float>(int_min(a.format) - zp),
                                    static_cast<float>(int_max(a.format) - zp)};
    vnni::quantize(isa, xf.data(), n, p, q.data());
  }
  return std::vector<T>(q.begin(), q.end());
}

// Dynamic quantization per tensor, as ONNX Runtime's DynamicQuantizeLinear chooses the parameters
// (onnxruntime/core/util/qmath.h GetQuantizationParameter, f32): the range [min(0, min x),
// max(0, max x)], scale = (max - min) / (qmax - qmin) (1 for an empty range), zero point
// qmin - min / scale clipped to [qmin, qmax] and rounded half to even. The result is a static
// operand the kernels quantize as any other.
ActivationOperand with_dynamic_params(const ActivationOperand& a) {
  if (a.quantization != ActivationQuantization::dynamic_per_tensor) return a;
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < a.values.size(); ++i) {
    const auto v = static_cast<float>(a.values.get_double(i));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const auto qmin = static_cast<float>(int_min(a.format)), qmax = static_cast<float>(int_max(a.format));
  const float scale = hi == lo ? 1.0f : (hi - lo) / (qmax - qmin);
  const float zp = std::nearbyint(std::max(qmin, std::min(qmax, qmin - lo / scale)));
  ActivationOperand s = a;
  s.quantization = ActivationQuantization::static_params;
  s.params.scales = {scale};
  s.params.zero_points = {static_cast<std::int64_t>(zp)};
  s.params.axis.reset();
  s.params.block_size = 0;
  return s;
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

// Formats whose every value is an f32: what the kernels' f32 arithmetic takes without a rounding.
bool f32_exact(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

Availability check_scales(const std::vector<double>& scales) {
  for (double s : scales)
    if (!std::isfinite(s) || !(std::fabs(s) >= kMinNormal))
      return {false, "scales must be finite and in the f32 normal range (no FTZ/DAZ assumptions)"};
  return {};
}

// The epilogue's multiplier fl(fl(s_a * s_w) / s_out) where XNNPACK's fp32 requantization defines it:
// 2^-32 <= m < 256 (src/xnnpack/requantization.h xnn_qs8_requantize_fp32 asserts it).
bool in_xnnpack_range(float m) { return m >= 0x1p-32f && m < 256.0f; }

Availability check_common([[maybe_unused]] vnni::Isa isa, const ActivationOperand& a, const QWeights& w, int n_axis,
                          const std::optional<Tensor>& bias, const OutputStage& out) {
  if (a.quantization == ActivationQuantization::dynamic_per_row)
    return {false, "a convolution's input is quantized per tensor"};
  if (a.quantization == ActivationQuantization::dynamic_per_tensor) {
    if (!(a.rule == QParamsRule{}))
      return {false, "dynamic parameters are chosen as ONNX Runtime's DynamicQuantizeLinear (ort-dynamic) only"};
    if (is_int(a.values.dtype())) return {false, "dynamic quantization takes float activations"};
    for (std::int64_t i = 0; i < a.values.size(); ++i)
      if (!std::isfinite(a.values.get_double(i)))
        return {false, "dynamic quantization of a tensor holding NaN or infinity has no defined range"};
    return check_common(isa, with_dynamic_params(a), w, n_axis, bias, out);
  }
  if (a.format != DType::u8 && a.format != DType::i8) return {false, "activations must be u8 or s8"};
  if (!per_tensor(a.params)) return {false, "activations must be quantized per tensor"};
  // u8 weights run shifted to s8 (w - 128, zero point - 128: the same Σ(a - za)(w - zw)), which
  // vpdpbusd sums exactly; on avx2-maddubs they run on the exact scalar kernel (kernel_isa), as MLAS
  // widens u8 x u8 to vpmaddwd instead of pairing it in vpmaddubsw (the claim: exact for u8 weights).
  const bool u8_weights = w.format == DType::u8 && !w.packing;
  if (w.format != DType::i8 && w.format != DType::i4 && w.format != DType::u4 && !u8_weights)
    return {false, "weights must be s8, u8, s4 or u4"};
  if (!w.packing && !is_int(w.values.dtype()) && !f32_exact(w.values.dtype()))
    return {false, "float weights are quantized from f32, f16 or bf16 values"};
  if (!w.packing && !is_int(w.values.dtype())) {
    if (!f32_exact(w.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
    if (Availability a = check_scales(w.params.scales); !a.available) return a;
  }
  if (w.params.granularity() == Granularity::blocked)
    return {false, "blocked (K-group) weight scales are not supported"};
  if (w.params.granularity() == Granularity::per_axis) {
    const int rank = static_cast<int>(w.shape.size());
    const int axis = *w.params.axis < 0 ? *w.params.axis + rank : *w.params.axis;
    if (axis != n_axis) return {false, "per-channel weight scales must run along the output channels"};
  }
  if (w.packing && w.packing->axis) return {false, "int4 weights must be packed in flat order (no packing axis)"};
  if (bias && bias->dtype() != DType::i32 && !(is_float(bias->dtype()) && out.kind == OutputKind::dequantized))
    return {false, "bias must be int32 (or float for a dequantized output)"};
  if (out.kind == OutputKind::dequantized && !is_float(out.format))
    return {false, "a dequantized output is a float format"};
  if (out.kind == OutputKind::dequantized && (out.format == DType::f8e4m3fn || out.format == DType::f8e5m2))
    return {false, "a dequantized output is f32 (or f16, bf16, f64 from the f32 result)"};
  if (out.kind == OutputKind::requantized && out.format != DType::u8 && out.format != DType::i8)
    return {false, "requantized output is u8 or s8 only"};
  const float s = static_cast<float>(a.params.scales[0]);
  if (!(std::fabs(s) >= kMinNormal)) return {false, "activation scale below the f32 normal range"};
  if (out.kind == OutputKind::requantized)
    for (double sw : w.params.scales)
      if (!in_xnnpack_range(s * static_cast<float>(sw) / static_cast<float>(out.scale)))
        return {false, "the requantize multiplier must lie in [2^-32, 256)"};
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

Tensor run_quantize(vnni::Isa isa, const QuantizeOp& op);

// The weights as the kernels take them: float weights quantized first with the kernels' own
// quantize (the claim's quantize applies to weights too), and u8 weights shifted to s8.
QWeights kernel_weights(vnni::Isa isa, const QWeights& given) {
  QWeights w = given;
  if (!w.packing && !is_int(w.values.dtype()))
    w.values = run_quantize(isa, QuantizeOp{given.values, w.params, w.format});
  if (w.packing && w.packing->nibbles == NibbleOrder::high_first) {  // torchao: the first value high
    for (std::int64_t i = 0; i < w.values.size(); ++i) {
      const auto b = static_cast<std::uint8_t>(w.values.bits(i));
      w.values.set_bits(i, static_cast<std::uint8_t>((b << 4) | (b >> 4)));
    }
    w.packing->nibbles = NibbleOrder::low_first;
  }
  if (w.format == DType::u8 && !w.packing) {
    Tensor s(DType::i8, w.values.shape());
    for (std::int64_t i = 0; i < s.size(); ++i) s.set_int(i, w.values.get_int(i) - 128);
    w.values = std::move(s);
    w.format = DType::i8;
    if (w.params.zero_points.empty()) w.params.zero_points = {0};
    for (std::int64_t& z : w.params.zero_points) z -= 128;
  }
  return w;
}

// A dequantized output the kernels compute in f32, then round into the requested format (the
// claim's dequantize: f32 arithmetic, then the cast).
Tensor in_format(Tensor y, DType format) {
  if (y.dtype() == format) return y;
  Tensor out(format, y.shape());
  for (std::int64_t i = 0; i < y.size(); ++i) out.set_double(i, y.get_double(i));
  return out;
}

DType kernel_output(const OutputStage& out) { return out.kind == OutputKind::dequantized ? DType::f32 : out.format; }

// Activations with a scale per row (static parameters along a row dimension, or dynamic per row,
// DRQ): the epilogue takes one activation scale, so each row of the [rows, K] view is a GEMM of its
// own with per-tensor parameters.
bool per_row(const ActivationOperand& a) {
  if (a.quantization == ActivationQuantization::dynamic_per_row) return true;
  if (a.quantization != ActivationQuantization::static_params || a.params.granularity() != Granularity::per_axis)
    return false;
  const int rank = a.values.rank();
  return resolve_axis(*a.params.axis, rank) != rank - 1;
}

ActivationOperand row_operand(const ActivationOperand& a, std::int64_t r) {
  const std::int64_t k = a.values.shape().back();
  ActivationOperand o;
  o.values = Tensor(a.values.dtype(), {1, k});
  for (std::int64_t j = 0; j < k; ++j) o.values.set_bits(j, a.values.bits(r * k + j));
  o.format = a.format;
  if (a.quantization == ActivationQuantization::dynamic_per_row) {
    o.quantization = ActivationQuantization::dynamic_per_tensor;
    o.rule = a.rule;
    return o;
  }
  const std::int64_t p = ParamIndexer(a.params, a.values.shape())(r * k);
  o.params.scale_dtype = a.params.scale_dtype;
  o.params.scales = {a.params.scales[static_cast<std::size_t>(p)]};
  o.params.zero_points = {a.params.zero_point(p)};
  return o;
}

std::int64_t activation_rows(const ActivationOperand& a) { return a.values.size() / a.values.shape().back(); }

// The ISA whose kernel runs a request: avx2-maddubs hands u8 weights to the exact scalar kernel
// (see check_common).
vnni::Isa kernel_isa(vnni::Isa isa, const QWeights& w) {
  return isa == vnni::Isa::avx2_maddubs && w.format == DType::u8 && !w.packing ? vnni::Isa::scalar : isa;
}

Tensor run_gemm_per_tensor(vnni::Isa isa, const QGemmOp& op);
bool batched_b(const QGemmOp& op);
Tensor run_gemm_batched(vnni::Isa isa, const QGemmOp& op);

std::int64_t weight_value(const QWeights& w, std::int64_t i);

// Weights blocked along K (ONNX block_size, MatMulNBits): each block of K has its own scale and
// zero point per column. The kernels take one per column, so each block is an int32 GEMM of its
// own, and the dequantized output is the claim's float sum, block by block in K order:
// y = fl(... fl(t_0 + t_1) ... + t_S), t_s = fl(float(acc_s) * fl(s_a * s_w[s][n])), then + bias.
struct KBlocks {
  std::vector<QGemmOp> ops;                // int32 GEMMs, one per block
  std::vector<std::vector<float>> scales;  // s_w per block, per column
};

bool blocked_along_k(const QGemmOp& op) {
  const QuantParams& p = op.b.params;
  if (p.granularity() != Granularity::blocked) return false;
  const int k_axis = op.b_layout == WeightLayout::k_by_n ? 0 : 1;
  return resolve_axis(*p.axis, 2) == k_axis;
}

KBlocks k_blocks(const QGemmOp& op) {
  const Shape& bs = logical_shape(op.b);
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t K = k_by_n ? bs[0] : bs[1], N = k_by_n ? bs[1] : bs[0], block = op.b.params.block_size;
  const std::int64_t M = op.a.values.size() / K;
  const ParamIndexer index(op.b.params, bs);
  KBlocks kb;
  for (std::int64_t k0 = 0; k0 < K; k0 += block) {
    const std::int64_t len = std::min(block, K - k0);
    QGemmOp seg;
    seg.a = op.a;
    seg.a.values = Tensor(op.a.values.dtype(), {M, len});
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t k = 0; k < len; ++k) seg.a.values.set_bits(m * len + k, op.a.values.bits(m * K + k0 + k));
    seg.b.format = op.b.format;
    seg.b.values = Tensor(op.b.format, {len, N});  // unpacked, [K, N]
    seg.b.params.scale_dtype = op.b.params.scale_dtype;
    seg.b.params.axis = 1;
    std::vector<float> scales;
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t first = k_by_n ? k0 * N + n : n * K + k0;
      const std::int64_t pi = index(first);
      scales.push_back(static_cast<float>(op.b.params.scales[static_cast<std::size_t>(pi)]));
      seg.b.params.scales.push_back(op.b.params.scales[static_cast<std::size_t>(pi)]);
      seg.b.params.zero_points.push_back(op.b.params.zero_point(pi));
      for (std::int64_t k = 0; k < len; ++k)
        seg.b.values.set_int(k * N + n, weight_value(op.b, k_by_n ? (k0 + k) * N + n : n * K + k0 + k));
    }
    seg.output = OutputStage{};  // int32
    kb.ops.push_back(std::move(seg));
    kb.scales.push_back(std::move(scales));
  }
  return kb;
}

Tensor run_gemm_blocked(vnni::Isa isa, const QGemmOp& op) {
  const KBlocks kb = k_blocks(op);
  const float sa = static_cast<float>(op.a.params.scales[0]);
  Tensor y;
  std::vector<float> sum;
  for (std::size_t s = 0; s < kb.ops.size(); ++s) {
    const Tensor acc = run_gemm_per_tensor(isa, kb.ops[s]);
    if (sum.empty()) {
      sum.assign(static_cast<std::size_t>(acc.size()), 0.0f);
      y = Tensor(DType::f32, acc.shape());
    }
    const std::int64_t n = acc.shape().back();
    for (std::int64_t e = 0; e < acc.size(); ++e) {
      const float t = static_cast<float>(acc.get_int(e)) * (sa * kb.scales[s][static_cast<std::size_t>(e % n)]);
      sum[static_cast<std::size_t>(e)] = s == 0 ? t : sum[static_cast<std::size_t>(e)] + t;
    }
  }
  const std::int64_t n = y.shape().back();
  for (std::int64_t e = 0; e < y.size(); ++e) {
    float v = sum[static_cast<std::size_t>(e)];
    if (op.bias) v = v + static_cast<float>(op.bias->get_double(e % n));
    y.set_double(e, v);
  }
  Shape ys(op.a.values.shape().begin(), op.a.values.shape().end() - 1);
  ys.push_back(n);
  Tensor shaped(DType::f32, ys);
  for (std::int64_t e = 0; e < y.size(); ++e) shaped.set_bits(e, y.bits(e));
  return in_format(std::move(shaped), op.output.format);
}

Availability check_blocked(vnni::Isa isa, const QGemmOp& op) {
  if (op.output.kind != OutputKind::dequantized)
    return {false, "blocked (K-group) weight scales with a requantized or int32 output have no one multiplier"};
  if (op.a.quantization != ActivationQuantization::static_params || !per_tensor(op.a.params))
    return {false, "with blocked weights the activations are quantized per tensor (static)"};
  if (op.bias && !is_float(op.bias->dtype())) return {false, "blocked weights take a float bias"};
  if (op.b.packing && op.b.packing->axis) return {false, "int4 weights must be packed in flat order (no packing axis)"};
  if (!op.b.packing && !is_int(op.b.values.dtype())) return {false, "blocked weights must be given quantized"};
  if (Availability a = check_scales(op.b.params.scales); !a.available) return a;
  QGemmOp first = k_blocks(op).ops.front();
  return check_common(isa, first.a, first.b, 1, std::nullopt, first.output);
}

Tensor run_gemm(vnni::Isa isa, const QGemmOp& op) {
  if (batched_b(op)) return run_gemm_batched(isa, op);
  if (blocked_along_k(op)) return run_gemm_blocked(isa, op);
  if (!per_row(op.a)) return run_gemm_per_tensor(isa, op);
  Shape ys(op.a.values.shape().begin(), op.a.values.shape().end() - 1);
  ys.push_back(op.b_layout == WeightLayout::k_by_n ? logical_shape(op.b)[1] : logical_shape(op.b)[0]);
  Tensor y(op.output.format, ys);
  const std::int64_t n = ys.back();
  for (std::int64_t r = 0; r < activation_rows(op.a); ++r) {
    QGemmOp row = op;
    row.a = row_operand(op.a, r);
    const Tensor yr = run_gemm_per_tensor(isa, row);
    for (std::int64_t j = 0; j < n; ++j) y.set_bits(r * n + j, yr.bits(j));
  }
  return y;
}

// A batched B ([batch..., K, N], numpy.matmul broadcasting of A's and B's batch dimensions,
// batched_gemm_shape): one 2-D request per output batch, its A batch and its B matrix, run by the
// kernels above; the outputs follow each other in batch order. The slices keep their meaning when
// A is quantized per tensor (static) or per row, and B per tensor or per column.
bool batched_b(const QGemmOp& op) { return logical_shape(op.b).size() > 2; }

std::vector<QGemmOp> batch_ops(const QGemmOp& op, const BatchedGemmShape& d) {
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t M = d.m, K = d.depth, N = d.cols;
  std::vector<QGemmOp> ops;
  for (std::int64_t i = 0; i < d.batches; ++i) {
    QGemmOp one;
    one.a = op.a;
    one.a.values = Tensor(op.a.values.dtype(), {M, K});
    const std::int64_t a0 = d.a_batch[static_cast<std::size_t>(i)] * M * K;
    for (std::int64_t e = 0; e < M * K; ++e) one.a.values.set_bits(e, op.a.values.bits(a0 + e));
    one.b.format = op.b.format;
    one.b.values = Tensor(op.b.values.dtype(), k_by_n ? Shape{K, N} : Shape{N, K});
    const std::int64_t b0 = d.b_batch[static_cast<std::size_t>(i)] * K * N;
    for (std::int64_t e = 0; e < K * N; ++e) one.b.values.set_bits(e, op.b.values.bits(b0 + e));
    one.b.params = op.b.params;
    if (!per_tensor(op.b.params)) one.b.params.axis = k_by_n ? 1 : 0;  // the N axis (check_batched)
    one.b_layout = op.b_layout;
    one.bias = op.bias;
    one.output = op.output;
    ops.push_back(std::move(one));
  }
  return ops;
}

Availability check_batched(const QGemmOp& op, const std::function<Availability(const QGemmOp&)>& one) {
  BatchedGemmShape d;
  try {
    d = batched_gemm_shape(op.a.values.shape(), logical_shape(op.b), op.b_layout);
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
  if (op.b.packing) return {false, "a batched B is taken unpacked (one int4 value a byte)"};
  if (op.a.quantization == ActivationQuantization::dynamic_per_tensor)
    return {false, "a batched B runs one GEMM per batch, and dynamic per-tensor parameters span the whole A"};
  if (op.a.quantization == ActivationQuantization::static_params && !per_tensor(op.a.params))
    return {false, "with a batched B the activations are quantized per tensor (or dynamically per row)"};
  const int n_axis = static_cast<int>(logical_shape(op.b).size()) - (op.b_layout == WeightLayout::k_by_n ? 1 : 2);
  const QuantParams& p = op.b.params;
  if (!per_tensor(p) && (p.granularity() != Granularity::per_axis ||
                         resolve_axis(*p.axis, static_cast<int>(logical_shape(op.b).size())) != n_axis))
    return {false, "a batched B's parameters must be per tensor or per column (the N axis)"};
  if (d.batches == 0) return {};
  return one(batch_ops(op, d).front());
}

Tensor run_gemm_batched(vnni::Isa isa, const QGemmOp& op) {
  const BatchedGemmShape d = batched_gemm_shape(op.a.values.shape(), logical_shape(op.b), op.b_layout);
  Tensor y(op.output.format, d.out_shape);
  std::int64_t e = 0;
  for (const QGemmOp& one : batch_ops(op, d)) {
    const Tensor yi = run_gemm(isa, one);
    for (std::int64_t j = 0; j < yi.size(); ++j) y.set_bits(e++, yi.bits(j));
  }
  return y;
}

Tensor run_gemm_per_tensor(vnni::Isa isa, const QGemmOp& op) {
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
  const ActivationOperand a = with_dynamic_params(op.a);
  const QWeights b = kernel_weights(isa, op.b);
  isa = kernel_isa(isa, op.b);
  gp.quant = quant_spec(a, b, op.bias, op.output, n);
  const vnni::PackedWeights pw =
      b.packing ? vnni::pack_weights_int4(gp, packed_bytes(b), isa) : vnni::pack_weights(gp, weight_bytes(b), isa);
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(n);
  Tensor y(kernel_output(op.output), ys);
  if (a.format == DType::i8)
    dispatch_gemm(pw, m, quantize_activations<std::int8_t>(isa, a), k, y, n);
  else
    dispatch_gemm(pw, m, quantize_activations<std::uint8_t>(isa, a), k, y, n);
  return in_format(std::move(y), op.output.format);
}

// ---- Quantize, dequantize, requantize (vnni::quantize & co.) ---------------------------------

// Runs of consecutive elements that share one parameter index: f(begin, end, index).
template <class F>
void for_each_run(const std::function<std::int64_t(std::int64_t)>& index, std::int64_t n, F f) {
  for (std::int64_t b = 0; b < n;) {
    const std::int64_t k = index(b);
    std::int64_t e = b + 1;
    while (e < n && index(e) == k) ++e;
    f(b, e, k);
    b = e;
  }
}

Availability check_quantize(const QuantizeOp& q) {
  const DType x = q.x.dtype();
  if (x == DType::i32) {  // ONNX QuantizeLinear takes int32 x; the kernel divides it in f32
    for (std::int64_t i = 0; i < q.x.size(); ++i)
      if (std::abs(q.x.get_int(i)) > (std::int64_t{1} << 24))
        return {false, "int32 inputs beyond 2^24 are not exact in f32, where the kernel divides"};
  } else if (x != DType::f32 && x != DType::f16 && x != DType::bf16) {
    return {false, "quantize takes f32, f16, bf16 or int32 inputs (the kernel divides in f32)"};
  }
  if (!f32_exact(q.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
  switch (q.out) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i4:
    case DType::u4:
      break;
    default:
      return {false, "quantize outputs i8, u8, i16, u16, i4 or u4"};
  }
  return check_scales(q.params.scales);
}

Tensor run_quantize(vnni::Isa isa, const QuantizeOp& op) {
  const std::int64_t n = op.x.size();
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(op.x.get_double(i));
  std::vector<std::int32_t> q(static_cast<std::size_t>(n));
  const ParamIndexer index(op.params, op.x.shape());
  for_each_run(index, n, [&](std::int64_t b, std::int64_t e, std::int64_t k) {
    const auto zp = static_cast<std::int32_t>(op.params.zero_point(k));
    const vnni::ElementwiseParams p{static_cast<float>(op.params.scales[static_cast<std::size_t>(k)]), zp,
                                    static_cast<float>(int_min(op.out) - zp), static_cast<float>(int_max(op.out) - zp)};
    vnni::quantize(isa, x.data() + b, static_cast<std::size_t>(e - b), p, q.data() + b);
  });
  Tensor y(op.out, op.x.shape());
  for (std::int64_t i = 0; i < n; ++i) y.set_int(i, q[static_cast<std::size_t>(i)]);
  return y;
}

Availability check_dequantize(const DequantizeOp& d) {
  const DType q = d.q.dtype();
  if (!is_int(q)) return {false, "dequantize takes integers"};
  if (q == DType::i32)
    for (std::int64_t z : d.params.zero_points)
      if (z != 0) return {false, "an i32 input with a zero point: q - zp could overflow the kernel's int32"};
  if (!is_float(d.out) || d.out == DType::f8e4m3fn || d.out == DType::f8e5m2)
    return {false, "dequantize outputs f32 (or f16, bf16, f64 from the f32 result)"};
  if (!f32_exact(d.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
  return check_scales(d.params.scales);
}

Tensor run_dequantize(vnni::Isa isa, const DequantizeOp& op) {
  const std::int64_t n = op.q.size();
  std::vector<std::int32_t> q(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) q[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(op.q.get_int(i));
  std::vector<float> y(static_cast<std::size_t>(n));
  const ParamIndexer index(op.params, op.q.shape());
  for_each_run(index, n, [&](std::int64_t b, std::int64_t e, std::int64_t k) {
    const vnni::ElementwiseParams p{static_cast<float>(op.params.scales[static_cast<std::size_t>(k)]),
                                    static_cast<std::int32_t>(op.params.zero_point(k))};
    vnni::dequantize(isa, q.data() + b, static_cast<std::size_t>(e - b), p, y.data() + b);
  });
  Tensor out(op.out, op.q.shape());
  for (std::int64_t i = 0; i < n; ++i) out.set_double(i, y[static_cast<std::size_t>(i)]);  // RNE into f16/bf16
  return out;
}

Availability check_requantize(const RequantizeOp& r) {
  const DType a = r.acc.dtype();
  if (a != DType::i32 && a != DType::i16 && a != DType::u16 && a != DType::i8 && a != DType::u8)
    return {false, "requantize takes int32 (or narrower) accumulators"};
  if (r.out != DType::i8 && r.out != DType::u8 && r.out != DType::i16 && r.out != DType::u16)
    return {false, "requantize outputs i8, u8, i16 or u16"};
  if (!f32_exact(r.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
  std::vector<double> scales = r.params.weight_scales;
  scales.push_back(r.params.input_scale);
  scales.push_back(r.params.output_scale);
  if (Availability a = check_scales(scales); !a.available) return a;
  for (double w : r.params.weight_scales)
    if (!in_xnnpack_range(static_cast<float>(r.params.input_scale) * static_cast<float>(w) /
                          static_cast<float>(r.params.output_scale)))
      return {false, "the requantize multiplier must lie in [2^-32, 256)"};
  return {};
}

Tensor run_requantize(vnni::Isa isa, const RequantizeOp& op) {
  const std::int64_t n = op.acc.size();
  std::vector<std::int32_t> acc(static_cast<std::size_t>(n)), q(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(op.acc.get_int(i));
  const RequantizeParams& rp = op.params;
  std::int64_t inner = 1, dim = 1;
  if (rp.axis) {
    const auto axis = static_cast<std::size_t>(resolve_axis(*rp.axis, op.acc.rank()));
    dim = op.acc.shape()[axis];
    for (std::size_t d = axis + 1; d < op.acc.shape().size(); ++d) inner *= op.acc.shape()[d];
  }
  const auto channel = [&](std::int64_t i) { return (i / inner) % dim; };
  for_each_run(channel, n, [&](std::int64_t b, std::int64_t e, std::int64_t c) {
    const auto at = [c](const auto& v) { return v[std::min<std::size_t>(static_cast<std::size_t>(c), v.size() - 1)]; };
    const auto zp = static_cast<std::int32_t>(rp.output_zero_points.empty() ? 0 : at(rp.output_zero_points));
    // The epilogue's multiplier fl(fl(s_in * s_w) / s_out), as the GEMM's (vnni.hpp step 4).
    const float m = static_cast<float>(rp.input_scale) * static_cast<float>(at(rp.weight_scales)) /
                    static_cast<float>(rp.output_scale);
    const vnni::ElementwiseParams p{m, zp, static_cast<float>(int_min(op.out) - zp),
                                    static_cast<float>(int_max(op.out) - zp)};
    vnni::requantize(isa, acc.data() + b, static_cast<std::size_t>(e - b), p, q.data() + b);
  });
  Tensor y(op.out, op.acc.shape());
  for (std::int64_t i = 0; i < n; ++i) y.set_int(i, q[static_cast<std::size_t>(i)]);
  return y;
}

// ---- qadd (vnni::qadd: MLAS's AVX2 QLinearAdd) --------------------------------------------------

Availability check_qadd(vnni::Isa isa, const QAddOp& op) {
  const DType a = op.a.dtype(), b = op.b.dtype(), c = op.output.format;
  if ((a != DType::i8 && a != DType::u8) || (b != DType::i8 && b != DType::u8 && b != DType::i32))
    return {false, "qadd takes i8/u8 A and i8/u8/i32 B"};
  if (c != DType::i8 && c != DType::u8) return {false, "qadd outputs i8 or u8"};
  if (op.output.kind != OutputKind::requantized || op.output.clamp)
    return {false, "qadd's output is requantized, without a fused activation"};
  for (const QuantParams* q : {&op.a_params, &op.b_params}) {
    if (q->scales.size() != 1 || q->axis || q->block_size != 0) return {false, "qadd takes per-tensor parameters"};
    if (!f32_exact(q->scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
  }
  if (Availability s = check_scales({op.a_params.scales[0], op.b_params.scales[0], op.output.scale}); !s.available)
    return s;
  try {
    (void)qadd_broadcast_index(op.a.shape(), op.b.shape());
  } catch (const InputError& e) {
    return {false, e.what()};
  }
  if (isa != vnni::Isa::scalar && !__builtin_cpu_supports("fma"))
    return {false, "MLAS's AVX2 QLinearAdd kernel needs FMA, which this CPU lacks"};
  return {};
}

Tensor run_qadd(vnni::Isa isa, const QAddOp& op) {
  const std::int64_t n = op.a.size();
  std::vector<std::int32_t> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n)),
      q(static_cast<std::size_t>(n));
  const std::vector<std::int64_t> bi = qadd_broadcast_index(op.a.shape(), op.b.shape());
  for (std::int64_t i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(op.a.get_int(i));
    b[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(op.b.get_int(bi[static_cast<std::size_t>(i)]));
  }
  // MlasQLinearAddKernelAvx2Helper's constants, one f32 operation each (strict fp: no contraction).
  const float sc = static_cast<float>(op.output.scale);
  vnni::QAddParams p;
  p.ratio_a = static_cast<float>(op.a_params.scales[0]) / sc;
  p.ratio_b = static_cast<float>(op.b_params.scales[0]) / sc;
  const float za = static_cast<float>(op.a_params.zero_point(0)), zb = static_cast<float>(op.b_params.zero_point(0));
  const float folded = p.ratio_a * za + p.ratio_b * zb;
  p.fixed = static_cast<float>(op.output.zero_point) - folded;
  p.lo = static_cast<std::int32_t>(int_min(op.output.format));
  p.hi = static_cast<std::int32_t>(int_max(op.output.format));
  p.b_scalar = qadd_b_folded(op.a.shape(), op.b.shape());
  // ONNX Runtime's broadcast loop: one MLAS call per span of A's innermost dimension of extent > 1,
  // B a scalar there when it does not vary along it (qadd_b_folded); otherwise one call.
  std::int64_t span = n;
  if (p.b_scalar)
    for (std::size_t d = op.a.shape().size(); d-- > 0;)
      if (op.a.shape()[d] > 1) {
        span = op.a.shape()[d];
        break;
      }
  for (std::int64_t s = 0; s < n; s += span)
    vnni::qadd(isa, a.data() + s, b.data() + s, static_cast<std::size_t>(span), p, q.data() + s);
  Tensor y(op.output.format, op.a.shape());
  for (std::int64_t i = 0; i < n; ++i) y.set_int(i, q[static_cast<std::size_t>(i)]);
  return y;
}

// The op's strides, padding, dilation and groups, as the kernel layer's geometry takes them.
void set_window(vnni::ConvGeometry& p, const Conv2dGeometry& g) {
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.pad_top = g.pad_top;
  p.pad_left = g.pad_left;
  p.pad_bottom = g.pad_bottom;
  p.pad_right = g.pad_right;
  p.dilation_h = g.dilation_h;
  p.dilation_w = g.dilation_w;
  p.groups = g.groups;
}

// ---- Weight-only GEMM (vnni::float_gemm) ------------------------------------------------------

Availability check_weight_only(const WeightOnlyGemmOp& op) {
  if (!f32_exact(op.a.dtype())) return {false, "weight-only activations are f32, f16 or bf16 (the GEMM runs in f32)"};
  if (!f32_exact(op.out)) return {false, "weight-only outputs are f32, f16 or bf16"};
  if (op.bias && !f32_exact(op.bias->dtype())) return {false, "a weight-only bias is f32, f16 or bf16"};
  const QWeights& w = op.b;
  if (w.packing) {
    if (!(*w.packing == Int4Packing{}) || (w.format != DType::i4 && w.format != DType::u4))
      return {false, "packed weights are int4 in flat order, low nibble first"};
  } else if (!is_int(w.values.dtype()) || w.values.dtype() == DType::i32) {
    return {false, "weights must be given quantized (8 bits or fewer)"};
  }
  if (!f32_exact(w.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
  return check_scales(w.params.scales);
}

// The weights' value at flat index i of their logical shape: unpacked (flat, low nibble first,
// i4 sign-extended) or as given.
std::int64_t weight_value(const QWeights& w, std::int64_t i) {
  if (!w.packing) return w.values.get_int(i);
  const auto byte = static_cast<std::uint8_t>(w.values.bits(i / 2));
  const std::int64_t nibble = (i % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
  return w.format == DType::i4 && nibble >= 8 ? nibble - 16 : nibble;
}

// The weights as f32 in their logical order: float values as they are (exact: f32_exact), integer
// ones dequantized first, fl(float(q - zp) * s) (the weight-only kernels' unpack step, before an
// f32 GEMM or convolution).
std::vector<float> weights_f32(const QWeights& w) {
  const Shape& ws = logical_shape(w);
  std::int64_t count = 1;
  for (std::int64_t d : ws) count *= d;
  std::vector<float> v(static_cast<std::size_t>(count));
  if (!w.packing && is_float(w.values.dtype())) {
    for (std::int64_t i = 0; i < count; ++i)
      v[static_cast<std::size_t>(i)] = static_cast<float>(w.values.get_double(i));
    return v;
  }
  const ParamIndexer index(w.params, ws);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t p = index(i);
    v[static_cast<std::size_t>(i)] = static_cast<float>(weight_value(w, i) - w.params.zero_point(p)) *
                                     static_cast<float>(w.params.scales[static_cast<std::size_t>(p)]);
  }
  return v;
}

Tensor run_weight_only(vnni::Isa isa, const WeightOnlyGemmOp& op) {
  const Shape& as = op.a.shape();
  const Shape& bs = logical_shape(op.b);
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t k = as.back(), m = op.a.size() / k, n = k_by_n ? bs[1] : bs[0];
  std::vector<float> a(static_cast<std::size_t>(op.a.size()));
  for (std::int64_t i = 0; i < op.a.size(); ++i)
    a[static_cast<std::size_t>(i)] = static_cast<float>(op.a.get_double(i));
  // Dequantized to f32 first, then as [K, N].
  const std::vector<float> dequantized = weights_f32(op.b);
  std::vector<float> w(static_cast<std::size_t>(k * n));
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (std::int64_t j = 0; j < n; ++j)
      w[static_cast<std::size_t>(kk * n + j)] = dequantized[static_cast<std::size_t>(k_by_n ? kk * n + j : j * k + kk)];
  std::vector<float> bias;
  if (op.bias)
    for (std::int64_t j = 0; j < n; ++j) bias.push_back(static_cast<float>(op.bias->get_double(j)));
  std::vector<float> y(static_cast<std::size_t>(m * n));
  vnni::float_gemm(isa, a.data(), m, k, w.data(), n, op.bias ? bias.data() : nullptr, y.data());
  Shape ys(as.begin(), as.end() - 1);
  ys.push_back(n);
  Tensor out(op.out, ys);
  for (std::int64_t i = 0; i < out.size(); ++i) out.set_double(i, y[static_cast<std::size_t>(i)]);
  return out;
}

// ---- Float and weight-only conv2d (vnni::float_conv2d) -----------------------------------------

Availability check_conv2d(const Conv2dOp& op) {
  if (!f32_exact(op.input.dtype())) return {false, "conv2d inputs are f32, f16 or bf16 (the convolution runs in f32)"};
  if (!f32_exact(op.out)) return {false, "conv2d outputs are f32, f16 or bf16"};
  if (op.bias && !f32_exact(op.bias->dtype())) return {false, "a conv2d bias is f32, f16 or bf16"};
  const QWeights& w = op.weight;
  if (!w.packing && is_float(w.values.dtype())) {
    if (!f32_exact(w.values.dtype()))
      return {false, "float weights are f32, f16 or bf16 (the convolution runs in f32)"};
  } else {
    if (w.packing) {
      if (!(*w.packing == Int4Packing{}) || (w.format != DType::i4 && w.format != DType::u4))
        return {false, "packed weights are int4 in flat order, low nibble first"};
    } else if (!is_int(w.values.dtype()) || w.values.dtype() == DType::i32) {
      return {false, "integer weights are 8 bits or fewer"};
    }
    const Granularity g = w.params.granularity();
    if (g != Granularity::per_tensor &&
        !(g == Granularity::per_axis && resolve_axis(*w.params.axis, static_cast<int>(logical_shape(w).size())) == 0))
      return {false, "weight parameters are per tensor or per output channel (axis 0 of OIHW)"};
    if (!f32_exact(w.params.scale_dtype)) return {false, "scales must be f32, f16 or bf16"};
    if (Availability a = check_scales(w.params.scales); !a.available) return a;
  }
  try {
    const Conv2dShape cs = resolve_conv2d(op.input.shape(), op.layout, logical_shape(w), op.geometry);
    if (op.bias && (op.bias->rank() != 1 || op.bias->size() != cs.out_channels))
      return {false, "a conv2d bias is [OC] = [" + std::to_string(cs.out_channels) + "]"};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
  return {};
}

Tensor run_conv2d(vnni::Isa isa, const Conv2dOp& op) {
  const Conv2dShape cs = resolve_conv2d(op.input.shape(), op.layout, logical_shape(op.weight), op.geometry);
  const Conv2dGeometry& g = op.geometry;
  vnni::FloatConv2dParams p;
  p.nchw = op.layout == ConvLayout::nchw;
  p.batch = cs.batch;
  p.channels = cs.channels;
  p.height = cs.height;
  p.width = cs.width;
  p.out_channels = cs.out_channels;
  p.kernel_h = cs.kernel_h;
  p.kernel_w = cs.kernel_w;
  set_window(p, g);
  std::vector<float> x(static_cast<std::size_t>(op.input.size()));
  for (std::int64_t i = 0; i < op.input.size(); ++i)
    x[static_cast<std::size_t>(i)] = static_cast<float>(op.input.get_double(i));
  const std::vector<float> w = weights_f32(op.weight);
  std::vector<float> bias;
  if (op.bias)
    for (std::int64_t oc = 0; oc < cs.out_channels; ++oc) bias.push_back(static_cast<float>(op.bias->get_double(oc)));
  Tensor out(op.out, cs.output_shape());
  std::vector<float> y(static_cast<std::size_t>(out.size()));
  vnni::float_conv2d(isa, p, x.data(), w.data(), op.bias ? bias.data() : nullptr, y.data());
  for (std::int64_t i = 0; i < out.size(); ++i) out.set_double(i, y[static_cast<std::size_t>(i)]);  // RNE into f16/bf16
  return out;
}

// NCHW <-> NHWC: the kernels take NHWC; an NCHW request is transposed in and out (any format: the
// element bits are moved, not converted).
Tensor to_layout(const Tensor& t, bool to_nhwc) {
  const Shape& s = t.shape();
  const Shape out = to_nhwc ? Shape{s[0], s[2], s[3], s[1]} : Shape{s[0], s[3], s[1], s[2]};
  Tensor r(t.dtype(), out);
  const std::int64_t N = s[0], A = s[1], B = s[2], C = s[3];  // the source's dimensions
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t a = 0; a < A; ++a)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t c = 0; c < C; ++c) {
          const std::int64_t src = ((n * A + a) * B + b) * C + c;
          // NCHW (n, a=c, b=h, c=w) -> NHWC (n, h, w, c); NHWC (n, a=h, b=w, c=c) -> NCHW (n, c, h, w)
          const std::int64_t dst = to_nhwc ? ((n * B + b) * C + c) * A + a : ((n * C + c) * A + a) * B + b;
          r.set_bits(dst, t.bits(src));
        }
  return r;
}

Tensor run_conv(vnni::Isa isa, const QConv2dOp& op);

Tensor run_conv_any_layout(vnni::Isa isa, const QConv2dOp& op) {
  if (op.layout == ConvLayout::nhwc) return run_conv(isa, op);
  QConv2dOp nhwc = op;
  nhwc.layout = ConvLayout::nhwc;
  nhwc.input.values = to_layout(op.input.values, true);
  return to_layout(run_conv(isa, nhwc), false);
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
  set_window(cp, g);
  cp.k_order = vnni::ConvKOrder::chw;  // the OIHW flattening: the pairs the oracle's order forms
  const ActivationOperand input = with_dynamic_params(op.input);
  const QWeights weight = kernel_weights(isa, op.weight);
  isa = kernel_isa(isa, op.weight);
  cp.quant = quant_spec(input, weight, op.bias, op.output, cp.out_channels);
  // Padding with the quantized value 0 (a zero-filled buffer, ConvPadding::quantized_zero): the
  // kernels pad with the zero point, so the image is padded with 0 bytes here and the kernel pads
  // nothing. The output geometry is the same.
  const bool zero_bytes =
      op.padding == ConvPadding::quantized_zero && (g.pad_top || g.pad_left || g.pad_bottom || g.pad_right);
  const vnni::Conv2dParams given = cp;
  if (zero_bytes) {
    cp.height += g.pad_top + g.pad_bottom;
    cp.width += g.pad_left + g.pad_right;
    cp.pad_top = cp.pad_left = cp.pad_bottom = cp.pad_right = 0;
  }
  const auto padded = [&](auto a) {
    if (!zero_bytes) return a;
    decltype(a) p(static_cast<std::size_t>(cp.batch * cp.height * cp.width * cp.channels), 0);
    for (std::int64_t n = 0; n < cp.batch; ++n)
      for (std::int64_t h = 0; h < given.height; ++h)
        for (std::int64_t w = 0; w < given.width; ++w)
          for (std::int64_t c = 0; c < cp.channels; ++c)
            p[static_cast<std::size_t>(((n * cp.height + h + g.pad_top) * cp.width + w + g.pad_left) * cp.channels +
                                       c)] =
                a[static_cast<std::size_t>(((n * given.height + h) * given.width + w) * cp.channels + c)];
    return p;
  };
  const vnni::PackedConv2d pc = weight.packing ? vnni::pack_conv2d_int4(cp, packed_bytes(weight), isa)
                                               : vnni::pack_conv2d(cp, weight_bytes(weight), isa);
  Tensor y(kernel_output(op.output), {cp.batch, pc.out_h, pc.out_w, cp.out_channels});
  if (input.format == DType::i8)
    dispatch_conv(pc, padded(quantize_activations<std::int8_t>(isa, input)), y);
  else
    dispatch_conv(pc, padded(quantize_activations<std::uint8_t>(isa, input)), y);
  return in_format(std::move(y), op.output.format);
}

}  // namespace

std::string VnniBackend::name() const {
  return isa_ == vnni::Isa::avx2_maddubs ? "avx2-maddubs" : std::string(vnni::name(isa_));
}

std::string VnniBackend::description() const {
  switch (isa_) {
    case vnni::Isa::vnni512:
      return "AVX512-VNNI vpdpbusd int8 GEMM/conv, 12x32 register tile, f32 epilogue; float and weight-only "
             "GEMM/conv2d (im2col) one f32 FMA per term, taps ascending";
    case vnni::Isa::avxvnni:
      return "AVX-VNNI (256-bit) vpdpbusd int8 GEMM/conv, f32 epilogue; float and weight-only GEMM/conv2d (im2col) "
             "one f32 FMA per term, taps ascending";
    case vnni::Isa::avx2_maddubs:
      return "AVX2 vpmaddubsw+vpmaddwd int8 GEMM/conv (int16 pair saturation), f32 epilogue; float and "
             "weight-only GEMM/conv2d (im2col) one f32 FMA per term, taps ascending";
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
  if (const auto* g = std::get_if<QGemmOp>(&op)) {
    if (batched_b(*g)) return check_batched(*g, [this](const QGemmOp& one) { return supports(one); });
    const int n_axis = g->b_layout == WeightLayout::k_by_n ? 1 : 0;
    if (blocked_along_k(*g)) return check_blocked(isa_, *g);
    if (!per_row(g->a)) return check_common(isa_, g->a, g->b, n_axis, g->bias, g->output);
    for (std::int64_t r = 0; r < activation_rows(g->a); ++r)  // every row's scale must suit the epilogue
      if (Availability a = check_common(isa_, row_operand(g->a, r), g->b, n_axis, g->bias, g->output); !a.available)
        return a;
    return {};
  }
  if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    return check_common(isa_, c->input, c->weight, 0, c->bias, c->output);
  }
  if (const auto* q = std::get_if<QuantizeOp>(&op)) return check_quantize(*q);
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return check_dequantize(*d);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return check_requantize(*r);
  // Parameter choice is host code, as in the libraries: the same code as cpu-ref's.
  if (const auto* c = std::get_if<ChooseQParamsOp>(&op)) return host::supports_choose_qparams(*c);
  if (const auto* c = std::get_if<Conv2dOp>(&op)) return check_conv2d(*c);
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op)) return check_weight_only(*w);
  if (const auto* a = std::get_if<QAddOp>(&op)) return check_qadd(isa_, *a);
  return {false, std::string(op_name(op)) + ": the x86 kernels have no MX/NVFP4 block-scaled formats"};
}

Tensor VnniBackend::run(const OpRequest& op) {
  if (const auto* g = std::get_if<QGemmOp>(&op)) return run_gemm(isa_, *g);
  if (const auto* q = std::get_if<QuantizeOp>(&op)) return run_quantize(isa_, *q);
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return run_dequantize(isa_, *d);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return run_requantize(isa_, *r);
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op)) return run_weight_only(isa_, *w);
  if (const auto* c = std::get_if<ChooseQParamsOp>(&op)) return host::run_choose_qparams(*c);
  if (const auto* c = std::get_if<Conv2dOp>(&op)) return run_conv2d(isa_, *c);
  if (const auto* a = std::get_if<QAddOp>(&op)) return run_qadd(isa_, *a);
  return run_conv_any_layout(isa_, std::get<QConv2dOp>(op));
}

}  // namespace qc
