#include "harness/causes.hpp"

#include "oracles/qadd.hpp"

#include "harness/compare.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>

namespace qc {
namespace {

// Every value of each dimension, from its table (qconform/enum_table.hpp); NaN: the rules an output
// can show (NanRule::error turns NaN into an input error, which no backend output reproduces).
constexpr auto kQuantizeOrders = table_values<QuantizeOrder>();
constexpr auto kClamps = table_values<Clamp>();
constexpr auto kNanRules = kOutputNanRules;
constexpr auto kIntCasts = table_values<IntCast>();
constexpr auto kDequantizeOrders = table_values<DequantizeOrder>();
constexpr auto kMultiplierOrders = table_values<MultiplierOrder>();
constexpr auto kDerivations = table_values<MultiplierDerivation>();
constexpr auto kZeroPointAdds = table_values<ZeroPointAdd>();
constexpr auto kZeroPointCorrections = table_values<ZeroPointCorrection>();

class Builder {
 public:
  explicit Builder(const Spec& base) : base_(base) {}

  std::vector<Variation> take() { return std::move(out_); }

  // One variation of the quantize stage (for inputs of format `input`).
  template <class F>
  void quantize(DType input, const std::string& dim, const std::string& value, const std::string& words,
                const std::string& spec_words, F change) {
    Spec s = base_;
    QuantizePolicy q = s.quantize_for(input);
    change(q);
    if (q == base_.quantize_for(input)) return;
    s.quantize = q;
    s.quantize_half_input.reset();  // the changed policy is the one for this input
    add("quantize." + dim + "=" + value, "quantize " + words + " (the spec: " + spec_words + ")", std::move(s));
  }

  template <class F>
  void dequantize(const std::string& dim, const std::string& value, const std::string& words,
                  const std::string& spec_words, F change) {
    Spec s = base_;
    change(s.dequantize);
    if (s.dequantize == base_.dequantize) return;
    add("dequantize." + dim + "=" + value, "dequantize " + words + " (the spec: " + spec_words + ")", std::move(s));
  }

  template <class F>
  void requantize(const std::string& dim, const std::string& value, const std::string& words,
                  const std::string& spec_words, F change) {
    Spec s = base_;
    change(s.requantize);
    if (s.requantize == base_.requantize) return;
    if (scheme_uses_derivation(s.requantize.scheme) && !scheme_accepts(s.requantize.scheme, s.requantize.derivation))
      return;
    add("requantize." + dim + "=" + value, "requantize " + words + " (the spec: " + spec_words + ")", std::move(s));
  }

  void add(std::string cause, std::string description, Spec s) {
    s.name = base_.name + "+" + cause;
    out_.push_back({std::move(cause), std::move(description), std::move(s)});
  }

  const Spec& base() const { return base_; }

 private:
  const Spec& base_;
  std::vector<Variation> out_;
};

void quantize_changes(Builder& b, DType input) {
  const QuantizePolicy cur = b.base().quantize_for(input);
  for (RoundingMode m : kAllRoundingModes)
    b.quantize(input, "rounding", std::string(name(m)), "rounds " + std::string(describe(m)),
               std::string(describe(cur.rounding)), [m](QuantizePolicy& q) { q.rounding = m; });
  for (QuantizeOrder o : kQuantizeOrders)
    b.quantize(input, "order", std::string(name(o)), "computes " + std::string(formula(o)),
               std::string(formula(cur.order)), [o](QuantizePolicy& q) { q.order = o; });
  for (const ComputeFormat& f : kPlausibleComputeFormats)
    b.quantize(input, "compute", to_string(f), "computes in " + to_string(f), to_string(cur.compute),
               [f](QuantizePolicy& q) { q.compute = f; });
  for (Clamp c : kClamps)
    b.quantize(input, "clamp", std::string(name(c)), "clamps " + std::string(name(c)), std::string(name(cur.clamp)),
               [c](QuantizePolicy& q) { q.clamp = c; });
  for (NanRule n : kNanRules)
    b.quantize(input, "nan", std::string(name(n)), "maps NaN " + std::string(name(n)), std::string(name(cur.nan)),
               [n](QuantizePolicy& q) { q.nan = n; });
  for (IntCast c : kIntCasts)
    b.quantize(input, "cast", std::string(name(c)), "converts to an integer as " + std::string(name(c)),
               std::string(name(cur.cast)), [c](QuantizePolicy& q) { q.cast = c; });
  b.quantize(input, "narrow_range", cur.narrow_range ? "false" : "true",
             cur.narrow_range ? "uses the full range" : "uses the narrow range",
             cur.narrow_range ? "narrow range" : "full range",
             [](QuantizePolicy& q) { q.narrow_range = !q.narrow_range; });
}

void dequantize_changes(Builder& b, bool orders) {
  const DequantizePolicy cur = b.base().dequantize;
  if (orders)
    for (DequantizeOrder o : kDequantizeOrders)
      b.dequantize("order", std::string(name(o)), "computes " + std::string(formula(o)),
                   std::string(formula(cur.order)), [o](DequantizePolicy& d) { d.order = o; });
  for (const ComputeFormat& f : kPlausibleComputeFormats)
    b.dequantize("compute", to_string(f), "computes in " + to_string(f), to_string(cur.compute),
                 [f](DequantizePolicy& d) { d.compute = f; });
}

void requantize_changes(Builder& b) {
  const RequantizePolicy cur = b.base().requantize;
  for (RequantizeScheme sc : kAllRequantizeSchemes)
    b.requantize("scheme", std::string(name(sc)), "uses " + std::string(describe(sc)),
                 std::string(describe(cur.scheme)), [sc](RequantizePolicy& r) {
                   RequantizePolicy n = requantize_policy_for(sc);
                   n.narrow_range = r.narrow_range;
                   n.clip = r.clip;
                   r = n;
                 });
  const bool float_stage = cur.scheme == RequantizeScheme::ideal || cur.scheme == RequantizeScheme::float_multiplier;
  if (float_stage) {
    for (RoundingMode m : kAllRoundingModes)
      b.requantize("rounding", std::string(name(m)), "rounds " + std::string(describe(m)),
                   std::string(describe(cur.rounding)), [m](RequantizePolicy& r) { r.rounding = m; });
    for (ZeroPointAdd z : kZeroPointAdds)
      b.requantize("zero_point", std::string(name(z)), "adds the zero point " + std::string(name(z)),
                   std::string(name(cur.zero_point)), [z](RequantizePolicy& r) { r.zero_point = z; });
    for (Clamp c : kClamps)
      b.requantize("clamp", std::string(name(c)), "clamps " + std::string(name(c)), std::string(name(cur.clamp)),
                   [c](RequantizePolicy& r) { r.clamp = c; });
  }
  if (cur.scheme == RequantizeScheme::float_multiplier)
    for (const ComputeFormat& f : kPlausibleComputeFormats)
      b.requantize("product_format", to_string(f), "multiplies in " + to_string(f), to_string(cur.product_format),
                   [f](RequantizePolicy& r) { r.product_format = f; });
  if (cur.scheme != RequantizeScheme::ideal) {
    for (const ComputeFormat& f : kPlausibleComputeFormats)
      if (f.kind != ComputeFormat::Kind::f16 && f.kind != ComputeFormat::Kind::bf16)
        b.requantize("multiplier_format", to_string(f), "forms the multiplier in " + to_string(f),
                     to_string(cur.multiplier_format), [f](RequantizePolicy& r) { r.multiplier_format = f; });
    for (MultiplierOrder o : kMultiplierOrders)
      if (o != MultiplierOrder::per_op || cur.scheme == RequantizeScheme::float_multiplier)
        b.requantize("multiplier_order", std::string(name(o)), "forms the multiplier " + std::string(name(o)),
                     std::string(name(cur.multiplier_order)), [o](RequantizePolicy& r) { r.multiplier_order = o; });
  }
  if (scheme_uses_derivation(cur.scheme))
    for (MultiplierDerivation d : kDerivations)
      b.requantize("derivation", std::string(name(d)), "derives the integer multiplier by " + std::string(name(d)),
                   std::string(name(cur.derivation)), [d](RequantizePolicy& r) { r.derivation = d; });
}

void accumulation_changes(Builder& b, bool conv) {
  const Spec& cur = b.base();
  // The accumulator this op runs under the spec (a convolution may have its own).
  const Accumulation cur_acc = conv && cur.conv_accumulation ? *cur.conv_accumulation : cur.accumulation;
  const std::string spec_acc = " (the spec: " + std::string(describe(cur_acc)) + ")";
  for (Accumulation a : kAllAccumulations) {
    Spec s = cur;
    s.accumulation = a;
    s.conv_accumulation.reset();
    std::string how(describe(a));
    // vpmaddubsw multiplies the raw bytes: its pairs exist only with the zero points compensated.
    if (a == Accumulation::int16_pair_saturate && s.zero_points != ZeroPointCorrection::compensate) {
      s.zero_points = ZeroPointCorrection::compensate;
      how += ", zero points by compensation";
    }
    if (a != cur_acc) b.add("accumulation=" + std::string(name(a)), "accumulates " + how + spec_acc, s);
    if (a != Accumulation::int16_pair_saturate) continue;
    // Pairs also depend on how the kernel forms them: oneDNN's GEMM driver shifts s8 sources and
    // restarts pairs at its K blocks.
    for (PairRule r : kAllPairRules) {
      if (r == s.pair_rule) continue;
      Spec t = s;
      t.pair_rule = r;
      b.add("accumulation=" + std::string(name(a)) + ",pair_rule=" + std::string(name(r)),
            "accumulates " + how + ", pairs formed by the " + std::string(name(r)) + " rule" + spec_acc, std::move(t));
    }
    // A convolution's pairs also depend on the order of its dot product.
    if (conv)
      for (ConvDepthOrder o : kAllConvDepthOrders) {
        if (o == s.conv_depth_order) continue;
        Spec t = s;
        t.conv_depth_order = o;
        b.add("accumulation=" + std::string(name(a)) + ",conv_depth_order=" + std::string(name(o)),
              "accumulates " + how + ", pairs along the filter in " + std::string(name(o)) + " order" + spec_acc,
              std::move(t));
      }
  }
  for (ZeroPointCorrection z : kZeroPointCorrections) {
    if (z == cur.zero_points) continue;
    Spec s = cur;
    s.zero_points = z;
    b.add("zero_points=" + std::string(name(z)),
          "applies the zero points " + std::string(name(z)) + " (the spec: " + std::string(name(cur.zero_points)) + ")",
          std::move(s));
  }
}

// The stages of a GEMM or conv path: activation quantization (float inputs), accumulation and
// the output stage.
void linear_changes(Builder& b, const ActivationOperand& a, const QWeights& w, const OutputStage& out, bool conv) {
  if (is_float(a.values.dtype()))
    quantize_changes(b, a.values.dtype());
  else if (is_float(w.values.dtype()))
    quantize_changes(b, w.values.dtype());
  accumulation_changes(b, conv);
  if (out.kind == OutputKind::requantized) requantize_changes(b);
  if (out.kind == OutputKind::dequantized) dequantize_changes(b, false);
}

}  // namespace

std::vector<Variation> single_changes(const Spec& spec, const OpRequest& op) {
  Builder b(spec);
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (is_float(q->x.dtype())) quantize_changes(b, q->x.dtype());
  } else if (std::holds_alternative<DequantizeOp>(op)) {
    dequantize_changes(b, true);
  } else if (std::holds_alternative<RequantizeOp>(op)) {
    requantize_changes(b);
  } else if (const auto* g = std::get_if<QGemmOp>(&op)) {
    linear_changes(b, g->a, g->b, g->output, false);
  } else if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    linear_changes(b, c->input, c->weight, c->output, true);
  } else if (std::holds_alternative<QAddOp>(op)) {
    // qadd: whose arithmetic (oracles/qadd.hpp); each scheme fixes its own rounding but ideal.
    for (const AddScheme v : table_values<AddScheme>()) {
      if (v == spec.add.scheme) continue;
      Spec s = spec;
      s.add.scheme = v;
      b.add("add.scheme=" + std::string(name(v)),
            "qadd by " + std::string(describe(v)) + " (the spec: " + std::string(name(spec.add.scheme)) + ")",
            std::move(s));
    }
  }
  // Weight-only GEMM and conv2d: float accumulation in an unspecified order, judged by distance and
  // by the dot-product bounds; no single policy change models an accumulation order.
  return b.take();
}

std::optional<Spec> cause_spec(const Spec& spec, const OpRequest& op, const std::string& cause) {
  if (cause.rfind("preset ", 0) == 0) return find_preset(cause.substr(7));
  const auto change = [&](const Spec& from, const std::string& name) -> std::optional<Spec> {
    for (Variation& v : single_changes(from, op))
      if (v.cause == name) return std::move(v.spec);
    return std::nullopt;
  };
  // A pair is named "a + b" with a < b, built on either: apply them in turn.
  if (const auto plus = cause.find(" + "); plus != std::string::npos) {
    const std::string a = cause.substr(0, plus), b = cause.substr(plus + 3);
    for (const auto& [first, second] : {std::pair{a, b}, std::pair{b, a}})
      if (const auto s = change(spec, first))
        if (auto t = change(*s, second)) return t;
    return std::nullopt;
  }
  return change(spec, cause);
}

std::optional<int> channel_axis(const OpRequest& op) {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (q->params.axis && q->params.granularity() != Granularity::per_tensor)
      return resolve_axis(*q->params.axis, static_cast<std::int64_t>(q->x.shape().size()));
    return std::nullopt;
  }
  if (const auto* d = std::get_if<DequantizeOp>(&op)) {
    if (d->params.axis && d->params.granularity() != Granularity::per_tensor)
      return resolve_axis(*d->params.axis, static_cast<std::int64_t>(d->q.shape().size()));
    return std::nullopt;
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    if (r->params.axis && r->params.weight_scales.size() > 1)
      return resolve_axis(*r->params.axis, static_cast<std::int64_t>(r->acc.shape().size()));
    return std::nullopt;
  }
  if (std::holds_alternative<QGemmOp>(op))
    return static_cast<int>(op_output_shape(op).size()) - 1;  // N (batched B too)
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op)) return static_cast<int>(w->a.shape().size()) - 1;
  if (std::holds_alternative<ChooseQParamsOp>(op)) return std::nullopt;
  if (const auto* f = std::get_if<Conv2dOp>(&op)) return f->layout == ConvLayout::nchw ? 1 : 3;
  if (std::holds_alternative<MxQuantizeOp>(op) || std::holds_alternative<MxDequantizeOp>(op)) return std::nullopt;
  if (std::holds_alternative<MxGemmOp>(op)) return static_cast<int>(op_output_shape(op).size()) - 1;  // N
  if (std::holds_alternative<QAddOp>(op)) return std::nullopt;  // per-tensor parameters
  const auto& c = std::get<QConv2dOp>(op);
  return c.layout == ConvLayout::nchw ? 1 : 3;
}

namespace {

// The elements `idx` of t, as a 1-D tensor.
Tensor gather(const Tensor& t, const std::vector<std::int64_t>& idx) {
  Tensor g(t.dtype(), Shape{static_cast<std::int64_t>(idx.size())});
  const auto w = static_cast<std::size_t>(info(t.dtype()).storage_bytes);  // the stored bytes, as they are
  const std::byte* from = t.bytes().data();
  std::byte* to = g.bytes().data();
  for (std::size_t j = 0; j < idx.size(); ++j) std::memcpy(to + j * w, from + static_cast<std::size_t>(idx[j]) * w, w);
  return g;
}

// Parameters for the elements `idx` of a tensor of shape `shape` cut down to a 1-D tensor: per tensor
// they stay; per axis or blocked, element j becomes channel j of axis 0 with the scale and zero point
// its element had.
QuantParams gathered_params(const QuantParams& p, const Shape& shape, const std::vector<std::int64_t>& idx) {
  if (p.granularity() == Granularity::per_tensor) return p;
  const ParamIndexer param_of(p, shape);
  QuantParams g;
  g.scale_dtype = p.scale_dtype;
  g.axis = 0;
  for (const std::int64_t i : idx) {
    const auto k = static_cast<std::size_t>(param_of(i));
    g.scales.push_back(p.scales[k]);
    if (!p.zero_points.empty()) g.zero_points.push_back(p.zero_points[k]);
  }
  return g;
}

RequantizeParams gathered_params(const RequantizeParams& p, const Shape& shape, const std::vector<std::int64_t>& idx) {
  if (!p.axis || (p.weight_scales.size() <= 1 && p.output_zero_points.size() <= 1)) return p;
  // The channel of a flat index, as the oracle's requantize finds it: ParamIndexer over one dummy
  // scale per channel along the axis.
  QuantParams channels;
  channels.axis = p.axis;
  channels.scales.assign(
      static_cast<std::size_t>(
          shape[static_cast<std::size_t>(resolve_axis(*p.axis, static_cast<std::int64_t>(shape.size())))]),
      1.0);
  const ParamIndexer channel_of(channels, shape);
  RequantizeParams g = p;
  g.axis = 0;
  g.weight_scales.clear();
  g.output_zero_points.clear();
  for (const std::int64_t i : idx) {
    const auto c = static_cast<std::size_t>(channel_of(i));
    g.weight_scales.push_back(p.weight_scales[p.weight_scales.size() == 1 ? 0 : c]);
    if (!p.output_zero_points.empty())
      g.output_zero_points.push_back(p.output_zero_points[p.output_zero_points.size() == 1 ? 0 : c]);
  }
  return g;
}

// An element-wise op cut down to the elements `idx`: each output element depends on its own input
// element and its own parameters alone, so every variation can be evaluated on the mismatching
// elements instead of the whole tensor (the cost of causes then grows with the mismatches, not the
// tensor). nullopt for GEMM and convolution, whose outputs share their inputs.
std::optional<OpRequest> gathered(const OpRequest& op, const std::vector<std::int64_t>& idx) {
  if (const auto* q = std::get_if<QuantizeOp>(&op))
    return QuantizeOp{gather(q->x, idx), gathered_params(q->params, q->x.shape(), idx), q->out, q->saturate};
  if (const auto* d = std::get_if<DequantizeOp>(&op))
    return DequantizeOp{gather(d->q, idx), gathered_params(d->params, d->q.shape(), idx), d->out};
  if (const auto* r = std::get_if<RequantizeOp>(&op))
    return RequantizeOp{gather(r->acc, idx), gathered_params(r->params, r->acc.shape(), idx), r->out};
  return std::nullopt;
}

}  // namespace

namespace {

// Which of the elements `idx` the op `alt_op` under `alt_spec` computes as the backend did: per j, 1
// where it equals actual[idx[j]] (actual_cut[j]). The op is evaluated on those elements alone where it
// can be (`alt_cut`: an element-wise op cut down to them; a GEMM or convolution on the rows that hold
// them), else whole (weight-only GEMM). nullopt where the op rejects the combination (e.g. a
// multiplier outside the scheme's range).
// `elements`, when given, evaluates the op itself at idx (ElementEvaluator: a GEMM's or
// convolution's integer stage shared between candidates).
std::optional<std::vector<std::uint8_t>> reproduced(const OpRequest& alt_op, const Spec& alt_spec,
                                                    const std::optional<OpRequest>& alt_cut,
                                                    const std::vector<std::int64_t>& idx, const Tensor& actual,
                                                    const Tensor& actual_cut, ElementEvaluator* elements) {
  try {
    std::optional<Tensor> cut_values;
    if (alt_cut)
      cut_values = evaluate(*alt_cut, alt_spec).expected;
    else if (elements)
      cut_values = (*elements)(alt_spec, idx);
    else
      cut_values = evaluate_elements(alt_op, alt_spec, idx);
    if (cut_values) return same_elements(*cut_values, actual_cut);
    const std::vector<std::uint8_t> whole = same_elements(evaluate(alt_op, alt_spec).expected, actual);
    std::vector<std::uint8_t> same(idx.size());
    for (std::size_t j = 0; j < idx.size(); ++j) same[j] = whole[static_cast<std::size_t>(idx[j])];
    return same;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace

namespace {

// Up to n of the elements `from` (ascending), evenly spaced, from the first.
std::vector<std::int64_t> evenly(const std::vector<std::int64_t>& from, std::size_t n) {
  if (from.size() <= n) return from;
  std::vector<std::int64_t> v;
  for (std::size_t k = 0; k < n; ++k) v.push_back(from[k * from.size() / n]);
  return v;
}

// The dimension a single change names: "quantize.rounding" of "quantize.rounding=rna".
std::string dimension_of(const std::string& cause) { return cause.substr(0, cause.find('=')); }

// Simplicity: one change, then one named implementation, then two changes at once.
int kind_rank(const std::string& kind) { return kind == "single" ? 0 : kind == "preset" ? 1 : 2; }

// Elements to sample for the matches a candidate breaks: an element-wise op is cut down to them;
// a GEMM or convolution evaluates the rows that hold them, so fewer.
constexpr std::size_t kMatchSampleElementwise = 4096, kMatchSampleLinear = 64;
// Mismatches a pair of changes or a preset is first tried on (for a pair, those its base misses):
// an element-wise op is cut down to them; a GEMM or convolution evaluates the rows that hold them.
constexpr std::size_t kExtraScreenElementwise = 256, kExtraScreenLinear = 8;
// The single changes whose pairs are tried: the best few.
constexpr std::size_t kPairBases = 4;
// Past the screen, the leading candidates counted on every mismatch: the best few; those with sums
// of their own (another accumulation) where the mismatches are at most this many.
constexpr std::size_t kLeadersCounted = 3, kLeaderOwnSums = 32768;

}  // namespace

void attribute_causes(const OpRequest& op, const Spec& spec, const Reference& ref, const Tensor& actual,
                      const std::vector<std::int64_t>& mismatches, BackendResult& r,
                      const std::vector<InputVariation>& inputs, KnownPreset known) {
  r.causes.clear();
  r.unexplained = static_cast<std::int64_t>(mismatches.size());
  if (mismatches.empty()) return;
  const Shape& shape = ref.expected.shape();
  const std::optional<int> axis = channel_axis(op);
  std::int64_t inner = 1, dim = 1;
  if (axis && *axis >= 0 && *axis < static_cast<int>(shape.size())) {
    dim = shape[static_cast<std::size_t>(*axis)];
    for (std::size_t d = static_cast<std::size_t>(*axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  // Element sets a candidate is evaluated on: the op cut down to them once (input variations cut
  // their own), and the backend's values there.
  struct Elements {
    std::vector<std::int64_t> idx;
    Tensor actual;
    std::optional<OpRequest> cut;
  };
  const auto elements = [&](std::vector<std::int64_t> idx) {
    Elements e{std::move(idx), {}, {}};
    e.actual = gather(actual, e.idx);
    if (!e.idx.empty()) e.cut = gathered(op, e.idx);
    return e;
  };
  // The mismatches every candidate is counted on: all of them, or past the sample's size
  // (kCauseScreen, kCauseScreenLinear for a GEMM or convolution) that many evenly spaced plus the
  // worst elements the report lists (so that their causes are named).
  const std::size_t sample =
      std::holds_alternative<QGemmOp>(op) || std::holds_alternative<QConv2dOp>(op) ? kCauseScreenLinear : kCauseScreen;
  std::vector<std::int64_t> screened = mismatches;
  if (mismatches.size() > sample) {
    screened = evenly(mismatches, sample);
    for (const ElementDiff& d : r.metrics.worst)
      if (std::binary_search(mismatches.begin(), mismatches.end(), d.index)) screened.push_back(d.index);
    std::sort(screened.begin(), screened.end());
    screened.erase(std::unique(screened.begin(), screened.end()), screened.end());
  }
  const Elements screen = elements(std::move(screened));
  const bool sampled = screen.idx.size() < mismatches.size();
  const auto of = static_cast<std::int64_t>(screen.idx.size());
  // Elements the backend computed as the spec does, evenly spaced over the tensor.
  std::vector<std::int64_t> matched;
  {
    const std::size_t want = screen.cut ? kMatchSampleElementwise : kMatchSampleLinear;
    const std::int64_t n = actual.size();
    for (std::size_t k = 0; k < want && static_cast<std::int64_t>(k) < n; ++k) {
      const auto i =
          static_cast<std::int64_t>(static_cast<double>(k) * static_cast<double>(n) / static_cast<double>(want));
      if ((matched.empty() || matched.back() != i) && ref.specified[static_cast<std::size_t>(i)] &&
          !std::binary_search(mismatches.begin(), mismatches.end(), i))
        matched.push_back(i);
    }
  }
  const Elements matches = elements(matched);
  const std::size_t extra_screen = screen.cut ? kExtraScreenElementwise : kExtraScreenLinear;

  // The op's own elements under every candidate spec: a GEMM's or convolution's integer stage summed
  // once per accumulation and element set, the spec's and the claim's taken from their answers.
  ElementEvaluator evaluator(op);
  evaluator.know(spec, ref);
  if (known.spec && known.answer) evaluator.know(*known.spec, *known.answer);
  // Which of `on` the candidate reproduces, or nullopt where the op rejects it.
  const auto on = [&](const OpRequest& alt_op, const Spec& alt_spec, const Elements& e, bool same_op) {
    return reproduced(alt_op, alt_spec, same_op ? e.cut : gathered(alt_op, e.idx), e.idx, actual, e.actual,
                      same_op ? &evaluator : nullptr);
  };
  const auto ones = [](const std::vector<std::uint8_t>& v) {
    return static_cast<std::int64_t>(std::count(v.begin(), v.end(), std::uint8_t{1}));
  };
  struct Found {
    CauseCount cc;
    std::vector<std::uint8_t> same;  // per screened mismatch
    const OpRequest* op;             // what was evaluated: the op (same_op) or an input variation's
    Spec evaluated;
    bool same_op;
    std::vector<std::uint8_t> same_all;  // per mismatch, where counted on all of them
  };
  std::vector<Found> found;
  // Counts a candidate on the screened mismatches (after `first`, a smaller screen it must pass);
  // keeps it when it reproduces more than `at_least` of them.
  const auto tally = [&](const std::string& cause, const std::string& description, const std::string& kind,
                         const OpRequest& alt_op, const Spec& alt_spec, bool same_op, const Elements& first,
                         std::int64_t at_least) {
    if (!first.idx.empty()) {
      const auto s = on(alt_op, alt_spec, first, same_op);
      if (!s || ones(*s) == 0) return;
    }
    auto same = on(alt_op, alt_spec, screen, same_op);
    if (!same) return;
    const std::int64_t count = ones(*same);
    if (count <= at_least) return;
    found.push_back({{cause, description, count, {}, kind, 0, 0}, std::move(*same), &alt_op, alt_spec, same_op, {}});
  };
  const Elements none = elements({});

  // 1. Single changes (and operands taken from the backend's own earlier outputs).
  for (const InputVariation& v : inputs) tally(v.cause, v.description, "single", v.op, spec, false, none, 0);
  for (const Variation& v : single_changes(spec, op))
    tally(v.cause, v.description, "single", op, v.spec, true, none, 0);

  // 2. Whole presets: the backend may simply be another implementation. Not for a weight-only GEMM
  // or an mx_gemm, whose float accumulation order no preset fixes (and whose evaluation is whole and
  // exact; mx_gemm's does not read the spec at all). A preset already evaluated (`known`) is weighed
  // on its answer, over every mismatch; when it reproduces all of them no other preset can do better.
  bool known_reproduces_all = false;
  if (known.spec && known.answer && known.spec->name != spec.name) {
    std::vector<std::uint8_t> same_all(mismatches.size());
    for (std::size_t j = 0; j < mismatches.size(); ++j)
      same_all[j] = same_element(known.answer->expected, actual, mismatches[j]);
    const std::int64_t count = ones(same_all);
    if (count > 0) {
      std::vector<std::uint8_t> same(screen.idx.size());
      for (std::size_t j = 0; j < screen.idx.size(); ++j)
        same[j] = same_element(known.answer->expected, actual, screen.idx[j]);
      found.push_back({{"preset " + known.spec->name, known.spec->description, ones(same), {}, "preset", 0, 0},
                       std::move(same),
                       &op,
                       *known.spec,
                       true,
                       std::move(same_all)});
      known_reproduces_all = count == static_cast<std::int64_t>(mismatches.size());
    }
  }
  if (!std::holds_alternative<WeightOnlyGemmOp>(op) && !std::holds_alternative<Conv2dOp>(op) &&
      !std::holds_alternative<MxGemmOp>(op) && !known_reproduces_all) {
    std::vector<Spec> whole = presets();
    for (Spec& p : registered_presets()) whole.push_back(std::move(p));
    const Elements preset_screen = elements(evenly(screen.idx, extra_screen));
    for (const Spec& p : whole)
      if (p.name != spec.name && !(known.spec && p.name == known.spec->name))
        tally("preset " + p.name, p.description, "preset", op, p, true, preset_screen, 0);
  }

  // 3. Pairs: where no single change or preset reproduces every screened mismatch, two hazards at
  // once (a reciprocal and ties away). Built on the best single changes, each pair tried first on
  // the mismatches its base misses, and kept when it reproduces more than either change alone.
  const auto single_best = std::max_element(found.begin(), found.end(),
                                            [](const Found& x, const Found& y) { return x.cc.count < y.cc.count; });
  if (single_best != found.end() && single_best->cc.count < of) {
    std::vector<Found> bases;
    for (const Found& f : found)
      if (f.cc.kind == "single" && f.same_op) bases.push_back(f);  // changes of the spec; copies: `found` grows
    std::stable_sort(bases.begin(), bases.end(),
                     [](const Found& x, const Found& y) { return x.cc.count > y.cc.count; });
    if (bases.size() > kPairBases) bases.resize(kPairBases);
    std::map<std::string, std::int64_t> single_count;
    for (const Found& f : found) single_count[f.cc.cause] = f.cc.count;
    std::set<std::string> tried;
    for (const Found& base : bases) {
      std::vector<std::int64_t> missed;
      for (std::size_t j = 0; j < screen.idx.size(); ++j)
        if (!base.same[j]) missed.push_back(screen.idx[j]);
      const Elements pair_screen = elements(evenly(missed, extra_screen));
      for (const Variation& v : single_changes(base.evaluated, op)) {
        if (dimension_of(v.cause) == dimension_of(base.cc.cause)) continue;
        const std::string name =
            base.cc.cause < v.cause ? base.cc.cause + " + " + v.cause : v.cause + " + " + base.cc.cause;
        if (!tried.insert(name).second) continue;
        const auto other = single_count.find(v.cause);
        const std::int64_t best_alone = std::max(base.cc.count, other == single_count.end() ? 0 : other->second);
        tally(name, base.cc.description + "; and " + v.description, "pair", op, v.spec, true, pair_screen, best_alone);
      }
    }
  }

  // The matches each candidate that reproduces the most would break: what decides between them.
  // (A candidate that reproduces fewer ranks below whatever it breaks, so it is not weighed.)
  std::int64_t most = 0;
  for (const Found& f : found) most = std::max(most, f.cc.count);
  if (!matches.idx.empty())
    for (Found& f : found) {
      if (f.cc.count != most) continue;
      if (known.answer && known.spec && f.cc.cause == "preset " + known.spec->name) {  // its answer is known
        f.cc.matches_sampled = static_cast<std::int64_t>(matches.idx.size());
        for (const std::int64_t i : matches.idx)
          f.cc.matches_broken += same_element(known.answer->expected, actual, i) ? 0 : 1;
        continue;
      }
      if (const auto m = on(*f.op, f.evaluated, matches, f.same_op)) {
        f.cc.matches_sampled = static_cast<std::int64_t>(m->size());
        f.cc.matches_broken = static_cast<std::int64_t>(std::count(m->begin(), m->end(), std::uint8_t{0}));
      }
    }
  std::vector<std::uint8_t> explained(screen.idx.size(), 0);
  for (const Found& f : found)
    for (std::size_t j = 0; j < explained.size(); ++j) explained[j] |= f.same[j];
  r.unexplained = std::count(explained.begin(), explained.end(), std::uint8_t{0});
  r.unexplained_sampled = sampled ? of : 0;
  // Best first: the most mismatches reproduced, then the fewest matches broken (as a share of those
  // sampled), then the simplest (a single change, a preset, a pair).
  std::stable_sort(found.begin(), found.end(), [](const Found& x, const Found& y) {
    if (x.cc.count != y.cc.count) return x.cc.count > y.cc.count;
    const auto bx = x.cc.matches_broken * std::max<std::int64_t>(1, y.cc.matches_sampled);
    const auto by = y.cc.matches_broken * std::max<std::int64_t>(1, x.cc.matches_sampled);
    if (bx != by) return bx < by;
    return kind_rank(x.cc.kind) < kind_rank(y.cc.kind);
  });
  // Past the screen, the leaders (the candidates the sample cannot tell from the best: as many
  // mismatches reproduced, as few matches broken) are counted on every mismatch, up to kLeadersCounted
  // of them and where that costs no more than an output stage over them (an element-wise op, or an
  // integer stage a known answer holds) or the mismatches are few, and ranked on those counts: the
  // headline's count is exact. The others keep their screened counts, marked as such (CauseCount::mismatches_sampled).
  if (sampled && !found.empty()) {
    const auto tied = [&](const Found& f) {
      const Found& b = found.front();
      return f.cc.count == b.cc.count && f.cc.matches_broken * std::max<std::int64_t>(1, b.cc.matches_sampled) ==
                                             b.cc.matches_broken * std::max<std::int64_t>(1, f.cc.matches_sampled);
    };
    std::size_t leaders = 0, counted = 0;
    while (leaders < found.size() && tied(found[leaders])) ++leaders;
    // Sums of its own over every mismatch (a dot product each) cost a leader little where the
    // mismatches are few: at most kLeaderOwnSums, or a sixteenth of the op's elements.
    const bool affordable =
        mismatches.size() <= kLeaderOwnSums || mismatches.size() * 16 <= static_cast<std::size_t>(actual.size());
    // A leader that reproduces every mismatch ends the search: no other can count more.
    const auto reproduces_all = [&](const Found& f) {
      return static_cast<std::size_t>(ones(f.same_all)) == mismatches.size();
    };
    std::optional<Elements> all;
    for (std::size_t k = 0; k < leaders && counted < kLeadersCounted; ++k) {
      Found& f = found[k];
      if (f.same_all.empty()) {  // (else the claim's answer, counted already)
        if (!f.same_op || !(evaluator.cheap(f.evaluated) || affordable)) continue;
        if (!all) all = elements(mismatches);
        auto same = on(*f.op, f.evaluated, *all, true);
        if (!same) continue;
        f.same_all = std::move(*same);
      }
      ++counted;
      if (reproduces_all(f)) break;
    }
    // Counted ones first among the leaders, most reproduced first; the order otherwise stays.
    std::stable_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(leaders),
                     [&](const Found& x, const Found& y) {
                       if (x.same_all.empty() != y.same_all.empty()) return y.same_all.empty();
                       return !x.same_all.empty() && ones(x.same_all) > ones(y.same_all);
                     });
  }
  if (sampled)
    for (Found& f : found) {
      if (f.same_all.empty()) {
        f.cc.mismatches_sampled = of;
        continue;
      }
      f.cc.count = ones(f.same_all);
      if (&f == &found.front() && f.cc.count == static_cast<std::int64_t>(mismatches.size())) {
        r.unexplained = 0;  // every mismatch is reproduced, the sample's count aside
        r.unexplained_sampled = 0;
      }
    }
  std::vector<std::pair<std::int64_t, ElementDiff*>> worst;  // by index
  for (ElementDiff& d : r.metrics.worst) worst.emplace_back(d.index, &d);
  std::sort(worst.begin(), worst.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (Found& f : found) {
    const bool all = !f.same_all.empty();  // counted on every mismatch, else on the screened ones
    const std::vector<std::uint8_t>& same = all ? f.same_all : f.same;
    const std::vector<std::int64_t>& at = all ? mismatches : screen.idx;
    std::vector<std::int64_t> per_channel(axis ? static_cast<std::size_t>(dim) : 0, 0);
    for (std::size_t j = 0; j < same.size(); ++j)
      if (same[j] && axis) ++per_channel[static_cast<std::size_t>((at[j] / inner) % dim)];
    for (std::size_t c = 0; c < per_channel.size(); ++c)
      if (per_channel[c]) f.cc.per_channel[static_cast<std::int64_t>(c)] = per_channel[c];
    for (const auto& [i, d] : worst) {  // the worst are sampled: each is in `at`
      const auto j = std::lower_bound(at.begin(), at.end(), i);
      if (j != at.end() && *j == i && same[static_cast<std::size_t>(j - at.begin())]) d->causes.push_back(f.cc.cause);
    }
    r.causes.push_back(std::move(f.cc));
  }
}

}  // namespace qc
