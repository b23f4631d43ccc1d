// Op requests, cases and suites: build them from numpy arrays, load and save the JSON case format
// (cases/case.hpp, cases/case_writer.hpp), and the seeded input generators (cases/generators.hpp).
#include "cases/case.hpp"
#include "cases/case_writer.hpp"
#include "cases/generators.hpp"
#include "common.hpp"
#include "oracles/choose_qparams.hpp"
#include "qconform/error.hpp"

#include <pybind11/stl/filesystem.h>

#include <nlohmann/json.hpp>

namespace qcpy {

using qc::DType;
using qc::InputError;
namespace fs = std::filesystem;

namespace {

// A loaded suite: its cases as shared Case objects, so Python holds each case once.
struct PySuite {
  std::string name, description, file;
  std::vector<std::shared_ptr<qc::Case>> cases;
};

PySuite to_py_suite(qc::Suite&& s) {
  PySuite p{s.name, s.description, s.file, {}};
  for (qc::Case& c : s.cases) p.cases.push_back(std::make_shared<qc::Case>(std::move(c)));
  return p;
}

std::vector<fs::path> paths_arg(const py::handle& h) {
  std::vector<fs::path> out;
  if (py::isinstance<py::str>(h) || py::hasattr(h, "__fspath__")) {
    out.emplace_back(py::str(py::module_::import("os").attr("fspath")(h)).cast<std::string>());
    return out;
  }
  for (const py::handle& p : h)
    out.emplace_back(py::str(py::module_::import("os").attr("fspath")(p)).cast<std::string>());
  return out;
}

qc::Expectation expectation_arg(const py::handle& h, const std::string& where) {
  using K = qc::Expectation::Kind;
  std::string kind;
  std::int64_t n = 0;
  if (py::isinstance<py::str>(h)) {
    kind = h.cast<std::string>();
    if (auto colon = kind.find(':'); colon != std::string::npos) {  // Expectation::str(): "max_lsb:1"
      n = std::stoll(kind.substr(colon + 1));
      kind = kind.substr(0, colon);
    }
  } else if (py::isinstance<py::dict>(h) && py::len(h) == 1) {
    for (const auto& [k, v] : h.cast<py::dict>()) {
      kind = k.cast<std::string>();
      n = v.cast<std::int64_t>();
    }
  }
  if (kind == "exact") return {K::exact, 0};
  if (kind == "claim") return {K::claim, 0};
  if (kind == "dot_product") return {K::dot_product, 0};
  if ((kind == "max_lsb" || kind == "max_ulp") && n >= 0) return {kind == "max_lsb" ? K::max_lsb : K::max_ulp, n};
  throw InputError(where + ": expected \"exact\", \"claim\", \"dot_product\", {\"max_lsb\": n} or {\"max_ulp\": n}");
}

// differs_from: "name", ("name", n), {"case": "name", "elements": n}, or a list of them.
std::vector<qc::Agreement> differs_arg(const py::handle& h) {
  std::vector<qc::Agreement> out;
  if (h.is_none()) return out;
  auto one = [&](const py::handle& x) {
    qc::Agreement a{qc::Agreement::Kind::differs, "", -1};
    if (py::isinstance<py::str>(x)) {
      a.other = x.cast<std::string>();
    } else if (py::isinstance<py::dict>(x)) {
      const py::dict d = x.cast<py::dict>();
      a.other = py::str(d["case"]).cast<std::string>();
      if (d.contains("elements")) a.elements = d["elements"].cast<std::int64_t>();
    } else if (py::isinstance<py::tuple>(x) && py::len(x) == 2) {
      a.other = x[py::int_(0)].cast<std::string>();
      a.elements = x[py::int_(1)].cast<std::int64_t>();
    } else {
      throw InputError("differs_from: expected a case name, (name, elements), {'case': name, 'elements': n} or a list");
    }
    if (a.elements == 0 || a.elements < -1) throw InputError("differs_from: elements must be at least 1");
    out.push_back(std::move(a));
  };
  if (py::isinstance<py::list>(h))
    for (const py::handle& x : h) one(x);
  else
    one(h);
  return out;
}

std::shared_ptr<qc::Case> make_case(const std::string& name, const py::handle& op, const py::handle& policy,
                                    const py::handle& expect, const std::string& description, const std::string& suite,
                                    const py::handle& operands_from, const py::handle& same_outputs_as,
                                    const py::handle& differs_from) {
  auto c = std::make_shared<qc::Case>();
  c->name = name;
  c->suite = suite;
  c->description = description;
  c->file = "<python>";
  c->spec = spec_arg(policy);
  c->op = op_arg(op);
  resolve_dynamic_rules(c->op, c->spec);
  if (py::isinstance<py::dict>(expect)) {
    for (const auto& [k, v] : expect.cast<py::dict>()) {
      const std::string backend = k.cast<std::string>();
      c->expect[backend] = expectation_arg(v, "expect." + backend);
    }
  } else if (!expect.is_none()) {
    c->expect["*"] = expectation_arg(expect, "expect");
  }
  // The op's tensors at linked operands stand for the producers' outputs (their format and shape);
  // run_cases checks them against the producers and binds the values.
  if (!operands_from.is_none())
    for (const auto& [k, v] : operands_from.cast<py::dict>())
      c->links.push_back({k.cast<std::string>(), v.cast<std::string>()});
  if (!same_outputs_as.is_none()) {
    if (py::isinstance<py::str>(same_outputs_as))
      c->agreements.push_back({qc::Agreement::Kind::same_outputs, same_outputs_as.cast<std::string>(), -1});
    else
      for (const py::handle& x : same_outputs_as)
        c->agreements.push_back({qc::Agreement::Kind::same_outputs, x.cast<std::string>(), -1});
  }
  for (qc::Agreement& a : differs_arg(differs_from)) c->agreements.push_back(std::move(a));
  return c;
}

std::string suite_of(const std::vector<std::shared_ptr<qc::Case>>& cases, const py::handle& suite) {
  if (!suite.is_none()) return suite.cast<std::string>();
  if (!cases.empty()) {
    bool same = true;
    for (const auto& c : cases) same = same && c->suite == cases.front()->suite;
    if (same && !cases.front()->suite.empty()) return cases.front()->suite;
  }
  return "python";
}

std::string op_repr(const qc::OpRequest& op) {
  const qc::Tensor& in = qc::op_input(op);
  return std::string(qc::op_name(op)) + "(" + std::string(qc::name(in.dtype())) + qc::shape_str(in.shape()) + " -> " +
         std::string(qc::name(qc::op_output_dtype(op))) + ")";
}

// The main input, name and output format of each op, without copying it into an OpRequest.
const qc::Tensor& main_input(const qc::QuantizeOp& o) { return o.x; }
const qc::Tensor& main_input(const qc::DequantizeOp& o) { return o.q; }
const qc::Tensor& main_input(const qc::RequantizeOp& o) { return o.acc; }
const qc::Tensor& main_input(const qc::QGemmOp& o) { return o.a.values; }
const qc::Tensor& main_input(const qc::QConv2dOp& o) { return o.input.values; }
const qc::Tensor& main_input(const qc::WeightOnlyGemmOp& o) { return o.a; }
const qc::Tensor& main_input(const qc::ChooseQParamsOp& o) { return o.profile; }
const qc::Tensor& main_input(const qc::Conv2dOp& o) { return o.input; }
const qc::Tensor& main_input(const qc::MxQuantizeOp& o) { return o.x; }
const qc::Tensor& main_input(const qc::MxDequantizeOp& o) { return o.elements; }
const qc::Tensor& main_input(const qc::MxGemmOp& o) { return o.a.values; }
const qc::Tensor& main_input(const qc::QAddOp& o) { return o.a; }
std::string kind_of(const qc::QuantizeOp&) { return "quantize"; }
std::string kind_of(const qc::DequantizeOp&) { return "dequantize"; }
std::string kind_of(const qc::RequantizeOp&) { return "requantize"; }
std::string kind_of(const qc::QGemmOp&) { return "qgemm"; }
std::string kind_of(const qc::QConv2dOp&) { return "qconv2d"; }
std::string kind_of(const qc::WeightOnlyGemmOp&) { return "weight_only_gemm"; }
std::string kind_of(const qc::ChooseQParamsOp&) { return "choose_qparams"; }
std::string kind_of(const qc::Conv2dOp&) { return "conv2d"; }
std::string kind_of(const qc::MxQuantizeOp&) { return "mx_quantize"; }
std::string kind_of(const qc::MxDequantizeOp&) { return "mx_dequantize"; }
std::string kind_of(const qc::MxGemmOp&) { return "mx_gemm"; }
std::string kind_of(const qc::QAddOp&) { return "qadd"; }
DType output_of(const qc::QuantizeOp& o) { return o.out; }
DType output_of(const qc::DequantizeOp& o) { return o.out; }
DType output_of(const qc::RequantizeOp& o) { return o.out; }
DType output_of(const qc::QGemmOp& o) { return o.output.format; }
DType output_of(const qc::QConv2dOp& o) { return o.output.format; }
DType output_of(const qc::WeightOnlyGemmOp& o) { return o.out; }
DType output_of(const qc::ChooseQParamsOp&) { return DType::f64; }
DType output_of(const qc::Conv2dOp& o) { return o.out; }
DType output_of(const qc::MxQuantizeOp&) { return DType::f32; }
DType output_of(const qc::MxDequantizeOp&) { return DType::f32; }
DType output_of(const qc::MxGemmOp& o) { return o.out; }
DType output_of(const qc::QAddOp& o) { return o.output.format; }

// Properties every op class has: its kind, main input and output format.
template <class Op, class Class>
void common_op_properties(Class& c) {
  c.def_property_readonly("kind", [](const Op& o) { return kind_of(o); })
      .def_property_readonly(
          "main_input", [](py::object self) { return view(main_input(self.cast<Op&>()), self); },
          "The input array the outputs correspond to element by element (x, q, acc, or the activation values).")
      .def_property_readonly("output_dtype", [](const Op& o) { return output_of(o); })
      .def("__repr__", [](const Op& o) {
        const qc::Tensor& in = main_input(o);
        return kind_of(o) + "(" + std::string(qc::name(in.dtype())) + qc::shape_str(in.shape()) + " -> " +
               std::string(qc::name(output_of(o))) + ")";
      });
}

py::array fill(DType t, const py::handle& shape, const std::function<void(qc::Tensor&)>& f) {
  qc::Shape s;
  if (py::isinstance<py::int_>(shape)) {
    s.push_back(shape.cast<std::int64_t>());
  } else {
    for (const py::handle& d : shape) s.push_back(d.cast<std::int64_t>());
  }
  qc::Tensor x(t, s);
  f(x);
  return to_numpy(std::move(x));
}

void bind_generators(py::module_& m) {
  py::module_ g = m.def_submodule(
      "generators",
      "The seeded input generators of the case format (cases/generators.hpp): SplitMix64 and fixed sequences of "
      "IEEE operations on it, so a seed gives the same bits on every machine. Each returns a numpy array of the "
      "format (bf16 as uint16 bits).");
  py::class_<qc::SplitMix64>(g, "SplitMix64", "The PRNG (Steele, Lea, Flood 2014).")
      .def(py::init<std::uint64_t>(), py::arg("seed"))
      .def("next", &qc::SplitMix64::next)
      .def("uniform01", &qc::SplitMix64::uniform01)
      .def("below", &qc::SplitMix64::below, py::arg("n"));
  g.def(
      "uniform",
      [](const py::handle& shape, const py::handle& dtype, std::uint64_t seed, double low, double high) {
        return fill(dtype_arg(dtype, "dtype"), shape, [&](qc::Tensor& t) { qc::fill_uniform(t, seed, low, high); });
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("seed") = 0, py::arg("low") = -1.0, py::arg("high") = 1.0);
  g.def(
      "normal",
      [](const py::handle& shape, const py::handle& dtype, std::uint64_t seed, double mean, double std) {
        return fill(dtype_arg(dtype, "dtype"), shape, [&](qc::Tensor& t) { qc::fill_normal(t, seed, mean, std); });
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("seed") = 0, py::arg("mean") = 0.0, py::arg("std") = 1.0);
  g.def(
      "ties",
      [](const py::handle& shape, const py::handle& dtype, std::uint64_t seed, double scale, std::int64_t k_min,
         std::int64_t k_max) {
        return fill(dtype_arg(dtype, "dtype"), shape,
                    [&](qc::Tensor& t) { qc::fill_ties(t, seed, scale, k_min, k_max); });
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("seed") = 0, py::arg("scale") = 1.0, py::arg("k_min") = -130,
      py::arg("k_max") = 130);
  g.def(
      "saturation",
      [](const py::handle& shape, const py::handle& dtype, std::uint64_t seed, double scale, std::int64_t zero_point,
         const py::handle& output_dtype) {
        const DType out = dtype_arg(output_dtype, "output_dtype");
        return fill(dtype_arg(dtype, "dtype"), shape,
                    [&](qc::Tensor& t) { qc::fill_saturation_edges(t, seed, scale, zero_point, out); });
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("seed") = 0, py::arg("scale") = 1.0,
      py::arg("zero_point") = 0, py::arg("output_dtype") = "i8");
  g.def(
      "exhaustive",
      [](const py::handle& shape, const py::handle& dtype) {
        return fill(dtype_arg(dtype, "dtype"), shape, [](qc::Tensor& t) { qc::fill_exhaustive(t); });
      },
      py::arg("shape"), py::arg("dtype"));
  g.def(
      "specials",
      [](const py::handle& shape, const py::handle& dtype) {
        return fill(dtype_arg(dtype, "dtype"), shape, [](qc::Tensor& t) { qc::fill_specials(t); });
      },
      py::arg("shape"), py::arg("dtype") = "f32");
  g.def(
      "accumulator_stress",
      [](const py::handle& shape, const py::handle& dtype, std::uint64_t seed) {
        return fill(dtype_arg(dtype, "dtype"), shape, [&](qc::Tensor& t) { qc::fill_accumulator_stress(t, seed); });
      },
      py::arg("shape"), py::arg("dtype") = "i8", py::arg("seed") = 0);
  g.def(
      "tosa_dot_product",
      [](const py::handle& shape, const py::handle& dtype, int set, int operand, std::optional<std::int64_t> ks,
         int k_axis, std::optional<double> bound) {
        const DType t = dtype_arg(dtype, "dtype");
        return fill(t, shape, [&](qc::Tensor& x) {
          const int a = k_axis < 0 ? k_axis + x.rank() : k_axis;
          if (a < 0 || a >= x.rank()) throw InputError("tosa_dot_product: k_axis out of range");
          // The loader's defaults: B for the input format with an f32 accumulator.
          const double b = t == DType::f16    ? 65504.0
                           : t == DType::bf16 ? 18374686479671623680.0
                                              : 18446742974197923840.0;
          qc::fill_tosa_dot_product(x, set, operand, ks.value_or(x.shape()[static_cast<std::size_t>(a)]), k_axis,
                                    bound.value_or(b));
        });
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("set") = 0, py::arg("operand") = 0,
      py::arg("ks") = py::none(), py::arg("k_axis") = -1, py::arg("bound") = py::none());
}

}  // namespace

void bind_cases(py::module_& m) {
  // ---- Op requests --------------------------------------------------------------------------
  py::class_<qc::QuantizeOp> quantize(m, "QuantizeOp", "y = QuantizeLinear(x): float x -> integers.");
  quantize
      .def(py::init([](const py::handle& x, const py::handle& scale, const py::handle& zero_point,
                       const py::handle& dtype, const py::handle& axis, std::int64_t block_size,
                       const py::handle& scale_dtype, const py::handle& input_dtype, bool saturate) {
             qc::QuantizeOp op;
             op.x = to_tensor(x, optional_dtype_arg(input_dtype, "QuantizeOp: input_dtype"), "QuantizeOp: x");
             if (!qc::is_float(op.x.dtype()) && op.x.dtype() != DType::i32)
               throw InputError("QuantizeOp: x must hold float (or i32) values");
             op.out = dtype_arg(dtype, "QuantizeOp: dtype");
             const bool float8 = op.out == DType::f8e4m3fn || op.out == DType::f8e5m2;
             if (!qc::is_int(op.out) && !float8)
               throw InputError("QuantizeOp: dtype must be an integer or float8 (f8e4m3fn, f8e5m2) format");
             if (float8 && !qc::is_float(op.x.dtype())) throw InputError("QuantizeOp: float8 needs float x");
             op.saturate = saturate;
             op.params =
                 quant_params(scale, zero_point, axis, block_size, scale_dtype, op.x.shape(), op.out, "QuantizeOp");
             if (float8)
               for (std::int64_t z : op.params.zero_points)
                 if (z != 0) throw InputError("QuantizeOp: a float8 zero point must be 0 (ONNX)");
             return op;
           }),
           py::arg("x"), py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "i8",
           py::arg("axis") = py::none(), py::arg("block_size") = 0, py::arg("scale_dtype") = "f32",
           py::arg("input_dtype") = py::none(), py::arg("saturate") = true)
      .def_readonly("saturate", &qc::QuantizeOp::saturate, "float8 outputs: ONNX's saturate attribute")
      .def_property_readonly("x", [](py::object self) { return view(self.cast<qc::QuantizeOp&>().x, self); })
      .def_readonly("params", &qc::QuantizeOp::params)
      .def_readonly("dtype", &qc::QuantizeOp::out)
      .def(
          "element_scales", [](const qc::QuantizeOp& o) { return element_scales_of(o.params, o.x.shape()); },
          "The scale of every element of x (float64, shaped like x).")
      .def(
          "element_zero_points", [](const qc::QuantizeOp& o) { return element_zero_points_of(o.params, o.x.shape()); },
          "The zero point of every element of x (int64, shaped like x).");
  common_op_properties<qc::QuantizeOp>(quantize);

  py::class_<qc::DequantizeOp> dequantize(m, "DequantizeOp", "y = DequantizeLinear(q): integers -> floats.");
  dequantize
      .def(py::init([](const py::handle& q, const py::handle& scale, const py::handle& zero_point,
                       const py::handle& dtype, const py::handle& axis, std::int64_t block_size,
                       const py::handle& scale_dtype, const py::handle& input_dtype) {
             qc::DequantizeOp op;
             op.q = to_tensor(q, optional_dtype_arg(input_dtype, "DequantizeOp: input_dtype"), "DequantizeOp: q");
             const bool float8 = op.q.dtype() == DType::f8e4m3fn || op.q.dtype() == DType::f8e5m2;
             if (!qc::is_int(op.q.dtype()) && !float8)
               throw InputError("DequantizeOp: q must hold integers or float8 codes");
             op.out = dtype_arg(dtype, "DequantizeOp: dtype");
             if (!qc::is_float(op.out)) throw InputError("DequantizeOp: dtype must be a float format");
             op.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, op.q.shape(), op.q.dtype(),
                                      "DequantizeOp");
             if (float8)
               for (std::int64_t z : op.params.zero_points)
                 if (z != 0) throw InputError("DequantizeOp: a float8 zero point must be 0 (ONNX)");
             return op;
           }),
           py::arg("q"), py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "f32",
           py::arg("axis") = py::none(), py::arg("block_size") = 0, py::arg("scale_dtype") = "f32",
           py::arg("input_dtype") = py::none())
      .def_property_readonly("q", [](py::object self) { return view(self.cast<qc::DequantizeOp&>().q, self); })
      .def_readonly("params", &qc::DequantizeOp::params)
      .def_readonly("dtype", &qc::DequantizeOp::out)
      .def("element_scales", [](const qc::DequantizeOp& o) { return element_scales_of(o.params, o.q.shape()); })
      .def("element_zero_points",
           [](const qc::DequantizeOp& o) { return element_zero_points_of(o.params, o.q.shape()); });
  common_op_properties<qc::DequantizeOp>(dequantize);

  py::class_<qc::RequantizeOp> requantize(m, "RequantizeOp", "y = requantize(acc): int32 accumulators -> integers.");
  requantize
      .def(py::init(&make_requantize_op), py::arg("acc"), py::arg("input_scale"), py::arg("weight_scale"),
           py::arg("output_scale"), py::arg("zero_point") = 0, py::arg("dtype") = "i8", py::arg("axis") = py::none(),
           py::arg("scale_dtype") = "f32", py::arg("input_dtype") = "i32")
      .def_property_readonly("acc", [](py::object self) { return view(self.cast<qc::RequantizeOp&>().acc, self); })
      .def_property_readonly("input_scale", [](const qc::RequantizeOp& o) { return o.params.input_scale; })
      .def_property_readonly("weight_scale", [](const qc::RequantizeOp& o) { return o.params.weight_scales; })
      .def_property_readonly("output_scale", [](const qc::RequantizeOp& o) { return o.params.output_scale; })
      .def_property_readonly("zero_point", [](const qc::RequantizeOp& o) { return o.params.output_zero_points; })
      .def_property_readonly("axis", [](const qc::RequantizeOp& o) { return o.params.axis; })
      .def_property_readonly("scale_dtype", [](const qc::RequantizeOp& o) { return o.params.scale_dtype; })
      .def_readonly("dtype", &qc::RequantizeOp::out);
  common_op_properties<qc::RequantizeOp>(requantize);

  py::class_<qc::QGemmOp> qgemm(m, "QGemmOp", "The quantized GEMM path (see qconform.qgemm).");
  qgemm
      .def(py::init(&make_qgemm_op), py::arg("a"), py::arg("b"), py::arg("bias") = py::none(),
           py::arg("output") = py::none(), py::arg("b_layout") = "k_by_n")
      .def_readonly("a", &qc::QGemmOp::a)
      .def_readonly("b", &qc::QGemmOp::b)
      .def_readonly("b_layout", &qc::QGemmOp::b_layout)
      .def_property_readonly("bias",
                             [](py::object self) -> py::object {
                               const auto& g = self.cast<qc::QGemmOp&>();
                               return g.bias ? py::object(view(*g.bias, self)) : py::object(py::none());
                             })
      .def_readonly("output", &qc::QGemmOp::output);
  common_op_properties<qc::QGemmOp>(qgemm);

  py::class_<qc::QConv2dOp> qconv(m, "QConv2dOp", "The quantized 2-D convolution path (see qconform.qconv2d).");
  qconv
      .def(py::init(&make_qconv2d_op), py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
           py::arg("output") = py::none(), py::arg("layout") = "nchw",
           py::arg("stride") = std::vector<std::int64_t>{1, 1},
           py::arg("padding") = std::vector<std::int64_t>{0, 0, 0, 0},
           py::arg("dilation") = std::vector<std::int64_t>{1, 1}, py::arg("groups") = 1,
           py::arg("padding_value") = "real_zero")
      .def_readonly("input", &qc::QConv2dOp::input)
      .def_readonly("weight", &qc::QConv2dOp::weight)
      .def_readonly("layout", &qc::QConv2dOp::layout)
      .def_property_readonly(
          "stride", [](const qc::QConv2dOp& c) { return py::make_tuple(c.geometry.stride_h, c.geometry.stride_w); })
      .def_property_readonly("padding",
                             [](const qc::QConv2dOp& c) {
                               const auto& g = c.geometry;
                               return py::make_tuple(g.pad_top, g.pad_left, g.pad_bottom, g.pad_right);
                             })
      .def_property_readonly(
          "dilation",
          [](const qc::QConv2dOp& c) { return py::make_tuple(c.geometry.dilation_h, c.geometry.dilation_w); })
      .def_property_readonly("groups", [](const qc::QConv2dOp& c) { return c.geometry.groups; })
      .def_readonly("padding_value", &qc::QConv2dOp::padding)
      .def_property_readonly("bias",
                             [](py::object self) -> py::object {
                               const auto& c = self.cast<qc::QConv2dOp&>();
                               return c.bias ? py::object(view(*c.bias, self)) : py::object(py::none());
                             })
      .def_readonly("output", &qc::QConv2dOp::output);
  common_op_properties<qc::QConv2dOp>(qconv);

  py::class_<qc::WeightOnlyGemmOp> wo(m, "WeightOnlyGemmOp", "Float activations times dequantized weights.");
  wo.def(py::init(&make_weight_only_op), py::arg("a"), py::arg("b"), py::arg("bias") = py::none(),
         py::arg("dtype") = "f32", py::arg("b_layout") = "k_by_n", py::arg("a_dtype") = py::none())
      .def_property_readonly("a", [](py::object self) { return view(self.cast<qc::WeightOnlyGemmOp&>().a, self); })
      .def_readonly("b", &qc::WeightOnlyGemmOp::b)
      .def_readonly("b_layout", &qc::WeightOnlyGemmOp::b_layout)
      .def_property_readonly("bias",
                             [](py::object self) -> py::object {
                               const auto& w = self.cast<qc::WeightOnlyGemmOp&>();
                               return w.bias ? py::object(view(*w.bias, self)) : py::object(py::none());
                             })
      .def_readonly("dtype", &qc::WeightOnlyGemmOp::out);
  common_op_properties<qc::WeightOnlyGemmOp>(wo);

  py::class_<qc::ChooseQParamsOp> cq(m, "ChooseQParamsOp",
                                     "(scale, zero point) chosen from a profile of observed values under a named "
                                     "rule: the output is f64 [2], or [C, 2] with an axis.");
  cq.def(py::init(
             [](const py::handle& profile, const py::handle& dtype, const std::string& rule, std::optional<int> axis) {
               qc::ChooseQParamsOp o;
               o.profile = to_tensor(profile, std::nullopt, "profile");
               o.format = dtype_arg(dtype, "dtype");
               const auto r = qc::find_qparams_preset(rule);
               if (!r) throw InputError("ChooseQParamsOp: unknown parameter-choice rule '" + rule + "'");
               o.rule = *r;
               o.axis = axis;
               (void)qc::op_output_shape(qc::OpRequest{o});  // checks the axis
               return o;
             }),
         py::arg("profile"), py::arg("dtype") = "u8", py::arg("rule") = "onnx-dynamic-quantize-linear",
         py::arg("axis") = py::none())
      .def_property_readonly("profile",
                             [](py::object self) { return view(self.cast<qc::ChooseQParamsOp&>().profile, self); })
      .def_readonly("dtype", &qc::ChooseQParamsOp::format)
      .def_readonly("rule", &qc::ChooseQParamsOp::rule)
      .def_readonly("axis", &qc::ChooseQParamsOp::axis);
  common_op_properties<qc::ChooseQParamsOp>(cq);
  py::class_<qc::QAddOp> qadd(m, "QAddOp",
                              "The quantized elementwise add (QLinearAdd): saturate(round((sA(a - zA) + sB(b - zB)) / "
                              "sC) + zC), b broadcast over a (see qconform.qadd).");
  qadd.def(py::init(&make_qadd_op), py::arg("a"), py::arg("a_scale"), py::arg("a_zero_point"), py::arg("b"),
           py::arg("b_scale"), py::arg("b_zero_point"), py::arg("scale"), py::arg("zero_point") = 0,
           py::arg("dtype") = "i8", py::arg("a_dtype") = py::none(), py::arg("b_dtype") = py::none())
      .def_property_readonly("a", [](py::object self) { return view(self.cast<qc::QAddOp&>().a, self); })
      .def_property_readonly("b", [](py::object self) { return view(self.cast<qc::QAddOp&>().b, self); })
      .def_property_readonly("a_scale", [](const qc::QAddOp& o) { return o.a_params.scales.at(0); })
      .def_property_readonly("a_zero_point", [](const qc::QAddOp& o) { return o.a_params.zero_point(0); })
      .def_property_readonly("b_scale", [](const qc::QAddOp& o) { return o.b_params.scales.at(0); })
      .def_property_readonly("b_zero_point", [](const qc::QAddOp& o) { return o.b_params.zero_point(0); })
      .def_property_readonly("scale", [](const qc::QAddOp& o) { return o.output.scale; })
      .def_property_readonly("zero_point", [](const qc::QAddOp& o) { return o.output.zero_point; })
      .def_property_readonly("dtype", [](const qc::QAddOp& o) { return o.output.format; });
  common_op_properties<qc::QAddOp>(qadd);
  py::class_<qc::Conv2dOp> fconv(m, "Conv2dOp",
                                 "A 2-D convolution with a float input: float or dequantized integer weights (see "
                                 "qconform.conv2d).");
  fconv
      .def(py::init(&make_conv2d_op), py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
           py::arg("dtype") = "f32", py::arg("layout") = "nchw", py::arg("stride") = std::vector<std::int64_t>{1, 1},
           py::arg("padding") = std::vector<std::int64_t>{0, 0, 0, 0},
           py::arg("dilation") = std::vector<std::int64_t>{1, 1}, py::arg("groups") = 1)
      .def_property_readonly("input", [](py::object self) { return view(self.cast<qc::Conv2dOp&>().input, self); })
      .def_readonly("weight", &qc::Conv2dOp::weight)
      .def_readonly("layout", &qc::Conv2dOp::layout)
      .def_property_readonly(
          "stride", [](const qc::Conv2dOp& c) { return py::make_tuple(c.geometry.stride_h, c.geometry.stride_w); })
      .def_property_readonly("padding",
                             [](const qc::Conv2dOp& c) {
                               const qc::Conv2dGeometry& g = c.geometry;
                               return py::make_tuple(g.pad_top, g.pad_left, g.pad_bottom, g.pad_right);
                             })
      .def_property_readonly(
          "dilation",
          [](const qc::Conv2dOp& c) { return py::make_tuple(c.geometry.dilation_h, c.geometry.dilation_w); })
      .def_property_readonly("groups", [](const qc::Conv2dOp& c) { return c.geometry.groups; })
      .def_property_readonly("bias",
                             [](py::object self) -> py::object {
                               const auto& c = self.cast<qc::Conv2dOp&>();
                               return c.bias ? py::object(view(*c.bias, self)) : py::object(py::none());
                             })
      .def_readonly("dtype", &qc::Conv2dOp::out);
  common_op_properties<qc::Conv2dOp>(fconv);
  py::class_<qc::MxQuantizeOp> mxq(m, "MxQuantizeOp", "OCP MX v1.0 / NVFP4 quantize-dequantize: floats -> f32 values.");
  mxq.def(py::init(&make_mx_quantize_op), py::arg("x"), py::arg("format"), py::arg("axis") = -1,
          py::arg("block_size") = 0, py::arg("scale_rule") = "floor", py::arg("rounding") = "rne",
          py::arg("global_scale") = py::none())
      .def_property_readonly("x", [](py::object self) { return view(self.cast<qc::MxQuantizeOp&>().x, self); })
      .def_property_readonly("format",
                             [](const qc::MxQuantizeOp& o) { return std::string(qc::name(o.blocking.format)); })
      .def_property_readonly("axis", [](const qc::MxQuantizeOp& o) { return o.blocking.axis; })
      .def_property_readonly("block_size", [](const qc::MxQuantizeOp& o) { return o.blocking.block_size; })
      .def_property_readonly("global_scale", [](const qc::MxQuantizeOp& o) { return o.blocking.global_scale; })
      .def_property_readonly("scale_rule",
                             [](const qc::MxQuantizeOp& o) { return std::string(qc::name(o.scale_rule)); })
      .def_property_readonly("rounding",
                             [](const qc::MxQuantizeOp& o) { return std::string(qc::name(o.element_rounding)); });
  common_op_properties<qc::MxQuantizeOp>(mxq);

  py::class_<qc::MxDequantizeOp> mxd(m, "MxDequantizeOp", "The f32 values of MX / NVFP4 element and scale codes.");
  mxd.def(py::init(&make_mx_dequantize_op), py::arg("elements"), py::arg("scales"), py::arg("format"),
          py::arg("axis") = -1, py::arg("block_size") = 0, py::arg("global_scale") = py::none())
      .def_property_readonly("elements",
                             [](py::object self) { return view(self.cast<qc::MxDequantizeOp&>().elements, self); })
      .def_property_readonly("scales",
                             [](py::object self) { return view(self.cast<qc::MxDequantizeOp&>().scales, self); })
      .def_property_readonly("format",
                             [](const qc::MxDequantizeOp& o) { return std::string(qc::name(o.blocking.format)); })
      .def_property_readonly("axis", [](const qc::MxDequantizeOp& o) { return o.blocking.axis; })
      .def_property_readonly("block_size", [](const qc::MxDequantizeOp& o) { return o.blocking.block_size; })
      .def_property_readonly("global_scale", [](const qc::MxDequantizeOp& o) { return o.blocking.global_scale; });
  common_op_properties<qc::MxDequantizeOp>(mxd);

  py::class_<qc::MxGemmOp> mxg(m, "MxGemmOp",
                               "The block-scaled GEMM: float A and B quantized into MX / NVFP4 formats along K, "
                               "multiplied and summed exactly.");
  mxg.def(py::init(&make_mx_gemm_op), py::arg("a"), py::arg("b"), py::arg("a_format"), py::arg("b_format") = py::none(),
          py::arg("b_layout") = "k_by_n", py::arg("block_size") = 0, py::arg("scale_rule") = "floor",
          py::arg("rounding") = "rne", py::arg("a_global_scale") = py::none(), py::arg("b_global_scale") = py::none(),
          py::arg("bias") = py::none(), py::arg("dtype") = "f32")
      .def_property_readonly("a", [](py::object self) { return view(self.cast<qc::MxGemmOp&>().a.values, self); })
      .def_property_readonly("b", [](py::object self) { return view(self.cast<qc::MxGemmOp&>().b.values, self); })
      .def_property_readonly("a_format", [](const qc::MxGemmOp& o) { return std::string(qc::name(o.a.format)); })
      .def_property_readonly("b_format", [](const qc::MxGemmOp& o) { return std::string(qc::name(o.b.format)); })
      .def_property_readonly("a_global_scale", [](const qc::MxGemmOp& o) { return o.a.global_scale; })
      .def_property_readonly("b_global_scale", [](const qc::MxGemmOp& o) { return o.b.global_scale; })
      .def_property_readonly("b_layout", [](const qc::MxGemmOp& o) { return std::string(qc::name(o.b_layout)); })
      .def_property_readonly("block_size", [](const qc::MxGemmOp& o) { return o.block_size; })
      .def_property_readonly("scale_rule", [](const qc::MxGemmOp& o) { return std::string(qc::name(o.scale_rule)); })
      .def_property_readonly("rounding",
                             [](const qc::MxGemmOp& o) { return std::string(qc::name(o.element_rounding)); })
      .def_property_readonly("bias",
                             [](py::object self) -> py::object {
                               const auto& g = self.cast<qc::MxGemmOp&>();
                               return g.bias ? py::object(view(*g.bias, self)) : py::object(py::none());
                             })
      .def_readonly("dtype", &qc::MxGemmOp::out);
  common_op_properties<qc::MxGemmOp>(mxg);

  // ---- Cases --------------------------------------------------------------------------------
  py::class_<qc::Case, std::shared_ptr<qc::Case>>(m, "Case",
                                                  "A conformance case: an op, the policy its outputs must meet, and "
                                                  "what each backend is expected to achieve.")
      .def(py::init(&make_case), py::arg("name"), py::arg("op"), py::arg("spec") = "onnx",
           py::arg("expect") = py::none(), py::arg("description") = "", py::arg("suite") = "python",
           py::arg("operands_from") = py::none(), py::arg("same_outputs_as") = py::none(),
           py::arg("differs_from") = py::none())
      .def_readonly("name", &qc::Case::name)
      .def_readonly("suite", &qc::Case::suite)
      .def_property_readonly("id", &qc::Case::id)
      .def_readonly("description", &qc::Case::description)
      .def_readonly("file", &qc::Case::file)
      .def_readonly("line", &qc::Case::line)
      .def_property_readonly("op", [](py::object self) { return op_to_python(self.cast<qc::Case&>().op, self); })
      .def_readonly("spec", &qc::Case::spec)
      .def_property_readonly("expect",
                             [](const qc::Case& c) {
                               py::dict d;
                               for (const auto& [k, e] : c.expect) d[py::str(k)] = e.str();
                               return d;
                             })
      .def_property_readonly(
          "operands_from",
          [](const qc::Case& c) {
            py::dict d;
            for (const qc::OperandLink& l : c.links) d[py::str(l.field)] = l.producer;
            return d;
          },
          "Operands taken from other cases' outputs: operand ('input', 'a', ...) -> the producer's name.")
      .def_property_readonly(
          "same_outputs_as",
          [](const qc::Case& c) {
            py::list l;
            for (const qc::Agreement& a : c.agreements)
              if (a.kind == qc::Agreement::Kind::same_outputs) l.append(a.other);
            return l;
          },
          "The cases whose outputs this case's equal bit for bit.")
      .def_property_readonly(
          "differs_from",
          [](const qc::Case& c) {
            py::list l;
            for (const qc::Agreement& a : c.agreements)
              if (a.kind == qc::Agreement::Kind::differs)
                l.append(py::make_tuple(a.other, a.elements < 0 ? py::object(py::none()) : py::int_(a.elements)));
            return l;
          },
          "(case, elements) pairs: the cases whose outputs this case's differ from (elements None: any number but "
          "0).")
      .def(
          "expectation_for", [](const qc::Case& c, const std::string& b) { return c.expectation_for(b).str(); },
          py::arg("backend"))
      .def(
          "to_json",
          [](const qc::Case& c, bool canonical_nans) {
            return json_to_python(qc::case_to_json(c, qc::WriteOptions{canonical_nans}));
          },
          py::arg("canonical_nans") = false,
          "The case as the case format's JSON object (a dict): inline data, or the generator of an operand a "
          "generator made while it holds the generator's values.")
      .def("__repr__", [](const qc::Case& c) { return "<Case " + c.id() + ": " + op_repr(c.op) + ">"; });

  py::class_<PySuite>(m, "Suite", "A case file: a suite name and its cases.")
      .def_readonly("name", &PySuite::name)
      .def_readonly("description", &PySuite::description)
      .def_readonly("file", &PySuite::file)
      .def_readonly("cases", &PySuite::cases)
      .def("__len__", [](const PySuite& s) { return s.cases.size(); })
      .def("__repr__",
           [](const PySuite& s) { return "<Suite " + s.name + " (" + std::to_string(s.cases.size()) + " cases)>"; });

  m.def(
      "load_suite", [](const py::handle& path) { return to_py_suite(qc::load_suite(paths_arg(path).at(0))); },
      py::arg("path"), "Loads one case file (InputError names the file, line, case and field of a problem).");
  m.def(
      "load_suites",
      [](const py::handle& paths) {
        std::vector<PySuite> out;
        for (qc::Suite& s : qc::load_suites(paths_arg(paths))) out.push_back(to_py_suite(std::move(s)));
        return out;
      },
      py::arg("paths"), "Loads case files and folders (searched recursively for *.json).");
  m.def(
      "load_cases",
      [](const py::handle& paths) {
        std::vector<std::shared_ptr<qc::Case>> out;
        for (qc::Suite& s : qc::load_suites(paths_arg(paths)))
          for (qc::Case& c : s.cases) out.push_back(std::make_shared<qc::Case>(std::move(c)));
        return out;
      },
      py::arg("paths"), "Every case of case files and folders, in order.");
  m.def(
      "save_cases",
      [](const py::handle& path, const std::vector<std::shared_ptr<qc::Case>>& cases, const py::handle& suite,
         bool canonical_nans, std::int64_t npy_min_elements) {
        if (npy_min_elements < 0) throw InputError("save_cases: npy_min_elements must be >= 0 (0: every array inline)");
        std::vector<qc::Case> v;
        for (const auto& c : cases) v.push_back(*c);
        qc::save_cases(paths_arg(path).at(0), suite_of(cases, suite), v,
                       qc::WriteOptions{canonical_nans, npy_min_elements});
      },
      py::arg("path"), py::arg("cases"), py::arg("suite") = py::none(), py::arg("canonical_nans") = false,
      py::arg("npy_min_elements") = 0,
      "Writes cases as a case file `qconform run` and load_suite read back identically, bit for bit: operands a "
      "generator made and still hold its values as the generator, other arrays inline, or, with npy_min_elements=n, "
      "arrays of n elements or more as .npy side files next to the file (<stem>.<case>.<field>.npy). InputError for "
      "what the format cannot express.");
  m.def(
      "case_to_json",
      [](const qc::Case& c, bool canonical_nans) {
        return json_to_python(qc::case_to_json(c, qc::WriteOptions{canonical_nans}));
      },
      py::arg("case"), py::arg("canonical_nans") = false);

  bind_generators(m);
}

}  // namespace qcpy
