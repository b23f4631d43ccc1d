// The oracle as numpy-in/numpy-out functions, and the operand types of the quantized paths.
// Every function returns the exact result (the spec's output, bit for bit); labels=True adds the
// per-element labels and exact=True ("fraction") or "str" adds the exact value each output was
// rounded from.
#include "common.hpp"
#include "harness/evaluate.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/conv2d.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/fp8.hpp"
#include "oracles/int4.hpp"
#include "oracles/mx.hpp"
#include "oracles/mx_gemm.hpp"
#include "oracles/qadd.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"
#include "oracles/sweep.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/error.hpp"

namespace qcpy {

using qc::DType;
using qc::InputError;

namespace {

// The element-wise scales and zero points of parameters over a shape, as arrays of that shape.
py::array element_scales(const qc::QuantParams& p, const qc::Shape& shape) {
  const qc::ParamIndexer index(p, shape);
  qc::Tensor t(DType::f64, shape);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data<double>()[i] = p.scales[static_cast<std::size_t>(index(i))];
  return to_numpy(std::move(t));
}

py::array element_zero_points(const qc::QuantParams& p, const qc::Shape& shape) {
  const qc::ParamIndexer index(p, shape);
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<std::int64_t> out(dims);
  for (std::int64_t i = 0; i < qc::numel(shape); ++i) out.mutable_data()[i] = p.zero_point(index(i));
  return out;
}

qc::Shape shape_arg(const py::handle& h) {
  qc::Shape s;
  for (const py::handle& d : h) s.push_back(d.cast<std::int64_t>());
  return s;
}

qc::Int4Packing packing_arg(const py::handle& h) {
  if (py::isinstance<qc::Int4Packing>(h)) return h.cast<qc::Int4Packing>();
  const std::string s = py::isinstance<py::str>(h) ? h.cast<std::string>() : "";
  if (const auto p = qc::find_int4_packing(s)) return *p;
  throw InputError("packing: expected an Int4Packing or one of " + qc::int4_packing_names());
}

DType nibble_type(const py::handle& h, const std::string& where) {
  const DType t = dtype_arg(h, where);
  if (t != DType::i4 && t != DType::u4) throw InputError(where + ": 4-bit values are i4 or u4");
  return t;
}

// Integer values of any integer numpy type (int64 from Python lists included), as a tensor of the
// numpy type's format or i32.
qc::Tensor integer_values(const py::handle& values, const std::string& where) {
  py::array a = py::array::ensure(values, py::array::c_style);
  if (!a) throw InputError(where + ": expected an array");
  const char k = a.dtype().kind();
  if (k != 'i' && k != 'u') throw InputError(where + ": expected integer values");
  std::optional<DType> t;
  if (a.dtype().itemsize() == 8) t = DType::i32;
  return to_tensor(a, t, where);
}

std::optional<qc::Tensor> optional_tensor(const py::handle& h, std::optional<DType> as, const std::string& where) {
  if (h.is_none()) return std::nullopt;
  return to_tensor(h, as, where);
}

// ---- Operands --------------------------------------------------------------------------------

qc::ActivationOperand make_activation(const py::handle& values, const py::handle& scale, const py::handle& zero_point,
                                      const py::handle& format, const py::handle& axis, std::int64_t block_size,
                                      const py::handle& scale_dtype, const std::string& quantize,
                                      const py::handle& dtype) {
  qc::ActivationOperand a;
  a.values = to_tensor(values, optional_dtype_arg(dtype, "Activation: dtype"), "Activation: values");
  a.format = qc::is_int(a.values.dtype()) ? a.values.dtype() : dtype_arg(format, "Activation: format");
  const auto mode = qc::table_parse<qc::ActivationQuantization>(quantize);
  if (!mode)
    throw InputError("Activation: unknown quantize mode '" + quantize + "' (" +
                     qc::table_names<qc::ActivationQuantization>() + ")");
  a.quantization = *mode;
  if (a.quantization == qc::ActivationQuantization::static_params) {
    if (scale.is_none()) throw InputError("Activation: static quantization needs a scale");
    a.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, a.values.shape(), a.format, "Activation");
  } else {
    if (!scale.is_none())
      throw InputError("Activation: dynamic quantization chooses its own scale (the policy's qparams rule)");
    if (qc::is_int(a.values.dtype())) throw InputError("Activation: dynamic quantization needs float values");
  }
  return a;
}

qc::QWeights make_weights(const py::handle& values, const py::handle& scale, const py::handle& zero_point,
                          const py::handle& format, const py::handle& axis, std::int64_t block_size,
                          const py::handle& scale_dtype, const py::handle& packing, const py::handle& dtype) {
  qc::QWeights w;
  qc::Tensor v = to_tensor(values, optional_dtype_arg(dtype, "Weights: dtype"), "Weights: values");
  if (qc::is_int(v.dtype())) {
    w.format = v.dtype();
    if (!format.is_none() && dtype_arg(format, "Weights: format") != v.dtype())
      throw InputError("Weights: integer values are already quantized in their own format (" +
                       std::string(qc::name(v.dtype())) + "); give dtype= to name it");
  } else {
    w.format = format.is_none() ? DType::i8 : dtype_arg(format, "Weights: format");
  }
  w.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, v.shape(), w.format, "Weights");
  w.shape = v.shape();
  if (!packing.is_none()) {
    if (w.format != DType::i4 && w.format != DType::u4)
      throw InputError("Weights: only i4/u4 values are packed (give dtype=\"i4\" or \"u4\")");
    w.packing = packing_arg(packing);
    v = qc::pack_int4(v, w.format, *w.packing);
  }
  w.values = std::move(v);
  return w;
}

qc::OutputStage requantized_output(const py::handle& dtype, double scale, std::int64_t zero_point,
                                   const std::string& activation) {
  qc::OutputStage s;
  s.kind = qc::OutputKind::requantized;
  s.format = dtype_arg(dtype, "Output: dtype");
  if (!qc::is_int(s.format)) throw InputError("Output: a requantized output needs an integer format");
  s.scale = qc::round_into(DType::f32, scale);
  s.zero_point = zero_point;
  if (zero_point < qc::int_min(s.format) || zero_point > qc::int_max(s.format))
    throw InputError("Output: zero_point " + std::to_string(zero_point) + " is outside " +
                     std::string(qc::name(s.format)));
  const auto act = qc::table_parse<qc::FusedActivation>(activation);
  if (!act)
    throw InputError("Output: unknown activation '" + activation + "' (" + qc::table_names<qc::FusedActivation>() +
                     ")");
  if (*act != qc::FusedActivation::none)
    s.clamp = qc::fused_activation_range(*act, static_cast<float>(s.scale), s.zero_point, s.format);
  return s;
}

qc::OutputStage output_arg(const py::handle& h) {
  if (h.is_none()) return {};
  return h.cast<qc::OutputStage>();
}

// ---- Oracle functions ------------------------------------------------------------------------

// Every value of a float format through quantize, streamed (oracles/sweep.hpp), as a dict.
py::dict sweep_quantize(const py::handle& scale, const py::handle& zero_point, const py::handle& dtype,
                        const py::handle& policy, const py::handle& input_dtype, const py::handle& scale_dtype,
                        const py::handle& vs, int threads, std::size_t max_examples) {
  const DType in = dtype_arg(input_dtype, "sweep_quantize: input_dtype");
  const DType out = dtype_arg(dtype, "sweep_quantize: dtype");
  if (!qc::is_int(out)) throw InputError("sweep_quantize: dtype must be an integer format");
  if (threads < 0) throw InputError("sweep_quantize: threads must be 0 (every core) or more");
  const qc::QuantParams p =
      quant_params(scale, zero_point, py::none(), 0, scale_dtype, qc::Shape{1}, out, "sweep_quantize");
  const qc::Spec spec = spec_arg(policy);
  const qc::QuantizePolicy a = spec.quantize_for(in);
  std::optional<qc::Spec> other;
  std::optional<qc::QuantizePolicy> b;
  if (!vs.is_none()) {
    other = spec_arg(vs);
    b = other->quantize_for(in);
  }
  qc::SweepOptions o;
  o.threads = threads;
  o.max_examples = max_examples;
  qc::QuantizeSweep r;
  {
    py::gil_scoped_release release;
    r = qc::sweep_quantize(in, p, out, a, b ? &*b : nullptr, o);
  }
  py::dict labels;
  for (std::size_t l = 0; l < r.labels.size(); ++l)
    labels[py::str(std::string(qc::name(static_cast<qc::Label>(l))))] = r.labels[l];
  py::dict d;
  d["spec"] = spec.name;
  d["inputs"] = r.count;
  d["labels"] = labels;
  d["open"] = r.open;
  d["slow_path_elements"] = r.slow_elements;
  d["output_range"] = py::make_tuple(r.q_min, r.q_max);
  d["digest"] = r.digest;
  if (other) {
    py::list first;
    for (const qc::SweepDifference& e : r.first) {
      py::dict f;
      f["bits"] = e.bits;
      f["x"] = e.x;
      f["q"] = e.q;
      f["q_vs"] = e.q_vs;
      f["labels"] = py::make_tuple(std::string(qc::name(e.label)), std::string(qc::name(e.label_vs)));
      first.append(f);
    }
    py::dict v;
    v["spec"] = other->name;
    v["differ"] = r.differ;
    v["first"] = first;
    d["vs"] = v;
  }
  return d;
}

py::object quantize(const py::handle& x, const py::handle& scale, const py::handle& zero_point, const py::handle& dtype,
                    const py::handle& policy, const py::handle& axis, std::int64_t block_size,
                    const py::handle& scale_dtype, const py::handle& input_dtype, const py::handle& labels_arg,
                    const py::handle& exact, bool saturate) {
  const LabelForm labels = label_form(labels_arg);
  qc::QuantizeOp op;
  op.x = to_tensor(x, optional_dtype_arg(input_dtype, "quantize: input_dtype"), "quantize: x");
  if (!qc::is_float(op.x.dtype()) && op.x.dtype() != DType::i32)
    throw InputError("quantize: x must hold float (or i32) values, got " + std::string(qc::name(op.x.dtype())));
  op.out = dtype_arg(dtype, "quantize: dtype");
  if (!qc::is_int(op.out) && !qc::is_float8(op.out))
    throw InputError("quantize: dtype must be an integer or float8 (f8e4m3fn, f8e5m2) format");
  op.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, op.x.shape(), op.out, "quantize");
  const qc::Spec spec = spec_arg(policy);
  const qc::QuantizePolicy pol = spec.quantize_for(op.x.dtype());
  const ExactForm form = exact_arg(exact);
  qc::QuantizeResult r;
  if (qc::is_float8(op.out)) {  // float8 codes as uint8 bits; the exact value is x / s
    {
      py::gil_scoped_release release;
      r = qc::quantize_to_float8(op.x, op.params, op.out, saturate, pol, labels != LabelForm::none);
    }
    const qc::ParamIndexer index(op.params, op.x.shape());
    return oracle_result(std::move(r.q), &r.labels, labels, form, [&](std::int64_t i) {
      const qc::Float8QuantizeElement e = qc::quantize_to_float8_element(
          op.x.get_double(i), op.x.dtype(), op.params.scales[static_cast<std::size_t>(index(i))], op.params.scale_dtype,
          op.out, saturate, pol);
      return exact_value(e.exact, form);
    });
  }
  {
    py::gil_scoped_release release;
    r = qc::quantize(op.x, op.params, op.out, pol, qc::OraclePath::fast, labels != LabelForm::none);
  }
  const qc::ParamIndexer index(op.params, op.x.shape());
  return oracle_result(std::move(r.q), &r.labels, labels, form, [&](std::int64_t i) {
    const std::int64_t k = index(i);
    const qc::QuantizeElement e =
        qc::quantize_element(op.x.get_double(i), op.x.dtype(), op.params.scales[static_cast<std::size_t>(k)],
                             op.params.scale_dtype, op.params.zero_point(k), op.out, pol);
    return exact_value(e.pre_round, form);
  });
}

py::object dequantize(const py::handle& q, const py::handle& scale, const py::handle& zero_point,
                      const py::handle& dtype, const py::handle& policy, const py::handle& axis,
                      std::int64_t block_size, const py::handle& scale_dtype, const py::handle& input_dtype,
                      const py::handle& labels_arg, const py::handle& exact) {
  const LabelForm labels = label_form(labels_arg);
  qc::DequantizeOp op;
  op.q = to_tensor(q, optional_dtype_arg(input_dtype, "dequantize: input_dtype"), "dequantize: q");
  if (!qc::is_int(op.q.dtype()) && !qc::is_float8(op.q.dtype()))
    throw InputError("dequantize: q must hold integers or float8 codes (input_dtype=\"f8e4m3fn\" or \"f8e5m2\"), got " +
                     std::string(qc::name(op.q.dtype())));
  op.out = dtype_arg(dtype, "dequantize: dtype");
  if (!qc::is_float(op.out)) throw InputError("dequantize: dtype must be a float format");
  op.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, op.q.shape(), op.q.dtype(), "dequantize");
  const qc::Spec spec = spec_arg(policy);
  const ExactForm form = exact_arg(exact);
  qc::DequantizeResult r;
  if (qc::is_float8(op.q.dtype())) {
    {
      py::gil_scoped_release release;
      r = qc::dequantize_from_float8(op.q, op.params, op.out, spec.dequantize, labels != LabelForm::none);
    }
    const qc::ParamIndexer index(op.params, op.q.shape());
    return oracle_result(std::move(r.y), &r.labels, labels, form, [&](std::int64_t i) {
      const qc::DequantizeElement e = qc::dequantize_from_float8_element(
          op.q.bits(i), op.q.dtype(), op.params.scales[static_cast<std::size_t>(index(i))], op.params.scale_dtype,
          op.out, spec.dequantize);
      return exact_value(e.exact, form);
    });
  }
  {
    py::gil_scoped_release release;
    r = qc::dequantize(op.q, op.params, op.out, spec.dequantize, qc::OraclePath::fast, labels != LabelForm::none);
  }
  const qc::ParamIndexer index(op.params, op.q.shape());
  return oracle_result(std::move(r.y), &r.labels, labels, form, [&](std::int64_t i) {
    const std::int64_t k = index(i);
    const qc::DequantizeElement e =
        qc::dequantize_element(op.q.get_int(i), op.q.dtype(), op.params.scales[static_cast<std::size_t>(k)],
                               op.params.scale_dtype, op.params.zero_point(k), op.out, spec.dequantize);
    return exact_value(e.exact, form);
  });
}

qc::RequantizeOp make_requantize(const py::handle& acc, const py::handle& input_scale, const py::handle& weight_scale,
                                 const py::handle& output_scale, const py::handle& zero_point, const py::handle& dtype,
                                 const py::handle& axis, const py::handle& scale_dtype, const py::handle& input_dtype,
                                 const std::string& where) {
  qc::RequantizeOp op;
  op.acc = to_tensor(acc, dtype_arg(input_dtype, where + ": input_dtype"), where + ": acc");
  if (!qc::is_int(op.acc.dtype())) throw InputError(where + ": accumulators are integers");
  op.out = dtype_arg(dtype, where + ": dtype");
  if (!qc::is_int(op.out)) throw InputError(where + ": dtype must be an integer format");
  qc::RequantizeParams& p = op.params;
  p.scale_dtype = dtype_arg(scale_dtype, where + ": scale_dtype");
  auto one = [&](const py::handle& h, const char* field) {
    const std::vector<double> v = rounded_scales(h, p.scale_dtype, where + ": " + field);
    if (v.size() != 1) throw InputError(where + ": " + field + " is one scale");
    return v[0];
  };
  p.input_scale = one(input_scale, "input_scale");
  p.weight_scales = rounded_scales(weight_scale, p.scale_dtype, where + ": weight_scale");
  p.output_scale = one(output_scale, "output_scale");
  if (!zero_point.is_none()) p.output_zero_points = integers(zero_point, where + ": zero_point");
  if (!axis.is_none()) p.axis = axis.cast<int>();
  qc::validate(p, op.acc.shape(), op.out, where);
  return op;
}

py::object requantize(const qc::RequantizeOp& op, const py::handle& policy, const py::handle& labels_arg,
                      const py::handle& exact) {
  const LabelForm labels = label_form(labels_arg);
  const qc::Spec spec = spec_arg(policy);
  const ExactForm form = exact_arg(exact);
  qc::RequantizeResult r;
  {
    py::gil_scoped_release release;
    r = qc::requantize(op.acc, op.params, op.out, spec.requantize, qc::OraclePath::fast, labels != LabelForm::none);
  }
  return oracle_result(std::move(r.q), &r.labels, labels, form, [&](std::int64_t i) {
    // The channel of element i, as evaluate.cpp finds it for reports.
    const qc::RequantizeParams& p = op.params;
    std::size_t channel = 0;
    if (p.weight_scales.size() > 1 || p.output_zero_points.size() > 1) {
      const int rank = op.acc.rank();
      const int a = *p.axis < 0 ? *p.axis + rank : *p.axis;
      std::vector<std::int64_t> c;
      qc::unravel(i, op.acc.shape(), c);
      channel = static_cast<std::size_t>(c[static_cast<std::size_t>(a)]);
    }
    const double w = p.weight_scales[std::min(channel, p.weight_scales.size() - 1)];
    const std::int64_t zp =
        p.output_zero_points.empty() ? 0 : p.output_zero_points[std::min(channel, p.output_zero_points.size() - 1)];
    const qc::RequantizeElement e =
        qc::requantize_element(op.acc.get_int(i), qc::RequantizeScales{p.input_scale, w, p.output_scale, p.scale_dtype},
                               zp, op.out, spec.requantize);
    return exact_value(e.ideal, form);
  });
}

py::object linear_result(qc::QLinearResult r, LabelForm labels, ExactForm form) {
  auto shared = std::make_shared<qc::QLinearResult>(std::move(r));
  return oracle_result(std::move(shared->y), &shared->labels, labels, form,
                       [&](std::int64_t i) { return exact_value(shared->exact_value(i), form); });
}

qc::QGemmOp make_qgemm(const qc::ActivationOperand& a, const qc::QWeights& b, const py::handle& bias,
                       const py::handle& output, const py::handle& b_layout) {
  qc::QGemmOp g;
  g.a = a;
  g.b = b;
  g.b_layout = enum_arg<qc::WeightLayout>(b_layout, "b_layout");
  g.bias = optional_tensor(bias, std::nullopt, "bias");
  g.output = output_arg(output);
  (void)qc::batched_gemm_shape(g.a.values.shape(), g.b.shape, g.b_layout);
  return g;
}

qc::QConv2dOp make_qconv2d(const qc::ActivationOperand& input, const qc::QWeights& weight, const py::handle& bias,
                           const py::handle& output, const py::handle& layout, const std::vector<std::int64_t>& stride,
                           const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation,
                           std::int64_t groups, const py::handle& padding_value) {
  qc::QConv2dOp c;
  c.input = input;
  c.weight = weight;
  c.layout = enum_arg<qc::ConvLayout>(layout, "layout");
  c.padding = enum_arg<qc::ConvPadding>(padding_value, "padding_value");
  if (stride.size() != 2 || padding.size() != 4 || dilation.size() != 2)
    throw InputError("qconv2d: stride (h, w), padding (top, left, bottom, right), dilation (h, w)");
  c.geometry = qc::Conv2dGeometry{stride[0],  stride[1],   padding[0],  padding[1], padding[2],
                                  padding[3], dilation[0], dilation[1], groups};
  c.bias = optional_tensor(bias, std::nullopt, "bias");
  c.output = output_arg(output);
  (void)qc::resolve_conv2d(c.input.values.shape(), c.layout, c.weight.shape, c.geometry);
  return c;
}

qc::WeightOnlyGemmOp make_weight_only(const py::handle& a, const qc::QWeights& b, const py::handle& bias,
                                      const py::handle& dtype, const py::handle& b_layout, const py::handle& a_dtype) {
  qc::WeightOnlyGemmOp w;
  w.a = to_tensor(a, optional_dtype_arg(a_dtype, "weight_only_gemm: a_dtype"), "weight_only_gemm: a");
  if (!qc::is_float(w.a.dtype())) throw InputError("weight_only_gemm: activations are floats");
  w.b = b;
  w.b_layout = enum_arg<qc::WeightLayout>(b_layout, "b_layout");
  w.bias = optional_tensor(bias, std::nullopt, "weight_only_gemm: bias");
  if (w.bias && !qc::is_float(w.bias->dtype())) throw InputError("weight_only_gemm: the bias is a float tensor");
  w.out = dtype_arg(dtype, "weight_only_gemm: dtype");
  if (!qc::is_float(w.out)) throw InputError("weight_only_gemm: dtype must be a float format");
  (void)qc::gemm_shape(w.a.shape(), w.b.shape, w.b_layout);
  return w;
}

// conv2d: `weight` is a Weights (integer values dequantized with their parameters) or a float array
// (used exactly).
qc::Conv2dOp make_conv2d(const py::handle& input, const py::handle& weight, const py::handle& bias,
                         const py::handle& dtype, const py::handle& layout, const std::vector<std::int64_t>& stride,
                         const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation,
                         std::int64_t groups) {
  qc::Conv2dOp c;
  c.input = to_tensor(input, std::nullopt, "conv2d: input");
  if (!qc::is_float(c.input.dtype())) throw InputError("conv2d: the input is a float tensor");
  if (py::isinstance<qc::QWeights>(weight)) {
    c.weight = weight.cast<qc::QWeights>();
    if (!c.weight.packing && qc::is_float(c.weight.values.dtype()))
      throw InputError("conv2d: float weights are used exactly: pass the float array itself, not Weights");
  } else {
    c.weight.values = to_tensor(weight, std::nullopt, "conv2d: weight");
    if (!qc::is_float(c.weight.values.dtype()))
      throw InputError("conv2d: integer weights need their parameters: pass qconform.Weights(values, scale=...)");
    c.weight.shape = c.weight.values.shape();
  }
  c.layout = enum_arg<qc::ConvLayout>(layout, "layout");
  if (stride.size() != 2 || padding.size() != 4 || dilation.size() != 2)
    throw InputError("conv2d: stride (h, w), padding (top, left, bottom, right), dilation (h, w)");
  c.geometry = qc::Conv2dGeometry{stride[0],  stride[1],   padding[0],  padding[1], padding[2],
                                  padding[3], dilation[0], dilation[1], groups};
  c.bias = optional_tensor(bias, std::nullopt, "conv2d: bias");
  if (c.bias && !qc::is_float(c.bias->dtype())) throw InputError("conv2d: the bias is a float tensor");
  c.out = dtype_arg(dtype, "conv2d: dtype");
  if (!qc::is_float(c.out)) throw InputError("conv2d: dtype must be a float format");
  (void)qc::resolve_conv2d(c.input.shape(), c.layout, qc::logical_shape(c.weight), c.geometry);
  return c;
}

}  // namespace

void bind_oracle(py::module_& m) {
  bind_enum<qc::Granularity>(m, "Granularity", "Per tensor, per axis, or blocked parameters.");
  bind_enum<qc::WeightLayout>(m, "WeightLayout", "A GEMM's weights as [K, N] or [N, K].");
  bind_enum<qc::ConvLayout>(m, "ConvLayout", "NCHW or NHWC.");
  bind_enum<qc::ConvPadding>(m, "ConvPadding", "What a padded convolution tap holds.");
  bind_enum<qc::OutputKind>(m, "OutputKind", "The output stage of qgemm/qconv2d.");
  bind_enum<qc::ActivationQuantization>(m, "ActivationQuantization",
                                        "Static or dynamic (DRQ) activation quantization.");
  bind_enum<qc::NibbleOrder>(m, "NibbleOrder", "Which nibble holds the first of two int4 values.");
  bind_enum<qc::OddLength>(m, "OddLength", "An odd count of int4 values.");
  bind_enum<qc::OutOfRange>(m, "OutOfRange", "Values outside the 4-bit range.");

  py::class_<qc::QuantParams>(m, "QuantParams", "Scales and zero points: per tensor, per axis or blocked.")
      .def(py::init([](const py::handle& scale, const py::handle& zero_point, const py::handle& axis,
                       std::int64_t block_size, const py::handle& scale_dtype) {
             qc::QuantParams p;
             p.scale_dtype = dtype_arg(scale_dtype, "QuantParams: scale_dtype");
             p.scales = rounded_scales(scale, p.scale_dtype, "QuantParams: scale");
             if (!zero_point.is_none()) p.zero_points = integers(zero_point, "QuantParams: zero_point");
             if (p.zero_points.size() == 1 && p.scales.size() > 1)
               p.zero_points.assign(p.scales.size(), p.zero_points[0]);
             if (!axis.is_none()) p.axis = axis.cast<int>();
             p.block_size = block_size;
             return p;
           }),
           py::arg("scale"), py::arg("zero_point") = py::none(), py::arg("axis") = py::none(),
           py::arg("block_size") = 0, py::arg("scale_dtype") = "f32")
      .def_readonly("scales", &qc::QuantParams::scales)
      .def_readonly("zero_points", &qc::QuantParams::zero_points)
      .def_readonly("axis", &qc::QuantParams::axis)
      .def_readonly("block_size", &qc::QuantParams::block_size)
      .def_readonly("scale_dtype", &qc::QuantParams::scale_dtype)
      .def_property_readonly("granularity", &qc::QuantParams::granularity)
      .def(
          "element_scales",
          [](const qc::QuantParams& p, const py::handle& shape) { return element_scales(p, shape_arg(shape)); },
          py::arg("shape"), "The scale of every element of a tensor of this shape (float64, exact).")
      .def(
          "element_zero_points",
          [](const qc::QuantParams& p, const py::handle& shape) { return element_zero_points(p, shape_arg(shape)); },
          py::arg("shape"), "The zero point of every element of a tensor of this shape (int64).")
      .def(
          "validate",
          [](const qc::QuantParams& p, const py::handle& shape, const py::handle& dtype) {
            qc::validate(p, shape_arg(shape), dtype_arg(dtype, "dtype"), "QuantParams");
          },
          py::arg("shape"), py::arg("dtype"), "Raises InputError when the parameters do not fit the shape and format.")
      .def("__repr__", [](const qc::QuantParams& p) {
        return "QuantParams(" + std::string(qc::name(p.granularity())) + ", " + std::to_string(p.scales.size()) +
               " scale(s) in " + std::string(qc::name(p.scale_dtype)) + ")";
      });

  py::class_<qc::Int4Packing>(m, "Int4Packing", "How 4-bit values pack into bytes (oracles/int4.hpp).")
      .def(py::init([](const py::handle& nibbles, std::optional<int> axis, const py::handle& odd,
                       const py::handle& out_of_range) {
             qc::Int4Packing p;
             p.nibbles = enum_arg<qc::NibbleOrder>(nibbles, "nibbles");
             p.axis = axis;
             p.odd = enum_arg<qc::OddLength>(odd, "odd");
             p.out_of_range = enum_arg<qc::OutOfRange>(out_of_range, "out_of_range");
             return p;
           }),
           py::arg("nibbles") = "low_first", py::arg("axis") = py::none(), py::arg("odd") = "pad",
           py::arg("out_of_range") = "reject")
      .def_static("onnx", &qc::onnx_int4_packing)
      .def_static("ort", &qc::ort_int4_packing)
      .def_static("migraphx", &qc::migraphx_int4_packing, py::arg("axis") = -1)
      .def_static("torchao", &qc::torchao_uint4_packing)
      .def_readonly("nibbles", &qc::Int4Packing::nibbles)
      .def_readonly("axis", &qc::Int4Packing::axis)
      .def_readonly("odd", &qc::Int4Packing::odd)
      .def_readonly("out_of_range", &qc::Int4Packing::out_of_range)
      .def("__eq__", [](const qc::Int4Packing& a, const qc::Int4Packing& b) { return a == b; });

  py::class_<qc::ActivationOperand>(m, "Activation",
                                    "The activation operand of qgemm/qconv2d: float values quantized by the path "
                                    "(static parameters, or dynamic with the policy's qparams rule), or integer "
                                    "values already quantized.")
      .def(py::init(&make_activation), py::arg("values"), py::arg("scale") = py::none(), py::arg("zero_point") = 0,
           py::arg("format") = "u8", py::arg("axis") = py::none(), py::arg("block_size") = 0,
           py::arg("scale_dtype") = "f32", py::arg("quantize") = "static", py::arg("dtype") = py::none())
      .def_property_readonly("values",
                             [](py::object self) { return view(self.cast<qc::ActivationOperand&>().values, self); })
      .def_property_readonly("dtype", [](const qc::ActivationOperand& a) { return a.values.dtype(); })
      .def_readonly("format", &qc::ActivationOperand::format)
      .def_readonly("params", &qc::ActivationOperand::params)
      .def_property_readonly("quantize",
                             [](const qc::ActivationOperand& a) { return std::string(qc::name(a.quantization)); })
      .def_readonly("rule", &qc::ActivationOperand::rule);

  py::class_<qc::QWeights>(m, "Weights",
                           "The weights of qgemm/qconv2d/weight_only_gemm: integer values (one per element), int4 "
                           "values packed with `packing`, or float values quantized by the path.")
      .def(py::init(&make_weights), py::arg("values"), py::arg("scale"), py::arg("zero_point") = 0,
           py::arg("format") = py::none(), py::arg("axis") = py::none(), py::arg("block_size") = 0,
           py::arg("scale_dtype") = "f32", py::arg("packing") = py::none(), py::arg("dtype") = py::none())
      .def_static(
          "from_packed",
          [](const py::handle& packed, const py::handle& shape, const py::handle& dtype, const py::handle& packing,
             const py::handle& scale, const py::handle& zero_point, const py::handle& axis, std::int64_t block_size,
             const py::handle& scale_dtype) {
            qc::QWeights w;
            w.format = nibble_type(dtype, "Weights.from_packed: dtype");
            w.packing = packing_arg(packing);
            w.shape = shape_arg(shape);
            w.values = to_tensor(packed, DType::u8, "Weights.from_packed: packed");
            const qc::Tensor logical = qc::unpack_int4(w.values, w.format, w.shape, *w.packing);  // checks the size
            w.params = quant_params(scale, zero_point, axis, block_size, scale_dtype, logical.shape(), w.format,
                                    "Weights.from_packed");
            return w;
          },
          py::arg("packed"), py::arg("shape"), py::arg("dtype") = "i4", py::arg("packing") = "onnx",
          py::arg("scale") = 1.0, py::arg("zero_point") = 0, py::arg("axis") = py::none(), py::arg("block_size") = 0,
          py::arg("scale_dtype") = "f32", "Weights from int4 values already packed into bytes.")
      .def_property_readonly(
          "values", [](py::object self) { return view(self.cast<qc::QWeights&>().values, self); },
          "The stored values: packed bytes (uint8) when packed.")
      .def(
          "unpacked",
          [](const qc::QWeights& w) {
            if (!w.packing) return to_numpy(qc::Tensor(w.values));
            return to_numpy(qc::unpack_int4(w.values, w.format, w.shape, *w.packing));
          },
          "The logical values, one per element.")
      .def_property_readonly("shape", [](const qc::QWeights& w) { return w.shape; })
      .def_readonly("format", &qc::QWeights::format)
      .def_readonly("packing", &qc::QWeights::packing)
      .def_readonly("params", &qc::QWeights::params);

  py::class_<qc::OutputStage>(m, "Output", "The output stage of qgemm/qconv2d.")
      .def_static(
          "int32", [] { return qc::OutputStage{}; }, "The int32 accumulators (+ i32 bias): MatMulInteger.")
      .def_static(
          "dequantized",
          [](const py::handle& dtype) {
            qc::OutputStage s;
            s.kind = qc::OutputKind::dequantized;
            s.format = dtype_arg(dtype, "Output: dtype");
            if (!qc::is_float(s.format)) throw InputError("Output: a dequantized output needs a float format");
            return s;
          },
          py::arg("dtype") = "f32", "The real value rounded into a float format.")
      .def_static("requantized", &requantized_output, py::arg("dtype") = "i8", py::arg("scale") = 1.0,
                  py::arg("zero_point") = 0, py::arg("activation") = "none",
                  "Requantized to an integer format with a fused activation (QLinearMatMul / QLinearConv).")
      .def_readonly("kind", &qc::OutputStage::kind)
      .def_readonly("dtype", &qc::OutputStage::format)
      .def_readonly("scale", &qc::OutputStage::scale)
      .def_readonly("zero_point", &qc::OutputStage::zero_point)
      .def_property_readonly("clamp", [](const qc::OutputStage& s) {
        return s.clamp ? py::object(py::make_tuple(s.clamp->lo, s.clamp->hi)) : py::object(py::none());
      });

  // ---- Functions ------------------------------------------------------------------------------
  const char* labels_doc =
      "\nWith labels=True, also the labels (a numpy array of 'clear', 'near_tie', 'tie', 'saturated', 'special'; "
      "labels='codes' gives them as uint8 codes, the values of qconform.Label, one byte an element); "
      "with exact=True ('fraction') or 'str', also the exact values (an object array of fractions.Fraction or exact "
      "text). The result is then a tuple (values[, labels][, exact]).";
  m.def("quantize", &quantize, py::arg("x"), py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "i8",
        py::arg("spec") = "onnx", py::arg("axis") = py::none(), py::arg("block_size") = 0,
        py::arg("scale_dtype") = "f32", py::arg("input_dtype") = py::none(), py::arg("labels") = false,
        py::arg("exact") = false, py::arg("saturate") = true,
        (std::string("QuantizeLinear under a policy, exactly: float x -> integers of `dtype`, or float8 codes "
                     "(dtype f8e4m3fn/f8e5m2, as uint8 bits; zero_point 0; `saturate` is ONNX's attribute). Scales "
                     "are rounded into scale_dtype; the exact value is what the policy hands to its final rounding "
                     "(x / s for float8).") +
         labels_doc)
            .c_str());
  m.def("sweep_quantize", &sweep_quantize, py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "i8",
        py::arg("spec") = "onnx", py::arg("input_dtype") = "f32", py::arg("scale_dtype") = "f32",
        py::arg("vs") = py::none(), py::arg("threads") = 0, py::arg("max_examples") = 10,
        "Quantize every value of the float format input_dtype (f32: all 2^32 bit patterns), streamed on every core, "
        "with one scale and zero point. Returns a dict: inputs, labels (counts), open, slow_path_elements, "
        "output_range, digest (docs/oracle.md) and, with vs=SPEC, vs = {spec, differ, first: [{bits, x, q, q_vs, "
        "labels}]}: the inputs on which the two specs differ.");
  m.def("dequantize", &dequantize, py::arg("q"), py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "f32",
        py::arg("spec") = "onnx", py::arg("axis") = py::none(), py::arg("block_size") = 0,
        py::arg("scale_dtype") = "f32", py::arg("input_dtype") = py::none(), py::arg("labels") = false,
        py::arg("exact") = false,
        (std::string("DequantizeLinear under a policy, exactly: integers q -> floats of `dtype` (bf16 as uint16 "
                     "bits), or float8 codes (input_dtype f8e4m3fn/f8e5m2, uint8 bits; zero_point 0). The exact value "
                     "is (q - zp) * s.") +
         labels_doc)
            .c_str());
  m.def(
      "mx_quantize",
      [](const py::handle& x, const std::string& format, int axis, std::int64_t block_size,
         const std::string& scale_rule, const std::string& rounding, const py::handle& global_scale, bool codes) {
        const qc::MxQuantizeOp op =
            make_mx_quantize_op(x, format, axis, block_size, scale_rule, rounding, global_scale);
        qc::MxQuantizeResult r;
        {
          py::gil_scoped_release release;
          r = qc::mx_quantize(op);
        }
        if (!codes) return py::object(to_numpy(std::move(r.y)));
        return py::object(py::make_tuple(to_numpy(std::move(r.y)), to_numpy(std::move(r.elements)),
                                         to_numpy(std::move(r.scales)),
                                         r.global_scale ? py::object(py::float_(*r.global_scale)) : py::none()));
      },
      py::arg("x"), py::arg("format"), py::arg("axis") = -1, py::arg("block_size") = 0, py::arg("scale_rule") = "floor",
      py::arg("rounding") = "rne", py::arg("global_scale") = py::none(), py::arg("codes") = false,
      "An OCP MX v1.0 or NVFP4 quantize-dequantize (docs/numerics.md \"Block-scaled formats\"): each element's "
      "value in the format, as f32. format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, nvfp4; "
      "blocks of block_size (default 32, NVFP4 16) along axis; scale_rule floor (OCP), ceil, even, rceil; "
      "rounding rne (OCP) or rna (microxcaling). With codes=True: (values, element codes, scale codes, global "
      "scale).");
  m.def(
      "mx_dequantize",
      [](const py::handle& elements, const py::handle& scales, const std::string& format, int axis,
         std::int64_t block_size, const py::handle& global_scale) {
        const qc::MxDequantizeOp op = make_mx_dequantize_op(elements, scales, format, axis, block_size, global_scale);
        return to_numpy(qc::mx_dequantize(op));
      },
      py::arg("elements"), py::arg("scales"), py::arg("format"), py::arg("axis") = -1, py::arg("block_size") = 0,
      py::arg("global_scale") = py::none(),
      "The f32 values of MX/NVFP4 codes: element codes (uint8, one per element) times their block's scale code "
      "(uint8: E8M0, 0xFF NaN; NVFP4: E4M3 times global_scale), rounded once.");
  m.def(
      "mx_gemm",
      [](const py::handle& a, const py::handle& b, const std::string& a_format, const py::handle& b_format,
         const py::handle& b_layout, std::int64_t block_size, const std::string& scale_rule,
         const std::string& rounding, const py::handle& a_global_scale, const py::handle& b_global_scale,
         const py::handle& bias, const py::handle& dtype, const py::handle& labels, const py::handle& exact) {
        const qc::MxGemmOp op = make_mx_gemm_op(a, b, a_format, b_format, b_layout, block_size, scale_rule, rounding,
                                                a_global_scale, b_global_scale, bias, dtype);
        const ExactForm form = exact_arg(exact);
        qc::MxGemmResult r;
        {
          py::gil_scoped_release release;
          r = qc::mx_gemm(op);
        }
        auto shared = std::make_shared<qc::MxGemmResult>(std::move(r));
        return oracle_result(std::move(shared->y), &shared->labels, label_form(labels), form, [&](std::int64_t i) {
          const auto k = static_cast<std::size_t>(i);
          return shared->nan[k] ? exact_value(qc::ExactFloat::nan(), form) : exact_value(shared->exact[k], form);
        });
      },
      py::arg("a"), py::arg("b"), py::arg("a_format"), py::arg("b_format") = py::none(), py::arg("b_layout") = "k_by_n",
      py::arg("block_size") = 0, py::arg("scale_rule") = "floor", py::arg("rounding") = "rne",
      py::arg("a_global_scale") = py::none(), py::arg("b_global_scale") = py::none(), py::arg("bias") = py::none(),
      py::arg("dtype") = "f32", py::arg("labels") = false, py::arg("exact") = false,
      (std::string("The block-scaled GEMM (docs/numerics.md \"Block-scaled GEMM\"): float A [M, K] and B [K, N] "
                   "(or [N, K] with b_layout='n_by_k') quantized as mx_quantize does into a_format and b_format "
                   "(default: a_format) in blocks of block_size (default 32, 16 with NVFP4) along K, every product "
                   "summed exactly with the bias, rounded once into dtype (f32, f16, bf16). A row or column with a "
                   "NaN scale gives NaN.") +
       labels_doc)
          .c_str());
  m.def(
      "qadd",
      [](const py::handle& a, double a_scale, std::int64_t a_zero_point, const py::handle& b, double b_scale,
         std::int64_t b_zero_point, double scale, std::int64_t zero_point, const py::handle& dtype,
         const py::handle& policy, const py::handle& a_dtype, const py::handle& b_dtype, const py::handle& labels_arg,
         const py::handle& exact) {
        const qc::QAddOp op = make_qadd_op(a, a_scale, a_zero_point, b, b_scale, b_zero_point, scale, zero_point, dtype,
                                           a_dtype, b_dtype);
        const LabelForm labels = label_form(labels_arg);
        const qc::Spec spec = spec_arg(policy);
        const ExactForm form = exact_arg(exact);
        qc::QAddResult r;
        {
          py::gil_scoped_release release;
          r = qc::qadd(op.a, op.b, qc::qadd_params(op), op.output.format, spec.add);
        }
        return oracle_result(std::move(r.q), &r.labels, labels, form,
                             [&](std::int64_t i) { return exact_value(r.ideal[static_cast<std::size_t>(i)], form); });
      },
      py::arg("a"), py::arg("a_scale"), py::arg("a_zero_point"), py::arg("b"), py::arg("b_scale"),
      py::arg("b_zero_point"), py::arg("scale"), py::arg("zero_point") = 0, py::arg("dtype") = "i8",
      py::arg("spec") = "onnx", py::arg("a_dtype") = py::none(), py::arg("b_dtype") = py::none(),
      py::arg("labels") = false, py::arg("exact") = false,
      (std::string("The quantized elementwise add (QLinearAdd) under the spec's add scheme (ideal, ort_mlas_avx2, "
                   "xnnpack_vadd; docs/numerics.md): saturate(round((sA(a - zA) + sB(b - zB)) / sC) + zC). a is "
                   "i8/u8, b i8/u8/i32 broadcast over a (numpy's rule on b's trailing dimensions); a_dtype, b_dtype "
                   "name the formats of plain integer lists. The exact value is "
                   "(sA(a - zA) + sB(b - zB)) / sC + zC.") +
       labels_doc)
          .c_str());
  m.def(
      "requantize",
      [](const py::handle& acc, const py::handle& input_scale, const py::handle& weight_scale,
         const py::handle& output_scale, const py::handle& zero_point, const py::handle& dtype,
         const py::handle& policy, const py::handle& axis, const py::handle& scale_dtype, const py::handle& input_dtype,
         const py::handle& labels, const py::handle& exact) {
        const qc::RequantizeOp op = make_requantize(acc, input_scale, weight_scale, output_scale, zero_point, dtype,
                                                    axis, scale_dtype, input_dtype, "requantize");
        return requantize(op, policy, labels, exact);
      },
      py::arg("acc"), py::arg("input_scale"), py::arg("weight_scale"), py::arg("output_scale"),
      py::arg("zero_point") = 0, py::arg("dtype") = "i8", py::arg("spec") = "onnx", py::arg("axis") = py::none(),
      py::arg("scale_dtype") = "f32", py::arg("input_dtype") = "i32", py::arg("labels") = false,
      py::arg("exact") = false,
      (std::string("Requantize int32 accumulators under a policy's scheme, exactly. The exact value is "
                   "acc * s_in * s_w / s_out + zp.") +
       labels_doc)
          .c_str());
  m.def(
      "qgemm",
      [](const qc::ActivationOperand& a, const qc::QWeights& b, const py::handle& bias, const py::handle& output,
         const py::handle& policy, const py::handle& b_layout, const py::handle& labels, const py::handle& exact) {
        qc::OpRequest op = make_qgemm(a, b, bias, output, b_layout);
        const qc::Spec spec = spec_arg(policy);
        resolve_dynamic_rules(op, spec);
        const ExactForm form = exact_arg(exact);
        const auto& g = std::get<qc::QGemmOp>(op);
        qc::QLinearResult r;
        {
          py::gil_scoped_release release;
          r = qc::qgemm(g, qc::qgemm_policy(spec, g.a.values.dtype(), qc::LinearOp::gemm));
        }
        return linear_result(std::move(r), label_form(labels), form);
      },
      py::arg("a"), py::arg("b"), py::arg("bias") = py::none(), py::arg("output") = py::none(),
      py::arg("spec") = "onnx", py::arg("b_layout") = "k_by_n", py::arg("labels") = false, py::arg("exact") = false,
      (std::string("The quantized GEMM path exactly: quantize A, integer accumulate with B, + bias, then the "
                   "output stage (int32 by default). The exact value is the real result before the output's "
                   "rounding.") +
       labels_doc)
          .c_str());
  m.def(
      "qconv2d",
      [](const qc::ActivationOperand& input, const qc::QWeights& weight, const py::handle& bias,
         const py::handle& output, const py::handle& policy, const py::handle& layout,
         const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
         const std::vector<std::int64_t>& dilation, std::int64_t groups, const py::handle& padding_value,
         const py::handle& labels, const py::handle& exact) {
        qc::OpRequest op =
            make_qconv2d(input, weight, bias, output, layout, stride, padding, dilation, groups, padding_value);
        const qc::Spec spec = spec_arg(policy);
        resolve_dynamic_rules(op, spec);
        const ExactForm form = exact_arg(exact);
        const auto& c = std::get<qc::QConv2dOp>(op);
        qc::QLinearResult r;
        {
          py::gil_scoped_release release;
          r = qc::qconv2d(c, qc::qgemm_policy(spec, c.input.values.dtype(), qc::LinearOp::conv));
        }
        return linear_result(std::move(r), label_form(labels), form);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("output") = py::none(),
      py::arg("spec") = "onnx", py::arg("layout") = "nchw", py::arg("stride") = std::vector<std::int64_t>{1, 1},
      py::arg("padding") = std::vector<std::int64_t>{0, 0, 0, 0}, py::arg("dilation") = std::vector<std::int64_t>{1, 1},
      py::arg("groups") = 1, py::arg("padding_value") = "real_zero", py::arg("labels") = false,
      py::arg("exact") = false,
      (std::string("The quantized 2-D convolution path exactly (weights OIHW; padding top, left, bottom, right).") +
       labels_doc)
          .c_str());
  m.def(
      "weight_only_gemm",
      [](const py::handle& a, const qc::QWeights& b, const py::handle& bias, const py::handle& dtype,
         const py::handle& policy, const py::handle& b_layout, const py::handle& a_dtype, const py::handle& labels,
         const py::handle& exact) {
        const qc::WeightOnlyGemmOp op = make_weight_only(a, b, bias, dtype, b_layout, a_dtype);
        const qc::Spec spec = spec_arg(policy);
        const ExactForm form = exact_arg(exact);
        qc::WeightOnlyResult r;
        {
          py::gil_scoped_release release;
          r = qc::weight_only_gemm(op, qc::weight_only_policy(spec));
        }
        auto shared = std::make_shared<qc::WeightOnlyResult>(std::move(r));
        return oracle_result(std::move(shared->y), &shared->labels, label_form(labels), form, [&](std::int64_t i) {
          return exact_value(shared->exact[static_cast<std::size_t>(i)], form);
        });
      },
      py::arg("a"), py::arg("b"), py::arg("bias") = py::none(), py::arg("dtype") = "f32", py::arg("spec") = "onnx",
      py::arg("b_layout") = "k_by_n", py::arg("a_dtype") = py::none(), py::arg("labels") = false,
      py::arg("exact") = false,
      (std::string("Weight-only GEMM: float activations times exactly dequantized weights; the exact real result "
                   "correctly rounded into `dtype`.") +
       labels_doc)
          .c_str());
  m.def(
      "conv2d",
      [](const py::handle& input, const py::handle& weight, const py::handle& bias, const py::handle& dtype,
         const py::handle& policy, const py::handle& layout, const std::vector<std::int64_t>& stride,
         const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation, std::int64_t groups,
         const py::handle& labels, const py::handle& exact) {
        const qc::Conv2dOp op = make_conv2d(input, weight, bias, dtype, layout, stride, padding, dilation, groups);
        const qc::Spec spec = spec_arg(policy);
        const ExactForm form = exact_arg(exact);
        qc::FloatConv2dResult r;
        {
          py::gil_scoped_release release;
          r = qc::conv2d(op, qc::weight_only_policy(spec));
        }
        auto shared = std::make_shared<qc::FloatConv2dResult>(std::move(r));
        return oracle_result(std::move(shared->y), &shared->labels, label_form(labels), form, [&](std::int64_t i) {
          return exact_value(shared->exact[static_cast<std::size_t>(i)], form);
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("dtype") = "f32",
      py::arg("spec") = "onnx", py::arg("layout") = "nchw", py::arg("stride") = std::vector<std::int64_t>{1, 1},
      py::arg("padding") = std::vector<std::int64_t>{0, 0, 0, 0}, py::arg("dilation") = std::vector<std::int64_t>{1, 1},
      py::arg("groups") = 1, py::arg("labels") = false, py::arg("exact") = false,
      (std::string("2-D convolution with a float input: float weights (an array, used exactly) or integer Weights "
                   "dequantized with their parameters (weight-only); the exact sum correctly rounded into `dtype`.") +
       labels_doc)
          .c_str());
  m.def(
      "pack_int4",
      [](const py::handle& values, const py::handle& dtype, const py::handle& packing) {
        const qc::Tensor v = integer_values(values, "pack_int4: values");
        const DType t =
            dtype.is_none() ? (v.dtype() == DType::u8 ? DType::u4 : DType::i4) : nibble_type(dtype, "pack_int4: dtype");
        return to_numpy(qc::pack_int4(v, t, packing_arg(packing)));
      },
      py::arg("values"), py::arg("dtype") = py::none(), py::arg("packing") = "onnx",
      "4-bit values (i4 [-8, 7] or u4 [0, 15]; default by the array: uint8 -> u4, else i4) packed two per byte "
      "(uint8) under a packing: 'onnx' (element 0 in the low nibble, pad an odd count), 'ort' (clip), 'torchao' "
      "(high nibble first), 'migraphx' (pairs along the last axis), or an Int4Packing.");
  m.def(
      "unpack_int4",
      [](const py::handle& packed, const py::handle& shape, const py::handle& dtype, const py::handle& packing) {
        const qc::Tensor p = to_tensor(packed, DType::u8, "unpack_int4: packed");
        return to_numpy(
            qc::unpack_int4(p, nibble_type(dtype, "unpack_int4: dtype"), shape_arg(shape), packing_arg(packing)));
      },
      py::arg("packed"), py::arg("shape"), py::arg("dtype") = "i4", py::arg("packing") = "onnx",
      "Bytes packed by pack_int4 back to one value per element (int8 for i4, sign-extended; uint8 for u4).");

  py::class_<qc::ChosenQParams>(m, "ChosenQParams", "A scale and zero point chosen from a range.")
      .def_readonly("scale", &qc::ChosenQParams::scale)
      .def_readonly("scale_dtype", &qc::ChosenQParams::scale_dtype)
      .def_readonly("zero_point", &qc::ChosenQParams::zero_point)
      .def_readonly("qmin", &qc::ChosenQParams::qmin)
      .def_readonly("qmax", &qc::ChosenQParams::qmax)
      .def_readonly("quantize_multiplier", &qc::ChosenQParams::quantize_multiplier)
      .def_property_readonly(
          "exact_scale",
          [](const qc::ChosenQParams& c) { return exact_value(qc::Rational(c.scale), ExactForm::fraction); })
      .def("params", &qc::to_quant_params, "As per-tensor QuantParams.")
      .def("__repr__", [](const qc::ChosenQParams& c) {
        return "ChosenQParams(scale=" + py::repr(py::float_(c.scale)).cast<std::string>() +
               ", zero_point=" + std::to_string(c.zero_point) + ")";
      });
  auto rule_arg = [](const py::handle& h) {
    if (py::isinstance<qc::QParamsRule>(h)) return h.cast<qc::QParamsRule>();
    const std::string s = py::str(h).cast<std::string>();
    auto r = qc::find_qparams_preset(s);
    if (!r) throw InputError("unknown parameter-choice rule '" + s + "'");
    return *r;
  };
  m.def(
      "choose_qparams",
      [rule_arg](double min, double max, const py::handle& dtype, const py::handle& rule) {
        if (static_cast<double>(static_cast<float>(min)) != min || static_cast<double>(static_cast<float>(max)) != max)
          throw InputError("choose_qparams: min and max are f32 values (the observed range of a float tensor)");
        return qc::choose_qparams(static_cast<float>(min), static_cast<float>(max), dtype_arg(dtype, "dtype"),
                                  rule_arg(rule));
      },
      py::arg("min"), py::arg("max"), py::arg("dtype") = "u8", py::arg("rule") = "onnx-dynamic-quantize-linear",
      "A scale and zero point for the range [min, max] exactly as an implementation's code chooses them "
      "(rule: a name in qconform.qparams_presets or a QParamsRule).");
  m.def(
      "dynamic_qparams",
      [rule_arg](const py::handle& x, const py::handle& dtype, const py::handle& rule, std::optional<int> axis) {
        const qc::Tensor t = to_tensor(x, std::nullopt, "dynamic_qparams: x");
        return qc::choose_dynamic_qparams(t, dtype_arg(dtype, "dtype"), rule_arg(rule), axis).params;
      },
      py::arg("x"), py::arg("dtype") = "u8", py::arg("rule") = "onnx-dynamic-quantize-linear",
      py::arg("axis") = py::none(),
      "Dynamic quantization's parameters for an array: per tensor, or one per index along `axis`.");
}

// The op constructors share the operand checks above.
qc::QGemmOp make_qgemm_op(const qc::ActivationOperand& a, const qc::QWeights& b, const py::handle& bias,
                          const py::handle& output, const py::handle& b_layout) {
  return make_qgemm(a, b, bias, output, b_layout);
}
qc::QConv2dOp make_qconv2d_op(const qc::ActivationOperand& input, const qc::QWeights& weight, const py::handle& bias,
                              const py::handle& output, const py::handle& layout,
                              const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                              const std::vector<std::int64_t>& dilation, std::int64_t groups,
                              const py::handle& padding_value) {
  return make_qconv2d(input, weight, bias, output, layout, stride, padding, dilation, groups, padding_value);
}
qc::QAddOp make_qadd_op(const py::handle& a, double a_scale, std::int64_t a_zero_point, const py::handle& b,
                        double b_scale, std::int64_t b_zero_point, double scale, std::int64_t zero_point,
                        const py::handle& dtype, const py::handle& a_dtype, const py::handle& b_dtype) {
  qc::QAddOp op;
  op.a = to_tensor(a, optional_dtype_arg(a_dtype, "qadd: a_dtype"), "qadd: a");
  op.b = to_tensor(b, optional_dtype_arg(b_dtype, "qadd: b_dtype"), "qadd: b");
  const auto f32 = [](double s) { return static_cast<double>(static_cast<float>(s)); };  // scales are f32
  op.a_params.scales = {f32(a_scale)};
  op.a_params.zero_points = {a_zero_point};
  op.b_params.scales = {f32(b_scale)};
  op.b_params.zero_points = {b_zero_point};
  op.output.kind = qc::OutputKind::requantized;
  op.output.format = dtype_arg(dtype, "qadd: dtype");
  op.output.scale = f32(scale);
  op.output.zero_point = zero_point;
  // Every check of the oracle (formats, zero points, scales, broadcasting) on one element.
  const std::vector<std::int64_t> bi = qc::qadd_broadcast_index(op.a.shape(), op.b.shape());
  if (op.a.size() > 0) {
    qc::Tensor a1(op.a.dtype(), {1}), b1(op.b.dtype(), {1});
    a1.set_int(0, op.a.get_int(0));
    b1.set_int(0, op.b.get_int(bi[0]));
    (void)qc::qadd(a1, b1, qc::qadd_params(op), op.output.format, qc::AddPolicy{});
  }
  return op;
}

template <class E>
E mx_enum(const std::string& v, const char* what) {
  if (const auto e = qc::table_parse<E>(v)) return *e;
  throw InputError(std::string(what) + ": unknown value '" + v + "' (" + qc::table_names<E>() + ")");
}

qc::MxBlocking mx_blocking(const std::string& format, int axis, std::int64_t block_size, const py::handle& global_scale,
                           const std::string& where) {
  qc::MxBlocking b;
  b.format = mx_enum<qc::MxFormat>(format, (where + ": format").c_str());
  b.axis = axis;
  b.block_size = block_size > 0 ? block_size : b.format == qc::MxFormat::nvfp4 ? 16 : 32;
  if (!global_scale.is_none()) b.global_scale = global_scale.cast<double>();
  return b;
}

qc::MxQuantizeOp make_mx_quantize_op(const py::handle& x, const std::string& format, int axis, std::int64_t block_size,
                                     const std::string& scale_rule, const std::string& rounding,
                                     const py::handle& global_scale) {
  qc::MxQuantizeOp op;
  op.x = to_tensor(x, std::nullopt, "mx_quantize: x");
  op.blocking = mx_blocking(format, axis, block_size, global_scale, "mx_quantize");
  op.scale_rule = mx_enum<qc::MxScaleRule>(scale_rule, "mx_quantize: scale_rule");
  const auto m = qc::parse_rounding_mode(rounding);
  if (!m) throw InputError("mx_quantize: rounding: unknown rounding mode '" + rounding + "'");
  op.element_rounding = *m;
  (void)qc::mx_scale_shape(op.blocking, op.x.shape());  // checks the axis and the global scale
  return op;
}

qc::MxDequantizeOp make_mx_dequantize_op(const py::handle& elements, const py::handle& scales,
                                         const std::string& format, int axis, std::int64_t block_size,
                                         const py::handle& global_scale) {
  qc::MxDequantizeOp op;
  op.elements = to_tensor(elements, DType::u8, "mx_dequantize: elements");
  op.scales = to_tensor(scales, DType::u8, "mx_dequantize: scales");
  op.blocking = mx_blocking(format, axis, block_size, global_scale, "mx_dequantize");
  return op;
}

qc::MxGemmOp make_mx_gemm_op(const py::handle& a, const py::handle& b, const std::string& a_format,
                             const py::handle& b_format, const py::handle& b_layout, std::int64_t block_size,
                             const std::string& scale_rule, const std::string& rounding,
                             const py::handle& a_global_scale, const py::handle& b_global_scale, const py::handle& bias,
                             const py::handle& dtype) {
  qc::MxGemmOp op;
  op.a.values = to_tensor(a, std::nullopt, "mx_gemm: a");
  op.b.values = to_tensor(b, std::nullopt, "mx_gemm: b");
  op.a.format = mx_enum<qc::MxFormat>(a_format, "mx_gemm: a_format");
  op.b.format =
      b_format.is_none() ? op.a.format : mx_enum<qc::MxFormat>(b_format.cast<std::string>(), "mx_gemm: b_format");
  if (!a_global_scale.is_none()) op.a.global_scale = a_global_scale.cast<double>();
  if (!b_global_scale.is_none()) op.b.global_scale = b_global_scale.cast<double>();
  op.b_layout = enum_arg<qc::WeightLayout>(b_layout, "b_layout");
  const bool nvfp4 = op.a.format == qc::MxFormat::nvfp4 || op.b.format == qc::MxFormat::nvfp4;
  op.block_size = block_size > 0 ? block_size : nvfp4 ? 16 : 32;
  op.scale_rule = mx_enum<qc::MxScaleRule>(scale_rule, "mx_gemm: scale_rule");
  const auto m = qc::parse_rounding_mode(rounding);
  if (!m) throw InputError("mx_gemm: rounding: unknown rounding mode '" + rounding + "'");
  op.element_rounding = *m;
  op.bias = optional_tensor(bias, std::nullopt, "mx_gemm: bias");
  op.out = dtype_arg(dtype, "mx_gemm: dtype");
  return op;
}

qc::WeightOnlyGemmOp make_weight_only_op(const py::handle& a, const qc::QWeights& b, const py::handle& bias,
                                         const py::handle& dtype, const py::handle& b_layout,
                                         const py::handle& a_dtype) {
  return make_weight_only(a, b, bias, dtype, b_layout, a_dtype);
}
qc::Conv2dOp make_conv2d_op(const py::handle& input, const py::handle& weight, const py::handle& bias,
                            const py::handle& dtype, const py::handle& layout, const std::vector<std::int64_t>& stride,
                            const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation,
                            std::int64_t groups) {
  return make_conv2d(input, weight, bias, dtype, layout, stride, padding, dilation, groups);
}
qc::RequantizeOp make_requantize_op(const py::handle& acc, const py::handle& input_scale,
                                    const py::handle& weight_scale, const py::handle& output_scale,
                                    const py::handle& zero_point, const py::handle& dtype, const py::handle& axis,
                                    const py::handle& scale_dtype, const py::handle& input_dtype) {
  return make_requantize(acc, input_scale, weight_scale, output_scale, zero_point, dtype, axis, scale_dtype,
                         input_dtype, "RequantizeOp");
}
py::array element_scales_of(const qc::QuantParams& p, const qc::Shape& shape) { return element_scales(p, shape); }
py::array element_zero_points_of(const qc::QuantParams& p, const qc::Shape& shape) {
  return element_zero_points(p, shape);
}

}  // namespace qcpy
