#include "oracles/conv2d.hpp"

#include "qconform/error.hpp"

#include <string>

namespace qc {

std::vector<Rational> conv2d_weight_values(const Conv2dOp& op, const WeightOnlyPolicy& policy) {
  const QWeights& w = op.weight;
  if (!w.packing && is_float(w.values.dtype())) {  // a float convolution: the weights as they are
    std::vector<Rational> v;
    for (std::int64_t i = 0; i < w.values.size(); ++i) v.push_back(exact_element(w.values, i));
    return v;
  }
  const QuantizedOperand qw = quantize_weights(w, policy.quantize);
  const Granularity g = qw.params.granularity();
  if (g != Granularity::per_tensor &&
      !(g == Granularity::per_axis && resolve_axis(*qw.params.axis, static_cast<int>(qw.q.shape().size())) == 0))
    throw InputError("conv2d: weight parameters are per tensor or per output channel (axis 0 of OIHW), got " +
                     std::string(name(g)));
  return dequantized_values(qw, policy.weight_format, policy.dequantize);
}

FloatConv2dResult conv2d(const Conv2dOp& op, const WeightOnlyPolicy& policy) {
  if (!is_float(op.input.dtype()))
    throw InputError("conv2d: the input must be a float tensor, got " + std::string(name(op.input.dtype())));
  if (!is_float(op.out)) throw InputError("conv2d: the output format must be a float format");
  const Conv2dShape cs = resolve_conv2d(op.input.shape(), op.layout, logical_shape(op.weight), op.geometry);
  std::vector<Rational> x;
  x.reserve(static_cast<std::size_t>(op.input.size()));
  for (std::int64_t i = 0; i < op.input.size(); ++i) x.push_back(exact_element(op.input, i));
  std::vector<Rational> bias;
  if (op.bias) {
    if (!is_float(op.bias->dtype()))
      throw InputError("conv2d: the bias must be a float tensor, got " + std::string(name(op.bias->dtype())));
    if (op.bias->rank() != 1 || op.bias->size() != cs.out_channels)
      throw InputError("conv2d: the bias must be [OC] = [" + std::to_string(cs.out_channels) + "], got " +
                       shape_str(op.bias->shape()));
    for (std::int64_t oc = 0; oc < cs.out_channels; ++oc) bias.push_back(exact_element(*op.bias, oc));
  }
  return float_conv2d_exact(cs, x, conv2d_weight_values(op, policy), bias, op.out);
}

}  // namespace qc
