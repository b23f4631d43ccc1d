#include "cases/case.hpp"

#include "cases/generators.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/error.hpp"
#include "oracles/int4.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace qc {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string Expectation::str() const {
  switch (kind) {
    case Kind::exact:
      return "exact";
    case Kind::max_lsb:
      return "max_lsb:" + std::to_string(tolerance);
    case Kind::max_ulp:
      return "max_ulp:" + std::to_string(tolerance);
    case Kind::claim:
      return "claim";
    case Kind::dot_product:
      return "dot_product";
  }
  return "?";
}

Expectation Case::expectation_for(const std::string& backend) const {
  if (auto it = expect.find(backend); it != expect.end()) return it->second;
  if (auto it = expect.find("*"); it != expect.end()) return it->second;
  return {};
}

namespace {

// Context for messages: "file:line: case 'name'".
struct Where {
  std::string file;
  int line = 0;
  std::string case_name;
  std::string prefix;  // the enclosing object's path, e.g. "a." for a GEMM operand
  std::string str() const {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    if (!case_name.empty()) s += ": case '" + case_name + "'";
    return s;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(str() + ": field '" + prefix + field + "': " + what);
  }
};

int line_of_offset(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(
                 std::count(text.begin(), text.begin() + static_cast<long>(std::min(offset, text.size())), '\n'));
}

// The line where `"name": "<name>"` appears, for messages (0 if not found).
int line_of_case(const std::string& text, const std::string& name) {
  const std::string needle = "\"" + name + "\"";
  std::size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    std::size_t k = text.rfind("\"name\"", pos);
    if (k != std::string::npos && text.find_first_not_of(" \t\r\n:", k + 6) == pos) return line_of_offset(text, pos);
    pos += needle.size();
  }
  return 0;
}

void check_fields(const json& obj, const std::set<std::string>& allowed, const Where& w, const std::string& prefix) {
  for (const auto& [key, _] : obj.items()) {
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      w.fail(prefix + key, "unknown field (allowed: " + list + ")");
    }
  }
}

// A number from JSON: a JSON number, or a string: "nan", "inf", "-inf", "-0", or a C99
// hexadecimal float ("0x1.8p-1") for bit-exact inputs.
double number(const json& v, const Where& w, const std::string& field) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return d;
    w.fail(field, "'" + s + "' is not a number");
  }
  w.fail(field, "expected a number, got " + std::string(v.type_name()));
}

std::int64_t integer(const json& v, const Where& w, const std::string& field) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<std::int64_t>(d);
  }
  w.fail(field, "expected an integer, got " + v.dump());
}

DType dtype(const json& v, const Where& w, const std::string& field) {
  if (!v.is_string()) w.fail(field, "expected a dtype name such as \"f32\" or \"i8\"");
  auto t = parse_dtype(v.get<std::string>());
  if (!t) w.fail(field, "unknown dtype '" + v.get<std::string>() + "'");
  return *t;
}

std::vector<double> numbers(const json& v, const Where& w, const std::string& field) {
  std::vector<double> out;
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(number(v[i], w, field + "[" + std::to_string(i) + "]"));
  } else {
    out.push_back(number(v, w, field));
  }
  return out;
}

double round_into(DType t, double v) { return is_float(t) ? float_bits_to_double(t, double_to_float_bits(t, v)) : v; }

// The tensor's values from a generator object; `c` is the case, whose scale, zero point and
// output format are the defaults for generators that need them.
void fill_from_generator(Tensor& x, const json& g, const json& c, const Where& w) {
  const std::string p = "input.generator.";
  if (!g.is_object() || !g.contains("kind") || !g["kind"].is_string())
    w.fail("input.generator", "expected an object with a 'kind'");
  const std::string kind = g["kind"].get<std::string>();
  const auto seed = static_cast<std::uint64_t>(g.contains("seed") ? integer(g["seed"], w, p + "seed") : 0);
  auto num = [&](const char* k, double fallback) { return g.contains(k) ? number(g[k], w, p + k) : fallback; };
  auto intg = [&](const char* k, std::int64_t fallback) { return g.contains(k) ? integer(g[k], w, p + k) : fallback; };
  auto case_scale = [&] {
    if (g.contains("scale")) return number(g["scale"], w, p + "scale");
    if (c.contains("scale")) return numbers(c["scale"], w, "scale").at(0);
    w.fail(p + "scale", "missing (and the case has no 'scale')");
  };
  try {
    if (kind == "uniform") {
      check_fields(g, {"kind", "seed", "low", "high"}, w, p);
      const double lo = num("low", -1.0), hi = num("high", 1.0);
      if (!(lo < hi)) w.fail("input.generator", "needs low < high");
      fill_uniform(x, seed, lo, hi);
    } else if (kind == "normal") {
      check_fields(g, {"kind", "seed", "mean", "std"}, w, p);
      fill_normal(x, seed, num("mean", 0.0), num("std", 1.0));
    } else if (kind == "ties") {
      check_fields(g, {"kind", "seed", "scale", "k_min", "k_max"}, w, p);
      fill_ties(x, seed, case_scale(), intg("k_min", -130), intg("k_max", 130));
    } else if (kind == "saturation") {
      check_fields(g, {"kind", "seed", "scale", "zero_point", "output_dtype"}, w, p);
      const std::int64_t zp = g.contains("zero_point") ? integer(g["zero_point"], w, p + "zero_point")
                              : c.contains("zero_point")
                                  ? (c["zero_point"].is_array() ? integer(c["zero_point"].at(0), w, "zero_point")
                                                                : integer(c["zero_point"], w, "zero_point"))
                                  : 0;
      const json& od = g.contains("output_dtype")   ? g["output_dtype"]
                       : c.contains("output_dtype") ? c["output_dtype"]
                                                    : json();
      fill_saturation_edges(x, seed, case_scale(), zp, dtype(od, w, p + "output_dtype"));
    } else if (kind == "exhaustive") {
      check_fields(g, {"kind"}, w, p);
      fill_exhaustive(x);
    } else if (kind == "specials") {
      check_fields(g, {"kind"}, w, p);
      fill_specials(x);
    } else if (kind == "accumulator_stress") {
      check_fields(g, {"kind", "seed"}, w, p);
      fill_accumulator_stress(x, seed);
    } else if (kind == "tosa_dot_product") {
      check_fields(g, {"kind", "set", "operand", "ks", "k_axis", "bound"}, w, p);
      const int axis = static_cast<int>(intg("k_axis", -1));
      const int a = axis < 0 ? axis + x.rank() : axis;
      if (a < 0 || a >= x.rank()) w.fail(p + "k_axis", "out of range for shape " + shape_str(x.shape()));
      // B for f32 data with an f32 accumulator, (1<<64) - (1<<40); f16 with f32, 65504; bf16, (1<<64) - (1<<56).
      const double b = x.dtype() == DType::f16    ? 65504.0
                       : x.dtype() == DType::bf16 ? 18374686479671623680.0
                                                  : 18446742974197923840.0;
      fill_tosa_dot_product(x, static_cast<int>(intg("set", 0)), static_cast<int>(intg("operand", 0)),
                            intg("ks", x.shape()[static_cast<std::size_t>(a)]), axis, num("bound", b));
    } else {
      w.fail(p + "kind", "unknown generator '" + kind +
                             "' (known: uniform, normal, ties, saturation, exhaustive, specials, accumulator_stress, "
                             "tosa_dot_product)");
    }
  } catch (const InputError& e) {
    const std::string m = e.what();
    if (m.rfind(w.file, 0) == 0) throw;  // already located
    w.fail("input.generator", m);
  }
}

Tensor load_input(const json& j, const json& c, const Where& w) {
  if (!j.is_object()) w.fail("input", "expected an object with dtype, shape and data or generator");
  check_fields(j, {"dtype", "shape", "data", "generator"}, w, "input.");
  if (!j.contains("dtype")) w.fail("input.dtype", "missing");
  if (!j.contains("shape")) w.fail("input.shape", "missing");
  const DType t = dtype(j["dtype"], w, "input.dtype");
  Shape shape;
  if (!j["shape"].is_array()) w.fail("input.shape", "expected a list of dimensions");
  for (std::size_t i = 0; i < j["shape"].size(); ++i) {
    const std::int64_t d = integer(j["shape"][i], w, "input.shape[" + std::to_string(i) + "]");
    if (d <= 0)
      w.fail("input.shape[" + std::to_string(i) + "]", "dimensions must be positive, got " + std::to_string(d));
    shape.push_back(d);
  }
  Tensor x(t, shape);
  const bool has_data = j.contains("data"), has_gen = j.contains("generator");
  if (has_data == has_gen) w.fail("input", "give exactly one of 'data' or 'generator'");
  if (has_data) {
    const json& d = j["data"];
    if (!d.is_array()) w.fail("input.data", "expected a flat list of values");
    if (static_cast<std::int64_t>(d.size()) != x.size())
      w.fail("input.data", "has " + std::to_string(d.size()) + " values but shape " + shape_str(shape) + " needs " +
                               std::to_string(x.size()));
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const std::string f = "input.data[" + std::to_string(i) + "]";
      if (is_float(t)) {
        x.set_double(i, round_into(t, number(d[static_cast<std::size_t>(i)], w, f)));
      } else {
        const std::int64_t v = integer(d[static_cast<std::size_t>(i)], w, f);
        if (v < int_min(t) || v > int_max(t)) w.fail(f, std::to_string(v) + " is outside " + std::string(name(t)));
        x.set_int(i, v);
      }
    }
    return x;
  }
  fill_from_generator(x, j["generator"], c, w);
  return x;
}

// Sets `target` from obj[key] (a string) through `parse`, naming the field on failure.
template <class T, class Parse>
void set_enum(const json& obj, const char* key, const std::string& prefix, const Where& w, Parse parse, T& target) {
  if (!obj.contains(key)) return;
  const std::string field = prefix + key;
  if (!obj[key].is_string()) w.fail(field, "expected a string");
  const std::string v = obj[key].get<std::string>();
  auto parsed = parse(v);
  if (!parsed) w.fail(field, "unknown value '" + v + "'");
  target = *parsed;
}

void set_bool(const json& obj, const char* key, const std::string& prefix, const Where& w, bool& target) {
  if (!obj.contains(key)) return;
  if (!obj[key].is_boolean()) w.fail(prefix + key, "expected true or false");
  target = obj[key].get<bool>();
}

void set_clip(const json& obj, const std::string& prefix, const Where& w,
              std::optional<std::pair<std::int64_t, std::int64_t>>& target) {
  if (!obj.contains("clip")) return;
  const json& c = obj["clip"];
  if (!c.is_array() || c.size() != 2) w.fail(prefix + "clip", "expected [low, high]");
  target = std::pair{integer(c[0], w, prefix + "clip[0]"), integer(c[1], w, prefix + "clip[1]")};
  if (target->first > target->second) w.fail(prefix + "clip", "low > high");
}

Spec load_spec(const json& j, const Where& w) {
  if (j.is_string()) {
    auto p = find_preset(j.get<std::string>());
    if (!p) w.fail("spec", "unknown preset '" + j.get<std::string>() + "' (see `qconform list presets`)");
    return *p;
  }
  if (!j.is_object()) w.fail("spec", "expected a preset name or an object {\"preset\": ..., overrides}");
  check_fields(j,
               {"preset", "order", "compute", "rounding", "clamp", "narrow_range", "clip", "nan", "dequantize",
                "requantize", "accumulation", "qparams"},
               w, "spec.");
  Spec s = j.contains("preset") ? load_spec(j["preset"], w) : *find_preset("onnx");
  s.name += "+custom";
  s.description = "explicit policy: " + j.dump();
  const std::string p = "spec.";
  // Quantize overrides sit at the top level and apply to every quantize path of the preset.
  auto apply = [&](QuantizePolicy& q) {
    set_enum(j, "order", p, w, parse_quantize_order, q.order);
    set_enum(j, "compute", p, w, parse_compute_format, q.compute);
    set_enum(j, "rounding", p, w, parse_rounding_mode, q.rounding);
    set_enum(j, "clamp", p, w, parse_clamp, q.clamp);
    set_enum(j, "nan", p, w, parse_nan_rule, q.nan);
    set_bool(j, "narrow_range", p, w, q.narrow_range);
    set_clip(j, p, w, q.clip);
  };
  apply(s.quantize);
  if (s.quantize_half_input) apply(*s.quantize_half_input);
  if (j.contains("dequantize")) {
    const json& d = j["dequantize"];
    const std::string dp = "spec.dequantize.";
    if (!d.is_object()) w.fail("spec.dequantize", "expected an object");
    check_fields(d, {"order", "compute"}, w, dp);
    set_enum(d, "order", dp, w, parse_dequantize_order, s.dequantize.order);
    set_enum(d, "compute", dp, w, parse_compute_format, s.dequantize.compute);
  }
  if (j.contains("requantize")) {
    const json& r = j["requantize"];
    const std::string rp = "spec.requantize.";
    if (!r.is_object()) w.fail("spec.requantize", "expected an object");
    check_fields(r,
                 {"scheme", "multiplier_order", "multiplier_format", "derivation", "product_format", "zero_point",
                  "rounding", "clamp", "narrow_range", "clip"},
                 w, rp);
    RequantizePolicy& q = s.requantize;
    if (r.contains("scheme")) {  // a scheme brings its source's own defaults, then the overrides apply
      RequantizeScheme scheme = q.scheme;
      set_enum(r, "scheme", rp, w, parse_requantize_scheme, scheme);
      q = requantize_policy_for(scheme);
    }
    set_enum(r, "multiplier_order", rp, w, parse_multiplier_order, q.multiplier_order);
    set_enum(r, "multiplier_format", rp, w, parse_compute_format, q.multiplier_format);
    set_enum(r, "derivation", rp, w, parse_multiplier_derivation, q.derivation);
    set_enum(r, "product_format", rp, w, parse_compute_format, q.product_format);
    set_enum(r, "zero_point", rp, w, parse_zero_point_add, q.zero_point);
    set_enum(r, "rounding", rp, w, parse_rounding_mode, q.rounding);
    set_enum(r, "clamp", rp, w, parse_clamp, q.clamp);
    set_bool(r, "narrow_range", rp, w, q.narrow_range);
    set_clip(r, rp, w, q.clip);
    if (scheme_uses_derivation(q.scheme) && !scheme_accepts(q.scheme, q.derivation))
      w.fail(rp + "derivation",
             "scheme " + std::string(name(q.scheme)) + " cannot use derivation " + std::string(name(q.derivation)));
  }
  set_enum(j, "accumulation", p, w, parse_accumulation, s.accumulation);
  if (j.contains("qparams")) {
    if (!j["qparams"].is_string() || !find_qparams_preset(j["qparams"].get<std::string>()))
      w.fail("spec.qparams", "unknown parameter-choice rule " + j["qparams"].dump());
    s.qparams = j["qparams"].get<std::string>();
  }
  return s;
}

Expectation load_expectation(const json& j, const Where& w, const std::string& field) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "exact") return {Expectation::Kind::exact, 0};
    if (s == "claim") return {Expectation::Kind::claim, 0};
    if (s == "dot_product") return {Expectation::Kind::dot_product, 0};
    w.fail(field, "unknown expectation '" + s + "' (exact, claim, {\"max_lsb\": n}, {\"max_ulp\": n})");
  }
  for (const auto& [key, kind] :
       {std::pair{"max_lsb", Expectation::Kind::max_lsb}, std::pair{"max_ulp", Expectation::Kind::max_ulp}}) {
    if (j.is_object() && j.size() == 1 && j.contains(key)) {
      const std::int64_t n = integer(j[key], w, field + "." + key);
      if (n < 0) w.fail(field + "." + key, "must be >= 0");
      return {kind, n};
    }
  }
  w.fail(field, "expected \"exact\", \"claim\", {\"max_lsb\": n} or {\"max_ulp\": n}");
}

// Scales from the "scale" (or another) field: positive, finite, rounded into the scales' format.
std::vector<double> load_scales(const json& j, const char* key, DType scale_dtype, const Where& w) {
  if (!j.contains(key)) w.fail(key, "missing");
  std::vector<double> scales = numbers(j[key], w, key);
  for (std::size_t i = 0; i < scales.size(); ++i) {
    const double s = scales[i];
    if (!(s > 0) || !std::isfinite(s))
      w.fail(j[key].is_array() ? std::string(key) + "[" + std::to_string(i) + "]" : std::string(key),
             "must be positive and finite, got " + j[key].dump());
    scales[i] = round_into(scale_dtype, s);
  }
  return scales;
}

std::vector<std::int64_t> load_zero_points(const json& j, const Where& w) {
  std::vector<std::int64_t> zps;
  if (!j.contains("zero_point")) return zps;
  const json& z = j["zero_point"];
  if (z.is_array()) {
    for (std::size_t i = 0; i < z.size(); ++i) zps.push_back(integer(z[i], w, "zero_point[" + std::to_string(i) + "]"));
  } else {
    zps.push_back(integer(z, w, "zero_point"));
  }
  return zps;
}

DType scale_dtype_of(const json& j, const Where& w) {
  const DType t = j.contains("scale_dtype") ? dtype(j["scale_dtype"], w, "scale_dtype") : DType::f32;
  if (!is_float(t)) w.fail("scale_dtype", "scales must have a float format");
  return t;
}

// Scales, zero points, axis and block size of a quantize or dequantize case, validated against
// the shape and the integer format `q`.
QuantParams load_quant_params(const json& j, const Shape& shape, DType q, const Where& w) {
  QuantParams p;
  p.scale_dtype = scale_dtype_of(j, w);
  p.scales = load_scales(j, "scale", p.scale_dtype, w);
  p.zero_points = load_zero_points(j, w);
  if (j.contains("axis")) p.axis = static_cast<int>(integer(j["axis"], w, "axis"));
  if (j.contains("block_size")) {
    p.block_size = integer(j["block_size"], w, "block_size");
    if (p.block_size <= 0) w.fail("block_size", "must be positive, got " + std::to_string(p.block_size));
  }
  if (p.zero_points.size() == 1 && p.scales.size() > 1) p.zero_points.assign(p.scales.size(), p.zero_points[0]);
  validate(p, shape, q, w.str(), w.prefix);
  return p;
}

DType output_dtype(const json& j, const Where& w, std::optional<DType> fallback = std::nullopt) {
  if (!j.contains("output_dtype")) {
    if (fallback) return *fallback;
    w.fail("output_dtype", "missing");
  }
  return dtype(j["output_dtype"], w, "output_dtype");
}

OpRequest load_quantize(const json& j, const Where& w) {
  QuantizeOp q;
  if (!j.contains("input")) w.fail("input", "missing");
  q.x = load_input(j["input"], j, w);
  q.out = output_dtype(j, w);
  if (!is_int(q.out)) w.fail("output_dtype", "quantize needs an integer output format");
  if (!is_float(q.x.dtype()) && q.x.dtype() != DType::i32) w.fail("input.dtype", "quantize needs a float or i32 input");
  q.params = load_quant_params(j, q.x.shape(), q.out, w);
  return q;
}

OpRequest load_dequantize(const json& j, const Where& w) {
  DequantizeOp d;
  if (!j.contains("input")) w.fail("input", "missing");
  d.q = load_input(j["input"], j, w);
  if (!is_int(d.q.dtype())) w.fail("input.dtype", "dequantize needs an integer input");
  d.out = output_dtype(j, w, DType::f32);
  if (!is_float(d.out)) w.fail("output_dtype", "dequantize needs a float output format");
  d.params = load_quant_params(j, d.q.shape(), d.q.dtype(), w);
  return d;
}

OpRequest load_requantize(const json& j, const Where& w) {
  RequantizeOp r;
  if (!j.contains("input")) w.fail("input", "missing");
  r.acc = load_input(j["input"], j, w);
  if (!is_int(r.acc.dtype())) w.fail("input.dtype", "requantize needs integer accumulators (i32)");
  r.out = output_dtype(j, w);
  if (!is_int(r.out)) w.fail("output_dtype", "requantize needs an integer output format");
  RequantizeParams& p = r.params;
  p.scale_dtype = scale_dtype_of(j, w);
  p.input_scale = load_scales(j, "input_scale", p.scale_dtype, w).at(0);
  p.weight_scales = load_scales(j, "weight_scale", p.scale_dtype, w);
  p.output_scale = load_scales(j, "output_scale", p.scale_dtype, w).at(0);
  p.output_zero_points = load_zero_points(j, w);
  if (j.contains("axis")) p.axis = static_cast<int>(integer(j["axis"], w, "axis"));
  validate(p, r.acc.shape(), r.out, w.str());
  return r;
}

// ---- qgemm and qconv2d ------------------------------------------------------------------------

Where nested(const Where& w, const std::string& key) {
  Where n = w;
  n.prefix += key + ".";
  return n;
}

// The tensor part of an operand object (dtype, shape, data or generator).
Tensor load_operand_values(const json& o, const json& c, const Where& w) {
  json t = json::object();
  for (const char* k : {"dtype", "shape", "data", "generator"})
    if (o.contains(k)) t[k] = o[k];
  return load_input(t, c, w);
}

ActivationOperand load_activation(const json& j, const char* key, const Spec& spec, const Where& cw) {
  if (!j.contains(key) || !j[key].is_object()) cw.fail(key, "missing operand object");
  const json& o = j[key];
  const Where w = nested(cw, key);
  check_fields(o,
               {"dtype", "shape", "data", "generator", "format", "quantize", "scale", "scale_dtype", "zero_point",
                "axis", "block_size", "layout"},
               w, "");
  ActivationOperand a;
  a.values = load_operand_values(o, j, w);
  a.format = is_int(a.values.dtype()) ? a.values.dtype()
                                      : (o.contains("format") ? dtype(o["format"], w, "format") : DType::u8);
  if (!is_int(a.format)) w.fail("format", "must be an integer format");
  const std::string mode =
      o.contains("quantize") && o["quantize"].is_string() ? o["quantize"].get<std::string>() : "static";
  if (mode == "static") {
    a.quantization = ActivationQuantization::static_params;
    a.params = load_quant_params(o, a.values.shape(), a.format, w);
  } else if (mode == "dynamic_per_tensor" || mode == "dynamic_per_row") {
    if (is_int(a.values.dtype())) w.fail("quantize", "dynamic quantization needs float values");
    a.quantization = mode == "dynamic_per_row" ? ActivationQuantization::dynamic_per_row
                                               : ActivationQuantization::dynamic_per_tensor;
    auto rule = find_qparams_preset(spec.qparams);
    if (!rule) cw.fail("spec", "its parameter-choice rule '" + spec.qparams + "' is unknown");
    a.rule = *rule;
  } else {
    w.fail("quantize", "unknown mode '" + mode + "' (static, dynamic_per_tensor, dynamic_per_row)");
  }
  return a;
}

QWeights load_weights(const json& j, const char* key, const Where& cw) {
  if (!j.contains(key) || !j[key].is_object()) cw.fail(key, "missing operand object");
  const json& o = j[key];
  const Where w = nested(cw, key);
  check_fields(o,
               {"dtype", "shape", "data", "generator", "format", "scale", "scale_dtype", "zero_point", "axis",
                "block_size", "layout", "packing"},
               w, "");
  QWeights b;
  Tensor v = load_operand_values(o, j, w);
  b.format = is_int(v.dtype()) ? v.dtype() : (o.contains("format") ? dtype(o["format"], w, "format") : DType::i8);
  if (!is_int(b.format)) w.fail("format", "must be an integer format");
  b.params = load_quant_params(o, v.shape(), b.format, w);
  b.shape = v.shape();
  if (o.contains("packing")) {
    if (b.format != DType::i4 && b.format != DType::u4) w.fail("packing", "only int4/uint4 weights are packed");
    const std::string p = o["packing"].is_string() ? o["packing"].get<std::string>() : "";
    if (p == "onnx")
      b.packing = onnx_int4_packing();
    else if (p == "torchao")
      b.packing = torchao_uint4_packing();
    else if (p == "migraphx")
      b.packing = migraphx_int4_packing();
    else
      w.fail("packing", "unknown packing '" + p + "' (onnx, torchao, migraphx)");
    try {
      v = pack_int4(v, b.format, *b.packing);
    } catch (const InputError& e) {
      w.fail("packing", e.what());
    }
  }
  b.values = std::move(v);
  return b;
}

std::optional<Tensor> load_bias(const json& j, const Where& cw) {
  if (!j.contains("bias")) return std::nullopt;
  const Where w = nested(cw, "bias");
  if (!j["bias"].is_object()) cw.fail("bias", "expected an operand object {dtype, shape, data|generator}");
  Tensor t = load_input(j["bias"], j, w);
  if (t.dtype() != DType::i32 && !is_float(t.dtype())) w.fail("dtype", "bias must be i32 or a float format");
  return t;
}

OutputStage load_output_stage(const json& j, const Where& cw) {
  if (!j.contains("output") || !j["output"].is_object()) cw.fail("output", "missing object {kind, dtype, ...}");
  const json& o = j["output"];
  const Where w = nested(cw, "output");
  check_fields(o, {"kind", "dtype", "scale", "zero_point", "activation", "scale_dtype"}, w, "");
  OutputStage s;
  const std::string kind = o.contains("kind") && o["kind"].is_string() ? o["kind"].get<std::string>() : "";
  if (kind == "int32") {
    s.kind = OutputKind::int32;
    s.format = DType::i32;
  } else if (kind == "dequantized") {
    s.kind = OutputKind::dequantized;
    s.format = o.contains("dtype") ? dtype(o["dtype"], w, "dtype") : DType::f32;
    if (!is_float(s.format)) w.fail("dtype", "a dequantized output needs a float format");
  } else if (kind == "requantized") {
    s.kind = OutputKind::requantized;
    s.format = o.contains("dtype") ? dtype(o["dtype"], w, "dtype") : DType::i8;
    if (!is_int(s.format)) w.fail("dtype", "a requantized output needs an integer format");
    s.scale = load_scales(o, "scale", DType::f32, w).at(0);
    s.zero_point = o.contains("zero_point") ? integer(o["zero_point"], w, "zero_point") : 0;
    if (s.zero_point < int_min(s.format) || s.zero_point > int_max(s.format))
      w.fail("zero_point", std::to_string(s.zero_point) + " is outside " + std::string(name(s.format)));
    const std::string act =
        o.contains("activation") && o["activation"].is_string() ? o["activation"].get<std::string>() : "none";
    FusedActivation fa = FusedActivation::none;
    if (act == "relu")
      fa = FusedActivation::relu;
    else if (act == "relu6")
      fa = FusedActivation::relu6;
    else if (act == "relu_n1_to_1")
      fa = FusedActivation::relu_n1_to_1;
    else if (act != "none")
      w.fail("activation", "unknown activation '" + act + "' (none, relu, relu6, relu_n1_to_1)");
    if (fa != FusedActivation::none)
      s.clamp = fused_activation_range(fa, static_cast<float>(s.scale), s.zero_point, s.format);
  } else {
    w.fail("kind", kind.empty() ? "missing (int32, dequantized, requantized)" : "unknown output kind '" + kind + "'");
  }
  return s;
}

std::vector<std::int64_t> int_list(const json& j, const char* key, std::size_t n, std::int64_t fallback,
                                   const Where& w) {
  std::vector<std::int64_t> v(n, fallback);
  if (!j.contains(key)) return v;
  const json& a = j[key];
  if (!a.is_array() || a.size() != n) w.fail(key, "expected a list of " + std::to_string(n) + " integers");
  for (std::size_t i = 0; i < n; ++i) v[i] = integer(a[i], w, std::string(key) + "[" + std::to_string(i) + "]");
  return v;
}

// The layout of a GEMM's weights "b": [K, N] (k_by_n, the default) or [N, K] (n_by_k).
WeightLayout load_weight_layout(const json& j, const Where& w) {
  if (!j["b"].contains("layout")) return WeightLayout::k_by_n;
  const std::string l = j["b"]["layout"].is_string() ? j["b"]["layout"].get<std::string>() : "";
  if (l == "k_by_n") return WeightLayout::k_by_n;
  if (l == "n_by_k") return WeightLayout::n_by_k;
  nested(w, "b").fail("layout", "unknown layout '" + l + "' (k_by_n, n_by_k)");
}

OpRequest load_qgemm(const json& j, const Spec& spec, const Where& w) {
  QGemmOp g;
  g.a = load_activation(j, "a", spec, w);
  g.b = load_weights(j, "b", w);
  g.b_layout = load_weight_layout(j, w);
  g.bias = load_bias(j, w);
  g.output = load_output_stage(j, w);
  try {
    (void)gemm_shape(g.a.values.shape(), g.b.shape, g.b_layout);  // K of A and B agree
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  return g;
}

OpRequest load_weight_only(const json& j, const Where& w) {
  WeightOnlyGemmOp g;
  if (!j.contains("a") || !j["a"].is_object()) w.fail("a", "missing operand object");
  const Where aw = nested(w, "a");
  check_fields(j["a"], {"dtype", "shape", "data", "generator"}, aw, "");
  g.a = load_operand_values(j["a"], j, aw);
  if (!is_float(g.a.dtype())) aw.fail("dtype", "weight-only activations are floats");
  g.b = load_weights(j, "b", w);
  g.b_layout = load_weight_layout(j, w);
  g.bias = load_bias(j, w);
  if (g.bias && !is_float(g.bias->dtype())) nested(w, "bias").fail("dtype", "weight-only bias is a float");
  g.out = output_dtype(j, w, DType::f32);
  if (!is_float(g.out)) w.fail("output_dtype", "weight-only output is a float format");
  try {
    (void)gemm_shape(g.a.shape(), g.b.shape, g.b_layout);
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  return g;
}

OpRequest load_qconv2d(const json& j, const Spec& spec, const Where& w) {
  QConv2dOp c;
  c.input = load_activation(j, "input", spec, w);
  if (j["input"].contains("layout")) {
    const std::string l = j["input"]["layout"].is_string() ? j["input"]["layout"].get<std::string>() : "";
    if (l == "nchw")
      c.layout = ConvLayout::nchw;
    else if (l == "nhwc")
      c.layout = ConvLayout::nhwc;
    else
      nested(w, "input").fail("layout", "unknown layout '" + l + "' (nchw, nhwc)");
  }
  c.weight = load_weights(j, "weight", w);
  c.bias = load_bias(j, w);
  const auto stride = int_list(j, "stride", 2, 1, w);
  const auto pad = int_list(j, "padding", 4, 0, w);
  const auto dil = int_list(j, "dilation", 2, 1, w);
  c.geometry = Conv2dGeometry{stride[0], stride[1], pad[0],
                              pad[1],    pad[2],    pad[3],
                              dil[0],    dil[1],    j.contains("groups") ? integer(j["groups"], w, "groups") : 1};
  if (j.contains("padding_value")) {
    const std::string v = j["padding_value"].is_string() ? j["padding_value"].get<std::string>() : "";
    if (v == "real_zero")
      c.padding = ConvPadding::real_zero;
    else if (v == "quantized_zero")
      c.padding = ConvPadding::quantized_zero;
    else
      w.fail("padding_value", "unknown '" + v + "' (real_zero, quantized_zero)");
  }
  c.output = load_output_stage(j, w);
  try {
    (void)resolve_conv2d(c.input.values.shape(), c.layout, c.weight.shape, c.geometry);
  } catch (const InputError& e) {
    w.fail("weight.shape", e.what());
  }
  return c;
}

Case load_case(const json& j, std::size_t index, const std::string& text, const Where& file_where) {
  Where w = file_where;
  if (!j.is_object()) w.fail("cases[" + std::to_string(index) + "]", "expected an object");
  if (!j.contains("name") || !j["name"].is_string())
    w.fail("cases[" + std::to_string(index) + "].name", "every case needs a string 'name'");
  Case c;
  c.name = j["name"].get<std::string>();
  c.line = line_of_case(text, c.name);
  if (c.line == 0) c.line = file_where.line;  // a case expanded from a sweep points at the sweep
  w.line = c.line;
  w.case_name = c.name;
  const std::string op = j.contains("op") && j["op"].is_string() ? j["op"].get<std::string>() : "";
  std::set<std::string> fields = {"name",         "description", "op",          "spec",       "input",
                                  "output_dtype", "expect",      "scale_dtype", "zero_point", "axis"};
  if (op == "quantize" || op == "dequantize") fields.insert({"scale", "block_size"});
  if (op == "requantize") fields.insert({"input_scale", "weight_scale", "output_scale"});
  if (op == "qgemm") fields = {"name", "description", "op", "spec", "expect", "a", "b", "bias", "output"};
  if (op == "weight_only_gemm")
    fields = {"name", "description", "op", "spec", "expect", "a", "b", "bias", "output_dtype"};
  if (op == "qconv2d")
    fields = {"name", "description", "op",     "spec",    "expect",   "input",  "weight",
              "bias", "output",      "stride", "padding", "dilation", "groups", "padding_value"};
  check_fields(j, fields, w, "");
  if (j.contains("description")) c.description = j["description"].get<std::string>();
  c.spec = load_spec(j.contains("spec") ? j["spec"] : json("onnx"), w);
  if (op == "quantize")
    c.op = load_quantize(j, w);
  else if (op == "dequantize")
    c.op = load_dequantize(j, w);
  else if (op == "requantize")
    c.op = load_requantize(j, w);
  else if (op == "qgemm")
    c.op = load_qgemm(j, c.spec, w);
  else if (op == "qconv2d")
    c.op = load_qconv2d(j, c.spec, w);
  else if (op == "weight_only_gemm")
    c.op = load_weight_only(j, w);
  else
    w.fail("op", op.empty() ? "missing"
                            : "unknown op '" + op +
                                  "' (known: quantize, dequantize, requantize, qgemm, qconv2d, weight_only_gemm)");

  if (j.contains("expect")) {
    const json& e = j["expect"];
    if (!e.is_object()) w.fail("expect", "expected an object {backend: expectation}");
    for (const auto& [backend, v] : e.items()) c.expect[backend] = load_expectation(v, w, "expect." + backend);
  }
  return c;
}

// A case with "sweep": {"dotted.path": [v1, v2, ...], ...} stands for the cartesian product of
// the listed values, each set at its path; the expanded cases are named
// "name[path=v,...]" (paths in alphabetical order).
std::vector<json> expand_sweep(const json& c, const Where& w) {
  if (!c.is_object() || !c.contains("sweep")) return {c};
  const json& sw = c["sweep"];
  if (!sw.is_object() || sw.empty()) w.fail("sweep", "expected an object {\"path\": [values...]}");
  std::vector<json> out = {c};
  out[0].erase("sweep");
  for (const auto& [path, values] : sw.items()) {
    if (!values.is_array() || values.empty()) w.fail("sweep." + path, "expected a non-empty list of values");
    std::vector<json> next;
    for (const json& base : out) {
      for (const json& v : values) {
        json e = base;
        json* node = &e;
        std::stringstream parts(path);
        std::vector<std::string> keys;
        for (std::string k; std::getline(parts, k, '.');) keys.push_back(k);
        for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
          if (!node->contains(keys[i])) (*node)[keys[i]] = json::object();
          node = &(*node)[keys[i]];
          if (!node->is_object()) w.fail("sweep." + path, "'" + keys[i] + "' is not an object");
        }
        (*node)[keys.back()] = v;
        const std::string tag = path + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
        const std::string n = e["name"].get<std::string>();
        e["name"] = n.back() == ']' ? n.substr(0, n.size() - 1) + "," + tag + "]" : n + "[" + tag + "]";
        next.push_back(std::move(e));
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace

Spec parse_spec(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error&) {
    j = text;  // a bare preset name
  }
  return load_spec(j, Where{where, 0, "", ""});
}

Suite load_suite(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open case file");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    const int line = line_of_offset(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    if (auto k = msg.find("]: "); k != std::string::npos) msg = msg.substr(k + 3);
    throw InputError(file.string() + ":" + std::to_string(line) + ": JSON syntax error: " + msg);
  }
  Where w{file.string(), 0, "", ""};
  if (!j.is_object()) w.fail("(top level)", "expected an object with 'suite' and 'cases'");
  check_fields(j, {"suite", "description", "cases", "$schema", "expect"}, w, "");
  // A file-level "expect" is every case's default (a case's own entries win).
  std::map<std::string, Expectation> defaults;
  if (j.contains("expect")) {
    if (!j["expect"].is_object()) w.fail("expect", "expected an object {backend: expectation}");
    for (const auto& [backend, v] : j["expect"].items())
      defaults[backend] = load_expectation(v, w, "expect." + backend);
  }
  if (!j.contains("suite") || !j["suite"].is_string()) w.fail("suite", "missing suite name");
  if (!j.contains("cases") || !j["cases"].is_array()) w.fail("cases", "missing list of cases");
  Suite s;
  s.name = j["suite"].get<std::string>();
  s.file = file.string();
  if (j.contains("description")) s.description = j["description"].get<std::string>();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < j["cases"].size(); ++i) {
    const json& raw = j["cases"][i];
    Where cw = w;
    if (raw.is_object() && raw.contains("name") && raw["name"].is_string()) {
      cw.case_name = raw["name"].get<std::string>();
      cw.line = line_of_case(text, cw.case_name);
    }
    for (const json& expanded : expand_sweep(raw, cw)) {
      Case c = load_case(expanded, i, text, cw);
      if (!seen.insert(c.name).second)
        throw InputError(file.string() + ":" + std::to_string(c.line) + ": case '" + c.name + "': duplicate case name");
      c.suite = s.name;
      c.file = s.file;
      for (const auto& [backend, e] : defaults) c.expect.try_emplace(backend, e);
      s.cases.push_back(std::move(c));
    }
  }
  return s;
}

std::vector<Suite> load_suites(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const fs::path& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".json" &&
            e.path().filename().string().find(".schema.") == std::string::npos)
          found.push_back(e.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p)) {
      files.push_back(p);
    } else {
      throw InputError(p.string() + ": no such file or folder");
    }
  }
  std::vector<Suite> suites;
  for (const fs::path& f : files) suites.push_back(load_suite(f));
  return suites;
}

}  // namespace qc
