// pybind11 bindings: the oracle on numpy arrays.
#include "oracles/error.hpp"
#include "oracles/ops.hpp"
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

namespace py = pybind11;

namespace {

qc::DType dtype_arg(const std::string& s) {
  auto t = qc::parse_dtype(s);
  if (!t) throw qc::InputError("unknown dtype '" + s + "'");
  return *t;
}

// A float numpy array as a qconform tensor (f64, f32, or f16 given as numpy float16).
qc::Tensor tensor_from_numpy(const py::array& a) {
  qc::Shape shape(a.shape(), a.shape() + a.ndim());
  const py::dtype dt = a.dtype();
  qc::DType t;
  if (dt.is(py::dtype::of<double>()))
    t = qc::DType::f64;
  else if (dt.is(py::dtype::of<float>()))
    t = qc::DType::f32;
  else if (dt.kind() == 'f' && dt.itemsize() == 2)
    t = qc::DType::f16;
  else
    throw qc::InputError("quantize: input must be a float64, float32 or float16 array, got " +
                         py::cast<std::string>(py::str(static_cast<const py::handle&>(dt))));
  py::array c = py::array::ensure(a, py::array::c_style);
  qc::Tensor x(t, shape);
  std::memcpy(x.bytes().data(), c.data(), x.bytes().size());
  return x;
}

py::array tensor_to_numpy(const qc::Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  auto copy = [&](auto tag) {
    using T = decltype(tag);
    py::array_t<T> out(shape);
    std::memcpy(out.mutable_data(), t.bytes().data(), t.bytes().size());
    return py::array(out);
  };
  switch (t.dtype()) {
    case qc::DType::i32:
      return copy(std::int32_t{});
    case qc::DType::i16:
      return copy(std::int16_t{});
    case qc::DType::u16:
      return copy(std::uint16_t{});
    case qc::DType::i8:
    case qc::DType::i4:
      return copy(std::int8_t{});
    case qc::DType::u8:
    case qc::DType::u4:
      return copy(std::uint8_t{});
    case qc::DType::f64:
      return copy(double{});
    case qc::DType::f32:
      return copy(float{});
    default:
      return copy(std::uint16_t{});  // f16/bf16 bit patterns; f8 not reached here
  }
}

py::object quantize(const py::array& x, const std::vector<double>& scale, const std::vector<std::int64_t>& zero_point,
                    const std::string& dtype, const std::string& policy, std::optional<int> axis,
                    std::int64_t block_size, const std::string& scale_dtype, bool labels) {
  auto spec = qc::find_preset(policy);
  if (!spec) throw qc::InputError("unknown preset '" + policy + "'");
  qc::QuantizeOp op;
  op.x = tensor_from_numpy(x);
  op.out = dtype_arg(dtype);
  op.params.scale_dtype = dtype_arg(scale_dtype);
  op.params.scales = scale;
  op.params.zero_points = zero_point;
  if (op.params.zero_points.size() == 1 && scale.size() > 1) op.params.zero_points.assign(scale.size(), zero_point[0]);
  op.params.axis = axis;
  op.params.block_size = block_size;
  qc::validate(op.params, op.x.shape(), op.out, "quantize");
  qc::QuantizeResult r;
  {
    py::gil_scoped_release release;
    r = qc::quantize(op.x, op.params, op.out, spec->quantize_for(op.x.dtype()));
  }
  py::array q = tensor_to_numpy(r.q);
  if (!labels) return q;
  py::list l;
  for (qc::Label lab : r.labels) l.append(std::string(qc::name(lab)));
  return py::make_tuple(q, l);
}

}  // namespace

PYBIND11_MODULE(_qconform, m) {
  m.doc() = "qconform: exact-arithmetic conformance harness for quantized ML kernels";
  m.attr("__version__") = QCONFORM_VERSION;
  static py::exception<qc::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const qc::InputError& e) {
      input_error(e.what());
    }
  });
  py::dict presets;
  for (const qc::Spec& s : qc::presets()) presets[py::str(s.name)] = s.description;
  m.attr("presets") = presets;
  m.def("quantize", &quantize, py::arg("x"), py::arg("scale"), py::arg("zero_point") = std::vector<std::int64_t>{0},
        py::arg("dtype") = "i8", py::arg("policy") = "onnx", py::arg("axis") = py::none(), py::arg("block_size") = 0,
        py::arg("scale_dtype") = "f32", py::arg("labels") = false,
        "Quantize a float array exactly under a preset: y = saturate(round(x / scale) + zero_point).\n"
        "Returns the integer array, or (array, labels) with labels=True.");
}
