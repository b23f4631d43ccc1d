// Parameter choice as libraries' host code computes it: the cited code written as it is written,
// in plain float and double arithmetic, apart from the oracle's operation-by-operation
// transcription in oracles/choose_qparams.cpp, so that each checks the other. Host code, not a
// kernel: the backends that run choose_qparams (cpu-ref, the x86 backend) share it.
#pragma once

#include "qconform/backend.hpp"
#include "qconform/ops.hpp"

#include <cstdint>

namespace qc::host {

// The ONNX DynamicQuantizeLinear rule and Glow's four schemas, for the formats their code takes.
Availability supports_choose_qparams(const ChooseQParamsOp& op);
Tensor run_choose_qparams(const ChooseQParamsOp& op);

// ONNX DynamicQuantizeLinear's (scale, zero point) for the observed range [xmin, xmax] (onnx/defs/
// quantization/defs.cc function body; onnx/reference/ops/op_dynamic_quantize_linear.py, which sets
// the scale to 1 when max == min), in float:
//   lo = min(xmin, 0), hi = max(xmax, 0)
//   scale = hi == lo ? 1 : (hi - lo) / float(qmax - qmin)
//   zp = round_half_even(clip(qmin - lo / scale, qmin, qmax))
// ONNX defines it for uint8; ORT's GetQuantizationParameter writes the same with qmin and qmax,
// which gives int8 its rule too.
void dynamic_quantize_linear_params(float xmin, float xmax, DType format, double& scale, std::int64_t& zp);

}  // namespace qc::host
