#include "backends/cpu_ref/linear.hpp"

#include "backends/cpu_ref/formats.hpp"
#include "backends/host/qparams.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace qc::cpu_ref {
namespace {

bool quantizable(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i16 || t == DType::u16 || t == DType::i4 || t == DType::u4;
}

bool plain_float_scale(DType t) { return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16; }

std::vector<std::int32_t> integers(const Tensor& t) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t.get_int(i));
  return v;
}

// The default rule of an ActivationOperand is ONNX's (QParamsRule{} is the onnx-dynamic-quantize-
// linear preset); any other recipe is another implementation's, which cpu-ref does not claim.
bool onnx_dynamic_rule(const QParamsRule& r) { return r == QParamsRule{}; }

// Dynamic quantization: one (scale, zero point) per row of x viewed as [rows, K] (per_row) or for
// the whole tensor, from its min and max.
IntOperand dynamic_activation(const ActivationOperand& a, bool per_row, const Numerics& n) {
  const Tensor& x = a.values;
  const std::int64_t K = x.shape().back(), rows = x.size() / K;
  const std::int64_t groups = per_row ? rows : 1, group_size = per_row ? K : x.size();
  QuantizeOp q{Tensor(x.dtype(), per_row ? Shape{rows, K} : x.shape()), {}, a.format};
  std::memcpy(q.x.bytes().data(), x.bytes().data(), x.bytes().size());
  q.params.scale_dtype = DType::f32;
  if (per_row) q.params.axis = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    float xmin = std::numeric_limits<float>::infinity(), xmax = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = g * group_size; i < (g + 1) * group_size; ++i) {
      const auto v = static_cast<float>(x.get_double(i));  // f32, f16 and bf16 values are exact in float
      xmin = std::min(xmin, v);
      xmax = std::max(xmax, v);
    }
    double scale;
    std::int64_t zp;
    host::dynamic_quantize_linear_params(xmin, xmax, a.format, scale, zp);
    q.params.scales.push_back(scale);
    q.params.zero_points.push_back(zp);
  }
  return {q.x.shape(), integers(quantize_linear(q, n)), q.params};
}

}  // namespace

// ---- Operands --------------------------------------------------------------------------------

Availability check_activation(const ActivationOperand& a) {
  const DType t = a.values.dtype();
  if (is_int(t)) {
    if (!quantizable(t))
      return {false, "cpu-ref takes i8, u8, i16, u16, i4 or u4 activations, got " + std::string(name(t))};
    return {};
  }
  if (!quantizable(a.format))
    return {false, "cpu-ref quantizes activations to i8, u8, i16, u16, i4 or u4, not " + std::string(name(a.format))};
  if (a.quantization == ActivationQuantization::static_params) {
    if (!plain_float_scale(a.params.scale_dtype))
      return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
    return {};
  }
  if (!onnx_dynamic_rule(a.rule))
    return {false, "cpu-ref chooses dynamic parameters by ONNX DynamicQuantizeLinear only, not the " +
                       std::string(name(a.rule.recipe)) + " rule of this spec"};
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    return {false, "cpu-ref quantizes dynamically from f32, f16 or bf16 values"};
  return {};
}

IntOperand activation_integers(const ActivationOperand& a, const Numerics& n) {
  const Tensor& x = a.values;
  if (is_int(x.dtype())) return {x.shape(), integers(x), a.params};
  switch (a.quantization) {
    case ActivationQuantization::static_params:
      return {x.shape(), integers(quantize_linear(QuantizeOp{x, a.params, a.format}, n)), a.params};
    case ActivationQuantization::dynamic_per_tensor:
      return dynamic_activation(a, false, n);
    case ActivationQuantization::dynamic_per_row:
      return dynamic_activation(a, true, n);
  }
  throw std::invalid_argument("cpu-ref: unknown activation quantization");
}

Availability check_weights(const QWeights& w) {
  if (w.packing) {
    if (w.format != DType::i4 && w.format != DType::u4) return {false, "cpu-ref unpacks i4 or u4 weights only"};
    return {};
  }
  const DType t = w.values.dtype();
  if (is_int(t)) {
    if (!quantizable(t))
      return {false, "cpu-ref takes i8, u8, i16, u16, i4 or u4 weights, got " + std::string(name(t))};
    return {};
  }
  if (!quantizable(w.format))
    return {false, "cpu-ref quantizes weights to i8, u8, i16, u16, i4 or u4, not " + std::string(name(w.format))};
  if (!plain_float_scale(w.params.scale_dtype))
    return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
  return {};
}

IntOperand weight_integers(const QWeights& w, const Numerics& n) {
  if (w.packing) return {w.shape, integers(unpack_nibbles(w.values, w.format, w.shape, *w.packing)), w.params};
  if (is_int(w.values.dtype())) return {w.values.shape(), integers(w.values), w.params};
  return {w.values.shape(), integers(quantize_linear(QuantizeOp{w.values, w.params, w.format}, n)), w.params};
}

// ---- Output stage ----------------------------------------------------------------------------

Availability check_output(const OutputStage& out, const std::optional<Tensor>& bias, std::int64_t segments,
                          DType scale_dtype, DType weight_scale_dtype, const Numerics& n) {
  if (bias && bias->dtype() == DType::i32 && segments > 1)
    return {false, "an int32 bias needs one accumulator per output (blocked weights have several)"};
  if (bias && bias->dtype() != DType::i32 && !is_float(bias->dtype()))
    return {false, "cpu-ref adds an i32 or float bias"};
  switch (out.kind) {
    case OutputKind::int32:
      if (segments > 1) return {false, "blocked quantization has no single int32 accumulator"};
      if (bias && bias->dtype() != DType::i32) return {false, "a float bias cannot be added to an int32 output"};
      return {};
    case OutputKind::dequantized:
      if (!plain_float_scale(scale_dtype))
        return {false, "cpu-ref dequantizes accumulators with f64, f32, f16 or bf16 scales only"};
      if (!is_float(out.format)) return {false, "a dequantized output has a float format"};
      return {};
    case OutputKind::requantized:
      if (!is_int(out.format)) return {false, "a requantized output has an integer format"};
      if (n.requantize != RequantizeRoutine::exact && (segments > 1 || (bias && is_float(bias->dtype()))))
        return {false, "cpu-ref (" + std::string(n.preset) +
                           ") requantizes one int32 accumulator with one multiplier; blocked scales or a float "
                           "bias are defined for the exact routine only"};
      for (const DType t : {scale_dtype, weight_scale_dtype})
        if (const Availability a = check_requantize_scales(n, t); !a.available) return a;
      return {};
  }
  return {false, "unknown output kind"};
}

Tensor output_stage(const Accumulators& acc, const std::optional<Tensor>& bias, const OutputStage& out,
                    DType scale_dtype, const Numerics& n) {
  Tensor y(out.format, acc.shape);
  const std::int64_t S = acc.segments;
  const bool int_bias = bias && bias->dtype() == DType::i32;
  const bool float_bias = bias && is_float(bias->dtype());
  // A dequantized output computes in the numerics' dequantize type (ONNX: the scale's type, since
  // the graph is DequantizeLinear of the accumulator with scale s_a * s_b).
  const FloatIn T = float_in(n.dequantize_in, scale_dtype);
  std::int64_t lo = int_min(out.format), hi = int_max(out.format);
  if (out.kind == OutputKind::requantized && out.clamp)
    lo = std::max(lo, out.clamp->lo), hi = std::min(hi, out.clamp->hi);
  std::vector<ScaledTerm> terms;
  for (std::int64_t e = 0; e < y.size(); ++e) {
    const std::int64_t c = acc.channel[static_cast<std::size_t>(e)];
    // An int32 bias (scale s_a * s_b) enters the accumulator with the accumulator's own wrapping addition.
    auto accumulator = [&](std::int64_t s) -> std::int32_t {
      const std::int32_t v = acc.acc[static_cast<std::size_t>(e * S + s)];
      return int_bias ? wrap_int32(std::int64_t{v} + bias->get_int(c)) : v;
    };
    auto s_a = [&](std::int64_t s) { return acc.scale_a[static_cast<std::size_t>(e * S + s)]; };
    auto s_b = [&](std::int64_t s) { return acc.scale_b[static_cast<std::size_t>(e * S + s)]; };
    switch (out.kind) {
      case OutputKind::int32:
        y.set_int(e, accumulator(0));
        break;
      case OutputKind::dequantized: {
        // float(acc) * (s_a * s_b) in T, one term per K block summed in order, + bias.
        double sum = 0;
        for (std::int64_t s = 0; s < S; ++s) {
          const double term = T.mul(T.round(accumulator(s)), T.mul(T.round(s_a(s)), T.round(s_b(s))));
          sum = s == 0 ? term : T.add(sum, term);
        }
        if (float_bias) sum = T.add(sum, T.round(bias->get_double(c)));
        y.set_bits(e, to_format_bits(out.format, sum));
        break;
      }
      case OutputKind::requantized: {
        std::int64_t q;
        if (S == 1 && !float_bias) {
          q = requantize_value(n, accumulator(0), s_a(0), s_b(0), out.scale, out.zero_point);
        } else {  // the exact routine only (check_output)
          terms.clear();
          for (std::int64_t s = 0; s < S; ++s) terms.push_back({accumulator(s), s_a(s), s_b(s)});
          if (float_bias && bias->get_double(c) != 0) terms.push_back({1, bias->get_double(c), 1.0});
          q = requantize_sum_exact(terms, out.scale) + out.zero_point;
        }
        y.set_int(e, std::clamp(q, lo, hi));
        break;
      }
    }
  }
  return y;
}

}  // namespace qc::cpu_ref
