#include "oracles/ops.hpp"

namespace qc {

std::string_view op_name(const OpRequest& op) {
  struct Visitor {
    std::string_view operator()(const QuantizeOp&) const { return "quantize"; }
    std::string_view operator()(const DequantizeOp&) const { return "dequantize"; }
    std::string_view operator()(const RequantizeOp&) const { return "requantize"; }
    std::string_view operator()(const QGemmOp&) const { return "qgemm"; }
    std::string_view operator()(const QConv2dOp&) const { return "qconv2d"; }
    std::string_view operator()(const WeightOnlyGemmOp&) const { return "weight_only_gemm"; }
  };
  return std::visit(Visitor{}, op);
}

const Tensor& op_input(const OpRequest& op) {
  struct Visitor {
    const Tensor& operator()(const QuantizeOp& o) const { return o.x; }
    const Tensor& operator()(const DequantizeOp& o) const { return o.q; }
    const Tensor& operator()(const RequantizeOp& o) const { return o.acc; }
    const Tensor& operator()(const QGemmOp& o) const { return o.a.values; }
    const Tensor& operator()(const QConv2dOp& o) const { return o.input.values; }
    const Tensor& operator()(const WeightOnlyGemmOp& o) const { return o.a; }
  };
  return std::visit(Visitor{}, op);
}

DType op_output_dtype(const OpRequest& op) {
  struct Visitor {
    DType operator()(const QuantizeOp& o) const { return o.out; }
    DType operator()(const DequantizeOp& o) const { return o.out; }
    DType operator()(const RequantizeOp& o) const { return o.out; }
    DType operator()(const QGemmOp& o) const { return o.output.format; }
    DType operator()(const QConv2dOp& o) const { return o.output.format; }
    DType operator()(const WeightOnlyGemmOp& o) const { return o.out; }
  };
  return std::visit(Visitor{}, op);
}

Shape op_output_shape(const OpRequest& op) {
  struct Visitor {
    Shape operator()(const QuantizeOp& o) const { return o.x.shape(); }
    Shape operator()(const DequantizeOp& o) const { return o.q.shape(); }
    Shape operator()(const RequantizeOp& o) const { return o.acc.shape(); }
    Shape operator()(const QGemmOp& o) const {
      return gemm_shape(o.a.values.shape(), logical_shape(o.b), o.b_layout).out_shape;
    }
    Shape operator()(const QConv2dOp& o) const {
      return resolve_conv2d(o.input.values.shape(), o.layout, logical_shape(o.weight), o.geometry).output_shape();
    }
    Shape operator()(const WeightOnlyGemmOp& o) const {
      return gemm_shape(o.a.shape(), logical_shape(o.b), o.b_layout).out_shape;
    }
  };
  return std::visit(Visitor{}, op);
}

}  // namespace qc
