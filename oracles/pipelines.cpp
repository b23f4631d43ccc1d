#include "oracles/pipelines.hpp"

#include "oracles/float_conv2d.hpp"

#include "qconform/error.hpp"

#include <string>
#include <type_traits>

namespace qc {

std::int64_t count_bit_mismatches(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    throw InputError("count_bit_mismatches: tensors differ in format or shape");
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) n += a.bits(i) != b.bits(i);
  return n;
}

// ---- u8 x s8 rewrite -------------------------------------------------------------------------

QuantizedOperand shift_quantized(const QuantizedOperand& x, std::int64_t delta, DType to) {
  QuantizedOperand s{Tensor(to, x.q.shape()), x.params};
  auto shifted = [&](std::int64_t v, const std::string& what) {
    const std::int64_t w = v + delta;
    if (w < int_min(to) || w > int_max(to))
      throw InputError("shift_quantized: " + what + " " + std::to_string(v) + " + " + std::to_string(delta) +
                       " leaves " + std::string(name(to)));
    return w;
  };
  for (std::int64_t i = 0; i < x.q.size(); ++i) s.q.set_int(i, shifted(x.q.get_int(i), "value"));
  s.params.zero_points.resize(x.params.scales.size());
  for (std::size_t i = 0; i < x.params.scales.size(); ++i)
    s.params.zero_points[i] = shifted(x.params.zero_point(static_cast<std::int64_t>(i)), "zero point");
  return s;
}

namespace {

QuantizedOperand require_format(QuantizedOperand x, DType want, const std::string& what) {
  if (x.q.dtype() != want)
    throw InputError("u8 x s8 rewrite: " + what + " are " + std::string(name(x.q.dtype())) + ", expected " +
                     std::string(name(want)));
  return x;
}

ActivationOperand as_activation(const QuantizedOperand& x, const Shape& shape) {
  if (x.q.shape() != shape)
    throw InputError(
        "u8 x s8 rewrite: per-row dynamic quantization of a batched activation cannot be rewritten; "
        "quantize a 2-D activation");
  ActivationOperand a;
  a.values = x.q;
  a.format = x.q.dtype();
  a.params = x.params;
  return a;
}

QWeights as_weights(const QuantizedOperand& w) {
  QWeights q;
  q.values = w.q;
  q.format = w.q.dtype();
  q.params = w.params;
  return q;
}

template <class Op>
Op with_shifted_activation(Op op, const ActivationOperand& a, const QuantizePolicy& quantize) {
  const QuantizedOperand q = require_format(quantize_activation(a, quantize), DType::i8, "activations");
  const ActivationOperand shifted = as_activation(shift_quantized(q, 128, DType::u8), a.values.shape());
  if constexpr (std::is_same_v<Op, QGemmOp>)
    op.a = shifted;
  else
    op.input = shifted;
  return op;
}

template <class Op>
Op with_shifted_weights(Op op, const QWeights& w, const QuantizePolicy& quantize) {
  const QuantizedOperand q = require_format(quantize_weights(w, quantize), DType::u8, "weights");
  const QWeights shifted = as_weights(shift_quantized(q, -128, DType::i8));
  if constexpr (std::is_same_v<Op, QGemmOp>)
    op.b = shifted;
  else
    op.weight = shifted;
  return op;
}

DType quantized_format(const ActivationOperand& a) { return is_int(a.values.dtype()) ? a.values.dtype() : a.format; }
DType quantized_format(const QWeights& w) {
  return w.packing || !is_int(w.values.dtype()) ? w.format : w.values.dtype();
}

template <class Op>
LoweringPair compare_rewrite(const Op& op, const ActivationOperand& a, const QWeights& w, const QGemmPolicy& original,
                             const QGemmPolicy& rewritten) {
  const bool shift_activations = quantized_format(a) == DType::i8;
  if (!shift_activations && !(quantized_format(a) == DType::u8 && quantized_format(w) == DType::u8))
    throw InputError("u8 x s8 rewrite: expects s8 activations, or u8 activations with u8 weights");
  const Op r =
      shift_activations ? rewrite_s8s8_as_u8s8(op, original.quantize) : rewrite_u8u8_as_u8s8(op, original.quantize);
  LoweringPair p;
  if constexpr (std::is_same_v<Op, QGemmOp>) {
    p.original = qgemm(op, original);
    p.rewritten = qgemm(r, rewritten);
  } else {
    p.original = qconv2d(op, original);
    p.rewritten = qconv2d(r, rewritten);
  }
  p.mismatches = count_bit_mismatches(p.original.y, p.rewritten.y);
  return p;
}

}  // namespace

QGemmOp rewrite_s8s8_as_u8s8(const QGemmOp& op, const QuantizePolicy& quantize) {
  return with_shifted_activation(op, op.a, quantize);
}
QConv2dOp rewrite_s8s8_as_u8s8(const QConv2dOp& op, const QuantizePolicy& quantize) {
  return with_shifted_activation(op, op.input, quantize);
}
QGemmOp rewrite_u8u8_as_u8s8(const QGemmOp& op, const QuantizePolicy& quantize) {
  return with_shifted_weights(op, op.b, quantize);
}
QConv2dOp rewrite_u8u8_as_u8s8(const QConv2dOp& op, const QuantizePolicy& quantize) {
  return with_shifted_weights(op, op.weight, quantize);
}

LoweringPair compare_u8s8_rewrite(const QGemmOp& op, const QGemmPolicy& original, const QGemmPolicy& rewritten) {
  return compare_rewrite(op, op.a, op.b, original, rewritten);
}
LoweringPair compare_u8s8_rewrite(const QConv2dOp& op, const QGemmPolicy& original, const QGemmPolicy& rewritten) {
  return compare_rewrite(op, op.input, op.weight, original, rewritten);
}

// ---- Fused FC versus MatMul + bias add ---------------------------------------------------------

FcLowerings compare_fused_fc(const QGemmOp& fc, const IntermediateQParams& mid, const QGemmPolicy& policy) {
  if (fc.output.kind != OutputKind::requantized)
    throw InputError("compare_fused_fc: the FC must have a requantized output");
  if (fc.bias && fc.bias->dtype() != DType::i32)
    throw InputError("compare_fused_fc: the FC bias must be int32 (scale s_a * s_b)");
  FcLowerings f;
  f.fused = qgemm(fc, policy);

  QGemmOp matmul = fc;
  matmul.bias.reset();
  matmul.output = OutputStage{OutputKind::requantized, mid.format, mid.scale, mid.zero_point, std::nullopt};
  f.matmul = qgemm(matmul, policy);

  // The bias add: y = round((s_mid * (q_mid - zp_mid) + bias * s_a * s_b) / s_out) + zp_out, exactly.
  RequantizePolicy add = policy.requantize;
  add.scheme = RequantizeScheme::ideal;
  if (fc.output.clamp) add.clip = std::make_pair(fc.output.clamp->lo, fc.output.clamp->hi);
  const DType scale_dtype = quantize_activation(fc.a, policy.quantize).params.scale_dtype;
  const Tensor& q_mid = f.matmul.y;
  const std::int64_t N = q_mid.shape().back();
  f.unfused = Tensor(fc.output.format, q_mid.shape());
  f.unfused_labels.resize(static_cast<std::size_t>(q_mid.size()));
  f.unfused_exact.resize(f.unfused_labels.size());
  const Rational s_mid(mid.scale), s_out(fc.output.scale);
  for (std::int64_t e = 0; e < q_mid.size(); ++e) {
    Rational v = s_mid * (q_mid.get_int(e) - mid.zero_point);
    if (fc.bias) v += Rational(fc.bias->get_int(e % N)) * f.matmul.scale_product(e);
    const RequantizeElement q =
        requantize_real(v / s_out, fc.output.scale, scale_dtype, fc.output.zero_point, fc.output.format, add);
    f.unfused.set_int(e, q.q);
    f.unfused_labels[static_cast<std::size_t>(e)] = q.label;
    f.unfused_exact[static_cast<std::size_t>(e)] = q.ideal;
  }
  f.mismatches = count_bit_mismatches(f.fused.y, f.unfused);
  return f;
}

// ---- Q -> DQ -> conv versus quantized conv then dequantize -------------------------------------

QdqConvLowerings compare_qdq_conv(const QConv2dOp& op, const QGemmPolicy& policy, std::optional<DType> dq_format) {
  if (op.output.kind != OutputKind::dequantized)
    throw InputError("compare_qdq_conv: the conv must have a dequantized (float) output");
  QdqConvLowerings l;
  l.quantized = qconv2d(op, policy);

  const QuantizedOperand qx = quantize_activation(op.input, policy.quantize);
  const QuantizedOperand qw = quantize_weights(op.weight, policy.quantize);
  const Conv2dShape cs = resolve_conv2d(qx.q.shape(), op.layout, qw.q.shape(), op.geometry);
  const std::vector<Rational> x = dequantized_values(qx, dq_format, policy.dequantize);
  const std::vector<Rational> w = dequantized_values(qw, dq_format, policy.dequantize);
  // An int32 bias is dequantized with scale s_x * s_w[oc] (its channel's scale product); a float bias is used as is.
  std::vector<Rational> bias;
  if (op.bias)
    for (std::int64_t oc = 0; oc < cs.out_channels; ++oc) {
      const Rational b = exact_element(*op.bias, oc);
      bias.push_back(op.bias->dtype() == DType::i32 ? b * l.quantized.scale_product(cs.output_index(0, oc, 0, 0)) : b);
    }
  FloatConv2dResult f = float_conv2d_exact(cs, x, w, bias, op.output.format);
  l.qdq = std::move(f.y);
  l.qdq_exact = std::move(f.exact);
  l.qdq_labels = std::move(f.labels);
  l.mismatches = count_bit_mismatches(l.qdq, l.quantized.y);
  return l;
}

}  // namespace qc
