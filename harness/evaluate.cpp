#include "harness/evaluate.hpp"

#include "oracles/choose_qparams.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/fp8.hpp"
#include "oracles/mx.hpp"
#include "oracles/mx_gemm.hpp"
#include "oracles/qadd.hpp"
#include "oracles/quantize.hpp"

#include <cmath>

namespace qc {

std::string describe_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-inf" : "+inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  const Rational r(v);
  return to_decimal(r, 30) + " (" + to_hexfloat(r) + ")";
}

namespace {

// Float8 outputs (oracles/fp8.hpp): the spec's quantize policy gives the quotient's order, compute
// format and rounding; the op gives `saturate`.
Reference evaluate_quantize_float8(const QuantizeOp& op, const QuantizePolicy& pol) {
  QuantizeResult r = quantize_to_float8(op.x, op.params, op.out, op.saturate, pol);
  Reference ref{std::move(r.q), std::move(r.labels), std::move(r.specified), std::nullopt, {}, {}, {}};
  QuantizePolicy exact_policy = pol;
  exact_policy.compute = ComputeFormat{ComputeFormat::Kind::exact, 0};
  exact_policy.rounding = RoundingMode::rne;
  ref.correctly_rounded = quantize_to_float8(op.x, op.params, op.out, op.saturate, exact_policy, false).q;
  ref.describe = [op = std::make_shared<const QuantizeOp>(op), pol](std::int64_t i, ElementDiff& d) {
    const std::int64_t k = ParamIndexer(op->params, op->x.shape())(i);
    const double x = op->x.get_double(i);
    d.input = describe_value(x);
    const Float8QuantizeElement e =
        quantize_to_float8_element(x, op->x.dtype(), op->params.scales[static_cast<std::size_t>(k)],
                                   op->params.scale_dtype, op->out, op->saturate, pol);
    d.exact = to_string(e.exact) + " (x / s)";
  };
  return ref;
}

Reference evaluate_dequantize_float8(const DequantizeOp& op, const DequantizePolicy& pol) {
  DequantizeResult r = dequantize_from_float8(op.q, op.params, op.out, pol);
  Reference ref{std::move(r.y),
                std::move(r.labels),
                SpecifiedMask(static_cast<std::size_t>(op.q.size())),
                std::nullopt,
                {},
                {},
                {}};
  DequantizePolicy exact_policy{DequantizeOrder::sub_int_then_mul, ComputeFormat{ComputeFormat::Kind::exact, 0}};
  ref.correctly_rounded = dequantize_from_float8(op.q, op.params, op.out, exact_policy, false).y;
  ref.describe = [op = std::make_shared<const DequantizeOp>(op), pol](std::int64_t i, ElementDiff& d) {
    const std::int64_t k = ParamIndexer(op->params, op->q.shape())(i);
    d.input = describe_value(op->q.get_double(i));
    const DequantizeElement e =
        dequantize_from_float8_element(op->q.bits(i), op->q.dtype(), op->params.scales[static_cast<std::size_t>(k)],
                                       op->params.scale_dtype, op->out, pol);
    d.exact = to_string(e.exact);
  };
  return ref;
}

// MX / NVFP4 (oracles/mx.hpp): the rules are the op's (format, scale rule, element rounding); the
// spec has no say. An element's description names its block's scale code.
Reference evaluate_mx_quantize(const MxQuantizeOp& op) {
  MxQuantizeResult r = mx_quantize(op);
  Reference ref{std::move(r.y),
                std::move(r.labels),
                SpecifiedMask(static_cast<std::size_t>(op.x.size())),
                std::nullopt,
                {},
                {},
                {}};
  auto codes = std::make_shared<const MxQuantizeResult>(
      MxQuantizeResult{{}, std::move(r.elements), std::move(r.scales), r.global_scale, {}});
  ref.describe = [op = std::make_shared<const MxQuantizeOp>(op), codes](std::int64_t i, ElementDiff& d) {
    QuantParams blocks;
    blocks.axis = op->blocking.axis;
    blocks.block_size = op->blocking.block_size;
    const std::int64_t k = ParamIndexer(blocks, op->x.shape())(i);
    d.input = describe_value(op->x.get_double(i));
    d.exact = "element code " + std::to_string(codes->elements.bits(i)) + ", block " + std::to_string(k) +
              " scale code " + std::to_string(codes->scales.bits(k)) +
              (codes->global_scale ? ", global scale " + describe_value(*codes->global_scale) : "");
  };
  return ref;
}

Reference evaluate_mx_dequantize(const MxDequantizeOp& op) {
  Tensor y = mx_dequantize(op);
  Reference ref{std::move(y),
                std::vector<Label>(static_cast<std::size_t>(op.elements.size()), Label::clear),
                SpecifiedMask(static_cast<std::size_t>(op.elements.size())),
                std::nullopt,
                {},
                {},
                {}};
  return ref;
}

// mx_gemm: the exact sum rounded once; the summation order is implementation-defined (OCP MX 6.2), so
// a dot_product expectation judges it as the weight-only GEMM, with NaN outputs (a NaN scale in the
// row or column) required to be NaN first.
Reference evaluate_mx_gemm(const MxGemmOp& op) {
  auto r = std::make_shared<const MxGemmResult>(mx_gemm(op));
  Reference ref{r->y, r->labels, SpecifiedMask(static_cast<std::size_t>(r->y.size())), r->y, {}, {}, {}};
  const DotProductCheck check{TosaDotProductRevision::ksb, tosa_kernel_size_bound(r->kernel_size, r->nonzero_bias), -1,
                              op.out};
  ref.dot_product = [r, check](const Tensor& actual) {
    for (std::int64_t i = 0; i < actual.size() && i < r->y.size(); ++i)
      if (r->nan[static_cast<std::size_t>(i)] && !std::isnan(actual.get_double(i))) {
        DotProductVerdict v;
        v.pass = false;
        v.first_failure = i;
        v.reason = "element " + std::to_string(i) + ": a NaN scale in its row or column makes it NaN, got " +
                   describe_value(actual.get_double(i));
        return v;
      }
    return check_dot_product(r->exact, r->bound, actual, check);
  };
  ref.describe = [r](std::int64_t i, ElementDiff& d) {
    const auto k = static_cast<std::size_t>(i);
    d.input = "block-scaled dot product of length " + std::to_string(r->kernel_size);
    d.exact = r->nan[k] ? "NaN (a NaN scale in its row or column)" : to_decimal(r->exact[k], 40);
  };
  return ref;
}

Reference evaluate_quantize(const QuantizeOp& op, const Spec& spec) {
  const QuantizePolicy& pol = spec.quantize_for(op.x.dtype());
  if (is_float8(op.out)) return evaluate_quantize_float8(op, pol);
  QuantizeResult r = quantize(op.x, op.params, op.out, pol);
  Reference ref{std::move(r.q), std::move(r.labels), std::move(r.specified), std::nullopt, {}, {}, {}};
  ref.describe = [op = std::make_shared<const QuantizeOp>(op), pol](std::int64_t i, ElementDiff& d) {
    const std::int64_t k = ParamIndexer(op->params, op->x.shape())(i);
    const double x = op->x.get_double(i);
    d.input = describe_value(x);
    const QuantizeElement e = quantize_element(x, op->x.dtype(), op->params.scales[static_cast<std::size_t>(k)],
                                               op->params.scale_dtype, op->params.zero_point(k), op->out, pol);
    d.exact = to_string(e.pre_round);
  };
  return ref;
}

Reference evaluate_dequantize(const DequantizeOp& op, const Spec& spec) {
  if (is_float8(op.q.dtype())) return evaluate_dequantize_float8(op, spec.dequantize);
  DequantizeResult r = dequantize(op.q, op.params, op.out, spec.dequantize);
  Reference ref{std::move(r.y),
                std::move(r.labels),
                SpecifiedMask(static_cast<std::size_t>(op.q.size())),
                std::nullopt,
                {},
                {},
                {}};
  // The real value (q - zp) * s is exact; its correct rounding into the output format is the
  // dequantize of an exact-arithmetic policy.
  DequantizePolicy exact_policy{DequantizeOrder::sub_int_then_mul, ComputeFormat{ComputeFormat::Kind::exact, 0}};
  ref.correctly_rounded = dequantize(op.q, op.params, op.out, exact_policy, OraclePath::fast, false).y;
  const DequantizePolicy pol = spec.dequantize;
  ref.describe = [op = std::make_shared<const DequantizeOp>(op), pol](std::int64_t i, ElementDiff& d) {
    const std::int64_t k = ParamIndexer(op->params, op->q.shape())(i);
    d.input = std::to_string(op->q.get_int(i));
    const DequantizeElement e =
        dequantize_element(op->q.get_int(i), op->q.dtype(), op->params.scales[static_cast<std::size_t>(k)],
                           op->params.scale_dtype, op->params.zero_point(k), op->out, pol);
    d.exact = to_string(e.exact);
  };
  return ref;
}

Reference evaluate_requantize(const RequantizeOp& op, const Spec& spec) {
  RequantizeResult r = requantize(op.acc, op.params, op.out, spec.requantize);
  Reference ref{std::move(r.q),
                std::move(r.labels),
                SpecifiedMask(static_cast<std::size_t>(op.acc.size())),
                std::nullopt,
                {},
                {},
                {}};
  const RequantizePolicy pol = spec.requantize;
  ref.describe = [op = std::make_shared<const RequantizeOp>(op), pol](std::int64_t i, ElementDiff& d) {
    d.input = std::to_string(op->acc.get_int(i));
    const RequantizeParams& p = op->params;
    std::size_t channel = 0;
    if (p.weight_scales.size() > 1 || p.output_zero_points.size() > 1) {
      const int rank = op->acc.rank();
      const int axis = resolve_axis(*p.axis, rank);
      std::vector<std::int64_t> c;
      unravel(i, op->acc.shape(), c);
      channel = static_cast<std::size_t>(c[static_cast<std::size_t>(axis)]);
    }
    const double w = p.weight_scales[std::min(channel, p.weight_scales.size() - 1)];
    const std::int64_t zp =
        p.output_zero_points.empty() ? 0 : p.output_zero_points[std::min(channel, p.output_zero_points.size() - 1)];
    const RequantizeElement e = requantize_element(
        op->acc.get_int(i), RequantizeScales{p.input_scale, w, p.output_scale, p.scale_dtype}, zp, op->out, pol);
    d.exact = to_decimal(e.ideal, 40) + " (acc * s_in * s_w / s_out + zp)";
  };
  return ref;
}

// qgemm and qconv2d share the output stage and so the reference they produce.
Reference linear_reference(QLinearResult r, DType out) {
  Reference ref{r.y, r.labels, SpecifiedMask(static_cast<std::size_t>(r.y.size())), std::nullopt, {}, {}, {}};
  if (is_float(out)) {  // the exact value rounded once into the output format
    Tensor cr(out, r.y.shape());
    for (std::int64_t i = 0; i < cr.size(); ++i)
      cr.set_bits(i, encode_float(out, ExactFloat::finite(r.exact_value(i))));
    ref.correctly_rounded = std::move(cr);
  }
  auto shared = std::make_shared<QLinearResult>(std::move(r));
  ref.linear = shared;
  ref.describe = [shared](std::int64_t i, ElementDiff& d) {
    // What the output stage takes: the accumulator with its int32 bias (one segment).
    const BigInt acc = shared->exact_accumulator(i, 0);
    const std::int64_t bias = shared->int_bias(i);
    d.input = shared->segments() > 1 ? "accumulator " + acc.str() + " (first block)"
              : bias != 0            ? "accumulator " + acc.str() + " + int32 bias " + std::to_string(bias) + " = " +
                                BigInt(acc + bias).str()
                          : "accumulator " + acc.str();
    d.exact = to_decimal(shared->exact_value(i), 40);
  };
  return ref;
}

// The exact real result (the weights' exact values (q - zp) * s), correctly rounded; the
// implementation is judged by the TOSA dot-product bound since the summation order is free.
Reference evaluate_weight_only(const WeightOnlyGemmOp& op, const Spec& spec) {
  auto r = std::make_shared<WeightOnlyResult>(weight_only_gemm(op, weight_only_policy(spec)));
  Reference ref{r->y, r->labels, SpecifiedMask(static_cast<std::size_t>(r->y.size())), r->y, {}, {}, {}};
  const DotProductCheck check{TosaDotProductRevision::ksb, tosa_kernel_size_bound(r->kernel_size, r->nonzero_bias), -1,
                              op.out};
  ref.dot_product = [r, check](const Tensor& actual) { return check_dot_product(r->exact, r->bound, actual, check); };
  ref.describe = [r](std::int64_t i, ElementDiff& d) {
    d.input = "dot product of length " + std::to_string(r->kernel_size);
    d.exact = to_decimal(r->exact[static_cast<std::size_t>(i)], 40);
  };
  return ref;
}

// The chosen pairs, (scale, zero point) per range, under the op's rule: the rule a DRQ activation
// uses (choose_dynamic_qparams), so a case can show the parameters a path quantizes with.
Reference evaluate_choose_qparams(const ChooseQParamsOp& op) {
  auto d = std::make_shared<const DynamicQParams>(choose_dynamic_qparams(op.profile, op.format, op.rule, op.axis));
  Tensor y(DType::f64, op_output_shape(OpRequest{op}));
  for (std::size_t k = 0; k < d->chosen.size(); ++k) {
    y.set_double(static_cast<std::int64_t>(2 * k), d->chosen[k].scale);
    y.set_double(static_cast<std::int64_t>(2 * k + 1), static_cast<double>(d->chosen[k].zero_point));
  }
  const auto n = static_cast<std::size_t>(y.size());
  Reference ref{y, std::vector<Label>(n, Label::clear), SpecifiedMask(n), std::nullopt, {}, {}, {}};
  ref.describe = [d](std::int64_t i, ElementDiff& e) {
    const ChosenQParams& c = d->chosen[static_cast<std::size_t>(i / 2)];
    e.input = std::string(i % 2 ? "zero point" : "scale") + " of range " + std::to_string(i / 2) + " (integers [" +
              std::to_string(c.qmin) + ", " + std::to_string(c.qmax) + "])";
    e.exact = describe_value(i % 2 ? static_cast<double>(c.zero_point) : c.scale);
  };
  return ref;
}

// conv2d: the same judgement as the weight-only GEMM (a float dot product per element, its order free).
Reference evaluate_conv2d(const Conv2dOp& op, const Spec& spec) {
  auto r = std::make_shared<FloatConv2dResult>(conv2d(op, weight_only_policy(spec)));
  Reference ref{r->y, r->labels, SpecifiedMask(static_cast<std::size_t>(r->y.size())), r->y, {}, {}, {}};
  const DotProductCheck check{TosaDotProductRevision::ksb, tosa_kernel_size_bound(r->kernel_size, r->nonzero_bias), -1,
                              op.out};
  ref.dot_product = [r, check](const Tensor& actual) { return check_dot_product(r->exact, r->bound, actual, check); };
  ref.describe = [r](std::int64_t i, ElementDiff& d) {
    d.input = "convolution of " + std::to_string(r->kernel_size) + " taps";
    d.exact = to_decimal(r->exact[static_cast<std::size_t>(i)], 40);
  };
  return ref;
}

// qadd (oracles/qadd.hpp) under the spec's add scheme; labels as requantize's: ties, near ties and
// saturated elements of the exact value.
Reference evaluate_qadd(const QAddOp& op, const Spec& spec) {
  const QAddParams p = qadd_params(op);
  QAddResult r = qadd(op.a, op.b, p, op.output.format, spec.add);
  Reference ref{std::move(r.q),
                std::move(r.labels),
                SpecifiedMask(static_cast<std::size_t>(op.a.size())),
                std::nullopt,
                {},
                {},
                {}};
  auto ideal = std::make_shared<const std::vector<Rational>>(std::move(r.ideal));
  auto bi = std::make_shared<const std::vector<std::int64_t>>(qadd_broadcast_index(op.a.shape(), op.b.shape()));
  ref.describe = [op = std::make_shared<const QAddOp>(op), ideal, bi](std::int64_t i, ElementDiff& d) {
    d.input = "a " + std::to_string(op->a.get_int(i)) + ", b " +
              std::to_string(op->b.get_int((*bi)[static_cast<std::size_t>(i)]));
    d.exact = to_decimal((*ideal)[static_cast<std::size_t>(i)], 40) + " ((sA(a - zA) + sB(b - zB)) / sC + zC)";
  };
  return ref;
}

}  // namespace

WeightOnlyPolicy weight_only_policy(const Spec& spec) {
  return {spec.quantize_for(DType::f32), std::nullopt, spec.dequantize};
}

QGemmPolicy qgemm_policy(const Spec& spec, DType a, LinearOp op) {
  QGemmPolicy p;
  p.quantize = spec.quantize_for(a);
  p.accumulation = op == LinearOp::conv && spec.conv_accumulation ? *spec.conv_accumulation : spec.accumulation;
  p.zero_points = spec.zero_points;
  p.conv_depth_order = spec.conv_depth_order;
  p.pair_rule = spec.pair_rule;
  p.requantize = spec.requantize;
  p.dequantize = spec.dequantize;
  return p;
}

Reference evaluate(const OpRequest& op, const Spec& spec) {
  struct Visitor {
    const Spec& spec;
    Reference operator()(const QuantizeOp& o) const { return evaluate_quantize(o, spec); }
    Reference operator()(const DequantizeOp& o) const { return evaluate_dequantize(o, spec); }
    Reference operator()(const RequantizeOp& o) const { return evaluate_requantize(o, spec); }
    Reference operator()(const QGemmOp& o) const {
      return linear_reference(qgemm(o, qgemm_policy(spec, o.a.values.dtype(), LinearOp::gemm)), o.output.format);
    }
    Reference operator()(const QConv2dOp& o) const {
      return linear_reference(qconv2d(o, qgemm_policy(spec, o.input.values.dtype(), LinearOp::conv)), o.output.format);
    }
    Reference operator()(const WeightOnlyGemmOp& o) const { return evaluate_weight_only(o, spec); }
    Reference operator()(const ChooseQParamsOp& o) const { return evaluate_choose_qparams(o); }
    Reference operator()(const Conv2dOp& o) const { return evaluate_conv2d(o, spec); }
    Reference operator()(const MxQuantizeOp& o) const { return evaluate_mx_quantize(o); }
    Reference operator()(const MxDequantizeOp& o) const { return evaluate_mx_dequantize(o); }
    Reference operator()(const MxGemmOp& o) const { return evaluate_mx_gemm(o); }
    Reference operator()(const QAddOp& o) const { return evaluate_qadd(o, spec); }
  };
  return std::visit(Visitor{spec}, op);
}

std::optional<Tensor> evaluate_elements(const OpRequest& op, const Spec& spec, const std::vector<std::int64_t>& idx) {
  if (const auto* g = std::get_if<QGemmOp>(&op))
    return qgemm(*g, qgemm_policy(spec, g->a.values.dtype(), LinearOp::gemm), &idx).y;
  if (const auto* c = std::get_if<QConv2dOp>(&op))
    return qconv2d(*c, qgemm_policy(spec, c->input.values.dtype(), LinearOp::conv), &idx).y;
  return std::nullopt;
}

ElementEvaluator::ElementEvaluator(const OpRequest& op) : op_(op) {
  if (const auto* g = std::get_if<QGemmOp>(&op)) {
    linear_ = true;
    float_operands_ = is_float(g->a.values.dtype()) || is_float(g->b.values.dtype());
  } else if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    linear_ = conv_ = true;
    float_operands_ = is_float(c->input.values.dtype()) || is_float(c->weight.values.dtype());
  }
}

QGemmPolicy ElementEvaluator::policy_of(const Spec& spec) const {
  if (conv_) {
    const auto& c = std::get<QConv2dOp>(op_);
    return qgemm_policy(spec, c.input.values.dtype(), LinearOp::conv);
  }
  return qgemm_policy(spec, std::get<QGemmOp>(op_).a.values.dtype(), LinearOp::gemm);
}

QGemmPolicy ElementEvaluator::integer_key(QGemmPolicy p) const {
  p.requantize = {};
  p.dequantize = {};
  if (!float_operands_) p.quantize = {};  // integer operands are taken as they are
  if (!conv_) p.conv_depth_order = {};
  if (p.accumulation != Accumulation::int16_pair_saturate) p.pair_rule = {};
  return p;
}

void ElementEvaluator::know(const Spec& spec, const Reference& whole) {
  if (linear_ && whole.linear) whole_.emplace_back(integer_key(policy_of(spec)), whole.linear);
}

std::optional<Reference> ElementEvaluator::whole(const Spec& spec) const {
  if (!linear_) return std::nullopt;
  const QGemmPolicy policy = policy_of(spec);
  const QGemmPolicy key = integer_key(policy);
  const std::optional<Tensor>& bias = conv_ ? std::get<QConv2dOp>(op_).bias : std::get<QGemmOp>(op_).bias;
  const OutputStage& out = conv_ ? std::get<QConv2dOp>(op_).output : std::get<QGemmOp>(op_).output;
  for (const auto& [k, r] : whole_)
    if (k == key) return linear_reference(finish_output(r->accumulators(), bias, out, policy), out.format);
  return std::nullopt;
}

Reference evaluate_beside(const OpRequest& op, const Spec& spec, const Spec& known_spec, const Reference& known) {
  ElementEvaluator e(op);
  e.know(known_spec, known);
  if (auto r = e.whole(spec)) return std::move(*r);
  return evaluate(op, spec);
}

bool ElementEvaluator::cheap(const Spec& spec) const {
  if (!linear_) return true;
  const QGemmPolicy key = integer_key(policy_of(spec));
  return std::any_of(whole_.begin(), whole_.end(), [&](const auto& w) { return w.first == key; });
}

std::optional<Tensor> ElementEvaluator::operator()(const Spec& spec, const std::vector<std::int64_t>& idx) {
  if (!linear_) return evaluate_elements(op_, spec, idx);
  const QGemmPolicy policy = policy_of(spec);
  const QGemmPolicy key = integer_key(policy);
  const std::optional<Tensor>& bias = conv_ ? std::get<QConv2dOp>(op_).bias : std::get<QGemmOp>(op_).bias;
  const OutputStage& out = conv_ ? std::get<QConv2dOp>(op_).output : std::get<QGemmOp>(op_).output;
  for (const auto& [k, r] : whole_)
    if (k == key) return finish_output(r->accumulators_at(idx), bias, out, policy).y;
  for (const Summed& s : summed_)
    if (s.key == key && s.idx == idx) return finish_output(*s.acc, bias, out, policy).y;
  auto acc = std::make_shared<const LinearAccumulators>(
      conv_ ? qconv2d_accumulators(std::get<QConv2dOp>(op_), policy, idx)
            : qgemm_accumulators(std::get<QGemmOp>(op_), policy, idx, &operands_));
  Tensor y = finish_output(*acc, bias, out, policy).y;
  // Kept for the next spec with this key, the latest first, within the bound.
  summed_.insert(summed_.begin(), Summed{key, idx, std::move(acc)});
  std::size_t total = 0;
  for (std::size_t i = 0; i < summed_.size(); ++i) {
    total += summed_[i].idx.size();
    if (total > kSummedElements) {
      summed_.resize(i);
      break;
    }
  }
  return y;
}

}  // namespace qc
