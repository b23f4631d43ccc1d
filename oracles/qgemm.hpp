// qgemm: the full quantized GEMM path, exactly (docs/design.md "Quantized GEMM and convolution
// paths").
//
//   float A --quantize (static, or dynamic per tensor / per row = DRQ)--> int A
//   int B (i8/u8/i4/u4, packed int4 unpacked here, or float B quantized here)
//   --> exact integer accumulation per K segment under the policy's accumulator (int_accumulate.hpp)
//   --> + int32 bias (scale s_a*s_b) --> int32 | dequantized float | requantized int8/uint8 + clamp
//
// Shapes: A is [batch..., M, K] (batched: every leading dimension folds into rows); B is [K, N]
// (WeightLayout::k_by_n, ONNX MatMul) or [N, K] (n_by_k: nn.Linear, Gemm transB = 1, MatMulNBits).
// The output is [batch..., M, N]. A bias has one value per column n.
// Batched B: B may be [batch..., K, N] (or [batch..., N, K]); A's and B's batch dimensions
// broadcast by numpy.matmul's rules (ONNX MatMul, QLinearMatMul, MatMulInteger on 3-D inputs;
// batched_gemm_shape in ops.hpp), and each output batch is the GEMM of its A batch and its B
// matrix. B's parameters index the whole B tensor: per tensor, per axis on any axis (ONNX's
// per-column b_scale is the last axis of a [batch..., K, N] B; an axis on a batch dimension gives
// each batch its own scale), or blocked along K (the axis rank - 2, or rank - 1 for n_by_k).
//
// Granularity. A: per tensor, per row (any axis but K, e.g. dynamic per row), per axis along K or
// blocked along K. B: per tensor, per column (axis along N), per axis along K or blocked along K
// (the last block may be short: ONNX block_size, scale shape ceil(K / block_size)).
//
// Blocked semantics (our stated choice): K splits into segments at every point where A's or B's
// parameters change along K (the union of both block grids; a per-axis-along-K parameter makes
// every k its own segment). Each segment s contributes its own integer partial sum with its own
// zero points, times its own scales:
//     y = Σ_s s_a[s] · s_b[s] · Σ_{k in s} (a_k - za[s]) (b_k - zb[s])
// evaluated exactly, then rounded (dequantized) or requantized as the policy says. As a real
// number this is exactly ONNX blocked DequantizeLinear (opset 21 `block_size`: each block of K
// has its own scale and zero point; docs/numerics.md "Granularity") of both operands followed by
// an exact MatMul, and oneDNN's grouped scales/zero points (`groups` along K, doc
// attributes_quantization.md): distributing the sum over blocks gives the scaled partial sums
// above. The accumulator policy (int32 wrap, saturation) applies to each segment's partial sum,
// as a blocked integer kernel keeps one accumulator per block and scales it in float (our
// modelling choice).
#pragma once

#include "oracles/qlinear.hpp"

#include <optional>
#include <string_view>

namespace qc {

using QGemmResult = QLinearResult;

// Throws InputError for inconsistent shapes, parameters the path cannot express, or an output stage
// the policy cannot evaluate (see qlinear.hpp).
// With `only`, the result holds the output elements only[j] (flat indices, any order) alone, y of
// shape [only.size()]: what the whole op gives there, for a fraction of the work (cause
// attribution evaluates alternatives on the mismatching elements).
QGemmResult qgemm(const QGemmOp& op, const QGemmPolicy& policy, const std::vector<std::int64_t>* only = nullptr);

// The integer stage of output elements `only` alone (flat indices, any order) and the operands'
// parameters: qgemm(op, policy, &only) is finish_output of it. Each sparse element costs its own dot
// product (K terms); see int_accumulate.hpp accumulate_elements.
// `operands`, when given, keeps the int32 operands (A as is, B transposed to [N, K]) between calls
// on the same op with integer operands, which every policy reads alike: a call then costs its
// elements' dot products, not a pass over the operands (cause attribution calls it per candidate).
struct GemmOperandCache {
  bool ready = false;
  std::vector<std::int32_t, UninitializedAllocator<std::int32_t>> a, bt;
  OperandFacts facts;  // their ranges and sums (accumulate_elements)
};
LinearAccumulators qgemm_accumulators(const QGemmOp& op, const QGemmPolicy& policy,
                                      const std::vector<std::int64_t>& only, GemmOperandCache* operands = nullptr);

// The dot product of output element e (flat index into [batch..., M, N]): row e / N of A, column
// e % N of B, in k order.
DotTerms qgemm_terms(const QGemmOp& op, const QGemmPolicy& policy, std::int64_t e);

// The K segments of a GEMM: starts of the runs of K over which both operands' parameters are
// constant (the union of A's and B's block grids along K). `a_shape` is the shape the A parameters
// refer to (last dimension K); `b_k_axis` is B's K dimension (0 for [K, N], 1 for [N, K]).
std::vector<std::int64_t> k_segment_starts(const QuantParams& a, const Shape& a_shape, const QuantParams& b,
                                           const Shape& b_shape, int b_k_axis);

}  // namespace qc
