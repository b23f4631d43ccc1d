// Numerics policies and presets: every choice as an enum, the per-op policies as read-only value
// objects, and qconform.Spec (a qc::Spec) built from a preset and keyword choices with exactly the
// case format's "spec" semantics (one definition: qc::parse_spec).
#include "cases/case_writer.hpp"
#include "common.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/int_accumulate.hpp"
#include "oracles/policy.hpp"
#include "oracles/presets.hpp"
#include "oracles/requantize.hpp"
#include "qconform/error.hpp"

#include <nlohmann/json.hpp>

namespace qcpy {

using json = nlohmann::json;
using qc::InputError;

namespace {

py::object clip_value(const std::optional<std::pair<std::int64_t, std::int64_t>>& c) {
  if (!c) return py::none();
  return py::make_tuple(c->first, c->second);
}

json kwargs_json(const py::kwargs& kw) { return json::parse(json_text(kw)); }

// The case format's "spec" object: overrides merged into a base spec object. A requantize object
// that names a scheme replaces the base's (a scheme brings its source's defaults); otherwise
// nested objects merge field by field.
json merged(json base, const json& overrides) {
  for (const auto& [key, value] : overrides.items()) {
    const bool nested = (key == "dequantize" || key == "requantize") && value.is_object() && base.contains(key) &&
                        base[key].is_object();
    if (nested && !(key == "requantize" && value.contains("scheme"))) {
      base[key].update(value);
    } else {
      base[key] = value;
    }
  }
  return base;
}

qc::Spec make_policy(const py::handle& preset, const py::kwargs& kw) {
  if (!py::isinstance<py::str>(preset)) {
    if (py::isinstance<qc::Spec>(preset) && kw.empty()) return preset.cast<qc::Spec>();
    throw InputError("Spec: the preset must be a name such as \"onnx\"");
  }
  const std::string name = preset.cast<std::string>();
  if (kw.empty()) return qc::parse_spec(name, "spec");  // the preset itself, or the loader's message
  json j = kwargs_json(kw);
  j["preset"] = name;
  return qc::parse_spec(j.dump(), "spec");
}

qc::Spec with_choices(const qc::Spec& s, const py::kwargs& kw) {
  if (kw.empty()) return s;
  json base = qc::spec_to_json(s);
  if (base.is_string()) base = json{{"preset", base.get<std::string>()}};
  return qc::parse_spec(merged(base, kwargs_json(kw)).dump(), "spec");
}

std::string policy_repr(const qc::Spec& s) {
  try {
    const json j = qc::spec_to_json(s);
    return "Spec(" + (j.is_string() ? "'" + j.get<std::string>() + "'" : j.dump()) + ")";
  } catch (const InputError&) {
    return "Spec(<" + s.name + ">)";
  }
}

}  // namespace

void bind_policies(py::module_& m) {
  using namespace qc;
  bind_enum<QuantizeOrder>(m, "QuantizeOrder", "The order of quantize's operations.")
      .def_property_readonly("formula", [](QuantizeOrder o) { return std::string(formula(o)); });
  bind_enum<Clamp>(m, "Clamp", "Where quantize saturates.");
  bind_enum<NanRule>(m, "NanRule", "What quantize makes of NaN.");
  bind_enum<IntCast>(m, "IntCast",
                     "How quantize's rounded value becomes an integer (an x86 cast: NaN, inf and overflow give the "
                     "most negative integer).");
  bind_enum<DequantizeOrder>(m, "DequantizeOrder", "The order of dequantize's operations.")
      .def_property_readonly("formula", [](DequantizeOrder o) { return std::string(formula(o)); });
  bind_enum<RequantizeScheme>(m, "RequantizeScheme", "A requantization scheme.")
      .def_property_readonly("description", [](RequantizeScheme r) { return std::string(describe(r)); });
  bind_enum<MultiplierOrder>(m, "MultiplierOrder", "How the requantize multiplier s_in*s_w/s_out is formed.");
  bind_enum<MultiplierDerivation>(m, "MultiplierDerivation",
                                  "How a fixed-point scheme derives its integer multiplier.");
  bind_enum<ZeroPointAdd>(m, "ZeroPointAdd", "Where requantize adds the output zero point.");
  bind_enum<Accumulation>(m, "Accumulation", "How a GEMM's integer products add up.")
      .def_property_readonly("description", [](Accumulation a) { return std::string(describe(a)); });
  bind_enum<ZeroPointCorrection>(m, "ZeroPointCorrection", "How GEMM/conv zero points enter the accumulation.");
  bind_enum<ConvDepthOrder>(m, "ConvDepthOrder",
                            "The order of a convolution's dot product over one filter (OIHW or NHWC im2col).");
  bind_enum<PairRule>(m, "PairRule",
                      "How an int16-pair (vpmaddubsw) kernel forms its pairs: MLAS's u8 x s8 along the whole K, or "
                      "oneDNN's GEMM driver (s8 sources shifted to u8, pairs restarting at its K blocks per ISA).");
  bind_enum<QParamsRecipe>(m, "QParamsRecipe", "Whose parameter-choice code a rule follows.");
  bind_enum<QParamsScheme>(m, "QParamsScheme", "Asymmetric, symmetric, or power-of-two scales.");
  bind_enum<ZeroPointChoice>(m, "ZeroPointChoice", "How a rule picks the zero point.");
  bind_enum<ReduceRange>(m, "ReduceRange", "Reduced integer ranges.");

  py::class_<ComputeFormat>(m, "ComputeFormat", "The format intermediates are rounded to (exact, f64, fixed64:N, ...).")
      .def(py::init([](const std::string& s) {
             auto c = parse_compute_format(s);
             if (!c) throw InputError("unknown compute format '" + s + "'");
             return *c;
           }),
           py::arg("name"))
      .def_property_readonly("kind",
                             [](const ComputeFormat& c) {
                               const std::string s = to_string(c);
                               return s.substr(0, s.find(':'));
                             })
      .def_readonly("frac_bits", &ComputeFormat::frac_bits)
      .def("__str__", [](const ComputeFormat& c) { return to_string(c); })
      .def("__repr__", [](const ComputeFormat& c) { return "ComputeFormat('" + to_string(c) + "')"; })
      .def("__eq__", [](const ComputeFormat& a, const py::handle& b) {
        if (py::isinstance<py::str>(b)) return to_string(a) == b.cast<std::string>();
        return py::isinstance<ComputeFormat>(b) && a == b.cast<ComputeFormat>();
      });

  py::class_<QuantizePolicy>(m, "QuantizePolicy", "Every choice of quantize (a read-only value).")
      .def_readonly("order", &QuantizePolicy::order)
      .def_readonly("compute", &QuantizePolicy::compute)
      .def_readonly("rounding", &QuantizePolicy::rounding)
      .def_readonly("clamp", &QuantizePolicy::clamp)
      .def_readonly("narrow_range", &QuantizePolicy::narrow_range)
      .def_property_readonly("clip", [](const QuantizePolicy& p) { return clip_value(p.clip); })
      .def_readonly("nan", &QuantizePolicy::nan)
      .def_readonly("cast", &QuantizePolicy::cast)
      .def("__eq__", [](const QuantizePolicy& a, const QuantizePolicy& b) { return a == b; })
      .def("__repr__", [](const QuantizePolicy& p) {
        return "QuantizePolicy(order=" + std::string(name(p.order)) + ", compute=" + to_string(p.compute) +
               ", rounding=" + std::string(name(p.rounding)) + ", clamp=" + std::string(name(p.clamp)) +
               ", narrow_range=" + (p.narrow_range ? "True" : "False") + ", nan=" + std::string(name(p.nan)) +
               ", cast=" + std::string(name(p.cast)) + ")";
      });
  py::class_<DequantizePolicy>(m, "DequantizePolicy", "Every choice of dequantize (a read-only value).")
      .def_readonly("order", &DequantizePolicy::order)
      .def_readonly("compute", &DequantizePolicy::compute)
      .def("__eq__", [](const DequantizePolicy& a, const DequantizePolicy& b) { return a == b; })
      .def("__repr__", [](const DequantizePolicy& p) {
        return "DequantizePolicy(order=" + std::string(name(p.order)) + ", compute=" + to_string(p.compute) + ")";
      });
  py::class_<RequantizePolicy>(m, "RequantizePolicy", "Every choice of requantize (a read-only value).")
      .def_readonly("scheme", &RequantizePolicy::scheme)
      .def_readonly("multiplier_order", &RequantizePolicy::multiplier_order)
      .def_readonly("multiplier_format", &RequantizePolicy::multiplier_format)
      .def_readonly("derivation", &RequantizePolicy::derivation)
      .def_readonly("product_format", &RequantizePolicy::product_format)
      .def_readonly("zero_point", &RequantizePolicy::zero_point)
      .def_readonly("rounding", &RequantizePolicy::rounding)
      .def_readonly("clamp", &RequantizePolicy::clamp)
      .def_readonly("narrow_range", &RequantizePolicy::narrow_range)
      .def_property_readonly("clip", [](const RequantizePolicy& p) { return clip_value(p.clip); })
      .def("__eq__", [](const RequantizePolicy& a, const RequantizePolicy& b) { return a == b; })
      .def("__str__", [](const RequantizePolicy& p) { return to_string(p); })
      .def("__repr__", [](const RequantizePolicy& p) { return "RequantizePolicy(" + to_string(p) + ")"; });

  py::class_<QParamsRule>(m, "QParamsRule",
                          "A parameter-choice rule (min/max -> scale, zero point): a preset's, with fields changed.")
      .def(py::init([](const std::string& preset, const py::kwargs& kw) {
             auto base = find_qparams_preset(preset);
             if (!base) throw InputError("unknown parameter-choice rule '" + preset + "'");
             QParamsRule r = *base;
             for (const auto& [k, v] : kw) {
               const std::string key = k.cast<std::string>();
               const std::string where = "QParamsRule: " + key;
               if (key == "recipe")
                 r.recipe = enum_arg<QParamsRecipe>(v, where);
               else if (key == "scheme")
                 r.scheme = enum_arg<QParamsScheme>(v, where);
               else if (key == "zero_point")
                 r.zero_point = enum_arg<ZeroPointChoice>(v, where);
               else if (key == "reduce_range")
                 r.reduce_range = enum_arg<ReduceRange>(v, where);
               else if (key == "nudge")
                 r.nudge = enum_arg<RoundingMode>(v, parse_rounding_mode, where);
               else if (key == "include_zero")
                 r.include_zero = v.cast<bool>();
               else if (key == "narrow_range")
                 r.narrow_range = v.cast<bool>();
               else if (key == "scale_floor")
                 r.scale_floor = v.cast<double>();
               else if (key == "arithmetic")
                 r.arithmetic = dtype_arg(v, where);
               else
                 throw InputError("QParamsRule: unknown field '" + key + "'");
             }
             return r;
           }),
           py::arg("preset") = "onnx-dynamic-quantize-linear")
      .def_readonly("recipe", &QParamsRule::recipe)
      .def_readonly("scheme", &QParamsRule::scheme)
      .def_readonly("include_zero", &QParamsRule::include_zero)
      .def_readonly("zero_point", &QParamsRule::zero_point)
      .def_readonly("nudge", &QParamsRule::nudge)
      .def_readonly("reduce_range", &QParamsRule::reduce_range)
      .def_readonly("narrow_range", &QParamsRule::narrow_range)
      .def_readonly("scale_floor", &QParamsRule::scale_floor)
      .def_readonly("arithmetic", &QParamsRule::arithmetic)
      .def("__eq__", [](const QParamsRule& a, const QParamsRule& b) { return a == b; })
      .def("__repr__", [](const QParamsRule& r) {
        return "QParamsRule(recipe=" + std::string(name(r.recipe)) + ", scheme=" + std::string(name(r.scheme)) +
               ", zero_point=" + std::string(name(r.zero_point)) + ", nudge=" + std::string(name(r.nudge)) +
               ", reduce_range=" + std::string(name(r.reduce_range)) + ")";
      });
  py::dict qparams;
  for (const QParamsPreset& p : qparams_presets()) qparams[py::str(std::string(p.name))] = p.rule;
  m.attr("qparams_presets") = qparams;

  py::class_<Spec>(m, "Spec",
                   "A spec: the numerics policy of every op (a preset, or a preset with choices changed), as a case "
                   "file's \"spec\" reads: Spec('onnx', rounding='rna', requantize={'scheme': "
                   "'gemmlowp_double'}).")
      .def(py::init(&make_policy), py::arg("preset") = "onnx")
      .def("with_", &with_choices,
           "A new policy with the given choices changed (the keywords of a case file's spec object).")
      .def_readonly("name", &Spec::name)
      .def_readonly("description", &Spec::description)
      .def_readonly("sources", &Spec::sources)
      .def_readonly("quantize", &Spec::quantize)
      .def_readonly("quantize_half_input", &Spec::quantize_half_input)
      .def(
          "quantize_for", [](const Spec& s, const py::handle& t) { return s.quantize_for(dtype_arg(t, "dtype")); },
          py::arg("input_dtype"), "The quantize policy for inputs of a format (some presets treat f16/bf16 apart).")
      .def_readonly("dequantize", &Spec::dequantize)
      .def_readonly("requantize", &Spec::requantize)
      .def_readonly("accumulation", &Spec::accumulation)
      .def_readonly("zero_points", &Spec::zero_points)
      .def_readonly("conv_depth_order", &Spec::conv_depth_order)
      .def_readonly("pair_rule", &Spec::pair_rule)
      .def_readonly("conv_accumulation", &Spec::conv_accumulation)
      .def_readonly("qparams", &Spec::qparams)
      .def(
          "to_json", [](const Spec& s) { return json_to_python(spec_to_json(s)); },
          "The case format's spec field: the preset name, or {'preset': ..., choices}.")
      .def("__eq__", [](const Spec& a,
                        const py::handle& b) { return py::isinstance<Spec>(b) && same_numerics(a, b.cast<Spec>()); })
      .def("__repr__", &policy_repr);

  py::dict presets_dict;
  for (const Spec& s : presets()) presets_dict[py::str(s.name)] = s;
  m.attr("presets") = presets_dict;
}

}  // namespace qcpy
