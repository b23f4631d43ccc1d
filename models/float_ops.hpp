// The float executor: the ops between a model's quantized computations that only move, select or
// clamp values (Relu, Clip, MaxPool, Reshape, Flatten, Transpose, Concat, Identity), run exactly as
// ONNX defines them, in the tensor's own format (a QOperator model max-pools uint8 values, a QDQ
// model float ones). None of them rounds, so the executor is exact and the oracle's chain through a
// model is exact wherever its quantized computations are (docs/models.md "The float executor").
#pragma once

#include "models/onnx_model.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qc::onnx {

// The op types the executor runs, for messages and docs.
std::span<const std::string_view> float_op_types();
bool is_float_op(std::string_view op_type);

// Runs node `n` on its inputs (nullptr for an omitted optional input). Throws InputError naming
// `where` (the model and the node) for an attribute or a shape it does not take.
Value run_float_op(const Node& n, const std::vector<const Value*>& inputs, const std::string& where);

}  // namespace qc::onnx
