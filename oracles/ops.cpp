#include "oracles/ops.hpp"

namespace qc {

std::string_view op_name(const OpRequest& op) {
  struct Visitor {
    std::string_view operator()(const QuantizeOp&) const { return "quantize"; }
    std::string_view operator()(const DequantizeOp&) const { return "dequantize"; }
    std::string_view operator()(const RequantizeOp&) const { return "requantize"; }
  };
  return std::visit(Visitor{}, op);
}

const Tensor& op_input(const OpRequest& op) {
  struct Visitor {
    const Tensor& operator()(const QuantizeOp& o) const { return o.x; }
    const Tensor& operator()(const DequantizeOp& o) const { return o.q; }
    const Tensor& operator()(const RequantizeOp& o) const { return o.acc; }
  };
  return std::visit(Visitor{}, op);
}

DType op_output_dtype(const OpRequest& op) {
  return std::visit([](const auto& o) { return o.out; }, op);
}

}  // namespace qc
