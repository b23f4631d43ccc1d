#include "cases/case.hpp"

#include "cases/spec_fields.hpp"

#include "cases/generators.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/int4.hpp"
#include "oracles/mx.hpp"
#include "oracles/qadd.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

namespace qc {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::uint64_t tensor_digest(const Tensor& t) {
  // FNV-1a's step on 64-bit words: for fixed later words each step is a bijection of the state, so
  // a change confined to one word (one element: every format's width divides 8 bytes) always shows.
  constexpr std::uint64_t kPrime = 0x100000001B3ull;
  std::uint64_t h = 0xCBF29CE484222325ull;
  const auto mix = [&](std::uint64_t w) { h = (h ^ w) * kPrime; };
  mix(static_cast<std::uint64_t>(t.dtype()));
  mix(t.shape().size());
  for (const std::int64_t d : t.shape()) mix(static_cast<std::uint64_t>(d));
  const std::span<const std::byte> b = t.bytes();
  std::size_t i = 0;
  for (; i + 8 <= b.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b.data() + i, 8);
    mix(w);
  }
  if (i < b.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, b.data() + i, b.size() - i);
    mix(w);
  }
  return h;
}

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

// What a case being loaded may take from the cases loaded before it: their output formats and
// shapes (an operand {"from": name} becomes a tensor of that format and shape), and where the case
// records the links it makes and the generators its operands came from.
struct LinkContext {
  std::map<std::string, std::pair<DType, Shape>> outputs;
  std::vector<OperandLink> links;
  std::vector<GeneratedOperand> generated;  // the operands a generator made
};

// Context for messages: "file:line: case 'name'"; and, while a case loads, its link context.
struct Where {
  std::string file;
  int line = 0;
  std::string case_name;
  std::string prefix;            // the enclosing object's path, e.g. "a." for a GEMM operand
  LinkContext* links = nullptr;  // null: operands cannot take other cases' outputs (a spec alone)
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

// The most elements one tensor of a case may have: 2^28 (1 GiB of f32) unless QCONFORM_MAX_ELEMENTS
// says otherwise, so a shape of 2^40 is an input error naming the limit, not an allocation failure.
std::int64_t max_elements() {
  static const std::int64_t limit = [] {
    const char* v = std::getenv("QCONFORM_MAX_ELEMENTS");
    if (v == nullptr || *v == '\0') return std::int64_t{1} << 28;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || n < 1)
      throw InputError(std::string("QCONFORM_MAX_ELEMENTS='") + v + "': expected a whole number >= 1");
    return static_cast<std::int64_t>(n);
  }();
  return limit;
}

// A tensor of these dimensions (an input, or an op's output: a GEMM's rows x columns, a
// convolution's N x OC x OH x OW) within the limit, its product checked before anything is
// allocated and without overflowing. `what` names it in the message.
void check_element_limit(const Shape& dims, const Where& w, const std::string& field, const std::string& what) {
  std::int64_t elements = 1;
  for (const std::int64_t d : dims) {
    if (d > 0 && elements > max_elements() / d)
      w.fail(field, what + " has more than the limit of " + std::to_string(max_elements()) +
                        " elements per tensor (QCONFORM_MAX_ELEMENTS raises it)");
    elements *= d;
  }
}

int line_of_offset(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(
                 std::count(text.begin(), text.begin() + static_cast<long>(std::min(offset, text.size())), '\n'));
}

// The line of each `"name": "<name>"` in a file's text (the first, for a name given twice), for
// messages: one pass over the text, so a file's cases find their lines in linear time (searching
// the text again for each case made loading quadratic: 16,000 cases took minutes).
class CaseLines {
 public:
  explicit CaseLines(const std::string& text) {
    const std::string key = "\"name\"";
    int line = 1;
    std::size_t counted = 0;  // text before this offset is counted into `line`
    for (std::size_t k = text.find(key); k != std::string::npos; k = text.find(key, k + key.size())) {
      const std::size_t open = text.find_first_not_of(" \t\r\n:", k + key.size());
      if (open == std::string::npos || text[open] != '"' || text.find(':', k + key.size()) > open) continue;
      // The raw text between the quotes (as a case names itself; a name with escapes is not found).
      const std::size_t close = text.find('"', open + 1);
      if (close == std::string::npos) break;
      line += static_cast<int>(
          std::count(text.begin() + static_cast<long>(counted), text.begin() + static_cast<long>(open), '\n'));
      counted = open;
      lines_.try_emplace(text.substr(open + 1, close - open - 1), line);
    }
  }
  // 0 where the text has no such name (a case expanded from a sweep).
  int line(const std::string& name) const {
    const auto it = lines_.find(name);
    return it == lines_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<std::string, int> lines_;
};

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
  // JSON reads 2^63 .. 2^64-1 as unsigned; taken as int64 they would wrap (2^64-1 ran as -1).
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    w.fail(field, v.dump() + " is outside the 64-bit integers");
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

// The tensor's values from a generator object; `c` is the case, whose scale, zero point and
// output format are the defaults for generators that need them. Returns the generator with the
// defaults it took from the case written in (what the case writer writes back).
json fill_from_generator(Tensor& x, const json& g, const json& c, const Where& w) {
  const std::string p = "input.generator.";
  if (!g.is_object() || !g.contains("kind") || !g["kind"].is_string())
    w.fail("input.generator", "expected an object with a 'kind'");
  const std::string kind = g["kind"].get<std::string>();
  const std::int64_t seed_value = g.contains("seed") ? integer(g["seed"], w, p + "seed") : 0;
  if (seed_value < 0) w.fail(p + "seed", "must be >= 0, got " + std::to_string(seed_value));
  const auto seed = static_cast<std::uint64_t>(seed_value);
  auto num = [&](const char* k, double fallback) { return g.contains(k) ? number(g[k], w, p + k) : fallback; };
  auto intg = [&](const char* k, std::int64_t fallback) { return g.contains(k) ? integer(g[k], w, p + k) : fallback; };
  // An integer field with a closed range of meaningful values, checked before any narrowing.
  auto intg_in = [&](const char* k, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = intg(k, fallback);
    if (v < lo || v > hi)
      w.fail(p + k, "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    return v;
  };
  auto positive = [&](const char* k, double v) {
    if (!(v > 0) || !std::isfinite(v)) w.fail(p + k, "must be a finite number > 0");
    return v;
  };
  json made = g;
  auto case_scale = [&] {
    if (g.contains("scale")) return positive("scale", number(g["scale"], w, p + "scale"));
    if (c.contains("scale")) {
      const double s = positive("scale", numbers(c["scale"], w, "scale").at(0));
      made["scale"] = c["scale"].is_array() ? c["scale"][0] : c["scale"];
      return s;
    }
    w.fail(p + "scale", "missing (and the case has no 'scale')");
  };
  try {
    if (kind == "uniform") {
      check_fields(g, {"kind", "seed", "low", "high"}, w, p);
      fill_uniform(x, seed, num("low", -1.0), num("high", 1.0));  // which checks the bounds
    } else if (kind == "normal") {
      check_fields(g, {"kind", "seed", "mean", "std"}, w, p);
      const double mean = num("mean", 0.0), std = num("std", 1.0);
      if (!std::isfinite(mean)) w.fail(p + "mean", "must be finite");
      if (!(std >= 0) || !std::isfinite(std)) w.fail(p + "std", "must be a finite number >= 0");
      fill_normal(x, seed, mean, std);
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
      made["zero_point"] = zp;
      made["output_dtype"] = od;
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
      const auto set = static_cast<int>(intg_in("set", 0, 0, 5));
      const auto operand = static_cast<int>(intg_in("operand", 0, 0, 2));
      const std::int64_t ks = intg_in("ks", x.shape()[static_cast<std::size_t>(a)], 1, max_elements());
      fill_tosa_dot_product(x, set, operand, ks, axis, positive("bound", num("bound", b)));
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
  return made;
}

// The operand a Where's prefix names: "a." -> "a"; a case's own input has no prefix.
std::string operand_of(const Where& w) { return w.prefix.empty() ? "input" : w.prefix.substr(0, w.prefix.size() - 1); }

// Values from a .npy file, {"npy": "path"} in place of the list (a path relative to the case
// file's folder), read bit for bit: any NaN, f16/bf16/f8 payloads included. The file holds the
// operand's format (bf16 and f8 as their bit patterns, i4/u4 one value a byte: qconform/npy.hpp)
// and its shape.
Tensor load_npy_data(const json& d, DType t, const Shape& shape, const Where& w) {
  check_fields(d, {"npy"}, w, "input.data.");
  if (!d.contains("npy") || !d["npy"].is_string() || d["npy"].get<std::string>().empty())
    w.fail("input.data", "expected a list of values or {\"npy\": \"file.npy\"}");
  fs::path file(d["npy"].get<std::string>());
  if (file.is_relative()) file = fs::path(w.file).parent_path() / file;
  // A FIFO or a device would block or never end; a case's data is a file.
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    w.fail("input.data.npy", file.string() + (fs::exists(file, ec) ? ": not a regular file" : ": no such file"));
  Tensor y;
  try {
    y = read_npy(file, npy_storage_dtype(t) != t ? std::optional(t) : std::nullopt);
  } catch (const InputError& e) {
    w.fail("input.data.npy", e.what());
  }
  const std::string holds = file.string() + " holds " + std::string(name(y.dtype())) + " " + shape_str(y.shape());
  if (y.dtype() != t) w.fail("input.data.npy", holds + ", not the operand's " + std::string(name(t)));
  if (y.shape() != shape) w.fail("input.data.npy", holds + ", not the operand's shape " + shape_str(shape));
  if (is_int(t))
    for (std::int64_t i = 0; i < y.size(); ++i)
      if (const std::int64_t v = y.get_int(i); v < int_min(t) || v > int_max(t))
        w.fail("input.data.npy", file.string() + ": element " + std::to_string(i) + " (" + std::to_string(v) +
                                     ") is outside " + std::string(name(t)));
  return y;
}

// An operand {"from": "name", ...}: a tensor of the named case's output format and shape, whose
// values the runner binds (case.hpp, OperandLink). A "dtype" or "shape" given beside "from" must
// be the producer's. `w.prefix` names the operand ("a.", "bias.", ...; empty for a case's input).
Tensor load_linked(const json& j, const Where& w) {
  const std::string operand = operand_of(w);
  Where at = w;
  at.prefix.clear();
  if (j.contains("data") || j.contains("generator"))
    at.fail(operand + ".from", "an operand takes its values from another case or from 'data'/'generator', not both");
  if (!j["from"].is_string()) at.fail(operand + ".from", "expected the name of a case of this file");
  const std::string producer = j["from"].get<std::string>();
  if (!w.links) at.fail(operand + ".from", "operands can be taken from other cases only in a case file");
  const auto it = w.links->outputs.find(producer);
  // load_suite loads producers first and reports unknown names and cycles itself.
  if (it == w.links->outputs.end()) at.fail(operand + ".from", "no case named '" + producer + "' loaded before it");
  const auto& [t, shape] = it->second;
  const std::string produced = "'" + producer + "' outputs " + std::string(name(t)) + " " + shape_str(shape);
  if (j.contains("dtype") && dtype(j["dtype"], at, operand + ".dtype") != t)
    at.fail(operand + ".dtype", produced + ", not " + j["dtype"].dump());
  if (j.contains("shape")) {
    Shape given;
    if (j["shape"].is_array())
      for (std::size_t i = 0; i < j["shape"].size(); ++i)
        given.push_back(integer(j["shape"][i], at, operand + ".shape[" + std::to_string(i) + "]"));
    if (given != shape) at.fail(operand + ".shape", produced + ", not the shape " + j["shape"].dump());
  }
  w.links->links.push_back({operand, producer});
  return Tensor(t, shape);  // zeros until the runner binds the producer's output
}

Tensor load_input(const json& j, const json& c, const Where& w) {
  if (!j.is_object()) w.fail("input", "expected an object with dtype, shape and data or generator");
  check_fields(j, {"dtype", "shape", "data", "generator", "from"}, w, "input.");
  if (j.contains("from")) return load_linked(j, w);
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
  check_element_limit(shape, w, "input.shape", j["shape"].dump());
  Tensor x(t, shape);
  const bool has_data = j.contains("data"), has_gen = j.contains("generator");
  if (has_data == has_gen) w.fail("input", "give exactly one of 'data' or 'generator'");
  if (has_data) {
    const json& d = j["data"];
    if (d.is_object()) return load_npy_data(d, t, shape, w);
    if (!d.is_array()) w.fail("input.data", "expected a flat list of values or {\"npy\": \"file.npy\"}");
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
  const json made = fill_from_generator(x, j["generator"], c, w);
  if (w.links) w.links->generated.push_back({operand_of(w), made.dump(), tensor_digest(x)});
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

// obj[key], one of E's names (qconform/enum_table.hpp), or `fallback` where the key is absent; `what`
// names the choice in the message: "unknown <what> 'x' (a, b, c)".
template <class E>
E enum_field(const json& obj, const char* key, E fallback, const Where& w, const char* what) {
  if (!obj.contains(key)) return fallback;
  const std::string v = obj[key].is_string() ? obj[key].get<std::string>() : obj[key].dump();
  if (const auto e = table_parse<E>(v)) return *e;
  w.fail(key, "unknown " + std::string(what) + " '" + v + "' (" + table_names<E>() + ")");
}

// The policy fields of `obj` (cases/spec_fields.hpp), in the table's order, into `p`.
template <class P>
void read_fields(const json& obj, std::span<const SpecField<P>> fields, P& p, const std::string& prefix,
                 const Where& w) {
  for (const SpecField<P>& f : fields) {
    const std::string key(f.name);
    if (!obj.contains(key)) continue;
    if (const std::string error = f.read(obj[key], p); !error.empty()) w.fail(prefix + key, error);
  }
}

template <class P>
std::set<std::string> field_names(std::span<const SpecField<P>> fields) {
  std::set<std::string> names;
  for (const SpecField<P>& f : fields) names.emplace(f.name);
  return names;
}

Spec load_spec(const json& j, const Where& w) {
  if (j.is_string()) {
    auto p = find_preset(j.get<std::string>());
    if (!p) w.fail("spec", "unknown preset '" + j.get<std::string>() + "' (see `qconform list presets`)");
    return *p;
  }
  if (!j.is_object()) w.fail("spec", "expected a preset name or an object {\"preset\": ..., overrides}");
  std::set<std::string> allowed = field_names(quantize_fields());
  allowed.insert({"preset", "dequantize", "requantize", "accumulation", "qparams", "add"});
  check_fields(j, allowed, w, "spec.");
  Spec s = j.contains("preset") ? load_spec(j["preset"], w) : *find_preset("onnx");
  s.name += "+custom";
  s.description = "explicit policy: " + j.dump();
  const std::string p = "spec.";
  // Quantize overrides sit at the top level and apply to every quantize path of the preset.
  read_fields(j, quantize_fields(), s.quantize, p, w);
  if (s.quantize_half_input) read_fields(j, quantize_fields(), *s.quantize_half_input, p, w);
  if (j.contains("dequantize")) {
    const json& d = j["dequantize"];
    const std::string dp = "spec.dequantize.";
    if (!d.is_object()) w.fail("spec.dequantize", "expected an object");
    check_fields(d, field_names(dequantize_fields()), w, dp);
    read_fields(d, dequantize_fields(), s.dequantize, dp, w);
  }
  if (j.contains("requantize")) {
    const json& r = j["requantize"];
    const std::string rp = "spec.requantize.";
    if (!r.is_object()) w.fail("spec.requantize", "expected an object");
    check_fields(r, field_names(requantize_fields()), w, rp);
    // A scheme brings its source's own defaults, then the other fields override them.
    RequantizePolicy& q = s.requantize;
    read_fields(r, requantize_fields(), q, rp, w);
    if (scheme_uses_derivation(q.scheme) && !scheme_accepts(q.scheme, q.derivation))
      w.fail(rp + "derivation",
             "scheme " + std::string(name(q.scheme)) + " cannot use derivation " + std::string(name(q.derivation)));
  }
  if (j.contains("accumulation")) {  // one accumulator for GEMMs and convolutions alike
    set_enum(j, "accumulation", p, w, parse_accumulation, s.accumulation);
    s.conv_accumulation.reset();
  }
  if (j.contains("add")) {  // the qadd scheme (oracles/qadd.hpp) and the ideal scheme's rounding
    const json& a = j["add"];
    if (!a.is_object()) w.fail("spec.add", "expected an object {\"scheme\": ..., \"rounding\": ...}");
    check_fields(a, {"scheme", "rounding"}, w, "spec.add.");
    Where aw = w;
    aw.prefix = "spec.add.";
    s.add.scheme = enum_field(a, "scheme", s.add.scheme, aw, "add scheme");
    s.add.rounding = enum_field(a, "rounding", s.add.rounding, aw, "rounding");
  }
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

// An "axis": an int cast would wrap 2^32 to 0, and any real axis is within a tensor's rank (the
// validation against the shape names the rank).
int load_axis(const json& v, const Where& w) {
  const std::int64_t axis = integer(v, w, "axis");
  if (axis < -64 || axis > 64) w.fail("axis", std::to_string(axis) + " is out of range for a tensor's rank");
  return static_cast<int>(axis);
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
  if (j.contains("axis")) p.axis = load_axis(j["axis"], w);
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

// ONNX QuantizeLinear/DequantizeLinear: a float8 zero point must be 0.
void require_float8_zero_points(const QuantParams& p, const Where& w) {
  for (std::size_t i = 0; i < p.zero_points.size(); ++i)
    if (p.zero_points[i] != 0)
      w.fail("zero_point", "a float8 zero point must be 0 (ONNX), got " + std::to_string(p.zero_points[i]));
}

OpRequest load_quantize(const json& j, const Where& w) {
  QuantizeOp q;
  if (!j.contains("input")) w.fail("input", "missing");
  q.x = load_input(j["input"], j, w);
  q.out = output_dtype(j, w);
  const bool float8 = q.out == DType::f8e4m3fn || q.out == DType::f8e5m2;
  if (!is_int(q.out) && !float8)
    w.fail("output_dtype", "quantize needs an integer or float8 (f8e4m3fn, f8e5m2) output format");
  if (!is_float(q.x.dtype()) && q.x.dtype() != DType::i32) w.fail("input.dtype", "quantize needs a float or i32 input");
  if (float8 && !is_float(q.x.dtype())) w.fail("input.dtype", "quantize to float8 needs a float input");
  if (j.contains("saturate")) {
    if (!float8) w.fail("saturate", "only a float8 output saturates or not (ONNX's attribute)");
    if (!j["saturate"].is_boolean()) w.fail("saturate", "expected true or false, got " + j["saturate"].dump());
    q.saturate = j["saturate"].get<bool>();
  }
  q.params = load_quant_params(j, q.x.shape(), q.out, w);
  if (float8) require_float8_zero_points(q.params, w);
  return q;
}

OpRequest load_dequantize(const json& j, const Where& w) {
  DequantizeOp d;
  if (!j.contains("input")) w.fail("input", "missing");
  d.q = load_input(j["input"], j, w);
  const bool float8 = d.q.dtype() == DType::f8e4m3fn || d.q.dtype() == DType::f8e5m2;
  if (!is_int(d.q.dtype()) && !float8)
    w.fail("input.dtype", "dequantize needs an integer or float8 (f8e4m3fn, f8e5m2) input");
  d.out = output_dtype(j, w, DType::f32);
  if (!is_float(d.out)) w.fail("output_dtype", "dequantize needs a float output format");
  d.params = load_quant_params(j, d.q.shape(), d.q.dtype(), w);
  if (float8) require_float8_zero_points(d.params, w);
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
  if (j.contains("axis")) p.axis = load_axis(j["axis"], w);
  validate(p, r.acc.shape(), r.out, w.str());
  return r;
}

OpRequest load_choose_qparams(const json& j, const Spec& spec, const Where& w) {
  ChooseQParamsOp c;
  if (!j.contains("input")) w.fail("input", "missing (the profile: observed float values)");
  c.profile = load_input(j["input"], j, w);
  const DType t = c.profile.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    w.fail("input.dtype", "a profile holds f32, f16 or bf16 values, not " + std::string(name(t)));
  for (std::int64_t i = 0; i < c.profile.size(); ++i)
    if (!std::isfinite(c.profile.get_double(i)))
      w.fail("input.data[" + std::to_string(i) + "]", "a profile's values must be finite");
  c.format = output_dtype(j, w, DType::u8);
  if (!is_int(c.format)) w.fail("output_dtype", "parameters are chosen for an integer format");
  const std::string rule =
      j.contains("rule") ? (j["rule"].is_string() ? j["rule"].get<std::string>() : "") : spec.qparams;
  const auto r = find_qparams_preset(rule);
  if (!r) {
    std::string known;
    for (const QParamsPreset& p : qparams_presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    w.fail(j.contains("rule") ? "rule" : "spec", "unknown parameter-choice rule " +
                                                     (j.contains("rule") ? j["rule"].dump() : "'" + rule + "'") +
                                                     " (known: " + known + ")");
  }
  c.rule = *r;
  if (j.contains("axis")) {
    c.axis = load_axis(j["axis"], w);
    const int rank = c.profile.rank();
    if (*c.axis < -rank || *c.axis >= rank)
      w.fail("axis", std::to_string(*c.axis) + " is outside the profile's rank " + std::to_string(rank));
  }
  try {  // a rule its recipe's code cannot apply to this format (Glow's symmetric schemas on u8, ...)
    (void)choose_qparams(-1.0f, 1.0f, c.format, c.rule);
  } catch (const InputError& e) {
    w.fail("rule", e.what());
  }
  return c;
}

Where nested(const Where& w, const std::string& key);

// The blocking of an mx_quantize / mx_dequantize case: format, axis (default -1), block_size (32, or 16
// for NVFP4) and NVFP4's global_scale.
MxBlocking load_mx_blocking(const json& j, const Where& w) {
  MxBlocking b;
  if (!j.contains("format")) w.fail("format", "missing (" + table_names<MxFormat>() + ")");
  b.format = enum_field(j, "format", MxFormat::mxfp8_e4m3, w, "MX format");
  b.block_size = b.format == MxFormat::nvfp4 ? 16 : 32;
  if (j.contains("axis")) b.axis = load_axis(j["axis"], w);
  if (j.contains("block_size")) {
    b.block_size = integer(j["block_size"], w, "block_size");
    if (b.block_size <= 0) w.fail("block_size", "must be positive, got " + std::to_string(b.block_size));
  }
  if (j.contains("global_scale")) {
    if (b.format != MxFormat::nvfp4) w.fail("global_scale", "only NVFP4 has a per-tensor scale");
    b.global_scale = number(j["global_scale"], w, "global_scale");
    const double g = *b.global_scale;
    if (!(g > 0) || !std::isfinite(g) || static_cast<double>(static_cast<float>(g)) != g)
      w.fail("global_scale", "must be a positive finite f32 value, got " + j["global_scale"].dump());
  }
  return b;
}

OpRequest load_mx_quantize(const json& j, const Where& w) {
  MxQuantizeOp q;
  if (!j.contains("input")) w.fail("input", "missing");
  q.x = load_input(j["input"], j, w);
  const DType t = q.x.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    w.fail("input.dtype", "mx_quantize takes f32, f16 or bf16");
  q.blocking = load_mx_blocking(j, w);
  q.scale_rule = enum_field(j, "scale_rule", MxScaleRule::floor, w, "scale rule");
  if (j.contains("scale_rule") && q.blocking.format == MxFormat::nvfp4)
    w.fail("scale_rule", "NVFP4 derives its E4M3 scales by its own rule (docs/numerics.md)");
  if (q.blocking.format == MxFormat::mxint8 && q.scale_rule != MxScaleRule::floor)
    w.fail("scale_rule", "MXINT8 takes the OCP rule (floor) only");
  q.element_rounding = enum_field(j, "rounding", RoundingMode::rne, w, "rounding");
  if (q.element_rounding != RoundingMode::rne && q.element_rounding != RoundingMode::rna)
    w.fail("rounding",
           "elements round rne (OCP) or rna (microxcaling), got '" + std::string(name(q.element_rounding)) + "'");
  try {
    (void)mx_scale_shape(q.blocking, q.x.shape());
  } catch (const InputError& e) {
    w.fail("axis", e.what());
  }
  return q;
}

OpRequest load_mx_dequantize(const json& j, const Where& w) {
  MxDequantizeOp d;
  if (!j.contains("input")) w.fail("input", "missing");
  d.elements = load_input(j["input"], j, w);
  if (d.elements.dtype() != DType::u8) w.fail("input.dtype", "element codes are u8");
  if (!j.contains("scales") || !j["scales"].is_object()) w.fail("scales", "missing (an operand of u8 scale codes)");
  d.scales = load_input(j["scales"], j, nested(w, "scales"));
  if (d.scales.dtype() != DType::u8) w.fail("scales.dtype", "scale codes are u8");
  d.blocking = load_mx_blocking(j, w);
  if (d.blocking.format == MxFormat::nvfp4 && !d.blocking.global_scale)
    w.fail("global_scale", "NVFP4 needs its per-tensor scale");
  Shape want;
  try {
    want = mx_scale_shape(d.blocking, d.elements.shape());
  } catch (const InputError& e) {
    w.fail("axis", e.what());
  }
  if (d.scales.shape() != want)
    w.fail("scales.shape", "expected " + shape_str(want) + " (one code per block), got " + shape_str(d.scales.shape()));
  const int bits = mx_element(d.blocking.format).bits;
  for (std::int64_t i = 0; i < d.elements.size(); ++i)
    if (d.elements.bits(i) >> bits != 0)
      w.fail("input.data[" + std::to_string(i) + "]",
             std::to_string(d.elements.bits(i)) + " is not a " + std::to_string(bits) + "-bit element code");
  return d;
}

// ---- mx_gemm ----------------------------------------------------------------------------------

Tensor load_operand_values(const json& o, const json& c, const Where& w);
WeightLayout load_weight_layout(const json& j, const Where& w);
std::optional<Tensor> load_bias(const json& j, const Where& cw);

// An operand of an mx_gemm: float values with their MX/NVFP4 format (and NVFP4's global scale).
MxGemmOperand load_mx_gemm_operand(const json& j, const char* side, const Where& cw) {
  if (!j.contains(side) || !j[side].is_object()) cw.fail(side, "missing operand object");
  const json& o = j[side];
  const Where w = nested(cw, side);
  check_fields(o, {"dtype", "shape", "data", "generator", "from", "format", "global_scale", "layout"}, w, "");
  if (std::string(side) == "a" && o.contains("layout")) w.fail("layout", "only b has a layout");
  MxGemmOperand m;
  m.values = load_operand_values(o, j, w);
  const DType t = m.values.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16) w.fail("dtype", "mx_gemm operands are f32, f16 or bf16");
  if (!o.contains("format")) w.fail("format", "missing (" + table_names<MxFormat>() + ")");
  m.format = enum_field(o, "format", MxFormat::mxfp8_e4m3, w, "MX format");
  if (o.contains("global_scale")) {
    if (m.format != MxFormat::nvfp4) w.fail("global_scale", "only NVFP4 has a per-tensor scale");
    m.global_scale = number(o["global_scale"], w, "global_scale");
    const double g = *m.global_scale;
    if (!(g > 0) || !std::isfinite(g) || static_cast<double>(static_cast<float>(g)) != g)
      w.fail("global_scale", "must be a positive finite f32 value, got " + o["global_scale"].dump());
  }
  return m;
}

OpRequest load_mx_gemm(const json& j, const Where& w) {
  MxGemmOp g;
  g.a = load_mx_gemm_operand(j, "a", w);
  g.b = load_mx_gemm_operand(j, "b", w);
  g.b_layout = load_weight_layout(j, w);
  const bool nvfp4 = g.a.format == MxFormat::nvfp4 || g.b.format == MxFormat::nvfp4;
  g.block_size = nvfp4 ? 16 : 32;
  if (j.contains("block_size")) {
    g.block_size = integer(j["block_size"], w, "block_size");
    if (g.block_size <= 0) w.fail("block_size", "must be positive, got " + std::to_string(g.block_size));
  }
  g.scale_rule = enum_field(j, "scale_rule", MxScaleRule::floor, w, "scale rule");
  if (j.contains("scale_rule") && g.a.format == MxFormat::nvfp4 && g.b.format == MxFormat::nvfp4)
    w.fail("scale_rule", "NVFP4 derives its E4M3 scales by its own rule (docs/numerics.md)");
  if ((g.a.format == MxFormat::mxint8 || g.b.format == MxFormat::mxint8) && g.scale_rule != MxScaleRule::floor)
    w.fail("scale_rule", "MXINT8 takes the OCP rule (floor) only");
  g.element_rounding = enum_field(j, "rounding", RoundingMode::rne, w, "rounding");
  if (g.element_rounding != RoundingMode::rne && g.element_rounding != RoundingMode::rna)
    w.fail("rounding",
           "elements round rne (OCP) or rna (microxcaling), got '" + std::string(name(g.element_rounding)) + "'");
  g.bias = load_bias(j, w);
  if (g.bias && !is_float(g.bias->dtype())) nested(w, "bias").fail("dtype", "mx_gemm bias is a float");
  g.out = output_dtype(j, w, DType::f32);
  if (g.out != DType::f32 && g.out != DType::f16 && g.out != DType::bf16)
    w.fail("output_dtype", "mx_gemm outputs f32, f16 or bf16");
  GemmShape gs;
  try {
    gs = gemm_shape(g.a.values.shape(), g.b.values.shape(), g.b_layout);
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  if (g.bias && (g.bias->rank() != 1 || g.bias->size() != gs.cols))
    w.fail("bias.shape", "expected [" + std::to_string(gs.cols) + "] (N), got " + shape_str(g.bias->shape()));
  if (g.bias)
    for (std::int64_t n = 0; n < g.bias->size(); ++n)
      if (!std::isfinite(g.bias->get_double(n))) w.fail("bias.data[" + std::to_string(n) + "]", "must be finite");
  check_element_limit({gs.rows, gs.cols}, w, "b.shape", "the output " + shape_str(gs.out_shape));
  return g;
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
  for (const char* k : {"dtype", "shape", "data", "generator", "from"})
    if (o.contains(k)) t[k] = o[k];
  return load_input(t, c, w);
}

// {"params_from": name}: a scale and zero point that another case's choose_qparams output holds
// (f64 [scale, zero point]), bound by the runner like an operand (link field `field`, e.g.
// "output.params"). The parameters the object would otherwise give are not allowed beside it.
void link_params(const json& o, const std::string& field, std::initializer_list<const char*> instead, const Where& w) {
  for (const char* k : instead)
    if (o.contains(k)) w.fail(k, "the parameters come from 'params_from'; give one or the other");
  if (!o["params_from"].is_string()) w.fail("params_from", "expected the name of a choose_qparams case of this file");
  const std::string producer = o["params_from"].get<std::string>();
  if (!w.links) w.fail("params_from", "parameters can be taken from other cases only in a case file");
  const auto it = w.links->outputs.find(producer);
  if (it == w.links->outputs.end()) w.fail("params_from", "no case named '" + producer + "' loaded before it");
  if (it->second != std::pair<DType, Shape>{DType::f64, Shape{2}})
    w.fail("params_from", "'" + producer + "' outputs " + std::string(name(it->second.first)) + " " +
                              shape_str(it->second.second) +
                              ", not one (scale, zero point) pair (a choose_qparams case without an axis)");
  w.links->links.push_back({field, producer});
}

ActivationOperand load_activation(const json& j, const char* key, const Spec& spec, const Where& cw) {
  if (!j.contains(key) || !j[key].is_object()) cw.fail(key, "missing operand object");
  const json& o = j[key];
  const Where w = nested(cw, key);
  check_fields(o,
               {"dtype", "shape", "data", "generator", "from", "format", "quantize", "scale", "scale_dtype",
                "zero_point", "axis", "block_size", "layout", "params_from"},
               w, "");
  ActivationOperand a;
  a.values = load_operand_values(o, j, w);
  a.format = is_int(a.values.dtype()) ? a.values.dtype()
                                      : (o.contains("format") ? dtype(o["format"], w, "format") : DType::u8);
  if (!is_int(a.format)) w.fail("format", "must be an integer format");
  a.quantization = enum_field(o, "quantize", ActivationQuantization::static_params, w, "mode");
  if (a.quantization == ActivationQuantization::static_params && o.contains("params_from")) {
    // One pair per tensor, scale 1 and zero point 0 until the runner binds it.
    link_params(o, std::string(key) + ".params", {"scale", "zero_point", "scale_dtype", "axis", "block_size"}, w);
    a.params = QuantParams{};
    a.params.scale_dtype = DType::f32;
    a.params.scales = {1.0};
    a.params.zero_points = {0};
  } else if (a.quantization == ActivationQuantization::static_params) {
    a.params = load_quant_params(o, a.values.shape(), a.format, w);
  } else {
    if (is_int(a.values.dtype())) w.fail("quantize", "dynamic quantization needs float values");
    auto rule = find_qparams_preset(spec.qparams);
    if (!rule) cw.fail("spec", "its parameter-choice rule '" + spec.qparams + "' is unknown");
    a.rule = *rule;
  }
  return a;
}

QWeights load_weights(const json& j, const char* key, const Where& cw) {
  if (!j.contains(key) || !j[key].is_object()) cw.fail(key, "missing operand object");
  const json& o = j[key];
  const Where w = nested(cw, key);
  check_fields(o,
               {"dtype", "shape", "data", "generator", "from", "format", "scale", "scale_dtype", "zero_point", "axis",
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
    b.packing = find_int4_packing(p);
    if (!b.packing) w.fail("packing", "unknown packing '" + p + "' (" + int4_packing_names() + ")");
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
  check_fields(o, {"kind", "dtype", "scale", "zero_point", "activation", "scale_dtype", "params_from"}, w, "");
  OutputStage s;
  if (!o.contains("kind")) w.fail("kind", "missing (" + table_names<OutputKind>() + ")");
  s.kind = enum_field(o, "kind", OutputKind::int32, w, "output kind");
  if (s.kind == OutputKind::int32) {
    s.format = DType::i32;
  } else if (s.kind == OutputKind::dequantized) {
    s.format = o.contains("dtype") ? dtype(o["dtype"], w, "dtype") : DType::f32;
    if (!is_float(s.format)) w.fail("dtype", "a dequantized output needs a float format");
  } else {
    s.format = o.contains("dtype") ? dtype(o["dtype"], w, "dtype") : DType::i8;
    if (!is_int(s.format)) w.fail("dtype", "a requantized output needs an integer format");
    if (o.contains("params_from")) {  // scale 1, zero point 0 until the runner binds the pair
      link_params(o, "output.params", {"scale", "zero_point", "activation", "scale_dtype"}, w);
      return s;
    }
    s.scale = load_scales(o, "scale", DType::f32, w).at(0);
    s.zero_point = o.contains("zero_point") ? integer(o["zero_point"], w, "zero_point") : 0;
    if (s.zero_point < int_min(s.format) || s.zero_point > int_max(s.format))
      w.fail("zero_point", std::to_string(s.zero_point) + " is outside " + std::string(name(s.format)));
    const FusedActivation fa = enum_field(o, "activation", FusedActivation::none, w, "activation");
    if (fa != FusedActivation::none)
      s.clamp = fused_activation_range(fa, static_cast<float>(s.scale), s.zero_point, s.format);
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
  return enum_field(j["b"], "layout", WeightLayout::k_by_n, nested(w, "b"), "layout");
}

OpRequest load_qgemm(const json& j, const Spec& spec, const Where& w) {
  QGemmOp g;
  g.a = load_activation(j, "a", spec, w);
  g.b = load_weights(j, "b", w);
  g.b_layout = load_weight_layout(j, w);
  g.bias = load_bias(j, w);
  g.output = load_output_stage(j, w);
  GemmShape gs;
  try {
    gs = batched_gemm_shape(g.a.values.shape(), g.b.shape, g.b_layout);  // K agrees, batches broadcast
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  check_element_limit({gs.rows, gs.cols}, w, "b.shape", "the output " + shape_str(gs.out_shape));
  return g;
}

// A qadd operand: values (given or {"from": case}) with one scale and zero point, or the pair from
// a choose_qparams case ("params_from"). A's format is i8/u8; B's may also be i32 (a quantized bias).
Tensor load_qadd_operand(const json& j, const char* key, QuantParams& params, const Where& cw) {
  if (!j.contains(key) || !j[key].is_object()) cw.fail(key, "missing operand object");
  const json& o = j[key];
  const Where w = nested(cw, key);
  check_fields(o, {"dtype", "shape", "data", "generator", "from", "scale", "zero_point", "params_from"}, w, "");
  Tensor v = load_operand_values(o, j, w);
  const DType t = v.dtype();
  const bool b = std::string_view(key) == "b";
  if (t != DType::i8 && t != DType::u8 && !(b && t == DType::i32))
    w.fail("dtype", std::string("qadd's ") + key + " is " + (b ? "i8, u8 or i32" : "i8 or u8") + ", got " +
                        std::string(name(t)));
  if (o.contains("params_from")) {  // scale 1, zero point 0 until the runner binds the pair
    link_params(o, std::string(key) + ".params", {"scale", "zero_point"}, w);
    params = QuantParams{};
    params.scales = {1.0};
    params.zero_points = {0};
    return v;
  }
  params = load_quant_params(o, v.shape(), t, w);
  if (params.scales.size() != 1) w.fail("scale", "qadd takes one scale per operand (per tensor)");
  if (params.zero_points.empty()) params.zero_points = {0};
  return v;
}

OpRequest load_qadd(const json& j, const Where& w) {
  QAddOp q;
  q.a = load_qadd_operand(j, "a", q.a_params, w);
  q.b = load_qadd_operand(j, "b", q.b_params, w);
  try {
    (void)qadd_broadcast_index(q.a.shape(), q.b.shape());
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  if (!j.contains("output") || !j["output"].is_object()) w.fail("output", "missing object {dtype, scale, zero_point}");
  const json& o = j["output"];
  const Where ow = nested(w, "output");
  check_fields(o, {"kind", "dtype", "scale", "zero_point", "params_from"}, ow, "");
  if (o.contains("kind") && o["kind"] != "requantized")
    ow.fail("kind", "a qadd output is requantized, got " + o["kind"].dump());
  json stage = o;
  stage["kind"] = "requantized";
  json holder = {{"output", stage}};
  q.output = load_output_stage(holder, w);
  if (q.output.format != DType::i8 && q.output.format != DType::u8)
    ow.fail("dtype", "qadd's output is i8 or u8, got " + std::string(name(q.output.format)));
  return q;
}

OpRequest load_weight_only(const json& j, const Where& w) {
  WeightOnlyGemmOp g;
  if (!j.contains("a") || !j["a"].is_object()) w.fail("a", "missing operand object");
  const Where aw = nested(w, "a");
  check_fields(j["a"], {"dtype", "shape", "data", "generator", "from"}, aw, "");
  g.a = load_operand_values(j["a"], j, aw);
  if (!is_float(g.a.dtype())) aw.fail("dtype", "weight-only activations are floats");
  g.b = load_weights(j, "b", w);
  g.b_layout = load_weight_layout(j, w);
  g.bias = load_bias(j, w);
  if (g.bias && !is_float(g.bias->dtype())) nested(w, "bias").fail("dtype", "weight-only bias is a float");
  g.out = output_dtype(j, w, DType::f32);
  if (!is_float(g.out)) w.fail("output_dtype", "weight-only output is a float format");
  GemmShape gs;
  try {
    gs = gemm_shape(g.a.shape(), g.b.shape, g.b_layout);
  } catch (const InputError& e) {
    w.fail("b.shape", e.what());
  }
  check_element_limit({gs.rows, gs.cols}, w, "b.shape", "the output " + shape_str(gs.out_shape));
  return g;
}

// stride, padding, dilation and groups of a convolution case (qconv2d, conv2d).
Conv2dGeometry load_geometry(const json& j, const Where& w) {
  const auto stride = int_list(j, "stride", 2, 1, w);
  const auto pad = int_list(j, "padding", 4, 0, w);
  const auto dil = int_list(j, "dilation", 2, 1, w);
  // Beyond this no output size can stay inside the element limit, and the extent arithmetic
  // (input + paddings - dilated kernel) cannot overflow.
  constexpr std::int64_t kMaxGeometry = std::int64_t{1} << 31;
  for (std::size_t i = 0; i < 4; ++i)
    if (pad[i] > kMaxGeometry) w.fail("padding[" + std::to_string(i) + "]", "larger than 2^31");
  for (std::size_t i = 0; i < 2; ++i) {
    if (stride[i] > kMaxGeometry) w.fail("stride[" + std::to_string(i) + "]", "larger than 2^31");
    if (dil[i] > kMaxGeometry) w.fail("dilation[" + std::to_string(i) + "]", "larger than 2^31");
  }
  return Conv2dGeometry{stride[0], stride[1], pad[0],
                        pad[1],    pad[2],    pad[3],
                        dil[0],    dil[1],    j.contains("groups") ? integer(j["groups"], w, "groups") : 1};
}

OpRequest load_qconv2d(const json& j, const Spec& spec, const Where& w) {
  QConv2dOp c;
  c.input = load_activation(j, "input", spec, w);
  c.layout = enum_field(j["input"], "layout", ConvLayout::nchw, nested(w, "input"), "layout");
  c.weight = load_weights(j, "weight", w);
  c.bias = load_bias(j, w);
  c.geometry = load_geometry(j, w);
  c.padding = enum_field(j, "padding_value", ConvPadding::real_zero, w, "padding value");
  c.output = load_output_stage(j, w);
  Conv2dShape cs;
  try {
    cs = resolve_conv2d(c.input.values.shape(), c.layout, c.weight.shape, c.geometry);
  } catch (const InputError& e) {
    w.fail("weight.shape", e.what());
  }
  check_element_limit({cs.batch, cs.out_channels, cs.out_height, cs.out_width}, w, "padding",
                      "the output " + shape_str(cs.output_shape()));
  return c;
}

// conv2d: a float input; float weights (used exactly) or integer weights with their parameters.
OpRequest load_conv2d(const json& j, const Where& w) {
  Conv2dOp c;
  if (!j.contains("input") || !j["input"].is_object()) w.fail("input", "missing operand object");
  const Where iw = nested(w, "input");
  check_fields(j["input"], {"dtype", "shape", "data", "generator", "from", "layout"}, iw, "");
  c.input = load_operand_values(j["input"], j, iw);
  if (!is_float(c.input.dtype())) iw.fail("dtype", "conv2d takes a float input (f32, f16, bf16, f64)");
  c.layout = enum_field(j["input"], "layout", ConvLayout::nchw, iw, "layout");
  if (!j.contains("weight") || !j["weight"].is_object()) w.fail("weight", "missing operand object");
  const json& wo = j["weight"];
  const Where ww = nested(w, "weight");
  if (wo.contains("scale") || wo.contains("packing") || wo.contains("zero_point") || wo.contains("axis")) {
    c.weight = load_weights(j, "weight", w);  // integer weights and their parameters (the weight-only conv)
    if (!c.weight.packing && is_float(c.weight.values.dtype()))
      ww.fail("scale", "float weights are used exactly and take no parameters; integer weights take a scale");
  } else {
    check_fields(wo, {"dtype", "shape", "data", "generator", "from"}, ww, "");
    c.weight.values = load_operand_values(wo, j, ww);
    if (!is_float(c.weight.values.dtype()))
      ww.fail("scale", "missing: integer weights need their scale (and zero point) to be dequantized");
    c.weight.shape = c.weight.values.shape();
  }
  c.bias = load_bias(j, w);
  if (c.bias && !is_float(c.bias->dtype())) nested(w, "bias").fail("dtype", "a conv2d bias is a float");
  c.geometry = load_geometry(j, w);
  c.out = output_dtype(j, w, DType::f32);
  if (!is_float(c.out)) w.fail("output_dtype", "conv2d outputs a float format");
  Conv2dShape cs;
  try {
    cs = resolve_conv2d(c.input.shape(), c.layout, logical_shape(c.weight), c.geometry);
  } catch (const InputError& e) {
    w.fail("weight.shape", e.what());
  }
  if (c.bias && (c.bias->rank() != 1 || c.bias->size() != cs.out_channels))
    nested(w, "bias").fail(
        "shape", "must be [OC] = [" + std::to_string(cs.out_channels) + "], got " + shape_str(c.bias->shape()));
  check_element_limit({cs.batch, cs.out_channels, cs.out_height, cs.out_width}, w, "padding",
                      "the output " + shape_str(cs.output_shape()));
  return c;
}

// "same_outputs_as": "name" or ["name", ...]; "differs_from": "name", {"case": "name",
// "elements": n} or a list of them. The named cases are checked by check_links.
std::vector<Agreement> load_agreements(const json& j, const Where& w) {
  std::vector<Agreement> out;
  auto name_of = [&](const json& v, const std::string& field) {
    if (!v.is_string() || v.get<std::string>().empty()) w.fail(field, "expected the name of a case of this file");
    return v.get<std::string>();
  };
  auto list = [](const json& v) { return v.is_array() ? v : json::array({v}); };
  if (j.contains("same_outputs_as")) {
    const json l = list(j["same_outputs_as"]);
    if (l.empty()) w.fail("same_outputs_as", "expected a case name or a non-empty list of them");
    for (std::size_t i = 0; i < l.size(); ++i)
      out.push_back({Agreement::Kind::same_outputs,
                     name_of(l[i], "same_outputs_as" + (j["same_outputs_as"].is_array() ? "[" + std::to_string(i) + "]"
                                                                                        : std::string())),
                     -1});
  }
  if (j.contains("differs_from")) {
    const json l = list(j["differs_from"]);
    if (l.empty()) w.fail("differs_from", "expected a case name, {\"case\": name, \"elements\": n} or a list of them");
    for (std::size_t i = 0; i < l.size(); ++i) {
      const std::string f = "differs_from" + (j["differs_from"].is_array() ? "[" + std::to_string(i) + "]" : "");
      if (l[i].is_string()) {
        out.push_back({Agreement::Kind::differs, name_of(l[i], f), -1});
        continue;
      }
      if (!l[i].is_object() || !l[i].contains("case"))
        w.fail(f, "expected a case name or {\"case\": name, \"elements\": n}");
      check_fields(l[i], {"case", "elements"}, w, f + ".");
      Agreement a{Agreement::Kind::differs, name_of(l[i]["case"], f + ".case"), -1};
      if (l[i].contains("elements")) {
        a.elements = integer(l[i]["elements"], w, f + ".elements");
        if (a.elements < 1) w.fail(f + ".elements", "must be at least 1 (outputs that agree: same_outputs_as)");
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

// The op names a case may give: op_name of each kind of OpRequest, in the variant's order.
template <std::size_t... I>
auto op_names(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{op_name(OpRequest(std::in_place_index<I>))...};
}
const auto kOpNames = op_names(std::make_index_sequence<std::variant_size_v<OpRequest>>());

Case load_case(const json& j, std::size_t index, const CaseLines& lines, const Where& file_where) {
  Where w = file_where;
  if (!j.is_object()) w.fail("cases[" + std::to_string(index) + "]", "expected an object");
  if (!j.contains("name") || !j["name"].is_string())
    w.fail("cases[" + std::to_string(index) + "].name", "every case needs a string 'name'");
  Case c;
  c.name = j["name"].get<std::string>();
  if (c.name.empty()) w.fail("cases[" + std::to_string(index) + "].name", "a case name cannot be empty");
  c.line = lines.line(c.name);
  if (c.line == 0) c.line = file_where.line;  // a case expanded from a sweep points at the sweep
  w.line = c.line;
  w.case_name = c.name;
  const std::string op = j.contains("op") && j["op"].is_string() ? j["op"].get<std::string>() : "";
  // The op first: the fields a case may have depend on it.
  if (std::find(kOpNames.begin(), kOpNames.end(), op) == kOpNames.end()) {
    std::string known;
    for (const std::string_view n : kOpNames) known += (known.empty() ? "" : ", ") + std::string(n);
    w.fail("op", !j.contains("op") ? "missing"
                 : op.empty()      ? "expected the name of an op, got " + j["op"].dump()
                                   : "unknown op '" + op + "' (known: " + known + ")");
  }
  std::set<std::string> fields = {"name",         "description", "op",          "spec",       "input",
                                  "output_dtype", "expect",      "scale_dtype", "zero_point", "axis"};
  if (op == "quantize" || op == "dequantize") fields.insert({"scale", "block_size"});
  if (op == "quantize") fields.insert("saturate");
  if (op == "requantize") fields.insert({"input_scale", "weight_scale", "output_scale"});
  if (op == "qgemm") fields = {"name", "description", "op", "spec", "expect", "a", "b", "bias", "output"};
  if (op == "weight_only_gemm")
    fields = {"name", "description", "op", "spec", "expect", "a", "b", "bias", "output_dtype"};
  if (op == "choose_qparams")
    fields = {"name", "description", "op", "spec", "expect", "input", "rule", "output_dtype", "axis"};
  if (op == "qconv2d")
    fields = {"name", "description", "op",     "spec",    "expect",   "input",  "weight",
              "bias", "output",      "stride", "padding", "dilation", "groups", "padding_value"};
  if (op == "conv2d")
    fields = {"name", "description",  "op",     "spec",    "expect",   "input", "weight",
              "bias", "output_dtype", "stride", "padding", "dilation", "groups"};
  if (op == "mx_quantize")
    fields = {"name",   "description", "op",         "spec",     "expect",     "input",
              "format", "axis",        "block_size", "rounding", "scale_rule", "global_scale"};
  if (op == "mx_dequantize")
    fields = {"name",   "description", "op",   "spec",       "expect",      "input",
              "scales", "format",      "axis", "block_size", "global_scale"};
  if (op == "mx_gemm")
    fields = {"name", "description", "op",         "spec",     "expect", "a",
              "b",    "block_size",  "scale_rule", "rounding", "bias",   "output_dtype"};
  if (op == "qadd") fields = {"name", "description", "op", "spec", "expect", "a", "b", "output"};
  fields.insert({"same_outputs_as", "differs_from"});
  check_fields(j, fields, w, "");
  if (j.contains("description")) {
    if (!j["description"].is_string()) w.fail("description", "expected a string");
    c.description = j["description"].get<std::string>();
  }
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
  else if (op == "choose_qparams")
    c.op = load_choose_qparams(j, c.spec, w);
  else if (op == "conv2d")
    c.op = load_conv2d(j, w);
  else if (op == "mx_quantize")
    c.op = load_mx_quantize(j, w);
  else if (op == "mx_dequantize")
    c.op = load_mx_dequantize(j, w);
  else if (op == "mx_gemm")
    c.op = load_mx_gemm(j, w);
  else if (op == "qadd")
    c.op = load_qadd(j, w);
  else
    c.op = load_weight_only(j, w);

  if (j.contains("expect")) {
    const json& e = j["expect"];
    if (!e.is_object()) w.fail("expect", "expected an object {backend: expectation}");
    for (const auto& [backend, v] : e.items()) c.expect[backend] = load_expectation(v, w, "expect." + backend);
  }
  c.agreements = load_agreements(j, w);
  if (w.links) {
    c.links = std::exchange(w.links->links, {});
    c.generated = std::exchange(w.links->generated, {});
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
  // The expanded cases are named after the case.
  if (!c.contains("name") || !c["name"].is_string() || c["name"].get<std::string>().empty())
    w.fail("name", "a case with a sweep needs a name");
  std::vector<json> out = {c};
  out[0].erase("sweep");
  for (const auto& [path, values] : sw.items()) {
    if (!values.is_array() || values.empty()) w.fail("sweep." + path, "expected a non-empty list of values");
    std::stringstream parts(path);
    std::vector<std::string> keys;
    for (std::string k; std::getline(parts, k, '.');) keys.push_back(k);
    if (keys.empty() || path.back() == '.' || std::find(keys.begin(), keys.end(), "") != keys.end())
      w.fail("sweep." + path, "expected a dotted path of field names, such as \"input.dtype\"");
    if (keys.front() == "name" || keys.front() == "sweep")
      w.fail("sweep." + path, "a sweep cannot set '" + keys.front() + "'");
    std::vector<json> next;
    for (const json& base : out) {
      for (const json& v : values) {
        json e = base;
        json* node = &e;
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

// The operands of a case object that take another case's output: (operand, case name).
std::vector<std::pair<std::string, std::string>> operand_links(const json& c) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!c.is_object()) return out;
  for (const char* key : {"input", "a", "b", "weight", "bias"})
    if (c.contains(key) && c[key].is_object() && c[key].contains("from") && c[key]["from"].is_string())
      out.emplace_back(key, c[key]["from"].get<std::string>());
  return out;
}

// The message for a name that is no case of the file; a swept case is named with its values.
std::string unknown_case(const std::string& name, const std::vector<std::string>& names) {
  std::string msg = "no case named '" + name + "' in this file";
  for (const std::string& n : names)
    if (n.rfind(name + "[", 0) == 0)
      return msg + " ('" + name + "' is a sweep: name one of its cases, e.g. '" + n + "')";
  return msg;
}

// Calls visit(k) once for every k < n, after visiting the nodes deps(k) lists. A cycle calls
// on_cycle with its path (k, ..., k), which must throw.
void in_dependency_order(std::size_t n, const std::function<std::vector<std::size_t>(std::size_t)>& deps,
                         const std::function<void(std::size_t)>& visit,
                         const std::function<void(const std::vector<std::size_t>&)>& on_cycle) {
  enum : std::uint8_t { unseen, on_path, visited };
  std::vector<std::uint8_t> state(n, unseen);
  std::vector<std::size_t> path;
  std::function<void(std::size_t)> go = [&](std::size_t k) {
    if (state[k] == visited) return;
    if (state[k] == on_path) {
      std::vector<std::size_t> cycle(std::find(path.begin(), path.end(), k), path.end());
      cycle.push_back(k);
      on_cycle(cycle);
      throw std::logic_error("in_dependency_order: on_cycle must throw");
    }
    state[k] = on_path;
    path.push_back(k);
    for (std::size_t d : deps(k)) go(d);
    path.pop_back();
    state[k] = visited;
    visit(k);
  };
  for (std::size_t k = 0; k < n; ++k) go(k);
}

// The tensor an operand name refers to in an op (null when the op has none), and its weights
// when it is a weight operand (their packing and logical shape).
struct OperandSlot {
  Tensor* values = nullptr;
  QWeights* weights = nullptr;
  // A (scale, zero point) pair: a requantized output's, or an activation's (with its format).
  OutputStage* output = nullptr;
  QuantParams* params = nullptr;
  DType params_format = DType::i8;
  // The format and shape a tensor bound to it must have: one element per value.
  std::pair<DType, Shape> type() const {
    if (output || params) return {DType::f64, Shape{2}};
    if (weights && weights->packing) return {weights->format, weights->shape};
    return {values->dtype(), values->shape()};
  }
};

OperandSlot operand_slot(OpRequest& op, const std::string& field) {
  OperandSlot s;
  auto weights = [&](QWeights& w) {
    s.weights = &w;
    s.values = &w.values;
  };
  auto bias = [&](std::optional<Tensor>& b) {
    if (b) s.values = &*b;
  };
  std::visit(
      [&](auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, QuantizeOp>) {
          if (field == "input") s.values = &o.x;
        } else if constexpr (std::is_same_v<T, DequantizeOp>) {
          if (field == "input") s.values = &o.q;
        } else if constexpr (std::is_same_v<T, RequantizeOp>) {
          if (field == "input") s.values = &o.acc;
        } else if constexpr (std::is_same_v<T, QGemmOp>) {
          if (field == "a") s.values = &o.a.values;
          if (field == "b") weights(o.b);
          if (field == "bias") bias(o.bias);
          if (field == "output.params" && o.output.kind == OutputKind::requantized) s.output = &o.output;
          if (field == "a.params") s.params = &o.a.params, s.params_format = o.a.format;
        } else if constexpr (std::is_same_v<T, QConv2dOp>) {
          if (field == "input") s.values = &o.input.values;
          if (field == "weight") weights(o.weight);
          if (field == "bias") bias(o.bias);
          if (field == "output.params" && o.output.kind == OutputKind::requantized) s.output = &o.output;
          if (field == "input.params") s.params = &o.input.params, s.params_format = o.input.format;
        } else if constexpr (std::is_same_v<T, ChooseQParamsOp>) {
          if (field == "input") s.values = &o.profile;
        } else if constexpr (std::is_same_v<T, Conv2dOp>) {
          if (field == "input") s.values = &o.input;
          if (field == "weight") weights(o.weight);
          if (field == "bias") bias(o.bias);
        } else if constexpr (std::is_same_v<T, WeightOnlyGemmOp>) {
          if (field == "a") s.values = &o.a;
          if (field == "b") weights(o.b);
          if (field == "bias") bias(o.bias);
        } else if constexpr (std::is_same_v<T, MxQuantizeOp>) {
          if (field == "input") s.values = &o.x;
        } else if constexpr (std::is_same_v<T, MxDequantizeOp>) {
          if (field == "input") s.values = &o.elements;
        } else if constexpr (std::is_same_v<T, MxGemmOp>) {
          if (field == "a") s.values = &o.a.values;
          if (field == "b") s.values = &o.b.values;
          if (field == "bias") bias(o.bias);
        } else if constexpr (std::is_same_v<T, QAddOp>) {
          if (field == "a") s.values = &o.a;
          if (field == "b") s.values = &o.b;
          if (field == "output.params") s.output = &o.output;
          if (field == "a.params") s.params = &o.a_params, s.params_format = o.a.dtype();
          if (field == "b.params") s.params = &o.b_params, s.params_format = o.b.dtype();
        }
      },
      op);
  return s;
}

}  // namespace

Spec parse_spec(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error&) {
    j = text;  // a bare preset name
  }
  return load_spec(j, Where{where, 0, "", "", nullptr});
}

namespace {

// The text as JSON, or an InputError naming `where` and the line. Nesting is bounded: a case file
// needs a handful of levels, and a value nested thousands deep would overflow the stack of every
// recursive walk after the parse (printing it in a message, expanding a sweep).
json parse_json_text(const std::string& text, const std::string& where) {
  constexpr int kMaxDepth = 64;
  const auto bounded = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth)
      throw InputError(where + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return true;
  };
  try {
    return json::parse(text, bounded);
  } catch (const json::parse_error& e) {
    const int line = line_of_offset(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    if (auto k = msg.find("]: "); k != std::string::npos) msg = msg.substr(k + 3);
    throw InputError(where + ":" + std::to_string(line) + ": JSON syntax error: " + msg);
  } catch (const json::out_of_range& e) {
    // A number no double holds (1e999): the parser names the number, not its position, so the
    // line is that of the number's first occurrence.
    std::string msg = e.what();
    if (auto k = msg.find("] "); k != std::string::npos) msg = msg.substr(k + 2);
    std::string line;
    if (const auto q = msg.find('\''), r = msg.rfind('\''); q != std::string::npos && r > q)
      if (const auto at = text.find(msg.substr(q + 1, r - q - 1)); at != std::string::npos)
        line = ":" + std::to_string(line_of_offset(text, at));
    throw InputError(where + line + ": JSON number out of range: " + msg);
  }
}

// One preset definition: {"preset": name, "spec": <a case's spec>, "description", "sources"}.
Spec load_preset_definition(const json& j, const Where& w) {
  if (!j.is_object()) w.fail("(top level)", "expected an object {\"preset\": name, \"spec\": ...}");
  check_fields(j, {"preset", "spec", "description", "sources", "$schema"}, w, "");
  if (!j.contains("preset") || !j["preset"].is_string()) w.fail("preset", "missing the new preset's name (a string)");
  if (!j.contains("spec"))
    w.fail("spec", "missing: the preset's policies, as a case's spec (a preset name or {\"preset\": ..., overrides})");
  // The policies are exactly what a case's "spec" field says (one definition: load_spec).
  Spec s = load_spec(j["spec"], w);
  s.name = j["preset"].get<std::string>();
  s.description.clear();
  if (j.contains("description")) {
    if (!j["description"].is_string()) w.fail("description", "expected a string");
    s.description = j["description"].get<std::string>();
  }
  if (s.description.empty()) s.description = "custom preset: " + j["spec"].dump();
  s.sources.clear();
  if (j.contains("sources")) {
    if (!j["sources"].is_array()) w.fail("sources", "expected a list of strings");
    for (std::size_t i = 0; i < j["sources"].size(); ++i) {
      if (!j["sources"][i].is_string()) w.fail("sources[" + std::to_string(i) + "]", "expected a string");
      s.sources.push_back(j["sources"][i].get<std::string>());
    }
  }
  return s;
}

}  // namespace

std::vector<std::string> register_presets_json(const std::string& text, const std::string& where) {
  const json j = parse_json_text(text, where);
  std::vector<json> items;
  std::vector<std::string> prefixes;
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      items.push_back(j[i]);
      prefixes.push_back("[" + std::to_string(i) + "].");
    }
  } else {
    items.push_back(j);
    prefixes.push_back("");
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Where w{where, 0, "", prefixes[i], nullptr};
    Spec s = load_preset_definition(items[i], w);
    const std::string name = s.name;
    try {
      register_preset(std::move(s));
    } catch (const InputError& e) {
      w.fail("preset", e.what());
    }
    names.push_back(name);
  }
  return names;
}

std::vector<std::string> load_preset_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open preset file");
  std::stringstream buf;
  buf << in.rdbuf();
  return register_presets_json(buf.str(), file.string());
}

Suite load_suite(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open case file");
  std::stringstream buf;
  buf << in.rdbuf();
  return load_suite_text(buf.str(), file);
}

Suite load_suite_text(const std::string& text, const fs::path& file) {
  // JSON text holds no NUL byte (and a reader that stops at one would drop the rest of the file).
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw InputError(file.string() + ":" + std::to_string(line_of_offset(text, nul)) + ": a NUL byte in the file");
  const json j = parse_json_text(text, file.string());
  Where w{file.string(), 0, "", "", nullptr};
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
  if (j["suite"].get<std::string>().empty()) w.fail("suite", "a suite name cannot be empty");
  if (!j.contains("cases") || !j["cases"].is_array()) w.fail("cases", "missing list of cases");
  if (j["cases"].empty()) w.fail("cases", "an empty list of cases");
  Suite s;
  s.name = j["suite"].get<std::string>();
  s.file = file.string();
  if (j.contains("description")) {
    if (!j["description"].is_string()) w.fail("description", "expected a string");
    s.description = j["description"].get<std::string>();
  }

  // Every case after sweeps, by name, so that a case can name any other of the file.
  struct Pending {
    json j;
    std::size_t index;  // in the file's "cases"
    Where where;        // the case (its line; a swept case points at its sweep)
  };
  std::vector<Pending> pending;
  std::map<std::string, std::size_t> by_name;
  const CaseLines lines(text);
  for (std::size_t i = 0; i < j["cases"].size(); ++i) {
    const json& raw = j["cases"][i];
    Where cw = w;
    if (raw.is_object() && raw.contains("name") && raw["name"].is_string()) {
      cw.case_name = raw["name"].get<std::string>();
      cw.line = lines.line(cw.case_name);
    }
    for (json& expanded : expand_sweep(raw, cw)) {
      Where at = cw;
      if (expanded.is_object() && expanded.contains("name") && expanded["name"].is_string()) {
        at.case_name = expanded["name"].get<std::string>();
        if (const int line = lines.line(at.case_name); line > 0) at.line = line;
        if (!by_name.emplace(at.case_name, pending.size()).second) throw InputError(at.str() + ": duplicate case name");
      }
      pending.push_back({std::move(expanded), i, at});
    }
  }
  std::vector<std::string> names;
  for (const auto& [n, _] : by_name) names.push_back(n);

  // Producers load before the cases that take their outputs, so a consumer's operand gets the
  // producer's output format and shape and every check of the consumer's op applies to it.
  LinkContext links;
  std::vector<std::optional<Case>> loaded(pending.size());
  auto producers = [&](std::size_t k) {
    std::vector<std::size_t> d;
    for (const auto& [operand, producer] : operand_links(pending[k].j)) {
      const auto it = by_name.find(producer);
      if (it == by_name.end()) pending[k].where.fail(operand + ".from", unknown_case(producer, names));
      d.push_back(it->second);
    }
    return d;
  };
  auto load = [&](std::size_t k) {
    Where cw = pending[k].where;
    cw.links = &links;
    Case c = load_case(pending[k].j, pending[k].index, lines, cw);
    links.outputs[c.name] = {op_output_dtype(c.op), op_output_shape(c.op)};
    loaded[k] = std::move(c);
  };
  auto cycle = [&](const std::vector<std::size_t>& path) {
    std::string chain;
    for (std::size_t k : path) chain += (chain.empty() ? "" : " -> ") + pending[k].where.case_name;
    const std::string& next = pending[path[1]].where.case_name;
    for (const auto& [operand, producer] : operand_links(pending[path[0]].j))
      if (producer == next)
        pending[path[0]].where.fail(operand + ".from", path.size() == 2 ? "a case cannot take an operand from itself"
                                                                        : "the cases' operands form a cycle: " + chain);
  };
  in_dependency_order(pending.size(), producers, load, cycle);

  for (std::optional<Case>& c : loaded) {
    c->suite = s.name;
    c->file = s.file;
    for (const auto& [backend, e] : defaults) c->expect.try_emplace(backend, e);
    // The TOSA dot-product bounds judge a float dot product; no other op has them.
    if (!std::holds_alternative<WeightOnlyGemmOp>(c->op) && !std::holds_alternative<Conv2dOp>(c->op) &&
        !std::holds_alternative<MxGemmOp>(c->op))
      for (const auto& [backend, e] : c->expect)
        if (e.kind == Expectation::Kind::dot_product)
          throw InputError(s.file + ":" + std::to_string(c->line) + ": case '" + c->name + "': field 'expect." +
                           backend + "': dot_product applies to weight_only_gemm, conv2d and mx_gemm cases only, not " +
                           std::string(op_name(c->op)));
    s.cases.push_back(std::move(*c));
  }
  check_links(s);
  return s;
}

std::vector<Suite> load_suites(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const fs::path& p : paths) {
    if (fs::is_directory(p)) {
      // Model files (*.model.json, docs/models.md) are not case files: the CLI runs them as models.
      std::vector<fs::path> found;
      bool models = false;
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (!e.is_regular_file() || e.path().extension() != ".json") continue;
        const std::string n = e.path().filename().string();
        if (n.ends_with(".model.json"))
          models = true;
        else if (n.find(".schema.") == std::string::npos)
          found.push_back(e.path());
      }
      if (found.empty() && !models) throw InputError(p.string() + ": a folder with no case files (*.json)");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p)) {
      if (!p.filename().string().ends_with(".model.json")) files.push_back(p);
    } else {
      throw InputError(p.string() + ": no such file or folder");
    }
  }
  std::vector<Suite> suites;
  for (const fs::path& f : files) suites.push_back(load_suite(f));
  return suites;
}

void bind_operand(OpRequest& op, const std::string& field, const Tensor& values) {
  const OperandSlot slot = operand_slot(op, field);
  if (!slot.values && !slot.output && !slot.params)
    throw InputError("a " + std::string(op_name(op)) + " op has no operand '" + field + "'");
  const auto [t, shape] = slot.type();
  if (values.dtype() != t || values.shape() != shape)
    throw InputError(field + ": expected " + std::string(name(t)) + " " + shape_str(shape) + ", got " +
                     std::string(name(values.dtype())) + " " + shape_str(values.shape()));
  if (slot.output || slot.params) {
    const double scale = values.get_double(0), zp = values.get_double(1);
    const DType format = slot.output ? slot.output->format : slot.params_format;
    if (!(scale > 0) || !std::isfinite(scale) || static_cast<double>(static_cast<float>(scale)) != scale)
      throw InputError(field + ": the chosen scale " + std::to_string(scale) + " is not a positive f32 value");
    if (zp != std::nearbyint(zp) || zp < static_cast<double>(int_min(format)) ||
        zp > static_cast<double>(int_max(format)))
      throw InputError(field + ": the chosen zero point " + std::to_string(zp) + " is not an integer of " +
                       std::string(name(format)));
    if (slot.output) {
      slot.output->scale = scale;
      slot.output->zero_point = static_cast<std::int64_t>(zp);
    } else {
      slot.params->scales = {scale};
      slot.params->zero_points = {static_cast<std::int64_t>(zp)};
    }
    return;
  }
  if (slot.weights && slot.weights->packing)
    *slot.values = pack_int4(values, slot.weights->format, *slot.weights->packing);
  else
    *slot.values = values;
}

namespace {

// The key a link's field is written under: "a.from", or "output.params_from" for a pair of parameters.
std::string link_key(const std::string& field) {
  constexpr std::string_view kParams = ".params";
  if (field.size() > kParams.size() && field.ends_with(kParams))
    return field.substr(0, field.size() - kParams.size()) + ".params_from";
  return field + ".from";
}

}  // namespace

void check_links(const Suite& s) {
  std::vector<const Case*> all;
  for (const Case& c : s.cases) all.push_back(&c);
  for (const Case& c : s.dependencies) all.push_back(&c);
  std::map<std::string, std::size_t> by_name;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < all.size(); ++k) {
    by_name.emplace(all[k]->name, k);
    names.push_back(all[k]->name);
  }
  auto at = [&](const Case& c) { return Where{c.file.empty() ? s.file : c.file, c.line, c.name, "", nullptr}; };
  auto output = [](const Case& c) {
    return std::string(name(op_output_dtype(c.op))) + " " + shape_str(op_output_shape(c.op));
  };
  for (const Case* c : all) {
    for (const OperandLink& l : c->links) {
      const auto it = by_name.find(l.producer);
      if (it == by_name.end()) at(*c).fail(link_key(l.field), unknown_case(l.producer, names));
      OpRequest op = c->op;  // a copy: operand_slot hands out mutable pointers
      const OperandSlot slot = operand_slot(op, l.field);
      if (!slot.values && !slot.output && !slot.params)
        at(*c).fail(link_key(l.field), "a " + std::string(op_name(op)) + " op has no such operand");
      const auto [t, shape] = slot.type();
      const Case& p = *all[it->second];
      if (op_output_dtype(p.op) != t || op_output_shape(p.op) != shape)
        at(*c).fail(link_key(l.field), "'" + p.name + "' outputs " + output(p) + ", but the operand is " +
                                           std::string(name(t)) + " " + shape_str(shape));
    }
  }
  // Only the cases this selection judges compare outputs; dependencies are evaluated, not judged.
  for (const Case& c : s.cases) {
    for (const Agreement& a : c.agreements) {
      const std::string field(a.assertion());
      const auto it = by_name.find(a.other);
      if (it == by_name.end()) at(c).fail(field, unknown_case(a.other, names));
      const Case& o = *all[it->second];
      if (&o == &c) at(c).fail(field, "a case cannot be compared with itself");
      if (output(o) != output(c))
        at(c).fail(field, "'" + o.name + "' outputs " + output(o) + " and this case " + output(c) +
                              ": outputs are compared element by element, so their formats and shapes must agree");
    }
  }
  in_dependency_order(
      all.size(),
      [&](std::size_t k) {
        std::vector<std::size_t> d;
        for (const OperandLink& l : all[k]->links) d.push_back(by_name.at(l.producer));
        return d;
      },
      [](std::size_t) {},
      [&](const std::vector<std::size_t>& path) {
        std::string chain;
        for (std::size_t k : path) chain += (chain.empty() ? "" : " -> ") + all[k]->name;
        for (const OperandLink& l : all[path[0]]->links)
          if (l.producer == all[path[1]]->name)
            at(*all[path[0]])
                .fail(link_key(l.field), path.size() == 2 ? "a case cannot take an operand from itself"
                                                          : "the cases' operands form a cycle: " + chain);
      });
}

Suite select_cases(const Suite& s, const std::vector<bool>& keep) {
  Suite out = s;
  out.cases.clear();
  out.dependencies.clear();
  std::map<std::string, const Case*> by_name;
  for (const auto* list : {&s.cases, &s.dependencies})
    for (const Case& c : *list) by_name.emplace(c.name, &c);
  std::set<std::string> kept, needed;
  for (std::size_t i = 0; i < s.cases.size(); ++i)
    if (i < keep.size() && keep[i]) {
      out.cases.push_back(s.cases[i]);
      kept.insert(s.cases[i].name);
    }
  std::vector<std::string> todo;
  auto need = [&](const std::string& n) {
    if (!kept.contains(n) && needed.insert(n).second) todo.push_back(n);
  };
  for (const Case& c : out.cases) {
    for (const OperandLink& l : c.links) need(l.producer);
    for (const Agreement& a : c.agreements) need(a.other);
  }
  while (!todo.empty()) {  // the producers of what is needed, transitively
    const auto it = by_name.find(todo.back());
    todo.pop_back();
    if (it != by_name.end())
      for (const OperandLink& l : it->second->links) need(l.producer);
  }
  for (const auto* list : {&s.cases, &s.dependencies})
    for (const Case& c : *list)
      if (needed.contains(c.name)) out.dependencies.push_back(c);
  return out;
}

}  // namespace qc
