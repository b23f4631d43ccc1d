// Formats, rounding modes and labels: the vocabulary as Python objects, and exact conversions
// between values and bit patterns.
#include "common.hpp"
#include "oracles/format.hpp"
#include "oracles/rounding.hpp"
#include "qconform/error.hpp"

#include <cmath>

namespace qcpy {

using qc::DType;
using qc::InputError;

namespace {

// A Python number (int, float, fractions.Fraction, decimal text) as an exact value.
qc::ExactFloat exact_from_python(const py::handle& v) {
  if (py::isinstance<py::float_>(v)) {
    const double d = v.cast<double>();
    if (std::isnan(d)) return qc::ExactFloat::nan();
    if (std::isinf(d)) return qc::ExactFloat::inf(d < 0);
    return qc::ExactFloat::finite(qc::Rational(d), std::signbit(d));
  }
  py::object f = py::module_::import("fractions").attr("Fraction")(v);
  const std::string num = py::str(f.attr("numerator")).cast<std::string>();
  const std::string den = py::str(f.attr("denominator")).cast<std::string>();
  return qc::ExactFloat::finite(qc::Rational(qc::BigInt(num), qc::BigInt(den)));
}

py::dtype bits_dtype(DType t) {
  switch (qc::info(t).storage_bytes) {
    case 8:
      return py::dtype::of<std::uint64_t>();
    case 4:
      return py::dtype::of<std::uint32_t>();
    case 2:
      return py::dtype::of<std::uint16_t>();
    default:
      return py::dtype::of<std::uint8_t>();
  }
}

qc::RoundingMode rounding_arg(const py::handle& h) {
  return enum_arg<qc::RoundingMode>(h, qc::parse_rounding_mode, "rounding");
}

DType float_format(const py::handle& h, const std::string& where) {
  const DType t = dtype_arg(h, where);
  if (!qc::is_float(t)) throw InputError(where + ": " + std::string(qc::name(t)) + " is not a float format");
  return t;
}

// Values (any numeric array) correctly rounded into float format t, as bit patterns.
py::array float_to_bits(const py::handle& x, const py::handle& dtype, const py::handle& rounding, bool saturate) {
  const DType t = float_format(dtype, "float_to_bits: dtype");
  const qc::RoundingMode m = rounding_arg(rounding);
  const qc::Overflow o = saturate ? qc::Overflow::saturate : qc::Overflow::ieee;
  py::array a = py::array::ensure(x, py::array::c_style);
  if (!a) throw InputError("float_to_bits: expected an array");
  py::array_t<double> v = py::array_t<double>::ensure(a.attr("astype")("float64"));
  std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
  py::array out(bits_dtype(t), shape);
  const double* p = v.data();
  const auto n = static_cast<std::int64_t>(v.size());
  qc::Tensor bits(t, qc::Shape{n});
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = p[i];
    std::uint64_t b;
    if (m == qc::RoundingMode::rne && o == qc::Overflow::ieee) {
      b = qc::double_to_float_bits(t, d);  // one correct rounding
    } else if (std::isnan(d)) {
      b = qc::encode_float(t, qc::ExactFloat::nan(), m, o);
    } else if (std::isinf(d)) {
      b = qc::encode_float(t, qc::ExactFloat::inf(d < 0), m, o);
    } else {
      b = qc::encode_float(t, qc::ExactFloat::finite(qc::Rational(d), std::signbit(d)), m, o);
    }
    bits.set_bits(i, b);
  }
  if (n > 0) std::memcpy(out.mutable_data(), bits.bytes().data(), bits.bytes().size());
  return out;
}

// Bit patterns of float format t as their values: float32 for formats of at most 24 bits of
// precision (every value exact), float64 for f64.
py::array bits_to_float(const py::handle& bits, const py::handle& dtype) {
  const DType t = float_format(dtype, "bits_to_float: dtype");
  py::array a = py::array::ensure(bits, py::array::c_style);
  if (!a) throw InputError("bits_to_float: expected an array");
  py::array_t<std::uint64_t> v = py::array_t<std::uint64_t>::ensure(a.attr("astype")("uint64"));
  std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
  const bool wide = t == DType::f64;
  py::array out = wide ? py::array(py::dtype::of<double>(), shape) : py::array(py::dtype::of<float>(), shape);
  const std::uint64_t* p = v.data();
  for (py::ssize_t i = 0; i < v.size(); ++i) {
    const double d = qc::float_bits_to_double(t, p[i]);
    if (wide)
      static_cast<double*>(out.mutable_data())[i] = d;
    else
      static_cast<float*>(out.mutable_data())[i] = static_cast<float>(d);
  }
  return out;
}

}  // namespace

void bind_formats(py::module_& m) {
  py::enum_<DType> dt(m, "DType", "A number format (oracles/format.hpp).");
  for (DType t : qc::kAllDTypes) dt.value(std::string(qc::name(t)).c_str(), t);
  dt.attr("__str__") =
      py::cpp_function([](DType t) { return std::string(qc::name(t)); }, py::name("__str__"), py::is_method(dt));
  dt.def_property_readonly("info", [](DType t) { return qc::info(t); });

  py::class_<qc::FormatInfo>(m, "FormatInfo", "What a number format is: bits, range, float layout.")
      .def_property_readonly("name", [](const qc::FormatInfo& f) { return std::string(f.name); })
      .def_property_readonly("dtype", [](const qc::FormatInfo& f) { return f.id; })
      .def_readonly("is_float", &qc::FormatInfo::is_float)
      .def_readonly("bits", &qc::FormatInfo::bits)
      .def_readonly("storage_bytes", &qc::FormatInfo::storage_bytes)
      .def_readonly("is_signed", &qc::FormatInfo::is_signed)
      .def_property_readonly("int_min",
                             [](const qc::FormatInfo& f) { return f.is_float ? py::object() : py::int_(f.int_min); })
      .def_property_readonly("int_max",
                             [](const qc::FormatInfo& f) { return f.is_float ? py::object() : py::int_(f.int_max); })
      .def_property_readonly("exponent_bits", [](const qc::FormatInfo& f) { return f.fl.exp_bits; })
      .def_property_readonly("mantissa_bits", [](const qc::FormatInfo& f) { return f.fl.mant_bits; })
      .def_property_readonly("exponent_bias", [](const qc::FormatInfo& f) { return f.fl.bias; })
      .def_property_readonly("has_inf", [](const qc::FormatInfo& f) { return f.is_float && f.fl.has_inf; })
      .def_property_readonly("max_finite",
                             [](const qc::FormatInfo& f) {
                               return f.is_float ? exact_value(qc::max_finite(f.id), ExactForm::fraction)
                                                 : py::object(py::int_(f.int_max));
                             })
      .def_property_readonly(
          "numpy_dtype", [](const qc::FormatInfo& f) { return numpy_dtype(f.id); },
          "The numpy type arrays of this format have (bf16: uint16 bits; f8: uint8 bits; "
          "i4/u4: int8/uint8 values).")
      .def("__repr__", [](const qc::FormatInfo& f) { return "<qconform format " + std::string(f.name) + ">"; });

  m.def(
      "format_info", [](const py::handle& t) { return qc::info(dtype_arg(t, "format_info")); }, py::arg("dtype"),
      "The FormatInfo of a format name, DType or numpy dtype.");
  py::dict formats;
  for (DType t : qc::kAllDTypes) formats[py::str(std::string(qc::name(t)))] = qc::info(t);
  m.attr("formats") = formats;

  py::enum_<qc::RoundingMode> rm(m, "RoundingMode", "A rounding mode (oracles/rounding.hpp).");
  for (qc::RoundingMode r : qc::kAllRoundingModes) rm.value(std::string(qc::name(r)).c_str(), r);
  rm.attr("__str__") = py::cpp_function([](qc::RoundingMode r) { return std::string(qc::name(r)); },
                                        py::name("__str__"), py::is_method(rm));
  rm.def_property_readonly("description", [](qc::RoundingMode r) { return std::string(qc::describe(r)); });
  py::list modes;
  for (qc::RoundingMode r : qc::kAllRoundingModes) modes.append(r);
  m.attr("rounding_modes") = modes;

  bind_enum<qc::Label>(m, "Label", "Where an element lies relative to the hazards (oracles/labels.hpp).");
  m.attr("NEAR_TIE_DISTANCE") = qc::kNearTieDistance;

  m.def(
      "round_to_integer",
      [](const py::handle& value, const py::handle& rounding) {
        const qc::ExactFloat v = exact_from_python(value);
        if (!v.is_finite()) throw InputError("round_to_integer: the value must be finite");
        const qc::BigInt r = qc::round_to_integer(v.value, rounding_arg(rounding));
        return py::reinterpret_steal<py::object>(PyLong_FromString(r.str().c_str(), nullptr, 10));
      },
      py::arg("value"), py::arg("rounding") = "rne",
      "An exact number (int, float, Fraction or decimal text) rounded to an integer under a rounding mode.");
  m.def(
      "decode_float",
      [](const py::handle& dtype, std::uint64_t bits, const py::handle& exact) {
        const DType t = float_format(dtype, "decode_float: dtype");
        ExactForm f = exact_arg(exact);
        return exact_value(qc::decode_float(t, bits), f == ExactForm::none ? ExactForm::fraction : f);
      },
      py::arg("dtype"), py::arg("bits"), py::arg("exact") = "fraction",
      "The exact value of a bit pattern of a float format: a Fraction (or exact text), or float nan/inf.");
  m.def(
      "encode_float",
      [](const py::handle& dtype, const py::handle& value, const py::handle& rounding, bool saturate) {
        const DType t = float_format(dtype, "encode_float: dtype");
        return qc::encode_float(t, exact_from_python(value), rounding_arg(rounding),
                                saturate ? qc::Overflow::saturate : qc::Overflow::ieee);
      },
      py::arg("dtype"), py::arg("value"), py::arg("rounding") = "rne", py::arg("saturate") = false,
      "The bit pattern of an exact value (int, float, Fraction, decimal text) rounded correctly into a float "
      "format; saturate=True overflows to the largest finite value instead of inf.");
  m.def("float_to_bits", &float_to_bits, py::arg("x"), py::arg("dtype"), py::arg("rounding") = "rne",
        py::arg("saturate") = false,
        "Values correctly rounded (one rounding) into a float format, as an array of bit patterns "
        "(uint8/uint16/uint32/uint64 by the format's size). float_to_bits(x, 'bf16') makes a bf16 array.");
  m.def("bits_to_float", &bits_to_float, py::arg("bits"), py::arg("dtype"),
        "Bit patterns of a float format as their values (float32; float64 for f64). Exact.");
}

}  // namespace qcpy
