// A quantized ONNX model lowered to what qconform judges: its quantized computations as op
// requests, in graph order, with the float ops between them (docs/models.md).
//
// Every node becomes one step:
//  * QOperator nodes (QuantizeLinear, DequantizeLinear of an activation, QLinearConv, QLinearMatMul,
//    ConvInteger, MatMulInteger, com.microsoft QLinearAdd): the op request that computes them;
//  * the float compute nodes of a QDQ model (Conv, MatMul, Gemm, with their weights and bias
//    dequantized from constants; a MatMul's bias Add joins it): a float convolution whose exact sum is
//    rounded once into f32 (the ideal of a float kernel; a MatMul is the 1x1 convolution it equals);
//  * the float executor's ops (models/float_ops.hpp);
//  * a DequantizeLinear of a constant (weights, biases) and a Constant node are folded: their value
//    is computed once, under the spec, and is not a step.
// And each QDQ pattern that runtimes fuse into an integer kernel gets one more step, its fused
// reading: DQ -> Conv|MatMul|Gemm (+ bias) [-> Relu] -> Q as one qconv2d or qgemm with int32
// accumulation, the bias added to the accumulator and one requantize into Q's parameters, the Relu
// as the output's clamp (ONNX Runtime's QDQ selectors: onnxruntime/core/optimizer/
// qdq_transformer/selectors_actions/qdq_selectors.cc, ConvNodeGroupSelector, MatMulNodeGroupSelector,
// GemmNodeGroupSelector; the Relu: qdq_transformer/relu_quantizelinear.cc).
#pragma once

#include "models/onnx_model.hpp"
#include "oracles/presets.hpp"
#include "qconform/ops.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qc::onnx {

// The values a run of the model has computed so far, by name (constants included).
using Env = std::map<std::string, Value>;

// An op request made from the values it reads, and the shape its output takes in the model (a
// MatMul computed as a 1x1 convolution gives [M, N, 1, 1] for the model's [M, N]).
struct MadeOp {
  OpRequest op;
  Shape shape;
  int elem_type = 0;  // the ONNX element type of the output value
};

struct Step {
  enum class Kind : std::uint8_t {
    op,        // a node computed by an op request (a case)
    float_op,  // a node the float executor runs
    fused,     // the fused integer reading of a QDQ pattern, beside the nodes it stands for
  };
  Kind kind = Kind::op;
  std::string name;                        // unique: the node's label, or "<Conv|MatMul|Gemm node's label>.fused"
  std::string op_type;                     // the node's op_type; for a fused reading "fused <Conv|MatMul|Gemm>"
  int node = -1;                           // index into the graph's nodes (the Q node for a fused reading)
  std::vector<std::string> reads;          // the non-constant values it reads
  std::string writes;                      // the value it computes
  std::vector<std::string> covers;         // fused: the steps of the QDQ reading it replaces (in order)
  std::function<MadeOp(const Env&)> make;  // op and fused steps
};

struct Plan {
  std::string where;  // the model file, for messages
  Model model;
  Env constants;            // initializers, Constant nodes and folded dequantized constants
  std::vector<Step> steps;  // graph order; a fused step follows the last step it covers
  std::string format;       // "QDQ", "QOperator" or "QDQ+QOperator"
  bool has_fused_readings() const {
    for (const Step& s : steps)
      if (s.kind == Step::Kind::fused) return true;
    return false;
  }
};

// Lowers `model`. Constants are folded under `spec`. Throws InputError naming the model and the
// node: an op that is neither quantized, a QDQ compute node nor a float executor op (the message
// lists what is supported), a value that nothing provides (a missing initializer), a graph cycle,
// a quantized node whose scales or zero points are not constants, attributes qconform does not take.
Plan plan_model(Model model, const std::string& where, const Spec& spec);

// The op types plan_model takes, for messages and docs.
std::vector<std::string> supported_op_types();

}  // namespace qc::onnx
