// Op requests: what a backend is asked to compute (inputs and parameters, never the expected
// answer). The oracle evaluates the same request under a numerics spec.
#pragma once

#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/qparams.hpp"
#include "oracles/requantize.hpp"
#include "oracles/tensor.hpp"
#include "oracles/weight_only.hpp"

#include <string_view>
#include <variant>

namespace qc {

// y = QuantizeLinear(x): float (or int32) x -> integer y.
struct QuantizeOp {
  Tensor x;
  QuantParams params;
  DType out = DType::i8;
};

// y = DequantizeLinear(q): integer q -> float y.
struct DequantizeOp {
  Tensor q;
  QuantParams params;
  DType out = DType::f32;
};

// y = requantize(acc): integer accumulators (scale s_in * s_w) -> integer y (scale s_out).
struct RequantizeOp {
  Tensor acc;
  RequantizeParams params;
  DType out = DType::i8;
};

// QGemmOp (qgemm.hpp) and QConv2dOp (qconv2d.hpp): the full quantized paths.
// WeightOnlyGemmOp (weight_only.hpp): float activations times dequantized weights.
using OpRequest = std::variant<QuantizeOp, DequantizeOp, RequantizeOp, QGemmOp, QConv2dOp, WeightOnlyGemmOp>;

std::string_view op_name(const OpRequest& op);
// The op's main input (the tensor whose elements the outputs correspond to).
const Tensor& op_input(const OpRequest& op);
DType op_output_dtype(const OpRequest& op);
// The shape of the op's output, from its operands' shapes and parameters alone (nothing is
// evaluated), so a case that takes another case's output can be checked when it is loaded.
Shape op_output_shape(const OpRequest& op);

}  // namespace qc
