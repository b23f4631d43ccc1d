#include "qconform/wire.hpp"

#include "qconform/error.hpp"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>

namespace qc::wire {
namespace {

using json = nlohmann::json;

// ---- Encoding ----------------------------------------------------------------------------------

class Encoder {
 public:
  json tensor(const Tensor& t) {
    json j = {{"tensor", tensors.size()}, {"dtype", std::string(name(t.dtype()))}, {"shape", t.shape()}};
    tensors.push_back(t);
    return j;
  }
  json optional_tensor(const std::optional<Tensor>& t) { return t ? tensor(*t) : json(nullptr); }
  std::vector<Tensor> tensors;
};

json opt_int(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }

json params_json(const QuantParams& p) {
  return {{"scale_dtype", std::string(name(p.scale_dtype))},
          {"scales", p.scales},
          {"zero_points", p.zero_points},
          {"axis", opt_int(p.axis)},
          {"block_size", p.block_size}};
}

json rule_json(const QParamsRule& r) {
  return {{"recipe", std::string(name(r.recipe))},
          {"scheme", std::string(name(r.scheme))},
          {"include_zero", r.include_zero},
          {"zero_point", std::string(name(r.zero_point))},
          {"nudge", std::string(name(r.nudge))},
          {"reduce_range", std::string(name(r.reduce_range))},
          {"narrow_range", r.narrow_range},
          {"scale_floor", r.scale_floor},
          {"arithmetic", std::string(name(r.arithmetic))}};
}

json activation_json(Encoder& e, const ActivationOperand& a) {
  return {{"values", e.tensor(a.values)},
          {"format", std::string(name(a.format))},
          {"params", params_json(a.params)},
          {"quantization", std::string(name(a.quantization))},
          {"rule", rule_json(a.rule)}};
}

json weights_json(Encoder& e, const QWeights& w) {
  json packing = nullptr;
  if (w.packing)
    packing = {{"nibbles", std::string(name(w.packing->nibbles))},
               {"axis", opt_int(w.packing->axis)},
               {"odd", std::string(name(w.packing->odd))},
               {"out_of_range", std::string(name(w.packing->out_of_range))}};
  return {{"values", e.tensor(w.values)},
          {"format", std::string(name(w.format))},
          {"packing", packing},
          {"shape", logical_shape(w)},
          {"params", params_json(w.params)}};
}

json output_json(const OutputStage& s) {
  return {{"kind", std::string(name(s.kind))},
          {"format", std::string(name(s.format))},
          {"scale", s.scale},
          {"zero_point", s.zero_point},
          {"clamp", s.clamp ? json::array({s.clamp->lo, s.clamp->hi}) : json(nullptr)}};
}

json geometry_json(const Conv2dGeometry& g) {
  return {{"strides", {g.stride_h, g.stride_w}},
          {"pads", {g.pad_top, g.pad_left, g.pad_bottom, g.pad_right}},
          {"dilations", {g.dilation_h, g.dilation_w}},
          {"groups", g.groups}};
}

json blocking_json(const MxBlocking& b) {
  return {{"format", std::string(name(b.format))},
          {"axis", b.axis},
          {"block_size", b.block_size},
          {"global_scale", b.global_scale ? json(*b.global_scale) : json(nullptr)}};
}

json op_json(Encoder& e, const OpRequest& op) {
  struct Visitor {
    Encoder& e;
    json operator()(const QuantizeOp& o) const {
      return {{"x", e.tensor(o.x)},
              {"params", params_json(o.params)},
              {"out", std::string(name(o.out))},
              {"saturate", o.saturate}};
    }
    json operator()(const DequantizeOp& o) const {
      return {{"q", e.tensor(o.q)}, {"params", params_json(o.params)}, {"out", std::string(name(o.out))}};
    }
    json operator()(const RequantizeOp& o) const {
      const RequantizeParams& p = o.params;
      return {{"acc", e.tensor(o.acc)},
              {"params",
               {{"scale_dtype", std::string(name(p.scale_dtype))},
                {"input_scale", p.input_scale},
                {"weight_scales", p.weight_scales},
                {"axis", opt_int(p.axis)},
                {"output_scale", p.output_scale},
                {"output_zero_points", p.output_zero_points}}},
              {"out", std::string(name(o.out))}};
    }
    json operator()(const QGemmOp& o) const {
      return {{"a", activation_json(e, o.a)},
              {"b", weights_json(e, o.b)},
              {"b_layout", std::string(name(o.b_layout))},
              {"bias", e.optional_tensor(o.bias)},
              {"output", output_json(o.output)}};
    }
    json operator()(const QConv2dOp& o) const {
      return {{"input", activation_json(e, o.input)},  {"layout", std::string(name(o.layout))},
              {"weight", weights_json(e, o.weight)},   {"bias", e.optional_tensor(o.bias)},
              {"geometry", geometry_json(o.geometry)}, {"padding", std::string(name(o.padding))},
              {"output", output_json(o.output)}};
    }
    json operator()(const ChooseQParamsOp& o) const {
      return {{"profile", e.tensor(o.profile)},
              {"format", std::string(name(o.format))},
              {"rule", rule_json(o.rule)},
              {"axis", opt_int(o.axis)}};
    }
    json operator()(const WeightOnlyGemmOp& o) const {
      return {{"a", e.tensor(o.a)},
              {"b", weights_json(e, o.b)},
              {"b_layout", std::string(name(o.b_layout))},
              {"bias", e.optional_tensor(o.bias)},
              {"out", std::string(name(o.out))}};
    }
    json operator()(const Conv2dOp& o) const {
      return {{"input", e.tensor(o.input)},
              {"layout", std::string(name(o.layout))},
              {"weight", weights_json(e, o.weight)},
              {"bias", e.optional_tensor(o.bias)},
              {"geometry", geometry_json(o.geometry)},
              {"out", std::string(name(o.out))}};
    }
    json operator()(const MxQuantizeOp& o) const {
      return {{"x", e.tensor(o.x)},
              {"blocking", blocking_json(o.blocking)},
              {"scale_rule", std::string(name(o.scale_rule))},
              {"rounding", std::string(name(o.element_rounding))}};
    }
    json operator()(const MxDequantizeOp& o) const {
      return {
          {"elements", e.tensor(o.elements)}, {"scales", e.tensor(o.scales)}, {"blocking", blocking_json(o.blocking)}};
    }
    json operator()(const MxGemmOp& o) const {
      const auto operand = [&](const MxGemmOperand& m) -> json {
        return {{"values", e.tensor(m.values)},
                {"format", std::string(name(m.format))},
                {"global_scale", m.global_scale ? json(*m.global_scale) : json(nullptr)}};
      };
      return {{"a", operand(o.a)},
              {"b", operand(o.b)},
              {"b_layout", std::string(name(o.b_layout))},
              {"block_size", o.block_size},
              {"scale_rule", std::string(name(o.scale_rule))},
              {"rounding", std::string(name(o.element_rounding))},
              {"bias", e.optional_tensor(o.bias)},
              {"out", std::string(name(o.out))}};
    }
    json operator()(const QAddOp& o) const {
      return {{"a", e.tensor(o.a)},
              {"a_params", params_json(o.a_params)},
              {"b", e.tensor(o.b)},
              {"b_params", params_json(o.b_params)},
              {"output", output_json(o.output)}};
    }
  };
  json j = std::visit(Visitor{e}, op);
  j["op"] = std::string(op_name(op));
  return j;
}

// ---- Decoding ----------------------------------------------------------------------------------

class Decoder {
 public:
  explicit Decoder(std::vector<Tensor> t) : tensors_(std::move(t)) {}

  const json& at(const json& o, const char* key, const std::string& where) const {
    if (!o.is_object()) throw InputError("request: '" + where + "' must be an object");
    auto it = o.find(key);
    if (it == o.end()) throw InputError("request: field '" + where + key + "' is missing");
    return *it;
  }
  std::string str(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_string()) throw InputError("request: field '" + where + key + "' must be a string");
    return v.get<std::string>();
  }
  std::int64_t integer(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_number_integer()) throw InputError("request: field '" + where + key + "' must be an integer");
    return v.get<std::int64_t>();
  }
  double number(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_number()) throw InputError("request: field '" + where + key + "' must be a number");
    return v.get<double>();
  }
  bool boolean(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_boolean()) throw InputError("request: field '" + where + key + "' must be true or false");
    return v.get<bool>();
  }
  std::optional<int> opt_int(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number_integer()) throw InputError("request: field '" + where + key + "' must be an integer or null");
    return v.get<int>();
  }
  template <class T>
  std::vector<T> list(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_array()) throw InputError("request: field '" + where + key + "' must be a list");
    std::vector<T> out;
    for (const json& x : v) {
      const bool ok = std::is_floating_point_v<T> ? x.is_number() : x.is_number_integer();
      if (!ok) throw InputError("request: field '" + where + key + "' holds a value of the wrong type");
      out.push_back(x.get<T>());
    }
    return out;
  }
  template <class E>
  E enumerated(const json& o, const char* key, const std::string& where) const {
    const std::string s = str(o, key, where);
    if (const auto v = table_parse<E>(s)) return *v;
    throw InputError("request: field '" + where + key + "': unknown value '" + s + "' (known: " + table_names<E>() +
                     ")");
  }
  DType dtype(const json& o, const char* key, const std::string& where) const {
    const std::string s = str(o, key, where);
    const auto t = parse_dtype(s);
    if (!t) throw InputError("request: field '" + where + key + "': unknown dtype '" + s + "'");
    return *t;
  }

  Tensor tensor(const json& o, const char* key, const std::string& where) {
    const json& ref = at(o, key, where);
    const std::string field = where + key;
    if (!ref.is_object() || !ref.contains("tensor") || !ref["tensor"].is_number_unsigned())
      throw InputError("request: field '" + field + "' must be a tensor reference {\"tensor\": index, ...}");
    const auto i = ref["tensor"].get<std::size_t>();
    if (i >= tensors_.size())
      throw InputError("request: field '" + field + "' names tensor " + std::to_string(i) + " of " +
                       std::to_string(tensors_.size()));
    const Tensor& t = tensors_[i];
    if (dtype(ref, "dtype", field + ".") != t.dtype() || list<std::int64_t>(ref, "shape", field + ".") != t.shape())
      throw InputError("request: field '" + field + "': the tensor is " + std::string(name(t.dtype())) + " " +
                       shape_str(t.shape()) + ", not what the request says");
    return t;
  }
  std::optional<Tensor> optional_tensor(const json& o, const char* key, const std::string& where) {
    if (at(o, key, where).is_null()) return std::nullopt;
    return tensor(o, key, where);
  }

  QuantParams params(const json& o, const char* key, const std::string& where) const {
    const json& j = at(o, key, where);
    const std::string w = where + key + ".";
    QuantParams p;
    p.scale_dtype = dtype(j, "scale_dtype", w);
    p.scales = list<double>(j, "scales", w);
    p.zero_points = list<std::int64_t>(j, "zero_points", w);
    p.axis = opt_int(j, "axis", w);
    p.block_size = integer(j, "block_size", w);
    return p;
  }

  QParamsRule rule(const json& o, const char* key, const std::string& where) const {
    const json& j = at(o, key, where);
    const std::string w = where + key + ".";
    QParamsRule r;
    r.recipe = enumerated<QParamsRecipe>(j, "recipe", w);
    r.scheme = enumerated<QParamsScheme>(j, "scheme", w);
    r.include_zero = boolean(j, "include_zero", w);
    r.zero_point = enumerated<ZeroPointChoice>(j, "zero_point", w);
    const std::string nudge = str(j, "nudge", w);
    const auto m = parse_rounding_mode(nudge);
    if (!m) throw InputError("request: field '" + w + "nudge': unknown rounding mode '" + nudge + "'");
    r.nudge = *m;
    r.reduce_range = enumerated<ReduceRange>(j, "reduce_range", w);
    r.narrow_range = boolean(j, "narrow_range", w);
    r.scale_floor = number(j, "scale_floor", w);
    r.arithmetic = dtype(j, "arithmetic", w);
    return r;
  }

  ActivationOperand activation(const json& o, const char* key) {
    const json& j = at(o, key, "");
    const std::string w = std::string(key) + ".";
    ActivationOperand a;
    a.values = tensor(j, "values", w);
    a.format = dtype(j, "format", w);
    a.params = params(j, "params", w);
    a.quantization = enumerated<ActivationQuantization>(j, "quantization", w);
    a.rule = rule(j, "rule", w);
    return a;
  }

  QWeights weights(const json& o, const char* key) {
    const json& j = at(o, key, "");
    const std::string w = std::string(key) + ".";
    QWeights q;
    q.values = tensor(j, "values", w);
    q.format = dtype(j, "format", w);
    const json& p = at(j, "packing", w);
    if (!p.is_null()) {
      const std::string pw = w + "packing.";
      Int4Packing k;
      k.nibbles = enumerated<NibbleOrder>(p, "nibbles", pw);
      k.axis = opt_int(p, "axis", pw);
      k.odd = enumerated<OddLength>(p, "odd", pw);
      k.out_of_range = enumerated<OutOfRange>(p, "out_of_range", pw);
      q.packing = k;
    }
    // The logical shape, always set as the case loader sets it (backends read it unpacked too).
    q.shape = list<std::int64_t>(j, "shape", w);
    if (!q.packing && q.shape != q.values.shape())
      throw InputError("request: field '" + w + "shape' is " + shape_str(q.shape) + ", the unpacked values are " +
                       shape_str(q.values.shape()));
    q.params = params(j, "params", w);
    return q;
  }

  OutputStage output(const json& o) {
    const json& j = at(o, "output", "");
    const std::string w = "output.";
    OutputStage s;
    s.kind = enumerated<OutputKind>(j, "kind", w);
    s.format = dtype(j, "format", w);
    s.scale = number(j, "scale", w);
    s.zero_point = integer(j, "zero_point", w);
    const json& c = at(j, "clamp", w);
    if (!c.is_null()) {
      const auto v = list<std::int64_t>(j, "clamp", w);
      if (v.size() != 2) throw InputError("request: field 'output.clamp' must be [lo, hi] or null");
      s.clamp = IntRange{v[0], v[1]};
    }
    return s;
  }

  WeightLayout layout(const json& o) const { return enumerated<WeightLayout>(o, "b_layout", ""); }

  Conv2dGeometry geometry(const json& o) const {
    const json& j = at(o, "geometry", "");
    const std::string w = "geometry.";
    const auto strides = list<std::int64_t>(j, "strides", w);
    const auto pads = list<std::int64_t>(j, "pads", w);
    const auto dilations = list<std::int64_t>(j, "dilations", w);
    if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
      throw InputError("request: field 'geometry': strides [h, w], pads [top, left, bottom, right], dilations [h, w]");
    Conv2dGeometry g;
    g.stride_h = strides[0];
    g.stride_w = strides[1];
    g.pad_top = pads[0];
    g.pad_left = pads[1];
    g.pad_bottom = pads[2];
    g.pad_right = pads[3];
    g.dilation_h = dilations[0];
    g.dilation_w = dilations[1];
    g.groups = integer(j, "groups", w);
    return g;
  }

 private:
  std::vector<Tensor> tensors_;
};

}  // namespace

Message encode_op(const OpRequest& op) {
  Encoder e;
  json j = op_json(e, op);
  return {j.dump(), std::move(e.tensors)};
}

OpRequest decode_op(const std::string& text, std::vector<Tensor> tensors) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError("request: the op is not a JSON object");
  Decoder d(std::move(tensors));
  const std::string op = d.str(j, "op", "");
  if (op == "quantize") {
    QuantizeOp q{d.tensor(j, "x", ""), d.params(j, "params", ""), d.dtype(j, "out", "")};
    // Absent in requests from before float8 outputs: ONNX's default.
    if (const auto it = j.find("saturate"); it != j.end() && it->is_boolean()) q.saturate = it->get<bool>();
    return q;
  }
  if (op == "dequantize") return DequantizeOp{d.tensor(j, "q", ""), d.params(j, "params", ""), d.dtype(j, "out", "")};
  if (op == "requantize") {
    RequantizeOp r;
    r.acc = d.tensor(j, "acc", "");
    const json& p = d.at(j, "params", "");
    r.params.scale_dtype = d.dtype(p, "scale_dtype", "params.");
    r.params.input_scale = d.number(p, "input_scale", "params.");
    r.params.weight_scales = d.list<double>(p, "weight_scales", "params.");
    r.params.axis = d.opt_int(p, "axis", "params.");
    r.params.output_scale = d.number(p, "output_scale", "params.");
    r.params.output_zero_points = d.list<std::int64_t>(p, "output_zero_points", "params.");
    r.out = d.dtype(j, "out", "");
    return r;
  }
  if (op == "qgemm") {
    QGemmOp g;
    g.a = d.activation(j, "a");
    g.b = d.weights(j, "b");
    g.b_layout = d.layout(j);
    g.bias = d.optional_tensor(j, "bias", "");
    g.output = d.output(j);
    return g;
  }
  if (op == "qconv2d") {
    QConv2dOp c;
    c.input = d.activation(j, "input");
    c.layout = d.enumerated<ConvLayout>(j, "layout", "");
    c.weight = d.weights(j, "weight");
    c.bias = d.optional_tensor(j, "bias", "");
    c.geometry = d.geometry(j);
    c.padding = d.enumerated<ConvPadding>(j, "padding", "");
    c.output = d.output(j);
    return c;
  }
  if (op == "weight_only_gemm") {
    WeightOnlyGemmOp w;
    w.a = d.tensor(j, "a", "");
    w.b = d.weights(j, "b");
    w.b_layout = d.layout(j);
    w.bias = d.optional_tensor(j, "bias", "");
    w.out = d.dtype(j, "out", "");
    return w;
  }
  if (op == "choose_qparams") {
    ChooseQParamsOp c;
    c.profile = d.tensor(j, "profile", "");
    c.format = d.dtype(j, "format", "");
    c.rule = d.rule(j, "rule", "");
    c.axis = d.opt_int(j, "axis", "");
    return c;
  }
  if (op == "conv2d") {
    Conv2dOp c;
    c.input = d.tensor(j, "input", "");
    c.layout = d.enumerated<ConvLayout>(j, "layout", "");
    c.weight = d.weights(j, "weight");
    c.bias = d.optional_tensor(j, "bias", "");
    c.geometry = d.geometry(j);
    c.out = d.dtype(j, "out", "");
    return c;
  }
  if (op == "mx_quantize" || op == "mx_dequantize") {
    const json& b = d.at(j, "blocking", "");
    MxBlocking blocking;
    blocking.format = d.enumerated<MxFormat>(b, "format", "blocking.");
    blocking.axis = static_cast<int>(d.integer(b, "axis", "blocking."));
    blocking.block_size = d.integer(b, "block_size", "blocking.");
    if (!d.at(b, "global_scale", "blocking.").is_null())
      blocking.global_scale = d.number(b, "global_scale", "blocking.");
    if (op == "mx_dequantize") return MxDequantizeOp{d.tensor(j, "elements", ""), d.tensor(j, "scales", ""), blocking};
    MxQuantizeOp q;
    q.x = d.tensor(j, "x", "");
    q.blocking = blocking;
    q.scale_rule = d.enumerated<MxScaleRule>(j, "scale_rule", "");
    q.element_rounding = d.enumerated<RoundingMode>(j, "rounding", "");
    return q;
  }
  if (op == "mx_gemm") {
    const auto operand = [&](const char* side) {
      const json& o = d.at(j, side, "");
      const std::string where = std::string(side) + ".";
      MxGemmOperand m;
      m.values = d.tensor(o, "values", where);
      m.format = d.enumerated<MxFormat>(o, "format", where);
      if (!d.at(o, "global_scale", where).is_null()) m.global_scale = d.number(o, "global_scale", where);
      return m;
    };
    MxGemmOp g;
    g.a = operand("a");
    g.b = operand("b");
    g.b_layout = d.layout(j);
    g.block_size = d.integer(j, "block_size", "");
    g.scale_rule = d.enumerated<MxScaleRule>(j, "scale_rule", "");
    g.element_rounding = d.enumerated<RoundingMode>(j, "rounding", "");
    g.bias = d.optional_tensor(j, "bias", "");
    g.out = d.dtype(j, "out", "");
    return g;
  }
  if (op == "qadd") {
    QAddOp a;
    a.a = d.tensor(j, "a", "");
    a.a_params = d.params(j, "a_params", "");
    a.b = d.tensor(j, "b", "");
    a.b_params = d.params(j, "b_params", "");
    a.output = d.output(j);
    return a;
  }
  throw InputError("request: unknown op '" + op +
                   "' (known: quantize, dequantize, requantize, qgemm, qconv2d, weight_only_gemm, conv2d, "
                   "mx_quantize, mx_dequantize, choose_qparams, mx_gemm, qadd)");
}

}  // namespace qc::wire
