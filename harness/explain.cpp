#include "harness/explain.hpp"

#include "harness/causes.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/fp8.hpp"
#include "oracles/mx.hpp"
#include "oracles/mx_gemm.hpp"
#include "oracles/qadd.hpp"
#include "qconform/error.hpp"
#include "qconform/qparams.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace qc {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string coords_text(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> c;
  unravel(flat, shape, c);
  std::string s = "[";
  for (std::size_t k = 0; k < c.size(); ++k) s += (k ? ", " : "") + std::to_string(c[k]);
  return s + "]";
}

// The parameters of element `i` of a tensor quantized with `p`: "scale 0.5 (f32), zero point 3",
// naming the channel or block where they vary.
std::string params_text(const QuantParams& p, const Shape& shape, std::int64_t i) {
  const std::int64_t k = ParamIndexer(p, shape)(i);
  std::string s = "scale " + number(p.scales[static_cast<std::size_t>(k)]) + " (" + std::string(name(p.scale_dtype)) +
                  "), zero point " + std::to_string(p.zero_point(k));
  if (p.granularity() != Granularity::per_tensor) s += " (parameter " + std::to_string(k) + ")";
  return s;
}

// A requantize element's channel: its weight scale and output zero point.
struct RequantizeChannel {
  RequantizeScales scales;
  std::int64_t zero_point = 0;
};
RequantizeChannel requantize_channel(const RequantizeOp& op, std::int64_t i) {
  const RequantizeParams& p = op.params;
  std::size_t channel = 0;
  if (p.axis && (p.weight_scales.size() > 1 || p.output_zero_points.size() > 1)) {
    std::vector<std::int64_t> c;
    unravel(i, op.acc.shape(), c);
    channel = static_cast<std::size_t>(c[static_cast<std::size_t>(resolve_axis(*p.axis, op.acc.rank()))]);
  }
  const double w = p.weight_scales[std::min(channel, p.weight_scales.size() - 1)];
  const std::int64_t zp =
      p.output_zero_points.empty() ? 0 : p.output_zero_points[std::min(channel, p.output_zero_points.size() - 1)];
  return {{p.input_scale, w, p.output_scale, p.scale_dtype}, zp};
}

void set_value(Tensor& one, const Tensor& from, std::int64_t i) {
  if (is_int(from.dtype()))
    one.set_int(0, from.get_int(i));
  else
    one.set_bits(0, from.bits(i));
}

// Element i of `actual` is `one`'s only value (bit for bit; any NaN equals any NaN).
bool same_value(const Tensor& actual, std::int64_t i, const Tensor& one) {
  if (actual.dtype() != one.dtype()) return false;
  Tensor a(one.dtype(), {1});
  set_value(a, actual, i);
  return same_element(a, one, 0);
}

std::string short_value(const ExactFloat& v) {
  if (v.is_nan()) return "NaN";
  if (v.is_inf()) return v.negative ? "-inf" : "+inf";
  return to_decimal(v.value, 12);
}

bool rounds(const TraceStep& s) { return to_string(s.exact) != to_string(s.rounded); }

std::string roundings_from(const ElementDerivation& d, std::size_t from, std::size_t& count) {
  std::string s;
  count = 0;
  for (std::size_t k = from; k < d.steps.size(); ++k) {
    const TraceStep& t = d.steps[k];
    if (!rounds(t)) continue;
    s += std::string(count++ ? ", " : "") + "step " + std::to_string(k + 1) + " '" + t.what + "' " +
         short_value(t.exact) + " -> " + short_value(t.rounded);
  }
  return s;
}

void linear_output_lines(const DotTerms& t, const OutputStage& out, const std::optional<Tensor>& bias,
                         std::vector<std::string>& lines) {
  for (std::size_t s = 0; s < t.a_scale.size(); ++s)
    lines.push_back((t.a_scale.size() > 1
                         ? "segment " + std::to_string(s) + " from k = " + std::to_string(t.segment_starts[s]) + ": "
                         : std::string()) +
                    "s_a = " + number(t.a_scale[s]) + ", s_b = " + number(t.b_scale[s]));
  if (bias)
    lines.push_back("bias of channel " + std::to_string(t.bias_channel) + " = " + value_text(*bias, t.bias_channel) +
                    " (" + std::string(name(bias->dtype())) + ")");
  std::string o = "output: " + std::string(name(out.kind)) + " " + std::string(name(out.format));
  if (out.kind == OutputKind::requantized) {
    o += ", s_out = " + number(out.scale) + ", zero point " + std::to_string(out.zero_point);
    if (out.clamp) o += ", fused clamp [" + std::to_string(out.clamp->lo) + ", " + std::to_string(out.clamp->hi) + "]";
  }
  lines.push_back(o);
}

// An operand's value at `source` as the dot product takes it: the integer, or a float value and
// the integer the spec quantizes it to.
std::string operand_text(const Tensor& given, std::int64_t source, std::int64_t q) {
  if (source < 0 || is_int(given.dtype())) return std::to_string(q);
  return value_text(given, source) + " -> " + std::to_string(q);
}

// `a_given`, `b_given`: the operands as the case gives them (float ones are quantized by the spec).
void dot_terms(const DotTerms& t, const Tensor& a_given, const Tensor* b_given, const Shape& b_shape,
               const std::string& a_name, const std::string& b_name, std::size_t max_terms,
               std::vector<std::string>& lines) {
  const std::size_t K = t.a.size();
  lines.push_back("dot product of " + std::to_string(K) + " terms (a - za) * (b - zb):");
  for (std::size_t j = 0; j < K && j < max_terms; ++j) {
    const std::string a = t.a_source[j] < 0 ? "padding" : a_name + coords_text(t.a_source[j], a_given.shape());
    const std::string b = b_given ? operand_text(*b_given, t.b_source[j], t.b[j]) : std::to_string(t.b[j]);
    lines.push_back("  " + a + " = " + operand_text(a_given, t.a_source[j], t.a[j]) + ", " + b_name +
                    coords_text(t.b_source[j], b_shape) + " = " + b + ": (" + std::to_string(t.a[j]) + " - " +
                    std::to_string(t.za[j]) + ") * (" + std::to_string(t.b[j]) + " - " + std::to_string(t.zb[j]) +
                    ") = " + std::to_string((t.a[j] - t.za[j]) * (t.b[j] - t.zb[j])));
  }
  if (K > max_terms) lines.push_back("  ... and " + std::to_string(K - max_terms) + " more terms");
}

}  // namespace

namespace {

// conv2d's steps for element i: the exact sum, then one rounding. Returns the element's label.
Label conv2d_steps(const Conv2dOp& o, const Spec& spec, std::int64_t i, ElementDerivation& d) {
  const FloatConv2dResult r = conv2d(o, weight_only_policy(spec));
  const auto k = static_cast<std::size_t>(i);
  d.steps.push_back({"sum of x * w over the taps" + std::string(r.nonzero_bias ? " + bias" : "") + ", exactly", "",
                     ExactFloat::finite(r.exact[k]), ExactFloat::finite(r.exact[k]),
                     "the summation order is free: any value within the TOSA dot-product bound " + number(r.bound[k]) +
                         " of the exact sum is accepted"});
  d.steps.push_back({"round once to " + std::string(name(o.out)) + " (ties to even)", "",
                     ExactFloat::finite(r.exact[k]), decode_float(o.out, r.y.bits(i)), ""});
  set_value(d.value, r.y, i);
  return r.labels[k];
}

}  // namespace

ElementDerivation derive_element(const OpRequest& op, const Spec& spec, std::int64_t i) {
  const Shape shape = op_output_shape(op);
  if (i < 0 || i >= numel(shape))
    throw InputError("element " + std::to_string(i) + " is outside the output " + shape_str(shape));
  ElementDerivation d;
  d.policy = spec.name;
  d.description = spec.description;
  d.value = Tensor(op_output_dtype(op), {1});
  Label label = Label::clear;
  // A GEMM or convolution: the element alone (the `only` path), traced through its output stage.
  const auto linear = [&](const QGemmPolicy& p, auto evaluate, const auto& o) {
    const std::vector<std::int64_t> only{i};
    const QLinearResult r = evaluate(o, p, &only);
    d.steps = r.trace(0, p);
    set_value(d.value, r.y, 0);
    label = r.labels[0];
  };
  std::visit(
      Overloaded{
          [&](const QuantizeOp& o) {
            const std::int64_t k = ParamIndexer(o.params, o.x.shape())(i);
            if (is_float8(o.out)) {
              Float8QuantizeElement e = quantize_to_float8_element(
                  o.x.get_double(i), o.x.dtype(), o.params.scales[static_cast<std::size_t>(k)], o.params.scale_dtype,
                  o.out, o.saturate, spec.quantize_for(o.x.dtype()), true);
              d.steps = std::move(e.steps);
              d.value.set_bits(0, e.bits);
              label = e.label;
              return;
            }
            QuantizeElement e = quantize_element(o.x.get_double(i), o.x.dtype(),
                                                 o.params.scales[static_cast<std::size_t>(k)], o.params.scale_dtype,
                                                 o.params.zero_point(k), o.out, spec.quantize_for(o.x.dtype()), true);
            d.steps = std::move(e.steps);
            d.specified = e.specified;
            d.value.set_int(0, e.q);
            label = e.label;
          },
          [&](const DequantizeOp& o) {
            const std::int64_t k = ParamIndexer(o.params, o.q.shape())(i);
            if (is_float8(o.q.dtype())) {
              DequantizeElement e =
                  dequantize_from_float8_element(o.q.bits(i), o.q.dtype(), o.params.scales[static_cast<std::size_t>(k)],
                                                 o.params.scale_dtype, o.out, spec.dequantize, true);
              d.steps = std::move(e.steps);
              d.value.set_bits(0, e.bits);
              label = e.label;
              return;
            }
            DequantizeElement e =
                dequantize_element(o.q.get_int(i), o.q.dtype(), o.params.scales[static_cast<std::size_t>(k)],
                                   o.params.scale_dtype, o.params.zero_point(k), o.out, spec.dequantize, true);
            d.steps = std::move(e.steps);
            d.value.set_bits(0, e.bits);
            label = e.label;
          },
          [&](const RequantizeOp& o) {
            const RequantizeChannel ch = requantize_channel(o, i);
            RequantizeElement e =
                requantize_element(o.acc.get_int(i), ch.scales, ch.zero_point, o.out, spec.requantize, true);
            d.steps = std::move(e.steps);
            d.value.set_int(0, e.q);
            label = e.label;
          },
          [&](const QGemmOp& o) { linear(qgemm_policy(spec, o.a.values.dtype(), LinearOp::gemm), qgemm, o); },
          [&](const QConv2dOp& o) { linear(qgemm_policy(spec, o.input.values.dtype(), LinearOp::conv), qconv2d, o); },
          [&](const WeightOnlyGemmOp& o) {
            const WeightOnlyResult r = weight_only_gemm(o, weight_only_policy(spec));
            const auto k = static_cast<std::size_t>(i);
            d.steps.push_back({"sum of a * (q - zp) * s" + std::string(r.nonzero_bias ? " + bias" : "") + ", exactly",
                               "", ExactFloat::finite(r.exact[k]), ExactFloat::finite(r.exact[k]),
                               "the summation order is free: any value within the TOSA dot-product bound " +
                                   number(r.bound[k]) + " of the exact sum is accepted"});
            d.steps.push_back({"round once to " + std::string(name(o.out)) + " (ties to even)", "",
                               ExactFloat::finite(r.exact[k]), decode_float(o.out, r.y.bits(i)), ""});
            set_value(d.value, r.y, i);
            label = r.labels[k];
          },
          [&](const ChooseQParamsOp& o) {
            const ChosenQParams c =
                choose_dynamic_qparams(o.profile, o.format, o.rule, o.axis).chosen.at(static_cast<std::size_t>(i / 2));
            const double v = i % 2 ? static_cast<double>(c.zero_point) : c.scale;
            const ExactFloat x = ExactFloat::finite(Rational(v));
            d.steps.push_back({std::string(i % 2 ? "the zero point" : "the scale") + " under recipe " +
                                   std::string(name(o.rule.recipe)) + ", scheme " + std::string(name(o.rule.scheme)),
                               "", x, x,
                               "integers [" + std::to_string(c.qmin) + ", " + std::to_string(c.qmax) + "], scale in " +
                                   std::string(name(c.scale_dtype))});
            d.value.set_double(0, v);
          },
          [&](const Conv2dOp& o) { label = conv2d_steps(o, spec, i, d); },
          [&](const MxQuantizeOp& o) {
            // The definition, not the fast path: explain shows what the definition gives.
            const MxQuantizeResult r = mx_quantize(o, OraclePath::slow);
            QuantParams blocks;
            blocks.axis = o.blocking.axis;
            blocks.block_size = o.blocking.block_size;
            const std::int64_t k = ParamIndexer(blocks, o.x.shape())(i);
            const ExactFloat y = decode_float(DType::f32, r.y.bits(i));
            d.steps.push_back(
                {"block " + std::to_string(k) + " scale (" + std::string(name(o.blocking.format)) +
                     (o.blocking.format == MxFormat::nvfp4 ? ", E4M3"
                                                           : ", E8M0 rule " + std::string(name(o.scale_rule))) +
                     ")",
                 "code " + std::to_string(r.scales.bits(k)), y, y, ""});
            d.steps.push_back({"element (" + std::string(name(o.element_rounding)) + ", saturating)",
                               "code " + std::to_string(r.elements.bits(i)), y, y,
                               "the element times its scale, in f32"});
            set_value(d.value, r.y, i);
            label = r.labels[static_cast<std::size_t>(i)];
          },
          [&](const QAddOp& o) {
            const std::vector<std::int64_t> bi = qadd_broadcast_index(o.a.shape(), o.b.shape());
            const std::int64_t a = o.a.get_int(i), b = o.b.get_int(bi[static_cast<std::size_t>(i)]);
            const QAddParams p = qadd_params(o);
            const QAddElement e =
                qadd_element(a, b, p, o.output.format, spec.add, qadd_b_folded(o.a.shape(), o.b.shape()));
            const ExactFloat v = ExactFloat::finite(e.ideal), q = ExactFloat::finite(Rational(e.q));
            d.steps.push_back({"(sA(a - zA) + sB(b - zB)) / sC + zC, exactly",
                               "a " + std::to_string(a) + ", b " + std::to_string(b), v, v, ""});
            d.steps.push_back({"scheme " + std::string(name(spec.add.scheme)) + ", saturated to " +
                                   std::string(name(o.output.format)),
                               "", v, q, std::string(describe(spec.add.scheme))});
            d.value.set_int(0, e.q);
            label = e.label;
          },
          [&](const MxDequantizeOp& o) {
            const Tensor y = mx_dequantize(o, OraclePath::slow);
            const ExactFloat v = decode_float(DType::f32, y.bits(i));
            d.steps.push_back({"element code x scale code, rounded once to f32",
                               "code " + std::to_string(o.elements.bits(i)), v, v, ""});
            set_value(d.value, y, i);
          },
          [&](const MxGemmOp& o) {
            const MxGemmResult r = mx_gemm(o);
            const auto k = static_cast<std::size_t>(i);
            if (r.nan[k]) {
              d.steps.push_back({"a NaN scale in row " + std::to_string(i / r.shape.cols) + " of A or column " +
                                     std::to_string(i % r.shape.cols) + " of B (OCP MX 6.2: the dot is NaN)",
                                 "", ExactFloat::nan(), ExactFloat::nan(), ""});
            } else {
              const ExactFloat v = ExactFloat::finite(r.exact[k]);
              d.steps.push_back({"sum over " + std::to_string(r.blocks) + " block pairs of X(A) X(B) sum P(A) P(B)" +
                                     std::string(r.nonzero_bias ? " + bias" : "") + ", exactly",
                                 "", v, v,
                                 "the summation order is implementation-defined (OCP MX 6.2): any value within the "
                                 "TOSA dot-product bound " +
                                     number(r.bound[k]) + " of the exact sum is accepted"});
              d.steps.push_back({"round once to " + std::string(name(o.out)) + " (ties to even)", "", v,
                                 decode_float(o.out, r.y.bits(i)), ""});
            }
            set_value(d.value, r.y, i);
            label = r.labels[k];
          },
      },
      op);
  d.label = std::string(name(label));
  d.result = d.specified ? value_text(d.value, 0) : "unspecified (any value accepted)";
  return d;
}

namespace {

// conv2d's inputs of element i: the taps x * w (w dequantized exactly), the bias.
void conv2d_inputs(const Conv2dOp& o, const Spec& spec, std::int64_t i, std::size_t max_terms,
                   std::vector<std::string>& lines) {
  const Conv2dShape cs = resolve_conv2d(o.input.shape(), o.layout, logical_shape(o.weight), o.geometry);
  const std::vector<Rational> w = conv2d_weight_values(o, weight_only_policy(spec));
  const Shape os = cs.output_shape();
  std::vector<std::int64_t> c(os.size(), 0);  // the element's coordinates in the output
  for (std::int64_t d = static_cast<std::int64_t>(os.size()) - 1, rest = i; d >= 0; --d) {
    c[static_cast<std::size_t>(d)] = rest % os[static_cast<std::size_t>(d)];
    rest /= os[static_cast<std::size_t>(d)];
  }
  const bool nchw = o.layout == ConvLayout::nchw;
  const std::int64_t n = c[0], oc = nchw ? c[1] : c[3], oh = nchw ? c[2] : c[1], ow = nchw ? c[3] : c[2];
  const std::int64_t g = oc / cs.group_out_channels, K = cs.depth();
  lines.push_back("convolution of " + std::to_string(K) + " taps x * w (w dequantized exactly):");
  for (std::int64_t k = 0; k < K && k < static_cast<std::int64_t>(max_terms); ++k) {
    const std::int64_t src = cs.tap_source(n, g, oh, ow, k), wi = oc * K + k;
    lines.push_back("  " +
                    (src < 0 ? std::string("padding = 0")
                             : "x" + coords_text(src, o.input.shape()) + " = " + value_text(o.input, src)) +
                    ", w" + coords_text(wi, logical_shape(o.weight)) + " = " +
                    to_decimal(w[static_cast<std::size_t>(wi)], 20));
  }
  if (K > static_cast<std::int64_t>(max_terms))
    lines.push_back("  ... and " + std::to_string(K - static_cast<std::int64_t>(max_terms)) + " more terms");
  if (o.bias) lines.push_back("bias of channel " + std::to_string(oc) + " = " + value_text(*o.bias, oc));
}

}  // namespace

std::vector<std::string> element_inputs(const OpRequest& op, const Spec& spec, std::int64_t i, std::size_t max_terms) {
  const Shape shape = op_output_shape(op);
  if (i < 0 || i >= numel(shape))
    throw InputError("element " + std::to_string(i) + " is outside the output " + shape_str(shape));
  std::vector<std::string> lines;
  // A GEMM's or convolution's dot product term by term, then its scales, bias and output stage.
  const auto linear = [&](const DotTerms& t, const Tensor& a, const QWeights& w, const std::string& a_name,
                          const std::string& w_name, const OutputStage& out, const std::optional<Tensor>& bias) {
    dot_terms(t, a, w.packing ? nullptr : &w.values, logical_shape(w), a_name, w_name, max_terms, lines);
    linear_output_lines(t, out, bias, lines);
  };
  std::visit(Overloaded{
                 [&](const QuantizeOp& o) {
                   lines.push_back("x" + coords_text(i, o.x.shape()) + " = " + value_text(o.x, i) + " (" +
                                   std::string(name(o.x.dtype())) + ")");
                   lines.push_back(params_text(o.params, o.x.shape(), i) + ", to " + std::string(name(o.out)) +
                                   (is_float8(o.out) ? (o.saturate ? " (saturate)" : " (no saturation)") : ""));
                 },
                 [&](const DequantizeOp& o) {
                   lines.push_back("q" + coords_text(i, o.q.shape()) + " = " + value_text(o.q, i) + " (" +
                                   std::string(name(o.q.dtype())) + ")");
                   lines.push_back(params_text(o.params, o.q.shape(), i) + ", to " + std::string(name(o.out)));
                 },
                 [&](const RequantizeOp& o) {
                   const RequantizeChannel ch = requantize_channel(o, i);
                   lines.push_back("acc" + coords_text(i, o.acc.shape()) + " = " + value_text(o.acc, i) + " (" +
                                   std::string(name(o.acc.dtype())) + ")");
                   lines.push_back("s_in = " + number(ch.scales.input) + ", s_w = " + number(ch.scales.weight) +
                                   ", s_out = " + number(ch.scales.output) + " (" + std::string(name(ch.scales.dtype)) +
                                   "), zero point " + std::to_string(ch.zero_point) + ", to " +
                                   std::string(name(o.out)));
                 },
                 [&](const QGemmOp& o) {
                   const DotTerms t = qgemm_terms(o, qgemm_policy(spec, o.a.values.dtype(), LinearOp::gemm), i);
                   linear(t, o.a.values, o.b, "A", "B", o.output, o.bias);
                 },
                 [&](const QConv2dOp& o) {
                   const DotTerms t = qconv2d_terms(o, qgemm_policy(spec, o.input.values.dtype(), LinearOp::conv), i);
                   linear(t, o.input.values, o.weight, "input", "weight", o.output, o.bias);
                 },
                 [&](const WeightOnlyGemmOp& o) {
                   const QuantizedOperand w = quantize_weights(o.b, weight_only_policy(spec).quantize);
                   const GemmShape g = gemm_shape(o.a.shape(), w.q.shape(), o.b_layout);
                   const std::int64_t r = i / g.cols, n = i % g.cols;
                   lines.push_back("dot product of " + std::to_string(g.depth) + " terms a * (q - zp) * s:");
                   for (std::int64_t k = 0; k < g.depth && k < static_cast<std::int64_t>(max_terms); ++k) {
                     const std::int64_t ai = r * g.depth + k, bi = g.b_k_axis == 0 ? k * g.cols + n : n * g.depth + k;
                     lines.push_back("  A" + coords_text(ai, o.a.shape()) + " = " + value_text(o.a, ai) + ", q" +
                                     coords_text(bi, w.q.shape()) + " = " + std::to_string(w.q.get_int(bi)) + ", " +
                                     params_text(w.params, w.q.shape(), bi));
                   }
                   if (g.depth > static_cast<std::int64_t>(max_terms))
                     lines.push_back("  ... and " + std::to_string(g.depth - static_cast<std::int64_t>(max_terms)) +
                                     " more terms");
                   if (o.bias) lines.push_back("bias of column " + std::to_string(n) + " = " + value_text(*o.bias, n));
                 },
                 [&](const ChooseQParamsOp& o) {
                   // The range this element's pair was chosen from.
                   const DynamicQParams q = choose_dynamic_qparams(o.profile, o.format, o.rule, o.axis);
                   const auto c = static_cast<std::size_t>(i / 2);
                   lines.push_back("range " + std::to_string(c) + " of the profile: min " + number(q.mins.at(c)) +
                                   ", max " + number(q.maxs.at(c)) + " (" + std::string(name(o.profile.dtype())) +
                                   "), for " + std::string(name(o.format)));
                 },
                 [&](const Conv2dOp& o) { conv2d_inputs(o, spec, i, max_terms, lines); },
                 [&](const MxQuantizeOp& o) {
                   lines.push_back("x" + coords_text(i, o.x.shape()) + " = " + value_text(o.x, i) + " (" +
                                   std::string(name(o.x.dtype())) + "), " + std::string(name(o.blocking.format)) +
                                   " blocks of " + std::to_string(o.blocking.block_size) + " along axis " +
                                   std::to_string(o.blocking.axis));
                 },
                 [&](const QAddOp& o) {
                   const std::vector<std::int64_t> bi = qadd_broadcast_index(o.a.shape(), o.b.shape());
                   const std::int64_t j = bi[static_cast<std::size_t>(i)];
                   lines.push_back("A" + coords_text(i, o.a.shape()) + " = " + std::to_string(o.a.get_int(i)) + ", " +
                                   params_text(o.a_params, o.a.shape(), i));
                   lines.push_back("B" + coords_text(j, o.b.shape()) + " = " + std::to_string(o.b.get_int(j)) + ", " +
                                   params_text(o.b_params, o.b.shape(), j));
                   lines.push_back("output " + std::string(name(o.output.format)) + ", scale " +
                                   number(o.output.scale) + ", zero point " + std::to_string(o.output.zero_point));
                 },
                 [&](const MxDequantizeOp& o) {
                   lines.push_back("element code" + coords_text(i, o.elements.shape()) + " = " +
                                   std::to_string(o.elements.bits(i)) + ", " + std::string(name(o.blocking.format)));
                 },
                 [&](const MxGemmOp& o) {
                   const MxGemmResult r = mx_gemm(o);
                   const std::int64_t row = i / r.shape.cols, col = i % r.shape.cols;
                   lines.push_back("row " + std::to_string(row) + " of A (" + std::string(name(o.a.format)) +
                                   ") times column " + std::to_string(col) + " of B (" + std::string(name(o.b.format)) +
                                   "), " + std::to_string(r.blocks) + " blocks of " + std::to_string(r.block_size) +
                                   " along K");
                   if (r.nan[static_cast<std::size_t>(i)]) return;
                   for (std::int64_t blk = 0; blk < r.blocks; ++blk) {
                     if (static_cast<std::size_t>(blk) >= max_terms) {
                       lines.push_back("... " + std::to_string(r.blocks - blk) + " more blocks");
                       break;
                     }
                     const MxBlockDot bd = mx_gemm_block_dot(r, row, col, blk);
                     lines.push_back("block " + std::to_string(blk) + " (k " + std::to_string(bd.k_begin) + ".." +
                                     std::to_string(bd.k_end - 1) + "): scale codes A " +
                                     std::to_string(bd.a_scale_code) + ", B " + std::to_string(bd.b_scale_code) +
                                     "; X(A) X(B) sum P(A) P(B) = " + to_decimal(bd.dot, 40));
                   }
                   if (o.bias)
                     lines.push_back("bias of column " + std::to_string(col) + " = " + value_text(*o.bias, col));
                 },
             },
             op);
  return lines;
}

std::string where_they_part(const ElementDerivation& a, const ElementDerivation& b) {
  const std::size_t n = std::min(a.steps.size(), b.steps.size());
  std::size_t k = 0;
  while (k < n && to_string(a.steps[k].rounded) == to_string(b.steps[k].rounded)) ++k;
  const bool same_result = a.specified == b.specified && same_element(a.value, b.value, 0);
  if (k == n && a.steps.size() == b.steps.size() && same_result) return "the two derivations agree at every step";
  std::string s = k == 0 ? "they part at step 1" : "they agree in value through step " + std::to_string(k);
  const auto at = [&](const ElementDerivation& d) {
    return k < d.steps.size() ? d.policy + " does '" + d.steps[k].what + "' -> " + short_value(d.steps[k].rounded)
                              : d.policy + " has no step " + std::to_string(k + 1);
  };
  s += (k == 0 ? ": " : "; at step " + std::to_string(k + 1) + " ") + at(a) + ", " + at(b);
  std::size_t ra = 0, rb = 0;
  const std::string from_a = roundings_from(a, k, ra), from_b = roundings_from(b, k, rb);
  const auto side = [](const ElementDerivation& d, std::size_t count, const std::string& list) {
    if (count == 0) return d.policy + " rounds nowhere after that";
    return d.policy +
           (count == 1   ? " rounds once ("
            : count == 2 ? " rounds twice ("
                         : " rounds " + std::to_string(count) + " times (") +
           list + ")";
  };
  s += "; from there " + side(a, ra, from_a) + ", " + side(b, rb, from_b);
  if ((ra == 1 && rb == 2) || (ra == 2 && rb == 1)) s += ": a double rounding against a single one";
  s += same_result ? "; both give " + a.result
                   : "; results: " + a.policy + " " + a.result + ", " + b.policy + " " + b.result;
  return s;
}

std::int64_t parse_element_index(const std::string& text, const Shape& shape, const std::string& what) {
  std::vector<std::int64_t> parts;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw InputError(what + ": '" + text + "' is not an index or comma-separated coordinates");
    parts.push_back(v);
  }
  if (parts.empty()) throw InputError(what + ": empty");
  const std::int64_t total = numel(shape);
  if (parts.size() == 1) {
    if (parts[0] < 0 || parts[0] >= total)
      throw InputError(what + ": " + text + " is outside the output " + shape_str(shape) + " (" +
                       std::to_string(total) + " elements)");
    return parts[0];
  }
  if (parts.size() != shape.size())
    throw InputError(what + ": " + std::to_string(parts.size()) + " coordinates for the output " + shape_str(shape));
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (parts[d] < 0 || parts[d] >= shape[d])
      throw InputError(what + ": coordinate " + std::to_string(parts[d]) + " is outside dimension " +
                       std::to_string(d) + " of the output " + shape_str(shape));
    flat = flat * shape[d] + parts[d];
  }
  return flat;
}

ElementExplanation explain_element(const Case& c, std::int64_t index, Backend* backend, const CallPolicy& call) {
  ElementExplanation e;
  e.case_id = c.id();
  e.op = std::string(op_name(c.op));
  e.shape = op_output_shape(c.op);
  e.index = index;
  e.spec = derive_element(c.op, c.spec, index);  // checks the index
  unravel(index, e.shape, e.coords);
  e.inputs = element_inputs(c.op, c.spec, index);
  if (!backend) return e;
  e.backend = backend->name();
  e.claim = backend->claim();

  std::optional<Tensor> actual;
  RunOptions opt;
  opt.isolate = call.isolate;
  opt.timeout_seconds = call.timeout_seconds;
  opt.on_output = [&](const Case&, const BackendResult&, const Tensor& t) { actual = t; };
  const RunReport run = run_cases({Suite{c.suite, "", c.file, {c}, {}}}, {backend}, opt);
  const BackendResult& r = run.cases.at(0).backends.at(0);
  if (!actual || actual->dtype() != e.spec.value.dtype() || actual->shape() != e.shape) {
    e.backend_reason = std::string(name(r.verdict)) + ": " + r.reason;
    return e;
  }
  e.backend_value = value_text(*actual, index);
  e.matches_spec = e.spec.specified && same_value(*actual, index, e.spec.value);
  if (e.matches_spec) return e;

  // The derivation behind the backend's value: the run's causes best first, then its claim.
  const auto adopt = [&](ElementDerivation d, const Spec& spec, std::string source) {
    e.reproduces_backend = same_value(*actual, index, d.value);
    e.backend_policy = std::move(d);
    e.backend_policy_source = std::move(source);
    // Operands the policy quantizes otherwise than the spec (float activations under another
    // rounding) feed the element other integers: those lines.
    for (std::string& line : element_inputs(c.op, spec, index))
      if (std::find(e.inputs.begin(), e.inputs.end(), line) == e.inputs.end()) e.backend_inputs.push_back(line);
  };
  for (const CauseCount& cc : r.causes) {
    const std::optional<Spec> s = cause_spec(c.spec, c.op, cc.cause);
    if (!s) continue;
    ElementDerivation d;
    try {
      d = derive_element(c.op, *s, index);
    } catch (const InputError&) {
      continue;  // the op rejects this change (as attribute_causes skips it)
    }
    if (!same_value(*actual, index, d.value)) continue;
    d.policy = cc.cause;
    d.description = cc.description;
    adopt(std::move(d), *s,
          "the run's cause '" + cc.cause + "' (reproduces " + std::to_string(cc.count) + " of " +
              std::to_string(r.metrics.mismatches()) + " mismatches)");
    break;
  }
  if (!e.backend_policy)
    if (const std::optional<Spec> claimed = find_preset(e.claim)) {
      ElementDerivation d = derive_element(c.op, *claimed, index);
      d.policy = "claim " + e.claim;
      adopt(std::move(d), *claimed, "the backend's claimed preset " + e.claim);
    }
  if (e.backend_policy)
    e.parting = (e.backend_inputs.empty() ? "" : "the operands quantize otherwise (the inputs that differ above); ") +
                where_they_part(e.spec, *e.backend_policy);
  return e;
}

std::string steps_text(const std::vector<TraceStep>& steps) {
  std::ostringstream os;
  int i = 1;
  for (const TraceStep& s : steps) {
    os << "  " << i++ << ". " << s.what;
    if (!s.formula.empty()) os << ": " << s.formula;
    os << "\n       exact   " << to_string(s.exact) << "\n";
    if (to_string(s.rounded) != to_string(s.exact)) os << "       rounded " << to_string(s.rounded) << "\n";
    if (!s.note.empty()) os << "       " << s.note << "\n";
  }
  return os.str();
}

std::string to_text(const ElementExplanation& e) {
  std::ostringstream os;
  os << e.case_id << " (" << e.op << "), element " << e.index << " = " << coords_text(e.index, e.shape) << " of "
     << shape_str(e.shape) << "\n";
  for (const std::string& l : e.inputs) os << "  " << l << "\n";
  os << "\nunder the spec " << e.spec.policy << " (" << e.spec.description << ")\n"
     << steps_text(e.spec.steps) << "  result: " << e.spec.result << "  [" << e.spec.label << "]\n";
  if (e.backend.empty()) return os.str();
  os << "\n" << e.backend << " (claims " << e.claim << ")";
  if (e.backend_value.empty()) {
    os << " gave no output: " << e.backend_reason << "\n";
    return os.str();
  }
  os << " gives " << e.backend_value
     << (e.matches_spec     ? ": the spec's value\n"
         : e.spec.specified ? ": not the spec's value\n"
                            : "\n");
  if (!e.backend_policy) return os.str();
  os << "\nunder " << e.backend_policy_source << " (" << e.backend_policy->description << ")\n";
  if (!e.backend_inputs.empty()) {
    os << "  inputs that differ from the spec's:\n";
    for (const std::string& l : e.backend_inputs) os << "    " << l << "\n";
  }
  os << steps_text(e.backend_policy->steps) << "  result: " << e.backend_policy->result << "  ["
     << e.backend_policy->label << "]"
     << (e.reproduces_backend ? "  = the backend's value\n"
                              : "  (not the backend's value: nothing tried reproduces it)\n");
  os << "\n" << e.parting << "\n";
  return os.str();
}

namespace {

nlohmann::json derivation_json(const ElementDerivation& d) {
  nlohmann::json steps = nlohmann::json::array();
  for (const TraceStep& s : d.steps)
    steps.push_back({{"what", s.what},
                     {"formula", s.formula},
                     {"exact", to_string(s.exact)},
                     {"rounded", to_string(s.rounded)},
                     {"note", s.note}});
  return {{"policy", d.policy}, {"description", d.description}, {"steps", steps}, {"result", d.result},
          {"label", d.label},   {"specified", d.specified}};
}

}  // namespace

nlohmann::json to_json(const ElementExplanation& e) {
  nlohmann::json j = {{"case", e.case_id},
                      {"op", e.op},
                      {"index", e.index},
                      {"coords", e.coords},
                      {"shape", e.shape},
                      {"inputs", e.inputs},
                      {"spec", derivation_json(e.spec)}};
  if (e.backend.empty()) return j;
  j["backend"] = {{"name", e.backend},
                  {"claim", e.claim},
                  {"value", e.backend_value.empty() ? nlohmann::json() : nlohmann::json(e.backend_value)},
                  {"reason", e.backend_reason},
                  {"matches_spec", e.matches_spec}};
  if (e.backend_policy) {
    j["backend_policy"] = derivation_json(*e.backend_policy);
    j["backend_policy"]["source"] = e.backend_policy_source;
    j["backend_policy"]["reproduces_backend"] = e.reproduces_backend;
    j["backend_policy"]["inputs"] = e.backend_inputs;
    j["parting"] = e.parting;
  }
  return j;
}

}  // namespace qc
