// cpu-ref's float8 QuantizeLinear / DequantizeLinear (ONNX opset 19+, e4m3fn and e5m2), written as a
// runtime's C++ writes them: the quotient in the numerics' float type, then a bit-level cast of
// that value into float8 (as ORT's Float8E4M3FN(float, saturate) constructor does for f32 bits).
// Nothing here shares code with the oracle (oracles/fp8.hpp), which rounds exact rationals.
#pragma once

#include "backends/cpu_ref/numerics.hpp"
#include "qconform/ops.hpp"

#include <cstdint>

namespace qc::cpu_ref {

// The float8 code of v (any double), ties to even. Past the largest finite value (and for +-inf):
// +-max with `saturate`; otherwise inf (e5m2) or NaN (e4m3fn, which has no inf). NaN -> NaN.
std::uint8_t float8_from_double(DType t, double v, bool saturate);
// The value of a float8 code.
double float8_to_double(DType t, std::uint8_t code);

Tensor quantize_float8(const QuantizeOp& op, const Numerics& n);
Tensor dequantize_float8(const DequantizeOp& op, const Numerics& n);

}  // namespace qc::cpu_ref
