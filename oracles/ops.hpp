// Op requests: what a backend is asked to compute (inputs and parameters, never the expected
// answer). The oracle evaluates the same request under a numerics spec.
#pragma once

#include "oracles/qparams.hpp"
#include "oracles/tensor.hpp"

#include <string_view>
#include <variant>

namespace qc {

// y = QuantizeLinear(x): float (or int32) x -> integer y.
struct QuantizeOp {
  Tensor x;
  QuantParams params;
  DType out = DType::i8;
};

using OpRequest = std::variant<QuantizeOp>;

std::string_view op_name(const OpRequest& op);

}  // namespace qc
