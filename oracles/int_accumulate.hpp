// The integer stage of a quantized GEMM or convolution: every dot product of zero-point-free
// operands, exactly as a policy's accumulator computes it (DESIGN.md §3.5: "the integer
// accumulation of a GEMM is exact in int64 (prove the bound; fall back to arbitrary precision
// when it does not hold)").
//
// The accumulator rules themselves (int32 wrap, int32 saturate, int64, the int16 pair saturation
// of vpmaddubsw) have one definition: qc::accumulate_dot in requantize.hpp. This engine only
// decides, with qc::accumulation_bound over the operands' actual ranges, when a plain int32 or
// int64 loop provably gives the same number, and otherwise hands the dot product to
// accumulate_dot (arbitrary precision), element by element:
//   * the policy's bound holds             -> the int32 (or int64) loop's sum is the result;
//   * int32_wrap, the element's exact sum fits int32 -> no wrap happened, the sum is the result;
//   * int32_saturate, Σ|a_k|·|b_k| <= INT32_MAX for the element -> no partial sum saturated;
//   * otherwise                            -> accumulate_dot.
// The loop is a contiguous int16/int32 dot product over rows of A and rows of B transposed
// ([N, K]), tiled over columns so a tile of B stays in cache; GCC vectorizes it (pmaddwd).
#pragma once

#include "oracles/exact.hpp"
#include "oracles/requantize.hpp"  // Accumulation, accumulate_dot, accumulation_bound, IntRange
#include "qconform/dtype.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qc {

// How zero points enter the accumulation.
enum class ZeroPointCorrection : std::uint8_t {
  // Σ (a - za)(b - zb): products of zero-point-free operands (onnx/reference/ops/op_qlinear_matmul.py,
  // op_qlinear_conv.py subtract first; TFLite reference conv accumulates filter * (input + input_offset)).
  subtract_first,
  // Σ a·b over the raw quantized values, then the correction -zb·Σa - za·Σb + L·za·zb added once with
  // the accumulator's own addition (gemmlowp offset terms, oneDNN/MLAS compensation; the raw bytes are
  // what vpmaddubsw multiplies). Equal to subtract_first whenever nothing overflows.
  compensate,
};
std::string_view name(ZeroPointCorrection z);

// The order of a convolution's dot product over one filter (qconv2d.hpp): the K of the GEMM its
// im2col builds. It matters only for accumulators that depend on the order (int32_saturate, and
// the pairs of int16_pair_saturate).
enum class ConvDepthOrder : std::uint8_t {
  // k = (ic * KH + kh) * KW + kw: the OIHW flattening (ONNX Conv's im2col on NCHW).
  c_kh_kw,
  // k = (kh * KW + kw) * C + ic: the NHWC im2col. ONNX Runtime's QLinearConv runs NHWC internally
  // (onnxruntime/core/providers/cpu/quantization/qlinearconv.cc transposes the input and packs
  // weights as [KH, KW, C, OC]), so vpmaddubsw pairs channels and, for an odd C, the last channel of
  // one tap with the first of the next (measured: onnxruntime-node 1.30, MLAS AVX2 kernel).
  kh_kw_c,
};
inline constexpr std::array<ConvDepthOrder, 2> kAllConvDepthOrders = {ConvDepthOrder::c_kh_kw, ConvDepthOrder::kh_kw_c};
std::string_view name(ConvDepthOrder o);
std::optional<ConvDepthOrder> parse_conv_depth_order(std::string_view s);

// acc[r][n][s] = Σ_{k in segment s} (a[r][k] - za[r][s]) · (bt[n][k] - zb[s][n]), for R rows of A
// ([R, K] row-major), N rows of B transposed ([N, K] row-major) and K split into segments
// [segment_starts[s], segment_starts[s + 1]) (the last ends at K). A segment is a run of K over
// which both operands' quantization parameters are constant: one per-tensor/per-channel GEMM has
// one segment; blocked quantization has one per block (the last may be short).
struct IntGemmProblem {
  std::int64_t rows = 0, cols = 0, depth = 0;  // R, N, K
  std::span<const std::int32_t> a;             // R * K raw quantized values
  std::span<const std::int32_t> bt;            // N * K raw quantized values
  std::vector<std::int64_t> segment_starts{0};
  std::vector<std::int64_t> a_zero_points;  // R * S: za[r][s]
  std::vector<std::int64_t> b_zero_points;  // S * N: zb[s][n]

  std::int64_t segments() const { return static_cast<std::int64_t>(segment_starts.size()); }
  std::int64_t segment_length(std::int64_t s) const;
};

// What was proven about the accumulation, for reports and for `qconform explain`.
struct AccumulationProof {
  IntRange a_range, b_range;  // actual ranges of the multiplied operands (after zero points, or raw)
  std::int64_t longest_segment = 0;
  bool policy_exact = false;                  // accumulation_bound(policy, L, a_range, b_range).exact: the policy's
                                              // accumulator equals the exact sum for every input in these ranges
  bool int32_loop = false;                    // the sums were computed in an int32 loop (its bound proven)
  bool int64_loop = false;                    // ... in an int64 loop (its bound proven, the int32 one not)
  std::int64_t arbitrary_precision_dots = 0;  // dot products handed to accumulate_dot
};

struct IntGemmAccumulators {
  std::int64_t rows = 0, cols = 0, segments = 1;
  std::vector<std::int64_t> value;  // [R][N][S]: what the policy's accumulator holds
  // Exact sums where they differ from `value` (an overflow), keyed by (r * N + n) * S + s.
  std::unordered_map<std::int64_t, BigInt> exact_where_different;
  AccumulationProof proof;

  std::int64_t at(std::int64_t r, std::int64_t n, std::int64_t s) const {
    return value[static_cast<std::size_t>((r * cols + n) * segments + s)];
  }
  BigInt exact(std::int64_t r, std::int64_t n, std::int64_t s) const;
  bool overflowed(std::int64_t r, std::int64_t n) const;
};

// Throws InputError on inconsistent sizes, on int16_pair_saturate with subtract_first and nonzero
// zero points (vpmaddubsw multiplies raw u8 x s8 bytes: use compensate), on operands outside the
// pair's byte ranges, and on an exact accumulator that does not fit int64.
IntGemmAccumulators accumulate_gemm(const IntGemmProblem& p, Accumulation acc, ZeroPointCorrection zero_points);

// The accumulator that `acc` means for operands of these types. int16_pair_saturate is the rule of
// vpmaddubsw, which multiplies unsigned by signed bytes: it holds for u8 (or u4) activations times s8
// (or s4) weights. Kernels for other operand types widen both to int16 and multiply with vpmaddwd,
// whose pair sums are exact in int32, so they accumulate as int32_wrap (MLAS: qgemm_kernel_avx2.cpp
// has U8S8 kernels with vpmaddubsw and U8U8/S8S8/S8U8 kernels with vpmaddwd; measured with
// onnxruntime-node 1.30 on an AVX2 CPU: s8 x s8 and u8 x u8 MatMulInteger are exact). Every other
// accumulator is returned unchanged.
Accumulation accumulation_for_operands(Accumulation acc, DType a, DType b);

// value + term with the accumulator's own addition: exact (must fit int64), int64 wrapping, int32
// wrapping (int32_wrap and int16_pair_saturate's vpaddd), int32 saturating. Used for the zero-point
// correction and for an int32 bias, so both enter the accumulator the same way.
std::int64_t add_in_accumulator(Accumulation acc, std::int64_t value, std::int64_t term);

}  // namespace qc
