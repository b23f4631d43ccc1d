#include "cli/oracle_cli.hpp"

#include "cases/case.hpp"
#include "harness/explain.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"
#include "oracles/sweep.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

namespace qc {

using json = nlohmann::json;

void add_oracle_options(CLI::App* c, OracleOptions& o, bool explain) {
  if (explain)  // or a case file: main.cpp's explain of a case's element
    c->add_option("op", o.op, "quantize, dequantize or requantize; or a case file (with --case and --index)")
        ->required();
  else
    c->add_option("op", o.op, "quantize, dequantize or requantize")
        ->required()
        ->check(CLI::IsMember({"quantize", "dequantize", "requantize"}));
  c->add_option("--spec,--policy,-p", o.spec,
                "a preset (qconform list presets) or a JSON spec as in a case file (--policy: its older name)")
      ->capture_default_str();
  if (explain)
    c->add_option("--vs", o.vs, "a second spec: show both and the first step where they part");
  else
    c->add_option("--vs", o.vs, "with --sweep: a second spec, and the inputs on which the two differ");
  c->add_option("--order", o.order, "quantize order override (div_then_add_int, div_add_float, ...)");
  c->add_option("--compute", o.compute, "compute format override (exact, f64, f32, f16, bf16, scale_type, fixed64:N)");
  c->add_option("--rounding", o.rounding, "rounding mode override (rne, rna, rhu, rhd, rtz, floor, ceil)");
  c->add_option("--clamp", o.clamp, "clamp override (int_after, float_before, wrap)");
  c->add_option("--nan", o.nan, "NaN rule override (unspecified, qmin, qmax, zero_point, zero, error)");
  c->add_flag("--narrow-range", o.narrow_range, "drop the most negative value of a signed output");
  c->add_option("--scheme", o.scheme, "requantize scheme override (ideal, gemmlowp_double, tosa_single, ...)");
  c->add_option("--derivation", o.derivation, "requantize multiplier derivation override");
  c->add_option("--scale,-s", o.scale, "scale(s): one per tensor, or one per channel/block")->delimiter(',');
  c->add_option("--scale-type", o.scale_type, "the scales' format")->capture_default_str();
  c->add_option("--zero-point,-z", o.zero_point, "zero point(s)")->delimiter(',');
  c->add_option("--axis", o.axis, "per-axis or blocked quantization axis");
  c->add_option("--block-size", o.block_size, "block size along --axis");
  c->add_option("--from", o.from, "input format (quantize: f32; dequantize: i8; requantize: i32)");
  c->add_option("--to", o.to, "output format (quantize/requantize: i8; dequantize: f32)");
  c->add_option("--input-scale", o.input_scale, "requantize: s_in");
  c->add_option("--weight-scale", o.weight_scale, "requantize: s_w (one per tensor or per channel)")->delimiter(',');
  c->add_option("--output-scale", o.output_scale, "requantize: s_out");
  c->add_option("--multiplier", o.multiplier, "requantize: explicit fixed-point multiplier M (real = M * 2^-shift)");
  c->add_option("--shift", o.shift, "requantize: explicit right shift for --multiplier");
  if (explain) {
    c->add_option("--at,--x", o.at, "the input element (a number, or a hex float such as 0x1.8p-1)");
  } else {
    c->add_option("--input,-i", o.input, "input values: a .npy file or a .json list");
    c->add_option("--values", o.values, "input values as an inline JSON list");
    c->add_option("--output,-o", o.output, "write the result to this .npy file (default: JSON on stdout)");
    c->add_flag("--labels", o.labels, "include per-element labels in the JSON output");
    c->add_flag("--sweep", o.sweep,
                "quantize: every value of the --from format (f32: all 2^32), streamed on every core; prints counts, "
                "the output range and a digest (docs/oracle.md)");
    c->add_option("--threads", o.threads, "with --sweep: worker threads (default: every core)")
        ->check(CLI::Range(0, 1024));
  }
}

namespace {

// `option` names the flag the text came from, for messages.
Spec build_spec(const std::string& text, const OracleOptions& o, const std::string& option) {
  json j = json::object();
  if (!text.empty() && text.front() == '{') {
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      throw InputError(option + ": not valid JSON: " + std::string(e.what()));
    }
  } else {
    j["preset"] = text;
  }
  auto set = [&](const char* k, const std::string& v) {
    if (!v.empty()) j[k] = v;
  };
  set("order", o.order);
  set("compute", o.compute);
  set("rounding", o.rounding);
  set("clamp", o.clamp);
  set("nan", o.nan);
  if (o.narrow_range) j["narrow_range"] = true;
  if (!o.scheme.empty() || !o.derivation.empty()) {
    json r = json::object();
    if (!o.scheme.empty()) r["scheme"] = o.scheme;
    if (!o.derivation.empty()) r["derivation"] = o.derivation;
    j["requantize"] = r;
  }
  if (j.size() == 1 && j.contains("preset")) return parse_spec(json(text).dump(), option);
  return parse_spec(j.dump(), option);
}

DType dtype_option(const std::string& v, const char* fallback, const char* option) {
  auto t = parse_dtype(v.empty() ? fallback : v);
  if (!t) throw InputError(std::string(option) + ": unknown format '" + v + "'");
  return *t;
}

double parse_number(const std::string& s, const std::string& where) {
  if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw InputError(where + ": '" + s + "' is not a number");
  return d;
}

// Values from --input (.npy or .json) or --values, as a tensor of format t.
Tensor load_values(const OracleOptions& o, DType t) {
  if (!o.input.empty() && o.input.ends_with(".npy")) {
    Tensor x = read_npy(
        o.input, (t == DType::bf16 || t == DType::f8e4m3fn || t == DType::f8e5m2 || t == DType::i4 || t == DType::u4)
                     ? std::optional<DType>(t)
                     : std::nullopt);
    if (x.dtype() == t) return x;
    Tensor y(t, x.shape());  // widen or convert (rounding to nearest even for floats)
    for (std::int64_t i = 0; i < x.size(); ++i) {
      if (is_float(t)) {
        y.set_double(i, x.get_double(i));
        continue;
      }
      // An integer format takes only its own values: 300 is no i8 (a cast would make it 44).
      const double v = x.get_double(i);
      if (!is_int_value(t, v))
        throw InputError(o.input + ": element " + std::to_string(i) + " (" + std::to_string(v) +
                         ") is not a value of " + std::string(name(t)));
      y.set_int(i, static_cast<std::int64_t>(v));
    }
    return y;
  }
  std::string text = o.values;
  std::string where = "--values";
  if (!o.input.empty()) {
    std::ifstream in(o.input);
    if (!in) throw InputError(o.input + ": cannot open");
    std::stringstream b;
    b << in.rdbuf();
    text = b.str();
    where = o.input;
  }
  if (text.empty()) throw InputError("give the input with --input FILE (.npy or .json) or --values '[...]'");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(where + ": not valid JSON: " + e.what());
  }
  if (!j.is_array()) throw InputError(where + ": expected a JSON list of values");
  Tensor x(t, {static_cast<std::int64_t>(j.size())});
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const double v = j[i].is_string()   ? parse_number(j[i].get<std::string>(), w)
                     : j[i].is_number() ? j[i].get<double>()
                                        : throw InputError(w + ": not a number");
    if (is_float(t)) {
      x.set_double(static_cast<std::int64_t>(i), float_bits_to_double(t, double_to_float_bits(t, v)));
    } else {
      if (!is_int_value(t, v)) throw InputError(w + ": " + j[i].dump() + " is not a value of " + std::string(name(t)));
      x.set_int(static_cast<std::int64_t>(i), static_cast<std::int64_t>(v));
    }
  }
  return x;
}

QuantParams quant_params(const OracleOptions& o, const Shape& shape, DType q) {
  QuantParams p;
  p.scale_dtype = dtype_option(o.scale_type, "f32", "--scale-type");
  for (double s : o.scale)
    p.scales.push_back(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, s)));
  p.zero_points = o.zero_point;
  if (p.zero_points.size() == 1 && p.scales.size() > 1) p.zero_points.assign(p.scales.size(), p.zero_points[0]);
  p.axis = o.axis;
  p.block_size = o.block_size;
  validate(p, shape, q, "parameters");
  return p;
}

json value_json(const Tensor& t, std::int64_t i) {
  if (is_int(t.dtype())) return t.get_int(i);
  const double v = t.get_double(i);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return v;
}

RequantizeScales requantize_scales(const OracleOptions& o, std::size_t channel) {
  const DType st = dtype_option(o.scale_type, "f32", "--scale-type");
  auto rt = [&](double v) { return float_bits_to_double(st, double_to_float_bits(st, v)); };
  const double w = o.weight_scale.at(std::min(channel, o.weight_scale.size() - 1));
  return RequantizeScales{rt(o.input_scale), rt(w), rt(o.output_scale), st};
}

// A multiplier from --multiplier/--shift, for the fixed-point schemes (real = M * 2^-shift).
std::optional<RequantizeMultiplier> explicit_multiplier(const OracleOptions& o, const RequantizePolicy& pol) {
  if (!o.multiplier && !o.shift) return std::nullopt;
  if (!o.multiplier || !o.shift) throw InputError("--multiplier and --shift go together");
  if (!scheme_uses_derivation(pol.scheme) || pol.scheme == RequantizeScheme::glow_int32)
    throw InputError("--multiplier/--shift need a fixed-point Q31-style scheme, not " + std::string(name(pol.scheme)));
  // A multiplier stands for a positive scale and is an int32 in every Q31-style scheme.
  if (*o.multiplier < 1 || *o.multiplier > std::numeric_limits<std::int32_t>::max())
    throw InputError("--multiplier: must lie in [1, 2^31 - 1], got " + std::to_string(*o.multiplier));
  RequantizeMultiplier m;
  m.exact = Rational(*o.multiplier) * pow2(-*o.shift);
  m.formed = ExactFloat::finite(m.exact);
  m.fixed = ScaleShift{*o.multiplier, *o.shift};
  return m;
}

// --at as a value of the integer format t: 1.5, NaN or 300 for an i8 are input errors, not casts.
std::int64_t integer_at(const std::string& at, DType t) {
  const double v = parse_number(at, "--at");
  if (!is_int_value(t, v)) throw InputError("--at: '" + at + "' is not a value of " + std::string(name(t)));
  return static_cast<std::int64_t>(v);
}

ElementDerivation explain_one(const OracleOptions& o, const Spec& spec) {
  ElementDerivation e;
  e.policy = spec.name;
  e.description = spec.description;
  if (o.op == "quantize") {
    const DType xt = dtype_option(o.from, "f32", "--from"), out = dtype_option(o.to, "i8", "--to");
    const double raw = parse_number(o.at, "--at");
    const double x = float_bits_to_double(xt, double_to_float_bits(xt, raw));
    const QuantParams p = quant_params(o, {1}, out);
    const QuantizeElement r =
        quantize_element(x, xt, p.scales[0], p.scale_dtype, p.zero_point(0), out, spec.quantize_for(xt), true);
    e.value = Tensor(out, {1});
    e.value.set_int(0, r.q);
    e.specified = r.specified;
    e.result = r.specified ? std::to_string(r.q) : "unspecified (any value accepted)";
    e.label = std::string(name(r.label));
    e.steps = r.steps;
  } else if (o.op == "dequantize") {
    const DType qt = dtype_option(o.from, "i8", "--from"), out = dtype_option(o.to, "f32", "--to");
    const std::int64_t q = integer_at(o.at, qt);
    const QuantParams p = quant_params(o, {1}, qt);
    const DequantizeElement r =
        dequantize_element(q, qt, p.scales[0], p.scale_dtype, p.zero_point(0), out, spec.dequantize, true);
    e.value = Tensor(out, {1});
    e.value.set_bits(0, r.bits);
    e.result = to_string(r.y);
    e.label = std::string(name(r.label));
    e.steps = r.steps;
  } else {
    const DType out = dtype_option(o.to, "i8", "--to");
    const std::int64_t acc = integer_at(o.at, dtype_option(o.from, "i32", "--from"));
    const std::int64_t zp = o.zero_point.empty() ? 0 : o.zero_point[0];
    const auto m = explicit_multiplier(o, spec.requantize);
    const RequantizeElement r = m ? requantize_element(acc, *m, zp, out, spec.requantize, true)
                                  : requantize_element(acc, requantize_scales(o, 0), zp, out, spec.requantize, true);
    e.value = Tensor(out, {1});
    e.value.set_int(0, r.q);
    e.result = std::to_string(r.q);
    e.label = std::string(name(r.label));
    e.steps = r.steps;
  }
  return e;
}

}  // namespace

namespace {

std::string hex64(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

int cmd_sweep(const OracleOptions& o, const Spec& spec) {
  if (o.op != "quantize") throw InputError("--sweep: only quantize sweeps its inputs");
  if (!o.input.empty() || !o.values.empty() || !o.output.empty() || o.labels)
    throw InputError("--sweep generates its inputs and prints a summary: no --input, --values, --output or --labels");
  if (o.scale.size() != 1 || o.zero_point.size() > 1 || o.axis || o.block_size != 0)
    throw InputError("--sweep: one --scale and one --zero-point (per-tensor parameters)");
  const DType xt = dtype_option(o.from, "f32", "--from"), out = dtype_option(o.to, "i8", "--to");
  const std::optional<Spec> vs = o.vs.empty() ? std::nullopt : std::optional<Spec>(build_spec(o.vs, o, "--vs"));
  const QuantizePolicy a = spec.quantize_for(xt);
  const std::optional<QuantizePolicy> b = vs ? std::optional<QuantizePolicy>(vs->quantize_for(xt)) : std::nullopt;
  SweepOptions so;
  so.threads = o.threads;
  const QuantizeSweep r = sweep_quantize(xt, quant_params(o, {1}, out), out, a, b ? &*b : nullptr, so);
  json labels = json::object();
  for (std::size_t l = 0; l < r.labels.size(); ++l) labels[std::string(name(static_cast<Label>(l)))] = r.labels[l];
  json j = {{"op", "quantize"},
            {"spec", spec.name},
            {"from", std::string(name(xt))},
            {"to", std::string(name(out))},
            {"inputs", r.count},
            {"labels", labels},
            {"open", r.open},
            {"slow_path_elements", r.slow_elements},
            {"output_range", {r.q_min, r.q_max}},
            {"digest", hex64(r.digest)}};
  if (vs) {
    json first = json::array();
    for (const SweepDifference& d : r.first)
      first.push_back({{"bits", "0x" + hex64(d.bits).substr(16 - static_cast<std::size_t>(info(xt).bits) / 4)},
                       {"x", std::isfinite(d.x) ? json(d.x)
                                                : json(std::isnan(d.x) ? "nan"
                                                       : d.x < 0       ? "-inf"
                                                                       : "inf")},
                       {spec.name, d.q},
                       {vs->name, d.q_vs},
                       {"labels", {std::string(name(d.label)), std::string(name(d.label_vs))}}});
    j["vs"] = {{"spec", vs->name}, {"differ", r.differ}, {"first", first}};
  }
  std::cout << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int cmd_oracle(const OracleOptions& o) {
  const Spec spec = build_spec(o.spec, o, "--spec");
  if (o.sweep) return cmd_sweep(o, spec);
  if (!o.vs.empty()) throw InputError("--vs goes with --sweep (or with explain)");
  Tensor result;
  std::vector<Label> labels;
  if (o.op == "quantize") {
    const DType xt = dtype_option(o.from, "f32", "--from"), out = dtype_option(o.to, "i8", "--to");
    const Tensor x = load_values(o, xt);
    QuantizeResult r = quantize(x, quant_params(o, x.shape(), out), out, spec.quantize_for(xt));
    result = std::move(r.q);
    labels = std::move(r.labels);
  } else if (o.op == "dequantize") {
    const DType qt = dtype_option(o.from, "i8", "--from"), out = dtype_option(o.to, "f32", "--to");
    const Tensor q = load_values(o, qt);
    DequantizeResult r = dequantize(q, quant_params(o, q.shape(), qt), out, spec.dequantize);
    result = std::move(r.y);
    labels = std::move(r.labels);
  } else {
    const DType at = dtype_option(o.from, "i32", "--from"), out = dtype_option(o.to, "i8", "--to");
    const Tensor acc = load_values(o, at);
    if (auto m = explicit_multiplier(o, spec.requantize)) {
      result = Tensor(out, acc.shape());
      const std::int64_t zp = o.zero_point.empty() ? 0 : o.zero_point[0];
      for (std::int64_t i = 0; i < acc.size(); ++i) {
        const RequantizeElement r = requantize_element(acc.get_int(i), *m, zp, out, spec.requantize);
        result.set_int(i, r.q);
        labels.push_back(r.label);
      }
    } else {
      RequantizeParams p;
      p.scale_dtype = dtype_option(o.scale_type, "f32", "--scale-type");
      const RequantizeScales s = requantize_scales(o, 0);
      p.input_scale = s.input;
      p.output_scale = s.output;
      p.weight_scales.clear();
      for (std::size_t c = 0; c < o.weight_scale.size(); ++c) p.weight_scales.push_back(requantize_scales(o, c).weight);
      p.axis = o.axis;
      p.output_zero_points = o.zero_point;
      validate(p, acc.shape(), out, "parameters");
      RequantizeResult r = requantize(acc, p, out, spec.requantize);
      result = std::move(r.q);
      labels = std::move(r.labels);
    }
  }
  if (!o.output.empty()) {
    write_npy(o.output, result);
    return 0;
  }
  json j = {{"op", o.op}, {"spec", spec.name}, {"dtype", std::string(name(result.dtype()))}, {"shape", result.shape()}};
  json vals = json::array();
  for (std::int64_t i = 0; i < result.size(); ++i) vals.push_back(value_json(result, i));
  j["values"] = vals;
  if (o.labels) {
    json l = json::array();
    for (Label x : labels) l.push_back(std::string(name(x)));
    j["labels"] = l;
  }
  std::cout << j.dump() << "\n";
  return 0;
}

int cmd_explain(const OracleOptions& o) {
  if (o.at.empty()) throw InputError("explain " + o.op + ": --at names the input element");
  // Both specs and both derivations first: a bad --vs prints nothing but its error.
  const Spec a = build_spec(o.spec, o, "--spec");
  const ElementDerivation ea = explain_one(o, a);
  const std::optional<Spec> vs = o.vs.empty() ? std::nullopt : std::optional<Spec>(build_spec(o.vs, o, "--vs"));
  const std::optional<ElementDerivation> evs =
      vs ? std::optional<ElementDerivation>(explain_one(o, *vs)) : std::nullopt;
  std::cout << o.op << " " << o.at << " under " << a.name << " (" << a.description << ")\n"
            << steps_text(ea.steps) << "  result: " << ea.result << "  [" << ea.label << "]\n";
  if (!vs) return 0;
  std::cout << "\n"
            << o.op << " " << o.at << " under " << vs->name << " (" << vs->description << ")\n"
            << steps_text(evs->steps) << "  result: " << evs->result << "  [" << evs->label << "]\n\n"
            << where_they_part(ea, *evs) << "\n";
  return 0;
}

}  // namespace qc
