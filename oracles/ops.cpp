#include "oracles/ops.hpp"

namespace qc {

std::string_view op_name(const OpRequest& op) {
  struct Visitor {
    std::string_view operator()(const QuantizeOp&) const { return "quantize"; }
  };
  return std::visit(Visitor{}, op);
}

}  // namespace qc
