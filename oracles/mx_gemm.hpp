// The block-scaled GEMM, exactly: Y = A . B with A and B in MX / NVFP4 formats, blocks along K.
//
// OCP MX v1.0 section 6.2 ("Dot"): for two MX vectors of one block each,
//   Dot(A, B) = X(A) * X(B) * sum_i P_i(A) * P_i(B),
// and a longer dot product is the sum of its block dots, "with implementation-defined internal
// precision" (cuBLASLt and torchao's _scaled_mm block scaling define the same layout: scales along K).
// NVFP4's block scale is its E4M3 scale times the operand's per-tensor scale. The oracle takes each
// operand's codes from mx_quantize (oracles/mx.hpp: the one definition of the quantization) and sums
// every product exactly: an element is an integer multiple of its format's smallest step 2^u, so a
// block's sum of P_i(A) P_i(B) is an integer (int128: |P| < 2^32 for every format), and the block dot
// that integer times X(A) X(B) 2^(u_A + u_B); the sum of block dots and the bias is exact too. It is
// rounded once into the output format (ties to even, IEEE overflow to inf).
//
// Since the accumulation order is implementation-defined, an implementation is judged exactly or by
// the TOSA dot-product bound (oracles/weight_only.hpp: Σ|a_k|·|b_k| + |bias| with a, b the
// quantized values), as a float GEMM. A row of A or a column of B holding a NaN element (a block with
// the NaN scale, E8M0 0xFF; an NVFP4 step that was not finite) makes its outputs NaN, as OCP 6.2
// defines Dot with a NaN scale.
#pragma once

#include "oracles/labels.hpp"
#include "oracles/mx.hpp"
#include "qconform/ops.hpp"

#include <cstdint>
#include <vector>

namespace qc {

// One operand as multiplied: its quantization, each element as an integer number of its format's
// smallest step 2^unit, and each block's scale exactly.
struct MxGemmOperandValues {
  MxQuantizeResult quantized;       // mx_quantize of the operand (codes, f32 values, labels)
  int unit = 0;                     // the element format's smallest step is 2^unit
  std::vector<std::int64_t> steps;  // per element: value / 2^unit (0 for a NaN element)
  std::vector<bool> nan;            // per element: NaN (its block's scale is NaN)
  std::vector<Rational> scales;     // per block: X (E8M0), or E4M3 x global scale (NVFP4); 0 when NaN
};

struct MxGemmResult {
  Tensor y;                      // the exact results rounded once (RNE, IEEE overflow) into `out`
  std::vector<Rational> exact;   // per element: sum of block dots + bias, exactly (0 where NaN)
  std::vector<bool> nan;         // per element: the result is NaN
  std::vector<double> bound;     // per element: Σ|a_k|·|b_k| + |bias| rounded to f64 (NaN where NaN)
  std::vector<Label> labels;     // tie / near_tie / clear on the output grid; saturated: y infinite; special: NaN
  std::int64_t kernel_size = 0;  // K
  bool nonzero_bias = false;
  GemmShape shape;
  std::int64_t block_size = 0, blocks = 0;  // along K
  MxGemmOperandValues a, b;
};

// Throws InputError naming the field for malformed requests.
MxGemmResult mx_gemm(const MxGemmOp& op);

// One block pair of output (row, col), exactly: X(A) X(B) sum_i P_i(A) P_i(B) and the same sum of
// |P_i(A) P_i(B)| (the TOSA bound's part), with the scale codes. Not for a NaN output.
struct MxBlockDot {
  Rational dot, magnitude;
  std::uint64_t a_scale_code = 0, b_scale_code = 0;
  std::int64_t k_begin = 0, k_end = 0;
};
MxBlockDot mx_gemm_block_dot(const MxGemmResult& r, std::int64_t row, std::int64_t col, std::int64_t block);

}  // namespace qc
