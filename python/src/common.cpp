#include "common.hpp"

#include "oracles/choose_qparams.hpp"
#include "qconform/error.hpp"

#include <pybind11/functional.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace qcpy {

using qc::DType;
using qc::InputError;

namespace {

std::string type_name(const py::handle& h) { return py::str(py::type::of(h).attr("__name__")).cast<std::string>(); }

// The format whose storage a numpy dtype is, for the types that map one to one.
std::optional<DType> natural_dtype(const py::dtype& dt) {
  const char k = dt.kind();
  const auto n = dt.itemsize();
  if (k == 'f') {
    if (n == 8) return DType::f64;
    if (n == 4) return DType::f32;
    if (n == 2) return DType::f16;
  } else if (k == 'i') {
    if (n == 4) return DType::i32;
    if (n == 2) return DType::i16;
    if (n == 1) return DType::i8;
  } else if (k == 'u') {
    if (n == 2) return DType::u16;
    if (n == 1) return DType::u8;
  }
  return std::nullopt;
}

bool same_numpy_type(const py::dtype& a, const py::dtype& b) {
  return a.kind() == b.kind() && a.itemsize() == b.itemsize();
}

py::array c_array(const py::handle& obj, const std::string& where) {
  py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) throw InputError(where + ": expected an array, got " + type_name(obj));
  if (!a.dtype().attr("isnative").cast<bool>())
    a = py::array::ensure(a.attr("astype")(a.dtype().attr("newbyteorder")("=")), py::array::c_style);
  return a;
}

std::string value_text(double v) {
  if (std::isnan(v)) return "nan";
  py::object r = py::repr(py::float_(v));
  return r.cast<std::string>();
}

}  // namespace

// ---- Formats ---------------------------------------------------------------------------------

DType dtype_arg(const py::handle& h, const std::string& where) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h)) {
    const std::string s = h.cast<std::string>();
    if (auto t = qc::parse_dtype(s)) return *t;
    throw InputError(where + ": unknown dtype '" + s + "'");
  }
  // A numpy dtype or type (np.float32, np.dtype("int8")).
  py::object np_dtype = py::module_::import("numpy").attr("dtype");
  try {
    py::dtype dt = np_dtype(h);
    if (auto t = natural_dtype(dt)) return *t;
    throw InputError(where + ": numpy type " + py::str(static_cast<const py::handle&>(dt)).cast<std::string>() +
                     " has no qconform format");
  } catch (const py::error_already_set&) {
    throw InputError(where + ": expected a format name such as \"i8\" or \"f32\", got " + type_name(h));
  }
}

std::optional<DType> optional_dtype_arg(const py::handle& h, const std::string& where) {
  if (h.is_none()) return std::nullopt;
  return dtype_arg(h, where);
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::f64:
      return py::dtype::of<double>();
    case DType::f32:
      return py::dtype::of<float>();
    case DType::f16:
      return py::dtype("float16");
    case DType::bf16:
    case DType::u16:
      return py::dtype::of<std::uint16_t>();
    case DType::f8e4m3fn:
    case DType::f8e5m2:
    case DType::u8:
    case DType::u4:
      return py::dtype::of<std::uint8_t>();
    case DType::i32:
      return py::dtype::of<std::int32_t>();
    case DType::i16:
      return py::dtype::of<std::int16_t>();
    case DType::i8:
    case DType::i4:
      return py::dtype::of<std::int8_t>();
  }
  return py::dtype::of<std::uint8_t>();
}

// ---- Arrays ----------------------------------------------------------------------------------

qc::Tensor to_tensor(const py::handle& obj, std::optional<DType> as, const std::string& where) {
  py::array a = c_array(obj, where);
  const py::dtype dt = a.dtype();
  const std::string np_name = py::str(static_cast<const py::handle&>(dt)).cast<std::string>();
  if (!as) {
    as = natural_dtype(dt);
    if (!as)
      throw InputError(where + ": a numpy " + np_name +
                       " array has no qconform format; convert it or name the format (e.g. dtype=\"i32\")");
  }
  const DType t = *as;
  qc::Shape shape(a.shape(), a.shape() + a.ndim());
  qc::Tensor x(t, shape);
  const std::string fmt(qc::name(t));
  if (same_numpy_type(dt, numpy_dtype(t))) {  // the format's own storage: the bits, one copy
    if (x.bytes().size() > 0) std::memcpy(x.bytes().data(), a.data(), x.bytes().size());
    if (t == DType::i4 || t == DType::u4)
      for (std::int64_t i = 0; i < x.size(); ++i)
        if (x.get_int(i) < qc::int_min(t) || x.get_int(i) > qc::int_max(t))
          throw InputError(where + ": element " + std::to_string(i) + " = " + std::to_string(x.get_int(i)) +
                           " is outside " + fmt);
    return x;
  }
  const char kind = dt.kind();
  if (qc::is_int(t)) {
    if (kind != 'i' && kind != 'u' && kind != 'b')
      throw InputError(where + ": " + fmt + " needs integer values, got a numpy " + np_name + " array");
    py::array_t<std::int64_t> v = py::array_t<std::int64_t>::ensure(a.attr("astype")("int64"));
    const std::int64_t* p = v.data();
    for (std::int64_t i = 0; i < x.size(); ++i) {
      if (p[i] < qc::int_min(t) || p[i] > qc::int_max(t))
        throw InputError(where + ": element " + std::to_string(i) + " = " + std::to_string(p[i]) + " is outside " +
                         fmt);
      x.set_int(i, p[i]);
    }
    return x;
  }
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw InputError(where + ": " + fmt + " needs float values, got a numpy " + np_name + " array");
  py::array_t<double> v = py::array_t<double>::ensure(a.attr("astype")("float64"));
  const double* p = v.data();
  for (std::int64_t i = 0; i < x.size(); ++i) {
    x.set_double(i, p[i]);
    const double back = x.get_double(i);
    if (!(back == p[i] || (std::isnan(back) && std::isnan(p[i]))))
      throw InputError(where + ": element " + std::to_string(i) + " = " + value_text(p[i]) + " is not a value of " +
                       fmt + " (round it first, e.g. with qconform.float_to_bits)");
  }
  return x;
}

py::array to_numpy(qc::Tensor&& t) {
  auto* owned = new qc::Tensor(std::move(t));
  py::capsule base(owned, [](void* p) { delete static_cast<qc::Tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape().begin(), owned->shape().end());
  return py::array(numpy_dtype(owned->dtype()), shape, std::vector<py::ssize_t>{}, owned->bytes().data(), base);
}

py::array view(const qc::Tensor& t, const py::handle& owner) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array a(numpy_dtype(t.dtype()), shape, std::vector<py::ssize_t>{}, t.bytes().data(), owner);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

py::array labels_array(const std::vector<qc::Label>& labels, const qc::Shape& shape) {
  constexpr std::size_t kWidth = 9;  // "saturated"
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array out(py::dtype("<U9"), dims);
  auto* p = static_cast<char32_t*>(out.mutable_data());
  std::memset(static_cast<void*>(p), 0, labels.size() * kWidth * sizeof(char32_t));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string_view n = qc::name(labels[i]);
    for (std::size_t k = 0; k < n.size(); ++k) p[i * kWidth + k] = static_cast<char32_t>(n[k]);
  }
  return out;
}

py::array label_codes_array(const std::vector<qc::Label>& labels, const qc::Shape& shape) {
  static_assert(sizeof(qc::Label) == 1);
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<std::uint8_t> out(dims);
  if (!labels.empty()) std::memcpy(out.mutable_data(), labels.data(), labels.size());
  return out;
}

LabelForm label_form(const py::handle& h) {
  if (h.is_none()) return LabelForm::none;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>() ? LabelForm::names : LabelForm::none;
  if (py::isinstance<py::str>(h)) {
    const std::string s = h.cast<std::string>();
    if (s == "names") return LabelForm::names;
    if (s == "codes") return LabelForm::codes;
  }
  throw InputError("labels: expected False, True, 'names' or 'codes', got " + py::repr(h).cast<std::string>());
}

// ---- Exact values ----------------------------------------------------------------------------

ExactForm exact_arg(const py::handle& h) {
  if (h.is_none()) return ExactForm::none;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>() ? ExactForm::fraction : ExactForm::none;
  if (py::isinstance<py::str>(h)) {
    const std::string s = h.cast<std::string>();
    if (s == "fraction") return ExactForm::fraction;
    if (s == "str") return ExactForm::text;
  }
  throw InputError("exact: expected False, True, \"fraction\" or \"str\"");
}

py::object exact_value(const qc::Rational& r, ExactForm form) {
  const qc::BigInt num = boost::multiprecision::numerator(r), den = boost::multiprecision::denominator(r);
  if (form == ExactForm::text) {
    // A dyadic rational m / 2^k has exactly k decimal fraction digits.
    const unsigned k = boost::multiprecision::msb(den);
    if (boost::multiprecision::lsb(den) == k) return py::str(qc::to_decimal(r, static_cast<int>(k)));
    return py::str(num.str() + "/" + den.str());
  }
  static const auto* fraction = new py::object(py::module_::import("fractions").attr("Fraction"));
  auto big = [](const qc::BigInt& v) {
    return py::reinterpret_steal<py::object>(PyLong_FromString(v.str().c_str(), nullptr, 10));
  };
  return (*fraction)(big(num), big(den));
}

py::object exact_value(const qc::ExactFloat& v, ExactForm form) {
  if (v.is_nan()) return form == ExactForm::text ? py::object(py::str("nan")) : py::object(py::float_(NAN));
  if (v.is_inf()) {
    if (form == ExactForm::text) return py::str(v.negative ? "-inf" : "inf");
    return py::float_(v.negative ? -INFINITY : INFINITY);
  }
  if (form == ExactForm::text && v.value == 0 && v.negative) return py::str("-0");
  return exact_value(v.value, form);
}

py::array exact_array(const qc::Shape& shape, const std::function<py::object(std::int64_t)>& value) {
  const std::int64_t n = qc::numel(shape);
  py::array out(py::dtype("O"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
  auto** p = static_cast<PyObject**>(out.mutable_data());
  for (std::int64_t i = 0; i < n; ++i) {
    py::object v = value(i);
    Py_XDECREF(p[i]);
    p[i] = v.release().ptr();
  }
  py::tuple dims(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) dims[i] = py::int_(shape[i]);
  return out.attr("reshape")(dims);
}

py::object oracle_result(qc::Tensor&& y, const std::vector<qc::Label>* labels, LabelForm label_form, ExactForm exact,
                         const std::function<py::object(std::int64_t)>& exact_at) {
  const qc::Shape shape = y.shape();
  py::array values = to_numpy(std::move(y));
  if (label_form == LabelForm::none && exact == ExactForm::none) return values;
  py::list out;
  out.append(values);
  if (label_form == LabelForm::names) out.append(labels_array(*labels, shape));
  if (label_form == LabelForm::codes) out.append(label_codes_array(*labels, shape));
  if (exact != ExactForm::none) out.append(exact_array(shape, exact_at));
  return py::tuple(out);
}

// ---- Parameters ------------------------------------------------------------------------------

std::vector<double> doubles(const py::handle& h, const std::string& where) {
  py::array a = c_array(h, where);
  const char k = a.dtype().kind();
  if (k != 'f' && k != 'i' && k != 'u') throw InputError(where + ": expected numbers");
  py::array_t<double> v = py::array_t<double>::ensure(a.attr("astype")("float64"));
  return {v.data(), v.data() + v.size()};
}

std::vector<std::int64_t> integers(const py::handle& h, const std::string& where) {
  const std::vector<double> d = doubles(h, where);
  std::vector<std::int64_t> out;
  for (double v : d) {
    if (v != std::floor(v) || std::fabs(v) > 9.2e18)
      throw InputError(where + ": expected integers, got " + value_text(v));
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

std::vector<double> rounded_scales(const py::handle& h, DType t, const std::string& where) {
  if (!qc::is_float(t)) throw InputError(where + ": scales must have a float format, not " + std::string(qc::name(t)));
  std::vector<double> s = doubles(h, where);
  for (double& v : s) v = qc::round_into(t, v);
  return s;
}

qc::QuantParams quant_params(const py::handle& scale, const py::handle& zero_point, const py::handle& axis,
                             std::int64_t block_size, const py::handle& scale_dtype, const qc::Shape& shape, DType q,
                             const std::string& where) {
  qc::QuantParams p;
  p.scale_dtype = dtype_arg(scale_dtype, where + ": scale_dtype");
  p.scales = rounded_scales(scale, p.scale_dtype, where + ": scale");
  if (!zero_point.is_none()) p.zero_points = integers(zero_point, where + ": zero_point");
  if (p.zero_points.size() == 1 && p.scales.size() > 1) p.zero_points.assign(p.scales.size(), p.zero_points[0]);
  if (!axis.is_none()) p.axis = axis.cast<int>();
  p.block_size = block_size;
  qc::validate(p, shape, q, where);
  return p;
}

// ---- Policies --------------------------------------------------------------------------------

py::object json_to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

std::string json_text(const py::handle& h) {
  py::object dumps = py::module_::import("json").attr("dumps");
  return dumps(h, py::arg("default") = py::cpp_function([](py::handle o) { return py::str(o); })).cast<std::string>();
}

qc::Spec spec_arg(const py::handle& h) {
  if (py::isinstance<qc::Spec>(h)) return h.cast<qc::Spec>();
  if (py::isinstance<py::str>(h)) return qc::parse_spec(h.cast<std::string>(), "spec");
  if (py::isinstance<py::dict>(h)) return qc::parse_spec(json_text(h), "spec");
  throw InputError("spec: expected a qconform.Spec, a preset name or a dict of choices, got " + type_name(h));
}

// ---- Ops ---------------------------------------------------------------------------------------

qc::OpRequest op_arg(const py::handle& h) {
  if (py::isinstance<qc::Case>(h)) return h.cast<const qc::Case&>().op;
  if (py::isinstance<qc::QuantizeOp>(h)) return h.cast<qc::QuantizeOp>();
  if (py::isinstance<qc::DequantizeOp>(h)) return h.cast<qc::DequantizeOp>();
  if (py::isinstance<qc::RequantizeOp>(h)) return h.cast<qc::RequantizeOp>();
  if (py::isinstance<qc::QGemmOp>(h)) return h.cast<qc::QGemmOp>();
  if (py::isinstance<qc::QConv2dOp>(h)) return h.cast<qc::QConv2dOp>();
  if (py::isinstance<qc::WeightOnlyGemmOp>(h)) return h.cast<qc::WeightOnlyGemmOp>();
  if (py::isinstance<qc::ChooseQParamsOp>(h)) return h.cast<qc::ChooseQParamsOp>();
  if (py::isinstance<qc::Conv2dOp>(h)) return h.cast<qc::Conv2dOp>();
  if (py::isinstance<qc::MxQuantizeOp>(h)) return h.cast<qc::MxQuantizeOp>();
  if (py::isinstance<qc::MxDequantizeOp>(h)) return h.cast<qc::MxDequantizeOp>();
  if (py::isinstance<qc::MxGemmOp>(h)) return h.cast<qc::MxGemmOp>();
  if (py::isinstance<qc::QAddOp>(h)) return h.cast<qc::QAddOp>();
  throw InputError(
      "expected an op (QuantizeOp, DequantizeOp, RequantizeOp, QGemmOp, QConv2dOp, WeightOnlyGemmOp, Conv2dOp, "
      "MxQuantizeOp, MxDequantizeOp, MxGemmOp, ChooseQParamsOp, QAddOp) or "
      "a Case, got " +
      type_name(h));
}

py::object op_to_python(const qc::OpRequest& op, const py::handle& owner) {
  return std::visit(
      [&](const auto& alt) -> py::object {
        if (!owner) return py::cast(alt, py::return_value_policy::copy);
        py::object o = py::cast(&alt, py::return_value_policy::reference);
        py::detail::keep_alive_impl(o, owner);
        return o;
      },
      op);
}

void resolve_dynamic_rules(qc::OpRequest& op, const qc::Spec& spec) {
  auto resolve = [&](qc::ActivationOperand& a) {
    if (a.quantization == qc::ActivationQuantization::static_params) return;
    auto rule = qc::find_qparams_preset(spec.qparams);
    if (!rule)
      throw InputError("policy '" + spec.name + "': its parameter-choice rule '" + spec.qparams + "' is unknown");
    a.rule = *rule;
  };
  if (auto* g = std::get_if<qc::QGemmOp>(&op)) resolve(g->a);
  if (auto* c = std::get_if<qc::QConv2dOp>(&op)) resolve(c->input);
}

}  // namespace qcpy
