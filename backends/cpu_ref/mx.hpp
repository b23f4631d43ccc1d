// cpu-ref's OCP MX v1.0 and NVFP4 quantize-dequantize and dequantize, written as the emulation
// libraries write them (torchao mx_formats, microxcaling): the block maximum in float, the shared
// exponent from frexp/ilogb or from the f32 bits, each element scaled to an integer significand and
// rounded with nearbyint/round, NVFP4's steps in C++ float. It shares no code with the oracle
// (oracles/mx.hpp, exact rationals). mx_gemm multiplies the values this quantize gives in plain loops.
#pragma once

#include "qconform/ops.hpp"

namespace qc::cpu_ref {

Tensor mx_quantize(const MxQuantizeOp& op);
Tensor mx_dequantize(const MxDequantizeOp& op);
Tensor mx_gemm(const MxGemmOp& op);

}  // namespace qc::cpu_ref
