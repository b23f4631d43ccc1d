#include "cases/case_writer.hpp"

#include "cases/spec_fields.hpp"

#include "oracles/choose_qparams.hpp"
#include "oracles/int4.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <system_error>

namespace qc {

using json = nlohmann::json;
namespace fs = std::filesystem;

bool same_numerics(const Spec& a, const Spec& b) {
  return a.quantize == b.quantize && a.quantize_half_input == b.quantize_half_input && a.dequantize == b.dequantize &&
         a.requantize == b.requantize && a.accumulation == b.accumulation && a.zero_points == b.zero_points &&
         a.conv_depth_order == b.conv_depth_order && a.pair_rule == b.pair_rule &&
         a.conv_accumulation == b.conv_accumulation && a.qparams == b.qparams && a.add == b.add;
}

namespace {

// ---- Spec ------------------------------------------------------------------------------------

// The top-level quantize overrides that turn `base` into `q`: only the fields that differ, or all of
// them. The loader applies them to the preset's half-input policy too, so which of the two
// reproduces a preset with a separate half-input path depends on the spec (spec_to_json tries both).
// The fields of `p` (cases/spec_fields.hpp) that differ from `base`, or all of them. A field without
// a value (an unset clip) is not written: an override can set a clip but not remove one, which
// parse_spec's check catches.
template <class P>
json policy_fields(std::span<const SpecField<P>> fields, const P& p, const P& base, bool all) {
  json j = json::object();
  for (const SpecField<P>& f : fields) {
    json v = f.write(p);
    if (!v.is_null() && (all || v != f.write(base))) j[std::string(f.name)] = std::move(v);
  }
  return j;
}

json quantize_overrides(const QuantizePolicy& q, const QuantizePolicy& base, bool all) {
  return policy_fields(quantize_fields(), q, base, all);
}

json dequantize_json(const DequantizePolicy& d) { return policy_fields(dequantize_fields(), d, d, true); }

// Every field: "scheme" resets the policy to the scheme's source defaults, and the loader then sets
// each explicit field, so the result does not depend on those defaults.
json requantize_json(const RequantizePolicy& r) { return policy_fields(requantize_fields(), r, r, true); }

// ---- Tensors ---------------------------------------------------------------------------------

// What writing one case's operands needs besides the options: the case's links and generated
// operands, and (save_cases) where an array goes into a side file.
struct Writer {
  const WriteOptions& options;
  const Case* c = nullptr;
  // Queues `t` for a .npy side file and returns its reference (a name relative to the case file);
  // empty: every array is inline.
  std::function<std::string(const Tensor& t, const std::string& field)> side_file;
};

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The text of a NaN that the loader's strtod and its conversion into the tensor's format read back
// as the same bits. f64/f32: the sign and the payload below the quiet bit (a double NaN's payload
// shifted by 29 bits is what converting it to float keeps). Narrower formats: the loader stores the
// format's canonical NaN for every NaN.
std::string nan_text(DType t, std::uint64_t bits, const std::string& field, const WriteOptions& o) {
  bool negative = false, quiet = true;
  std::uint64_t payload = 0;
  if (t == DType::f64) {
    negative = (bits >> 63) != 0;
    quiet = ((bits >> 51) & 1) != 0;
    payload = bits & ((std::uint64_t{1} << 51) - 1);
  } else if (t == DType::f32) {
    negative = (bits >> 31) != 0;
    quiet = ((bits >> 22) & 1) != 0;
    payload = (bits & 0x3FFFFF) << 29;
  } else {
    const std::uint64_t canonical = double_to_float_bits(t, std::numeric_limits<double>::quiet_NaN());
    if (bits == canonical || o.canonical_nans) return "nan";
    throw InputError(field + ": the " + std::string(name(t)) + " NaN " + hex(bits) +
                     " cannot be written: the case format reads every NaN of this format as " + hex(canonical));
  }
  if (!quiet && !o.canonical_nans)
    throw InputError(field + ": the signalling " + std::string(name(t)) + " NaN " + hex(bits) +
                     " cannot be written: the case format's numbers are read by strtod, which returns quiet NaNs");
  std::string s = negative ? "-nan" : "nan";
  if (payload != 0) s += "(" + hex(payload) + ")";
  return s;
}

json element_json(const Tensor& t, std::int64_t i, const std::string& field, const WriteOptions& o) {
  if (is_int(t.dtype())) return t.get_int(i);
  const double v = t.get_double(i);  // exact: every value of every float format is a double
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::isnan(v)) return nan_text(t.dtype(), t.bits(i), field + "[" + std::to_string(i) + "]", o);
  return v;  // nlohmann writes the shortest text that reads back as v (-0.0 included)
}

// Scales and zero points: a scalar for one per-tensor value, a list otherwise (the loader reads both).
json scales_json(const std::vector<double>& v, bool list) { return list || v.size() != 1 ? json(v) : json(v[0]); }

void params_json(json& o, const QuantParams& p) {
  const bool list = p.axis.has_value();
  o["scale"] = scales_json(p.scales, list);
  o["scale_dtype"] = name(p.scale_dtype);
  if (!p.zero_points.empty())
    o["zero_point"] = list || p.zero_points.size() != 1 ? json(p.zero_points) : json(p.zero_points[0]);
  if (p.axis) o["axis"] = *p.axis;
  if (p.block_size > 0) o["block_size"] = p.block_size;
}

// ---- Operands of the quantized paths ---------------------------------------------------------

json operand_json(const Tensor& t, const std::string& field, const Writer& w);

json activation_json(const ActivationOperand& a, const Spec& spec, const std::string& field, const Writer& wo) {
  json o = operand_json(a.values, field, wo);
  if (is_float(a.values.dtype())) o["format"] = name(a.format);
  switch (a.quantization) {
    case ActivationQuantization::static_params:
      params_json(o, a.params);
      break;
    case ActivationQuantization::dynamic_per_tensor:
    case ActivationQuantization::dynamic_per_row: {
      // The loader takes a dynamic operand's rule from the spec's "qparams" preset.
      const auto rule = find_qparams_preset(spec.qparams);
      if (!rule || !(*rule == a.rule))
        throw InputError(field + ": a dynamic activation's parameter rule must be the spec's qparams preset '" +
                         spec.qparams + "' to be written");
      o["quantize"] = name(a.quantization);
      break;
    }
  }
  return o;
}

std::string packing_name(const Int4Packing& p, const Shape& shape, const std::string& field) {
  if (const auto n = int4_packing_name(p, shape)) return std::string(*n);
  throw InputError(field + ".packing: this int4 packing has no name in the case format (" + int4_packing_names() + ")");
}

json weights_json(const QWeights& w, WeightLayout layout, const std::string& field, const Writer& wo) {
  json o;
  if (w.packing) {  // the case format holds the logical values and the packing's name
    o = operand_json(unpack_int4(w.values, w.format, w.shape, *w.packing), field, wo);
  } else {
    o = operand_json(w.values, field, wo);
    if (is_float(w.values.dtype())) o["format"] = name(w.format);
  }
  params_json(o, w.params);
  if (layout != WeightLayout::k_by_n) o["layout"] = name(layout);
  if (w.packing) o["packing"] = packing_name(*w.packing, w.shape, field);
  return o;
}

json output_json(const OutputStage& s, const std::string& field) {
  switch (s.kind) {
    case OutputKind::int32:
      return {{"kind", name(s.kind)}};
    case OutputKind::dequantized:
      return {{"kind", name(s.kind)}, {"dtype", name(s.format)}};
    case OutputKind::requantized:
      break;
  }
  // The loader reads the output scale into f32 and the fused activation by name.
  if (static_cast<double>(static_cast<float>(s.scale)) != s.scale)
    throw InputError(field + ".scale: " + std::to_string(s.scale) + " is not an f32 value");
  json o = {{"kind", name(s.kind)}, {"dtype", name(s.format)}, {"scale", s.scale}, {"zero_point", s.zero_point}};
  if (s.clamp) {
    std::string act;
    for (FusedActivation a : table_values<FusedActivation>()) {
      if (a == FusedActivation::none) continue;
      try {
        if (fused_activation_range(a, static_cast<float>(s.scale), s.zero_point, s.format) == *s.clamp) {
          act = std::string(name(a));
          break;
        }
      } catch (const InputError&) {
        // this activation is not defined for these parameters
      }
    }
    if (act.empty())
      throw InputError(field + ".activation: the clamp [" + std::to_string(s.clamp->lo) + ", " +
                       std::to_string(s.clamp->hi) + "] is not a fused activation of the case format");
    o["activation"] = act;
  }
  return o;
}

void optional_bias(json& c, const std::optional<Tensor>& bias, const Writer& o) {
  if (bias) c["bias"] = operand_json(*bias, "bias", o);
}

// ---- Ops ---------------------------------------------------------------------------------------

void op_json(json& c, const QuantizeOp& q, const Spec&, const Writer& o) {
  c["input"] = operand_json(q.x, "input", o);
  params_json(c, q.params);
  c["output_dtype"] = name(q.out);
  if (!q.saturate && is_float(q.out)) c["saturate"] = false;
}

void op_json(json& c, const DequantizeOp& d, const Spec&, const Writer& o) {
  c["input"] = operand_json(d.q, "input", o);
  params_json(c, d.params);
  c["output_dtype"] = name(d.out);
}

void op_json(json& c, const RequantizeOp& r, const Spec&, const Writer& o) {
  const RequantizeParams& p = r.params;
  c["input"] = operand_json(r.acc, "input", o);
  c["input_scale"] = p.input_scale;
  c["weight_scale"] = scales_json(p.weight_scales, p.axis.has_value());
  c["output_scale"] = p.output_scale;
  c["scale_dtype"] = name(p.scale_dtype);
  if (!p.output_zero_points.empty())
    c["zero_point"] =
        p.axis || p.output_zero_points.size() != 1 ? json(p.output_zero_points) : json(p.output_zero_points[0]);
  if (p.axis) c["axis"] = *p.axis;
  c["output_dtype"] = name(r.out);
}

void op_json(json& c, const QGemmOp& g, const Spec& spec, const Writer& o) {
  c["a"] = activation_json(g.a, spec, "a", o);
  c["b"] = weights_json(g.b, g.b_layout, "b", o);
  optional_bias(c, g.bias, o);
  c["output"] = output_json(g.output, "output");
}

// A convolution's stride, padding, dilation and groups (qconv2d and conv2d read them alike).
void geometry_json(json& c, const Conv2dGeometry& g) {
  c["stride"] = {g.stride_h, g.stride_w};
  c["padding"] = {g.pad_top, g.pad_left, g.pad_bottom, g.pad_right};
  c["dilation"] = {g.dilation_h, g.dilation_w};
  c["groups"] = g.groups;
}

void op_json(json& c, const QConv2dOp& v, const Spec& spec, const Writer& o) {
  c["input"] = activation_json(v.input, spec, "input", o);
  c["input"]["layout"] = name(v.layout);
  c["weight"] = weights_json(v.weight, WeightLayout::k_by_n, "weight", o);
  optional_bias(c, v.bias, o);
  geometry_json(c, v.geometry);
  c["padding_value"] = name(v.padding);
  c["output"] = output_json(v.output, "output");
}

void op_json(json& c, const WeightOnlyGemmOp& w, const Spec&, const Writer& o) {
  c["a"] = operand_json(w.a, "a", o);
  c["b"] = weights_json(w.b, w.b_layout, "b", o);
  optional_bias(c, w.bias, o);
  c["output_dtype"] = name(w.out);
}

void op_json(json& c, const ChooseQParamsOp& q, const Spec&, const Writer& o) {
  c["input"] = operand_json(q.profile, "input", o);
  // The loader takes a rule by name: the first preset with this rule.
  for (const QParamsPreset& p : qparams_presets())
    if (p.rule == q.rule) {
      c["rule"] = std::string(p.name);
      break;
    }
  if (!c.contains("rule")) throw InputError("rule: the op's parameter-choice rule is not a named preset");
  c["output_dtype"] = name(q.format);
  if (q.axis) c["axis"] = *q.axis;
}

void op_json(json& c, const Conv2dOp& v, const Spec&, const Writer& o) {
  c["input"] = operand_json(v.input, "input", o);
  c["input"]["layout"] = name(v.layout);
  const bool float_weights = !v.weight.packing && is_float(v.weight.values.dtype());  // used exactly, no params
  c["weight"] = float_weights ? operand_json(v.weight.values, "weight", o)
                              : weights_json(v.weight, WeightLayout::k_by_n, "weight", o);
  optional_bias(c, v.bias, o);
  geometry_json(c, v.geometry);
  c["output_dtype"] = name(v.out);
}

void mx_blocking_json(json& c, const MxBlocking& b) {
  c["format"] = name(b.format);
  c["axis"] = b.axis;
  c["block_size"] = b.block_size;
  if (b.global_scale) c["global_scale"] = *b.global_scale;
}

void op_json(json& c, const MxQuantizeOp& q, const Spec&, const Writer& o) {
  c["input"] = operand_json(q.x, "input", o);
  mx_blocking_json(c, q.blocking);
  if (q.blocking.format != MxFormat::nvfp4) c["scale_rule"] = name(q.scale_rule);
  c["rounding"] = name(q.element_rounding);
}

// A qadd operand: values, one scale and zero point (the loader's per-tensor form).
json qadd_operand_json(const Tensor& t, const QuantParams& p, const std::string& field, const Writer& o) {
  json j = operand_json(t, field, o);
  j["scale"] = p.scales.at(0);
  j["zero_point"] = p.zero_point(0);
  return j;
}

void op_json(json& c, const QAddOp& a, const Spec&, const Writer& o) {
  c["a"] = qadd_operand_json(a.a, a.a_params, "a", o);
  c["b"] = qadd_operand_json(a.b, a.b_params, "b", o);
  c["output"] = {{"dtype", name(a.output.format)}, {"scale", a.output.scale}, {"zero_point", a.output.zero_point}};
}

void op_json(json& c, const MxDequantizeOp& d, const Spec&, const Writer& o) {
  c["input"] = operand_json(d.elements, "input", o);
  c["scales"] = operand_json(d.scales, "scales", o);
  mx_blocking_json(c, d.blocking);
}

void op_json(json& c, const MxGemmOp& g, const Spec&, const Writer& o) {
  const auto operand = [&](const MxGemmOperand& m, const char* side) {
    json j = operand_json(m.values, side, o);
    j["format"] = name(m.format);
    if (m.global_scale) j["global_scale"] = *m.global_scale;
    return j;
  };
  c["a"] = operand(g.a, "a");
  c["b"] = operand(g.b, "b");
  c["b"]["layout"] = name(g.b_layout);
  c["block_size"] = g.block_size;
  if (g.a.format != MxFormat::nvfp4 || g.b.format != MxFormat::nvfp4) c["scale_rule"] = name(g.scale_rule);
  c["rounding"] = name(g.element_rounding);
  optional_bias(c, g.bias, o);
  c["output_dtype"] = name(g.out);
}

}  // namespace

json expectation_to_json(const Expectation& e) {
  switch (e.kind) {
    case Expectation::Kind::exact:
      return "exact";
    case Expectation::Kind::claim:
      return "claim";
    case Expectation::Kind::dot_product:
      return "dot_product";
    case Expectation::Kind::max_lsb:
      return {{"max_lsb", e.tolerance}};
    case Expectation::Kind::max_ulp:
      return {{"max_ulp", e.tolerance}};
  }
  return "exact";
}

json spec_to_json(const Spec& s) {
  if (auto p = find_preset(s.name); p && same_numerics(*p, s)) return s.name;
  // Bases to try: the preset the name starts with ("onnx+custom" -> "onnx"), then every preset.
  std::vector<std::string> bases{s.name.substr(0, s.name.find('+'))};
  for (const Spec& p : presets()) bases.push_back(p.name);
  for (const std::string& base_name : bases) {
    const auto base = find_preset(base_name);
    // No override exists for the zero-point correction, the convolution depth order or the pair rule.
    if (!base || base->zero_points != s.zero_points || base->conv_depth_order != s.conv_depth_order ||
        base->pair_rule != s.pair_rule)
      continue;
    if (same_numerics(*base, s)) return base_name;
    for (bool all : {false, true}) {
      json j = {{"preset", base_name}};
      j.update(quantize_overrides(s.quantize, base->quantize, all));
      if (s.dequantize != base->dequantize) j["dequantize"] = dequantize_json(s.dequantize);
      if (s.requantize != base->requantize) j["requantize"] = requantize_json(s.requantize);
      if (s.accumulation != base->accumulation) j["accumulation"] = name(s.accumulation);
      if (s.qparams != base->qparams) j["qparams"] = s.qparams;
      if (s.add != base->add) j["add"] = {{"scheme", name(s.add.scheme)}, {"rounding", name(s.add.rounding)}};
      try {
        if (same_numerics(parse_spec(j.dump(), "spec"), s)) return j;
      } catch (const InputError&) {
        // not expressible on this base (an unknown qparams rule, a derivation the scheme rejects)
      }
    }
  }
  throw InputError("spec '" + s.name +
                   "': no preset with overrides reproduces its policies, so the case format cannot express it");
}

namespace {

json shape_json(const Tensor& t, const std::string& field) {
  json shape = json::array();
  for (std::int64_t d : t.shape()) {
    if (d <= 0) throw InputError(field + ": shape " + shape_str(t.shape()) + " has an empty dimension");
    shape.push_back(d);
  }
  return shape;
}

}  // namespace

json tensor_to_json(const Tensor& t, const std::string& field, const WriteOptions& options) {
  json shape = shape_json(t, field);
  json data = json::array();
  for (std::int64_t i = 0; i < t.size(); ++i) data.push_back(element_json(t, i, field + ".data", options));
  return {{"dtype", name(t.dtype())}, {"shape", std::move(shape)}, {"data", std::move(data)}};
}

namespace {

// An operand as the file holds it: its generator while its values are still what the generator
// made, a side file for a large array when save_cases is asked for them, else inline data.
json operand_json(const Tensor& t, const std::string& field, const Writer& w) {
  json o = {{"dtype", name(t.dtype())}, {"shape", shape_json(t, field)}};
  for (const OperandLink& l : w.c->links)
    if (l.field == field) return o;  // the values are the producer's: case_json writes "from"
  for (const GeneratedOperand& g : w.c->generated) {
    if (g.field == field && g.digest == tensor_digest(t)) {
      o["generator"] = json::parse(g.generator);
      return o;
    }
  }
  if (w.side_file && w.options.npy_min_elements > 0 && t.size() >= w.options.npy_min_elements) {
    json ref = json::object();
    ref["npy"] = w.side_file(t, field);
    o["data"] = std::move(ref);
    return o;
  }
  return tensor_to_json(t, field, w.options);
}

json case_json(const Case& c, const Writer& w) {
  try {
    json j = {{"name", c.name}};
    if (!c.description.empty()) j["description"] = c.description;
    j["op"] = op_name(c.op);
    j["spec"] = spec_to_json(c.spec);
    std::visit([&](const auto& op) { op_json(j, op, c.spec, w); }, c.op);
    // A linked operand keeps its parameters, format and shape (the loader checks them against the
    // producer) and takes its values from the producer instead of data.
    for (const OperandLink& l : c.links) {
      // A pair of parameters ("a.params", "output.params") is written as the operand's params_from.
      if (l.field.ends_with(".params")) {
        const std::string operand = l.field.substr(0, l.field.size() - 7);
        if (!j.contains(operand)) throw InputError(operand + ".params_from: the op has no '" + operand + "'");
        for (const char* k : {"scale", "zero_point", "scale_dtype", "axis", "block_size", "activation"})
          j[operand].erase(k);
        j[operand]["params_from"] = l.producer;
        continue;
      }
      if (!j.contains(l.field)) throw InputError(l.field + ".from: the op has no operand '" + l.field + "'");
      j[l.field]["from"] = l.producer;
    }
    json same = json::array(), differs = json::array();
    for (const Agreement& a : c.agreements) {
      if (a.kind == Agreement::Kind::same_outputs)
        same.push_back(a.other);
      else
        differs.push_back(a.elements < 0 ? json(a.other) : json{{"case", a.other}, {"elements", a.elements}});
    }
    if (!same.empty()) j["same_outputs_as"] = same.size() == 1 ? same[0] : same;
    if (!differs.empty()) j["differs_from"] = differs.size() == 1 ? differs[0] : differs;
    if (!c.expect.empty()) {
      json e = json::object();
      for (const auto& [backend, ex] : c.expect) e[backend] = expectation_to_json(ex);
      j["expect"] = std::move(e);
    }
    return j;
  } catch (const InputError& e) {
    throw InputError("case '" + c.name + "': " + e.what());
  }
}

// ---- The file's text -------------------------------------------------------------------------

// People read case files too. nlohmann's dump(n) puts every array element on a line of its own (a
// 256-element input took 256 lines); here objects are indented one member a line, arrays of
// numbers and strings (data, shapes, scales) run on in lines of up to kWidth columns, and an object
// of such values that fits on its line (a generator, an expectation, a small tensor) stays on it.
constexpr std::size_t kWidth = 100;

bool flat_array(const json& v) {
  return v.is_array() && std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); });
}

// Members in a reading order: what a case is first, its bulk (data, the list of cases) last, the
// rest in the order of the keys.
std::vector<std::pair<std::string, const json*>> members(const json& o) {
  static const std::vector<std::string> first = {"suite", "name", "description", "op", "spec", "dtype", "shape"};
  static const std::vector<std::string> last = {"generator", "data", "cases"};
  std::vector<std::pair<std::string, const json*>> out;
  for (const std::string& k : first)
    if (o.contains(k)) out.emplace_back(k, &o[k]);
  for (const auto& [k, v] : o.items())
    if (std::find(first.begin(), first.end(), k) == first.end() && std::find(last.begin(), last.end(), k) == last.end())
      out.emplace_back(k, &v);
  for (const std::string& k : last)
    if (o.contains(k)) out.emplace_back(k, &o[k]);
  return out;
}

// The one-line text of a value holding no objects below its own level.
std::string one_line(const json& v) {
  if (!v.is_structured()) return v.dump();  // the shortest text that reads back as the number
  std::string s(1, v.is_array() ? '[' : '{');
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + one_line(v[i]);
  } else {
    bool more = false;
    for (const auto& [k, e] : members(v)) {
      s += (more ? ", " : "") + json(k).dump() + ": " + one_line(*e);
      more = true;
    }
  }
  return s + (v.is_array() ? ']' : '}');
}

// Appends v, which starts at `column` of a line whose members are indented by `indent`.
void append_text(std::string& out, const json& v, std::size_t indent, std::size_t column) {
  if (!v.is_structured() || v.empty()) {
    out += v.dump();
    return;
  }
  const std::string pad(indent + 2, ' ');
  if (flat_array(v)) {  // wrapped: continuation lines one level in
    out += '[';
    column += 1;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string e = v[i].dump();
      if (i > 0) {
        out += ',';
        column += 1;
        if (column + 1 + e.size() + 1 > kWidth) {  // the element and the ',' or ']' after it
          out += '\n' + pad;
          column = pad.size();
        } else {
          out += ' ';
          column += 1;
        }
      }
      out += e;
      column += e.size();
    }
    out += ']';
    return;
  }
  if (v.is_object() &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return !e.is_structured() || flat_array(e); })) {
    const std::string line = one_line(v);
    if (column + line.size() + 1 <= kWidth) {
      out += line;
      return;
    }
  }
  out += v.is_array() ? "[\n" : "{\n";
  bool more = false;
  const auto item = [&](const std::string* key, const json& e) {
    out += more ? ",\n" : "";
    more = true;
    out += pad;
    if (key) out += json(*key).dump() + ": ";
    append_text(out, e, indent + 2, pad.size() + (key ? json(*key).dump().size() + 2 : 0));
  };
  if (v.is_array()) {
    for (const json& e : v) item(nullptr, e);
  } else {
    for (const auto& [k, e] : members(v)) item(&k, *e);
  }
  out += '\n' + std::string(indent, ' ') + (v.is_array() ? ']' : '}');
}

// Writes the file through a temporary file in the same folder and a rename, so an existing file is
// replaced only by a complete one.
void write_replacing(const fs::path& file, const std::function<void(const fs::path&)>& write) {
  const fs::path tmp = file.string() + ".tmp";
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(file.string() + ": cannot write (" + ec.message() + ")");
  }
}

// A case name as part of a file name: letters, digits and "-_=+." kept, anything else '_'.
std::string file_safe(const std::string& s) {
  std::string out = s;
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && std::string_view("-_=+.").find(ch) == std::string_view::npos)
      ch = '_';
  return out;
}

}  // namespace

std::string case_file_text(const json& j) {
  std::string out;
  append_text(out, j, 0, 0);
  return out + "\n";
}

json case_to_json(const Case& c, const WriteOptions& options) { return case_json(c, Writer{options, &c, {}}); }

void save_cases(const fs::path& file, const std::string& suite, const std::vector<Case>& cases,
                const WriteOptions& options) {
  // Side files (<stem>.<case>.<field>.npy next to the file) are written once every case has been
  // converted, so a case the format cannot express leaves no files behind.
  std::vector<std::pair<std::string, Tensor>> side_files;
  std::set<std::string> side_names;
  Writer w{options, nullptr, {}};
  if (options.npy_min_elements > 0)
    w.side_file = [&](const Tensor& t, const std::string& field) {
      const std::string base = file.stem().string() + "." + file_safe(w.c->name) + "." + field;
      std::string n = base + ".npy";
      for (int k = 2; !side_names.insert(n).second; ++k) n = base + "." + std::to_string(k) + ".npy";
      side_files.emplace_back(n, t);
      return n;
    };
  json list = json::array();
  std::set<std::string> names;
  for (const Case& c : cases) {
    if (!names.insert(c.name).second)
      throw InputError(file.string() + ": case '" + c.name + "': duplicate case name in suite '" + suite + "'");
    w.c = &c;
    list.push_back(case_json(c, w));
  }
  // The file must read back: every case a link or an agreement names is among `cases`.
  check_links(Suite{suite, "", file.string(), cases, {}});
  for (const auto& side : side_files)  // (a structured binding: not capturable before clang 16)
    write_replacing(file.parent_path() / side.first, [&](const fs::path& tmp) { write_npy(tmp, side.second); });
  const std::string text = case_file_text({{"suite", suite}, {"cases", std::move(list)}});
  write_replacing(file, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(file.string() + ": cannot write case file");
    out << text;
    if (!out.flush()) throw InputError(file.string() + ": cannot write case file");
  });
}

}  // namespace qc
