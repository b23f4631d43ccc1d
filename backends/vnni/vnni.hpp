// The x86 VNNI kernel layer (docs/design.md "The vnni kernels"): quantized GEMM and NHWC conv2d
// the way a CPU kernel library ships them -- weights packed once into panels, activations packed
// per cache block, a register-blocked micro-kernel, an f32 epilogue -- for three instruction sets
// chosen at run time by cpuid, plus a scalar model of the same arithmetic. It knows nothing about
// the harness: plain pointers in, plain pointers out.
//
// ---- What it computes (the contract; tests/vnni checks it against an independent int64 model) ----
//
// Operands. A [M, K] row-major (stride lda), u8 or s8, zero point za, scale s_a. W [K, N] or [N, K],
// s8 (one per byte) or 4-bit (s4 [-8, 7] / u4 [0, 15], one per byte or packed two per byte), weight
// zero points zw[n] (none, per tensor, or per column) and f32 scales s_w[n] (per tensor or per column),
// optional int32 bias b[n] (scale s_a*s_w[n]).
//
// 1. Shift. s8 activations become u8 by au = a + 128 (a byte xor 0x80 while packing A), with zero
//    point za_u = za + 128; u8 activations are used as they are (au = a, za_u = za).
// 2. Raw accumulation, int32, wrapping (vpdpbusd, vpaddd):
//       vnni512, avxvnni, scalar:  raw[m][n] = Σ_k au[m][k] * w[k][n]                        (mod 2^32)
//       avx2_maddubs:              raw[m][n] = Σ_j sat16(au[2j]·w[2j] + au[2j+1]·w[2j+1])     (mod 2^32)
//    where sat16 clamps to [-32768, 32767] (vpmaddubsw) and the pairs are adjacent K indices (2j, 2j+1)
//    of the GEMM's K order (an odd K pads the last pair with a zero weight). vpmaddwd by ones then
//    adds two int16 lanes exactly.
// 3. Zero points folded into column and row sums (XNNPACK/FBGEMM style), int32 wrapping:
//       acc[m][n] = raw[m][n] + col_term[n] - zw[n] * rowsum[m]
//       col_term[n] = b[n] - za_u * Σ_k w[k][n] + K * za_u * zw[n]     (precomputed at packing)
//       rowsum[m]   = Σ_k au[m][k]                                      (computed while packing A;
//                                                                        only when some zw[n] != 0)
//    For s8 activations with za = 0, col_term is the oneDNN "compensation" -128 * Σ_k w[k][n].
//    Hence acc ≡ b[n] + Σ_k (a - za)(w - zw) (mod 2^32) on vnni512/avxvnni/scalar: exact whenever
//    that value fits int32, even when raw[m][n] itself wrapped (it can for s8 inputs and large K).
// 4. Output (f32 arithmetic, one IEEE rounding per operation, no FMA contraction, default MXCSR):
//       int32        out = acc
//       f32          out = fl(fl(float(acc) * d[n]) + bf[n])      d[n] = fl(s_a * s_w[n]); "+ bf[n]"
//                                                                 only with an f32 bias
//       u8 / s8      out = cvtps2dq(min(max(fl(float(acc) * r[n]), lo - zo), hi - zo)) + zo
//                    r[n] = fl(fl(s_a * s_w[n]) / s_out), cvtps2dq rounds to nearest even,
//                    [lo, hi] = the output type's range ∩ the optional clamp; the saturating packs
//                    that follow never engage (the value is already in range).
//    float(acc) is cvtdq2ps (round to nearest even beyond 2^24). The requantized output is
//    qconform's RequantizeScheme::xnnpack_fp32 (multiplier left_to_right in f32, f32 product, RNE,
//    clamp float_before, zero point int_after_rounding) -- XNNPACK's xnn_qs8_requantize_fp32 -- and
//    equally float_multiplier with those settings (a clamp to integer bounds commutes with RNE).
//    The f32 output is the oracle's dequantized output with DequantizePolicy compute f32.
//
// Rounding: the f32 steps and cvtps2dq follow MXCSR, which must be in its default state (round to
// nearest even, no FTZ/DAZ: subnormal products are possible only for scales near 2^-126), as every
// production kernel assumes; the scalar kernel uses the same FP environment (std::nearbyint).
//
// What it does not do: u8 weights (vpdpbusd needs signed weights; shift them to s8 first), scales
// blocked along K, float bias for requantized output, multithreading (one core per call), a
// dedicated depthwise kernel (groups = C runs as C GEMMs with N = multiplier).
// Production kernels (XNNPACK qs8, oneDNN) require symmetric weights (zw = 0); weight zero points
// here cost a row sum per A row and a multiply per output, as in FBGEMM's row-offset path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qc::vnni {

// ---- Instruction sets and dispatch -----------------------------------------------------------

enum class Isa : std::uint8_t {
  scalar,        // portable C++ model of the vnni512 arithmetic (same packing, same epilogue)
  avx2_maddubs,  // vpmaddubsw + vpmaddwd + vpaddd (pre-VNNI): int16 pair saturation
  avxvnni,       // 256-bit VEX vpdpbusd (AVX-VNNI)
  vnni512,       // 512-bit EVEX vpdpbusd (AVX512-VNNI)
};
inline constexpr Isa kAllIsas[] = {Isa::scalar, Isa::avx2_maddubs, Isa::avxvnni, Isa::vnni512};
std::string_view name(Isa isa);
std::optional<Isa> parse_isa(std::string_view s);

// The first CPU (or OS) feature this machine lacks for `isa`, as /proc/cpuinfo spells it
// ("avx512_vnni", "avx_vnni", "avx2", "os: zmm state"), or nullopt when it can run. An ISA named in
// QCONFORM_VNNI_DISABLE (comma-separated, for testing the SKIP path) reports "<feature> (disabled
// by QCONFORM_VNNI_DISABLE)".
std::optional<std::string> missing_feature(Isa isa);
inline bool available(Isa isa) { return !missing_feature(isa); }

// The best ISA this CPU runs: vnni512 > avxvnni > avx2_maddubs > scalar. avx2_maddubs is picked
// over scalar although it may saturate, because that is what a library without VNNI ships (MLAS,
// FBGEMM, oneDNN); QuantSpec::weights_7bit is the guard those libraries offer.
Isa detect_isa();
// detect_isa(), unless QCONFORM_VNNI_FORCE=scalar|avx2_maddubs|avxvnni|vnni512 names one; throws
// qc::InputError when the variable names no ISA or one this CPU lacks (naming the feature).
Isa select_isa();

// ---- Quantization and output ------------------------------------------------------------------

enum class ActivationType : std::uint8_t { u8, s8 };
enum class WeightType : std::uint8_t {
  s8,  // [-128, 127]
  s4,  // [-8, 7]
  u4,  // [0, 15] (typically with zero point 8)
};
enum class WeightLayout : std::uint8_t {
  k_by_n,  // W[k][n] at k*N + n (ONNX MatMul)
  n_by_k,  // W[n][k] at n*K + k (nn.Linear, Gemm transB)
};
enum class OutputKind : std::uint8_t { int32, f32, u8, s8 };
std::string_view name(ActivationType t);
std::string_view name(WeightType t);
std::string_view name(OutputKind k);

struct OutputSpec {
  OutputKind kind = OutputKind::int32;
  float scale = 1.0f;                    // u8/s8: s_out
  std::int32_t zero_point = 0;           // u8/s8: zo
  std::optional<std::int32_t> min, max;  // u8/s8: a fused clamp (e.g. ReLU), intersected with the type range
};

struct QuantSpec {
  ActivationType a_type = ActivationType::u8;
  std::int32_t a_zero_point = 0;  // within the activation type's range
  float a_scale = 1.0f;
  WeightType w_type = WeightType::s8;
  std::vector<std::int32_t> w_zero_points;  // empty (symmetric), one, or one per output column
  std::vector<float> w_scales{1.0f};        // one, or one per output column
  std::vector<std::int32_t> bias;           // empty or one per output column (int32, scale s_a*s_w[n])
  std::vector<float> bias_f32;              // f32 output only: empty or one per output column
  // The pair-saturation guard libraries use before VNNI: packing rejects weights outside [-64, 63],
  // so that |au·w + au'·w'| <= 2·255·64 = 32640 and vpmaddubsw never saturates.
  bool weights_7bit = false;
  OutputSpec output;
};

struct GemmParams {
  std::int64_t n = 0, k = 0;  // M is given per call
  WeightLayout w_layout = WeightLayout::k_by_n;
  QuantSpec quant;
};

// ---- Packed weights ---------------------------------------------------------------------------

// 64-byte aligned bytes (panel rows are loaded as whole vectors).
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::size_t n);
  std::int8_t* data() { return p_.get(); }
  const std::int8_t* data() const { return p_.get(); }
  std::size_t size() const { return n_; }

 private:
  struct Free {
    void operator()(std::int8_t* p) const;
  };
  std::unique_ptr<std::int8_t[], Free> p_;
  std::size_t n_ = 0;
};

// Weights laid out for one ISA's micro-kernel, with everything the epilogue needs per column.
//
// Panel layout: the N columns split into panels of `nr` columns (the last padded with zero
// columns); within a panel, K in groups of four (the last padded with zero weights), and for each
// group the `nr` columns' four bytes side by side:
//     data[((p * kgroups + g) * nr + j) * 4 + t] = W[4g + t][p*nr + j]
// so one vector load gives 16 (zmm) or 8 (ymm) int32 lanes of four K-consecutive weights each --
// exactly vpdpbusd's (and vpmaddubsw+vpmaddwd's) operand. The per-column arrays are padded to
// panels * nr so the epilogue loads whole vectors.
struct PackedWeights {
  Isa isa = Isa::scalar;
  GemmParams params;         // as given (validated)
  int nr = 0;                // panel width (columns)
  std::int64_t kgroups = 0;  // ceil(K / 4)
  std::int64_t panels = 0;   // ceil(N / nr)
  AlignedBytes panel_data;
  std::vector<std::int32_t> col_term;  // b[n] - za_u·Σw + K·za_u·zw[n]
  std::vector<std::int32_t> w_zp;      // zw[n]
  std::vector<float> scale;            // f32: d[n]; u8/s8: r[n]
  std::vector<float> bias_f;           // f32 output with an f32 bias
  bool has_w_zp = false;               // some zw[n] != 0: A row sums are needed
  // Whether some adjacent K pair (2j, 2j+1) of some column can leave int16 for some u8 activation
  // (255·(max(w,0)+max(w',0)) > 32767 or 255·(min(w,0)+min(w',0)) < -32768): where avx2_maddubs
  // may differ from the exact sum. Computed from the actual weights.
  bool pair_saturation_possible = false;
};

// Validates and packs. `w` holds one value per byte (s8, or s4/u4 values in range) in w_layout;
// the packed-int4 form holds two per byte over the flat row-major order, element 2i in the low
// nibble (ONNX/ORT Int4x2), an odd count padded. Throws qc::InputError naming the field.
PackedWeights pack_weights(const GemmParams& p, std::span<const std::int8_t> w, Isa isa);
PackedWeights pack_weights_int4(const GemmParams& p, std::span<const std::uint8_t> packed, Isa isa);

// out[m][n] at out + m*ldo + n (elements of the output type). A: u8 or s8 as the params say; Out:
// int32_t, float, uint8_t or int8_t as the output kind says (checked; InputError otherwise, and
// when the packed ISA is not available on this CPU).
template <class A, class Out>
void gemm(const PackedWeights& w, std::int64_t m, const A* a, std::int64_t lda, Out* out, std::int64_t ldo);

// ---- Elementwise: quantize, dequantize, requantize ---------------------------------------------
//
// The f32 arithmetic of the kernels' own activation quantization and epilogue, for whole tensors
// (one parameter set per call; a caller with per-channel parameters calls once per run of them):
//   quantize     q = cvtps2dq(min(max(fl(x / scale), lo), hi)) + zero_point    (MLAS MlasQuantizeLinear;
//                a NaN quotient becomes lo: vmaxps returns its second operand)
//   dequantize   y = fl(float(q - zero_point) * scale)                        (cvtdq2ps: RNE past 2^24)
//   requantize   q = cvtps2dq(min(max(fl(float(acc) * scale), lo), hi)) + zero_point  (XNNPACK fp32)
// where lo and hi are the output range minus the zero point, as floats, and `scale` is the divisor,
// the dequantize scale or the requantize multiplier fl(fl(s_in * s_w) / s_out). Split across the
// worker threads.
struct ElementwiseParams {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  float lo = 0.0f, hi = 0.0f;  // quantize and requantize only
};
void quantize(Isa isa, const float* x, std::size_t n, const ElementwiseParams& p, std::int32_t* q);
void dequantize(Isa isa, const std::int32_t* q, std::size_t n, const ElementwiseParams& p, float* y);
void requantize(Isa isa, const std::int32_t* acc, std::size_t n, const ElementwiseParams& p, std::int32_t* q);

// qadd (QLinearAdd) as MLAS runs it on AVX2 (onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp,
// MlasQLinearAddKernelAvx2Helper): ratio_a = fl(s_a / s_c), ratio_b = fl(s_b / s_c), the zero
// points folded into fixed = fl(float(zp_c) - fl(fl(ratio_a * zp_a) + fl(ratio_b * zp_b))), per
// element fma(a, ratio_a, fma(b, ratio_b, fixed)) on the raw integers as f32 (a scalar B, one MLAS call's one-element B
// (oracles/qadd.hpp qadd_b_folded), folds into fixed first: fixed' = fl(fixed + fl(b * ratio_b)), then fma(a, ratio_a,
// fixed')), cvtps2dq (ties to even; NaN or out of int32: INT32_MIN), and the saturating packs to int16 and to [lo, hi]
// (together a clamp). The caller forms the f32 constants; b_scalar selects the folded form.
struct QAddParams {
  float ratio_a = 1.0f, ratio_b = 1.0f, fixed = 0.0f;
  bool b_scalar = false;
  std::int32_t lo = 0, hi = 0;
};
// a, b: n integer operands each (b ignored past its first element when b_scalar); out: n results.
void qadd(Isa isa, const std::int32_t* a, const std::int32_t* b, std::size_t n, const QAddParams& p, std::int32_t* out);

// The weight-only (hybrid) GEMM: out[m][n] = (Σ_k fma over k ascending of a[m][k] * w[k][n]) + bias[n]
// in f32, a [M, K] and w [K, N] row-major (w: the weights already dequantized), bias optional.
void float_gemm(Isa isa, const float* a, std::int64_t m, std::int64_t k, const float* w, std::int64_t n,
                const float* bias, float* out);

// A convolution's geometry (ONNX Conv): input [batch, channels, height, width] in the layout its
// kernel takes, weights OIHW [out_channels, channels/groups, kernel_h, kernel_w].
struct ConvGeometry {
  std::int64_t batch = 1, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
};
// The output's height and width, OH = (H + pads - dilation·(KH - 1) - 1) / stride + 1 (ONNX Conv);
// InputError "<who>: ..." naming the field for a geometry no convolution has.
std::pair<std::int64_t, std::int64_t> conv_output_size(const ConvGeometry& g, std::string_view who);

// The float convolution (conv2d: a float image with float weights, or with integer weights the
// caller has dequantized to f32, as run_weight_only does): per group, an im2col matrix
// [batch·OH·OW, K] with K = Cg·KH·KW in OIHW order (k = (c·KH + kh)·KW + kw; a padded tap holds the
// real 0) times the group's weights as [K, OC/groups], by float_gemm: each output is
// fl(fma over k ascending of x_k·w_k starting from +0) + bias[oc] in f32, a padded tap's fma adding
// exactly nothing. Input NCHW or NHWC, output in the same layout; weights OIHW [OC, C/groups, KH, KW].
struct FloatConv2dParams : ConvGeometry {
  bool nchw = true;
};
// The output's height and width, as conv_output_size (InputError "vnni float conv2d: ...").
std::pair<std::int64_t, std::int64_t> float_conv2d_output_size(const FloatConv2dParams& p);
void float_conv2d(Isa isa, const FloatConv2dParams& p, const float* input, const float* w_oihw, const float* bias,
                  float* out);

// ---- conv2d ------------------------------------------------------------------------------------

// The order of one output's K = KH·KW·Cg dot product, which fixes avx2_maddubs's pairs.
enum class ConvKOrder : std::uint8_t {
  hwc,  // k = (kh·KW + kw)·Cg + c: what NHWC kernels do (channels of a tap contiguous). Default.
  chw,  // k = (c·KH + kh)·KW + kw: the OIHW flattening (qconform's qconv2d oracle order)
};
enum class ConvStrategy : std::uint8_t {
  implicit_gemm,  // the A packer gathers each cache block's rows straight from the image
  im2col,         // materialize the whole [M, K] im2col matrix per group, then the GEMM
};
std::string_view name(ConvKOrder o);
std::string_view name(ConvStrategy s);

struct Conv2dParams : ConvGeometry {  // input NHWC [batch, H, W, C]
  ConvKOrder k_order = ConvKOrder::hwc;
  ConvStrategy strategy = ConvStrategy::implicit_gemm;
  QuantSpec quant;  // per-channel arrays over out_channels. Padded taps hold a_zero_point.
};

struct PackedConv2d {
  Conv2dParams params;
  std::int64_t out_h = 0, out_w = 0;
  std::vector<PackedWeights> groups;  // one GEMM per group: N = OC/groups, K = KH·KW·C/groups
};

PackedConv2d pack_conv2d(const Conv2dParams& p, std::span<const std::int8_t> w_oihw, Isa isa);
PackedConv2d pack_conv2d_int4(const Conv2dParams& p, std::span<const std::uint8_t> packed_oihw, Isa isa);

// input NHWC [batch, H, W, C]; output NHWC [batch, OH, OW, OC].
template <class A, class Out>
void conv2d(const PackedConv2d& w, const A* input, Out* output);

}  // namespace qc::vnni
