// What every part of the Python module shares: numpy arrays to and from qc::Tensor, argument
// conversion (a format, a policy, scales), exact values as fractions.Fraction, and labels as numpy
// string arrays.
//
// Buffers. A qc::Tensor owns its storage, so an input array is copied into one (one memcpy for a
// C-contiguous array of the matching numpy type). Outputs are not copied: the result Tensor moves
// into a capsule that owns it, and the numpy array views its bytes. Arrays of an op handed to a
// Python backend, or read from a case, view the op's own tensors (read-only).
#pragma once

#include "cases/case.hpp"
#include "oracles/labels.hpp"
#include "oracles/presets.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/requantize.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/enum_table.hpp"
#include "qconform/error.hpp"
#include "qconform/ops.hpp"

#include <nlohmann/json_fwd.hpp>
#include "qconform/tensor.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qcpy {

namespace py = pybind11;

// ---- Formats ---------------------------------------------------------------------------------

// A format from a qc::DType, a name ("i8", "int8", "bfloat16") or a numpy dtype of an exactly
// matching type (float32 -> f32; float16 -> f16; int8 -> i8; ...).
qc::DType dtype_arg(const py::handle& h, const std::string& where);
std::optional<qc::DType> optional_dtype_arg(const py::handle& h, const std::string& where);
// The numpy dtype an array of format t has: float64/float32/float16, int32/int16/uint16/int8/uint8;
// bf16 as uint16 bit patterns, f8 as uint8 bit patterns, i4/u4 as int8/uint8 (one value per byte).
py::dtype numpy_dtype(qc::DType t);

// ---- Arrays ----------------------------------------------------------------------------------

// A numpy array (or anything numpy.asarray accepts) as a Tensor of format `as` (or the format the
// array's numpy type maps to when `as` is empty). Bits are copied when the numpy type is the
// format's storage type (numpy_dtype(as)); otherwise values are converted, and a value the format
// cannot hold exactly is an InputError naming `where` and the element.
qc::Tensor to_tensor(const py::handle& array, std::optional<qc::DType> as, const std::string& where);
// The Tensor's bytes as a numpy array of numpy_dtype(t.dtype()), without a copy.
py::array to_numpy(qc::Tensor&& t);
// A read-only numpy view of a tensor that `owner` keeps alive.
py::array view(const qc::Tensor& t, const py::handle& owner);

// Labels as a numpy array of strings ("clear", "near_tie", "tie", "saturated", "special").
py::array labels_array(const std::vector<qc::Label>& labels, const qc::Shape& shape);
// The labels as their codes (uint8: the values of qconform.Label, clear 0 ... special 4): one byte
// an element, where the names take 36.
py::array label_codes_array(const std::vector<qc::Label>& labels, const qc::Shape& shape);

// What a `labels=` argument asks for: nothing (False, None), the names (True, "names"), or the codes
// ("codes").
enum class LabelForm : std::uint8_t { none, names, codes };
LabelForm label_form(const py::handle& h);

// ---- Exact values ----------------------------------------------------------------------------

enum class ExactForm { none, fraction, text };
// exact=False | True | "fraction" | "str".
ExactForm exact_arg(const py::handle& h);
// A rational as fractions.Fraction, or as exact text: the full decimal expansion of a dyadic
// rational, else "p/q" (both readable by Fraction(text)).
py::object exact_value(const qc::Rational& r, ExactForm form);
py::object exact_value(const qc::ExactFloat& v, ExactForm form);
// An object array of the shape, element i = value(i).
py::array exact_array(const qc::Shape& shape, const std::function<py::object(std::int64_t)>& value);

// The oracle functions' return value: the array, or a tuple with labels and/or exact values.
py::object oracle_result(qc::Tensor&& y, const std::vector<qc::Label>* labels, LabelForm label_form, ExactForm exact,
                         const std::function<py::object(std::int64_t)>& exact_at);

// ---- Parameters ------------------------------------------------------------------------------

// A number or a sequence of numbers (or a numpy array) as a list.
std::vector<double> doubles(const py::handle& h, const std::string& where);
std::vector<std::int64_t> integers(const py::handle& h, const std::string& where);
// Scales rounded to nearest even into `t`, as the case format does (0.1 means f32(0.1) for f32
// scales).
std::vector<double> rounded_scales(const py::handle& h, qc::DType t, const std::string& where);

// Per-tensor, per-axis or blocked parameters from Python arguments, validated against `shape` and
// the integer format `q`.
qc::QuantParams quant_params(const py::handle& scale, const py::handle& zero_point, const py::handle& axis,
                             std::int64_t block_size, const py::handle& scale_dtype, const qc::Shape& shape,
                             qc::DType q, const std::string& where);

// ---- Policies ----------------------------------------------------------------------------------

// A policy from a qconform.Policy, a preset name, or a JSON spec text.
qc::Spec spec_arg(const py::handle& h);
// A Python value (None, bool, int, float, str, list, tuple, dict, or a qconform enum / ComputeFormat,
// written by its str()) as JSON text pieces for the case format.
std::string json_text(const py::handle& h);
// A JSON value as the Python object json.loads makes of it.
py::object json_to_python(const nlohmann::json& j);

// ---- Enums -----------------------------------------------------------------------------------

// An enum from its qconform enum value or its name.
template <class E, class Parse>
E enum_arg(const py::handle& h, Parse parse, const std::string& where) {
  if (py::isinstance<E>(h)) return h.cast<E>();
  if (py::isinstance<py::str>(h)) {
    const std::string s = h.cast<std::string>();
    if (auto v = parse(s)) return *v;
    throw qc::InputError(where + ": unknown value '" + s + "'");
  }
  throw qc::InputError(where + ": expected a name or a qconform enum value, got " +
                       py::str(py::type::of(h)).cast<std::string>());
}

// The same for an enum with a table (qconform/enum_table.hpp), whose names it parses.
template <class E>
E enum_arg(const py::handle& h, const std::string& where) {
  if (py::isinstance<py::str>(h) && !qc::table_parse<E>(h.cast<std::string>()))
    throw qc::InputError(where + ": unknown value '" + h.cast<std::string>() + "' (" + qc::table_names<E>() + ")");
  return enum_arg<E>(
      h, [](std::string_view s) { return qc::table_parse<E>(s); }, where);
}

// A qconform enum whose members are the C++ names (qc::name(value)), and whose str() is that name,
// so an enum value and its name are interchangeable wherever a choice is given.
template <class E>
py::enum_<E> bind_enum(py::module_& m, const char* python_name, const std::vector<E>& values, const char* doc) {
  py::enum_<E> e(m, python_name, doc);
  // Unqualified: name() is found by argument-dependent lookup where the enum's header declares it.
  for (E v : values) e.value(std::string(name(v)).c_str(), v);
  // Assigned, not def()'d: def() would chain it after pybind11's own __str__ as an overload.
  e.attr("__str__") = py::cpp_function([](E v) { return std::string(name(v)); }, py::name("__str__"), py::is_method(e));
  return e;
}

// The same for an enum with a table (qconform/enum_table.hpp): its members are the table's values,
// in table order.
template <class E>
py::enum_<E> bind_enum(py::module_& m, const char* python_name, const char* doc) {
  const auto values = qc::table_values<E>();
  return bind_enum<E>(m, python_name, std::vector<E>(values.begin(), values.end()), doc);
}

// ---- Ops ---------------------------------------------------------------------------------------

// An op request from one of the qconform op classes or a Case (its op).
qc::OpRequest op_arg(const py::handle& h);
// The op as its Python class: a view of `op` that `owner` keeps alive (no copy), or, without an
// owner, a copy owned by Python.
py::object op_to_python(const qc::OpRequest& op, const py::handle& owner);
// Dynamic activations take their parameter rule from the policy, as in case files.
void resolve_dynamic_rules(qc::OpRequest& op, const qc::Spec& spec);

// The op constructors (bind_oracle.cpp), shared with the op classes (bind_cases.cpp).
qc::QGemmOp make_qgemm_op(const qc::ActivationOperand& a, const qc::QWeights& b, const py::handle& bias,
                          const py::handle& output, const py::handle& b_layout);
qc::QConv2dOp make_qconv2d_op(const qc::ActivationOperand& input, const qc::QWeights& weight, const py::handle& bias,
                              const py::handle& output, const py::handle& layout,
                              const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                              const std::vector<std::int64_t>& dilation, std::int64_t groups,
                              const py::handle& padding_value);
qc::WeightOnlyGemmOp make_weight_only_op(const py::handle& a, const qc::QWeights& b, const py::handle& bias,
                                         const py::handle& dtype, const py::handle& b_layout,
                                         const py::handle& a_dtype);
qc::Conv2dOp make_conv2d_op(const py::handle& input, const py::handle& weight, const py::handle& bias,
                            const py::handle& dtype, const py::handle& layout, const std::vector<std::int64_t>& stride,
                            const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation,
                            std::int64_t groups);
qc::MxQuantizeOp make_mx_quantize_op(const py::handle& x, const std::string& format, int axis, std::int64_t block_size,
                                     const std::string& scale_rule, const std::string& rounding,
                                     const py::handle& global_scale);
// C = saturate(round((sA(A - zA) + sB(B - zB)) / sC) + zC) (oracles/qadd.hpp): A i8/u8, B i8/u8/i32
// broadcast over A, one f32 scale and zero point per operand. Checked on construction.
qc::QAddOp make_qadd_op(const py::handle& a, double a_scale, std::int64_t a_zero_point, const py::handle& b,
                        double b_scale, std::int64_t b_zero_point, double scale, std::int64_t zero_point,
                        const py::handle& dtype, const py::handle& a_dtype, const py::handle& b_dtype);
qc::MxDequantizeOp make_mx_dequantize_op(const py::handle& elements, const py::handle& scales,
                                         const std::string& format, int axis, std::int64_t block_size,
                                         const py::handle& global_scale);
qc::MxGemmOp make_mx_gemm_op(const py::handle& a, const py::handle& b, const std::string& a_format,
                             const py::handle& b_format, const py::handle& b_layout, std::int64_t block_size,
                             const std::string& scale_rule, const std::string& rounding,
                             const py::handle& a_global_scale, const py::handle& b_global_scale, const py::handle& bias,
                             const py::handle& dtype);
qc::RequantizeOp make_requantize_op(const py::handle& acc, const py::handle& input_scale,
                                    const py::handle& weight_scale, const py::handle& output_scale,
                                    const py::handle& zero_point, const py::handle& dtype, const py::handle& axis,
                                    const py::handle& scale_dtype, const py::handle& input_dtype);
py::array element_scales_of(const qc::QuantParams& p, const qc::Shape& shape);
py::array element_zero_points_of(const qc::QuantParams& p, const qc::Shape& shape);

// ---- Binding entry points --------------------------------------------------------------------

void bind_formats(py::module_& m);
void bind_policies(py::module_& m);
void bind_oracle(py::module_& m);
void bind_cases(py::module_& m);
void bind_results(py::module_& m);
void bind_backends(py::module_& m);

}  // namespace qcpy
