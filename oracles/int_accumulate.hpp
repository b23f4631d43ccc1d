// The integer stage of a quantized GEMM or convolution: every dot product of zero-point-free
// operands, exactly as a policy's accumulator computes it (docs/design.md "Quantized GEMM and
// convolution paths": int32 or int64 where a bound proves it exact, arbitrary precision
// otherwise).
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
#include "oracles/policy.hpp"  // Accumulation
#include "qconform/dtype.hpp"
#include "qconform/enum_table.hpp"
#include "qconform/ops.hpp"  // IntRange

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qc {

// ---- One dot product under an accumulator -----------------------------------------------------

struct DotProduct {
  BigInt value;  // what the accumulation produces
  BigInt exact;  // the exact sum of products
  bool overflowed() const { return value != exact; }
};

// sum_k a[k] * b[k] under `acc`. int16_pair_saturate pairs adjacent elements (2j, 2j+1) -- the two
// bytes vpmaddubsw multiplies into one int16 lane -- with a[] the unsigned bytes (u8, [0, 255]) and
// b[] the signed bytes (s8, [-128, 127]); an odd K pads the last pair with a zero, as kernels pad K.
// Each pair sum saturates to int16, then the int16 lanes are summed into int32 (vpmaddwd by ones is
// exact) and added with wrap (vpaddd). Throws InputError on length mismatch or out-of-range bytes.
DotProduct accumulate_dot(std::span<const std::int32_t> a, std::span<const std::int32_t> b, Accumulation acc);

// The range of a sum of K products a[k]*b[k] (a in a_range, b in b_range), and whether `acc` is then
// guaranteed to equal the exact sum: no wrap, saturation or int16 pair saturation can occur for any
// inputs in the ranges. int16_pair_saturate needs a_range within u8 and b_range within s8.
struct AccumulationBound {
  BigInt lo, hi;       // the attainable range of the exact sum: [K * min product, K * max product]
  bool exact = false;  // every partial sum, [min(0, lo), max(0, hi)], fits the accumulator (and each
                       // int16 pair fits int16): the accumulation equals the exact sum for all inputs
};
AccumulationBound accumulation_bound(Accumulation acc, std::int64_t k, IntRange a_range, IntRange b_range);
// The proof docs/design.md "Quantized GEMM and convolution paths" relies on: true when no int32
// accumulation of K such products can overflow.
bool int32_accumulation_is_exact(std::int64_t k, IntRange a_range, IntRange b_range);

// ---- GEMM and convolution accumulation ---------------------------------------------------------

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
inline constexpr EnumEntry<ZeroPointCorrection> kZeroPointCorrectionTable[] = {
    {ZeroPointCorrection::subtract_first, "subtract_first"},
    {ZeroPointCorrection::compensate, "compensate"},
};
constexpr std::span<const EnumEntry<ZeroPointCorrection>> enum_table(ZeroPointCorrection) {
  return kZeroPointCorrectionTable;
}
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
inline constexpr EnumEntry<ConvDepthOrder> kConvDepthOrderTable[] = {
    {ConvDepthOrder::c_kh_kw, "c_kh_kw"},
    {ConvDepthOrder::kh_kw_c, "kh_kw_c"},
};
constexpr std::span<const EnumEntry<ConvDepthOrder>> enum_table(ConvDepthOrder) { return kConvDepthOrderTable; }
inline constexpr auto kAllConvDepthOrders = table_values<ConvDepthOrder>();
std::string_view name(ConvDepthOrder o);

// How an int16_pair_saturate kernel (vpmaddubsw: unsigned bytes times signed bytes, adjacent
// products summed and saturated to int16) forms its pairs. Only int16_pair_saturate reads it.
enum class PairRule : std::uint8_t {
  // u8 (or u4) activations times s8 (or s4) weights, pairs (2j, 2j+1) along the whole dot product;
  // other operand types are widened to int16 and exact (MLAS: qgemm_kernel_avx2.cpp, U8S8 kernels
  // use vpmaddubsw, U8U8/S8S8/S8U8 use vpmaddwd; measured with onnxruntime-node 1.30).
  u8s8_whole_k,
  // oneDNN's gemm_s8u8s32 driver (src/cpu/x64/gemm/gemm_driver.cpp, 2.6) without VNNI: s8
  // activations are shifted by +128 to u8 and the shift compensated exactly (gemm_info.cpp::prepare_bo:
  // an s8 offset gets +128; the matmul passes its source as the driver's B), so every int8 activation
  // times s8 weights is paired; and K is cut into blocks that restart the pairs (pair_block_starts),
  // sized per ISA by gemm_info.cpp. Measured with Debian's libdnnl 2.6.3 under
  // ONEDNN_MAX_CPU_ISA=AVX2 and =AVX512_CORE (matmul impl gemm:jit): the same blocks for any M, N
  // and thread count.
  x8s8_avx2_k_blocks,
  x8s8_avx512_k_blocks,
  // qconform's avx2-maddubs kernel (backends/vnni/vnni.hpp, steps 1-3): s8 activations shifted by
  // +128 to u8 (a byte xor 0x80 while packing A, the shift compensated in the column terms), then
  // every u8 x s8 pair (2j, 2j+1) along the whole dot product saturated to int16, whatever the zero
  // points. The same shift and pairing as TVM's u8 x s8 legalization of an s8 x s8 operator.
  x8s8_shifted_whole_k,
};
inline constexpr EnumEntry<PairRule> kPairRuleTable[] = {
    {PairRule::u8s8_whole_k, "u8s8_whole_k"},
    {PairRule::x8s8_avx2_k_blocks, "x8s8_avx2_k_blocks"},
    {PairRule::x8s8_avx512_k_blocks, "x8s8_avx512_k_blocks"},
    {PairRule::x8s8_shifted_whole_k, "x8s8_shifted_whole_k"},
};
constexpr std::span<const EnumEntry<PairRule>> enum_table(PairRule) { return kPairRuleTable; }
inline constexpr auto kAllPairRules = table_values<PairRule>();
std::string_view name(PairRule r);

// Where the pairs restart along a dot product of length K (the first block starts at 0).
// u8s8_whole_k and x8s8_shifted_whole_k: {0}. The x8s8 k-block rules: gemm_driver.cpp::get_k_padd with gemm_info.cpp's
// int8 blocking (unroll 1; AVX2: bk_traditional 256, bk 384; AVX-512 core: 384, 768): K <= bk_traditional is one block;
// K < 2 bk two, the first of (K + 1) / 2; otherwise blocks of bk. Only a block of odd length moves a pair (AVX2, K =
// 257: blocks [0, 129) and [129, 257), so 128 is alone and 129 pairs with 130).
std::vector<std::int64_t> pair_block_starts(PairRule r, std::int64_t depth);

// std::allocator, except that a vector's resize(n) leaves new integers uninitialized instead of
// zeroing them: the sums' 8 MiB result (1024 x 1024) is written whole by the kernels that fill it,
// so zeroing it first would be a pass over memory for nothing. assign(n, 0) still zeroes.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialization: no value for an integer
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
// Accumulators [R][N][S] (IntGemmAccumulators, ScaledAccumulators).
using AccumulatorValues = std::vector<std::int64_t, UninitializedAllocator<std::int64_t>>;

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
  // Optional: the same operands as the bytes the caller holds them in (one value a byte: u8, s8, u4,
  // s4), A as [R, K] and B as [N, K] or, with b_k_by_n, [K, N]. Then a and bt may be empty: the
  // packed kernel packs straight from the bytes (no int32 copy, no transpose), and accumulate_gemm
  // makes the int32 operands itself only where some element needs another path.
  struct Bytes {
    const void* data = nullptr;
    bool is_signed = false;
  };
  Bytes a_bytes, b_bytes;
  bool b_k_by_n = false;

  std::int64_t segments() const { return static_cast<std::int64_t>(segment_starts.size()); }
  bool bytes_only() const { return a_bytes.data && b_bytes.data && (a.empty() || bt.empty()); }
  bool any_zero_point() const;  // whether any za or zb is nonzero
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
  AccumulatorValues value;  // [R][N][S]: what the policy's accumulator holds
  // Exact sums where they differ from `value` (an overflow), keyed by (r * N + n) * S + s.
  std::unordered_map<std::int64_t, BigInt> exact_where_different;
  AccumulationProof proof;
  bool rows_reported = false;  // accumulate_gemm's `ready` was called for every row

  std::int64_t at(std::int64_t r, std::int64_t n, std::int64_t s) const {
    return value[static_cast<std::size_t>((r * cols + n) * segments + s)];
  }
  BigInt exact(std::int64_t r, std::int64_t n, std::int64_t s) const;
  bool overflowed(std::int64_t r, std::int64_t n) const;
};

// Throws InputError on inconsistent sizes, on int16_pair_saturate with subtract_first and nonzero
// zero points (vpmaddubsw multiplies raw u8 x s8 bytes: use compensate), on operands outside the
// pair's byte ranges, and on an exact accumulator that does not fit int64.
// With int16_pair_saturate, `pairs` says where the pairs restart (pair_block_starts; a segment
// start restarts them too).
// `ready`, when given, lets an output stage consume rows while they are in cache: where the packed
// kernel's sums are the whole result (every element proven, nothing left for the per-element path),
// it is called once for every row range [r0, r1) as soon as those rows are final, with `values` =
// the result's value.data() (moved, not copied, into the result), on the worker threads (so
// concurrently for disjoint ranges), and the result's rows_reported is set. Otherwise it is never
// called.
using SumRowsReady = std::function<void(const std::int64_t* values, std::int64_t r0, std::int64_t r1)>;
IntGemmAccumulators accumulate_gemm(const IntGemmProblem& p, Accumulation acc, ZeroPointCorrection zero_points,
                                    PairRule pairs = PairRule::u8s8_whole_k, const SumRowsReady* ready = nullptr);

// What accumulate_elements reads of the whole operands under any policy (their value ranges, raw
// and minus zero points, and their raw sums per line and segment), kept between its calls on the
// same problem: a call then costs its elements' dot products alone.
struct OperandFacts {
  struct Ranges {
    IntRange a_raw, a_multiplied, b_raw, b_multiplied;
  };
  std::optional<Ranges> ranges[2];                                                          // [subtract]
  std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> raw_sums;  // A's, B's
};

// The accumulators of the elements (rows[j], cols[j]) of `p` alone (any order, repeats allowed),
// what accumulate_gemm gives for them. The result has rows = rows.size() and cols = 1: element j is
// its row j. Elements that cover a sixteenth or more of their rows are summed by those rows
// (accumulate_gemm's packed kernel), unless the accumulator saturates (int32_saturate, int16 pairs:
// decided element by element either way); the others one dot product each (K terms, not a row's
// N·K), under the same proof over the whole operands, per-element rule (a proven loop's sum, else
// accumulate_dot), compensation and errors as accumulate_gemm. `p` must hold int32 operands (a,
// bt), not bytes alone. `facts` (for p's operands) serves the per-element path. qgemm and qconv2d
// evaluate chosen output elements this way (cause attribution).
IntGemmAccumulators accumulate_elements(const IntGemmProblem& p, std::span<const std::int64_t> rows,
                                        std::span<const std::int64_t> cols, Accumulation acc,
                                        ZeroPointCorrection zero_points, PairRule pairs = PairRule::u8s8_whole_k,
                                        OperandFacts* facts = nullptr);

// The accumulator that `acc` means for one GEMM's operands, and whether its s8 activations enter
// the pairs shifted to u8. int16_pair_saturate is the rule of vpmaddubsw, which multiplies unsigned
// by signed bytes; kernels for other operand types widen both to int16 and multiply with vpmaddwd,
// whose pair sums are exact in int32, so they accumulate as int32_wrap. Every other accumulator is
// returned unchanged.
//   u8s8_whole_k: u8 (or u4) activations times s8 (or s4) weights pair, nothing else (MLAS:
//     qgemm_kernel_avx2.cpp has U8S8 kernels with vpmaddubsw and U8U8/S8S8/S8U8 kernels with
//     vpmaddwd; measured with onnxruntime-node 1.30 on an AVX2 CPU: s8 x s8 and u8 x u8 are exact).
//   x8s8_avx512_k_blocks: u8 or s8 activations times s8 weights pair, s8 shifted (gemm.cpp::
//     gemm_s8x8s32 sends every int8 GEMM to gemm_driver on AVX-512).
//   x8s8_avx2_k_blocks: u8 times s8 pair; s8 times s8 pairs shifted only when every zero point is 0:
//     gemm_s8x8s32 without AVX-512 takes simple_gemm_s8s8s32 (shift B by 128, gemm_s8u8s32) only
//     for zero offsets and ref_gemm_s8x8s32 (exact) otherwise (measured: src zero point 5 or
//     weights zero point 3 give the exact sums).
struct PairedAccumulation {
  Accumulation accumulation;
  bool shift_signed_activations = false;  // shift_signed_activations() applies
};
PairedAccumulation paired_accumulation(Accumulation acc, PairRule pairs, DType a, DType b, bool zero_points);

// The shift itself: every raw activation and its zero point move by +128, which leaves every
// zero-point-free product, and so the exact result, unchanged; only the pairs see the u8 bytes.
void shift_signed_activations(std::span<std::int32_t> a, std::vector<std::int64_t>& a_zero_points);

// value + term with the accumulator's own addition: exact (must fit int64), int64 wrapping, int32
// wrapping (int32_wrap and int16_pair_saturate's vpaddd), int32 saturating. Used for the zero-point
// correction and for an int32 bias, so both enter the accumulator the same way.
std::int64_t add_in_accumulator(Accumulation acc, std::int64_t value, std::int64_t term);

}  // namespace qc
