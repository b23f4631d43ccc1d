// Op requests: what a backend is asked to compute (inputs and parameters, never the expected
// answer), and the data they are made of. The oracle evaluates the same request under a numerics
// spec; what each field means numerically is defined there (oracles/qlinear.hpp, qgemm.hpp,
// qconv2d.hpp, weight_only.hpp, requantize.hpp, choose_qparams.hpp, int4.hpp, qadd.hpp). Part of the core: a
// backend needs nothing else.
#pragma once

#include "qconform/dtype.hpp"
#include "qconform/enum_table.hpp"
#include "qconform/qparams.hpp"
#include "qconform/rounding_mode.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

namespace qc {

// A closed integer interval [lo, hi] (an output range, or the range of a GEMM operand).
struct IntRange {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  bool operator==(const IntRange&) const = default;
};

// ---- int4 packing (oracles/int4.hpp: what each choice means, with sources) ---------------------

enum class NibbleOrder : std::uint8_t { low_first, high_first };
enum class OddLength : std::uint8_t { pad, reject };
enum class OutOfRange : std::uint8_t { reject, clip, wrap };
inline constexpr EnumEntry<NibbleOrder> kNibbleOrderTable[] = {
    {NibbleOrder::low_first, "low_first", "the first value in the low nibble (ONNX)"},
    {NibbleOrder::high_first, "high_first", "the first value in the high nibble"},
};
constexpr std::span<const EnumEntry<NibbleOrder>> enum_table(NibbleOrder) { return kNibbleOrderTable; }
inline constexpr EnumEntry<OddLength> kOddLengthTable[] = {
    {OddLength::pad, "pad", "an odd count is padded with a zero nibble"},
    {OddLength::reject, "reject", "an odd count is an error"},
};
constexpr std::span<const EnumEntry<OddLength>> enum_table(OddLength) { return kOddLengthTable; }
inline constexpr EnumEntry<OutOfRange> kOutOfRangeTable[] = {
    {OutOfRange::reject, "reject", "a value outside the int4 range is an error"},
    {OutOfRange::clip, "clip", "a value outside the int4 range saturates"},
    {OutOfRange::wrap, "wrap", "a value outside the int4 range keeps its low four bits"},
};
constexpr std::span<const EnumEntry<OutOfRange>> enum_table(OutOfRange) { return kOutOfRangeTable; }

std::string_view name(NibbleOrder o);
std::string_view name(OddLength o);
std::string_view name(OutOfRange o);

struct Int4Packing {
  NibbleOrder nibbles = NibbleOrder::low_first;
  std::optional<int> axis;  // empty: flat row-major order; else pairs along this axis (negative from the end)
  OddLength odd = OddLength::pad;
  OutOfRange out_of_range = OutOfRange::reject;

  bool operator==(const Int4Packing&) const = default;
};

// ---- Dynamic quantization rules (oracles/choose_qparams.hpp: each recipe, with sources) --------

// Whose code is followed.
enum class QParamsRecipe : std::uint8_t {
  onnx_ort,          // ONNX DynamicQuantizeLinear reference; ORT GetQuantizationParameter
  gemmlowp,          // gemmlowp / TFLite ChooseQuantizationParams
  fbgemm,            // FBGEMM ChooseQuantizationParams (scale rounded to float)
  pytorch_aten,      // ATen quant_utils::ChooseQuantizationParams (dynamic quantization; double scale)
  pytorch_observer,  // torch.ao.quantization observers, _calculate_qparams
  xnnpack_qd8,       // XNNPACK xnn_qd8_asymmetric_quantization_params (qdu8 for u8)
  glow,              // Glow quantization::chooseQuantizationParams
};
inline constexpr EnumEntry<QParamsRecipe> kQParamsRecipeTable[] = {
    {QParamsRecipe::onnx_ort, "onnx_ort"},
    {QParamsRecipe::gemmlowp, "gemmlowp"},
    {QParamsRecipe::fbgemm, "fbgemm"},
    {QParamsRecipe::pytorch_aten, "pytorch_aten"},
    {QParamsRecipe::pytorch_observer, "pytorch_observer"},
    {QParamsRecipe::xnnpack_qd8, "xnnpack_qd8"},
    {QParamsRecipe::glow, "glow"},
};
constexpr std::span<const EnumEntry<QParamsRecipe>> enum_table(QParamsRecipe) { return kQParamsRecipeTable; }
std::string_view name(QParamsRecipe r);

enum class QParamsScheme : std::uint8_t {
  asymmetric,          // zero point anywhere in [qmin, qmax]
  symmetric,           // zero point fixed: 0, or the midpoint for unsigned types (PyTorch 128,
                       // FBGEMM preserve_sparsity)
  symmetric_unsigned,  // Glow SymmetricWithUnsigned: zp = qmin for a range >= 0, else symmetric
  power_of_two,        // scale a power of two (FBGEMM force_scale_power_of_two, Glow
                       // SymmetricWithPower2Scale, which is also symmetric)
};
inline constexpr EnumEntry<QParamsScheme> kQParamsSchemeTable[] = {
    {QParamsScheme::asymmetric, "asymmetric"},
    {QParamsScheme::symmetric, "symmetric"},
    {QParamsScheme::symmetric_unsigned, "symmetric_unsigned"},
    {QParamsScheme::power_of_two, "power_of_two"},
};
constexpr std::span<const EnumEntry<QParamsScheme>> enum_table(QParamsScheme) { return kQParamsSchemeTable; }
std::string_view name(QParamsScheme s);

enum class ZeroPointChoice : std::uint8_t {
  from_min,                  // qmin - min/s (ONNX, ORT); PyTorch: qmin - round(min/s)
  smaller_error,             // qmin - min/s or qmax - max/s, whichever has the smaller
                             // |q| + |r/s| (gemmlowp, FBGEMM, Glow)
  smaller_error_difference,  // the same choice made on |q| - |r/s| (ATen's quirk)
  xnnpack_sign_rule,         // qmin - min*r if (qmin + min*r) + (qmax + max*r) > 0, else qmax - max*r
};
inline constexpr EnumEntry<ZeroPointChoice> kZeroPointChoiceTable[] = {
    {ZeroPointChoice::from_min, "from_min"},
    {ZeroPointChoice::smaller_error, "smaller_error"},
    {ZeroPointChoice::smaller_error_difference, "smaller_error_difference"},
    {ZeroPointChoice::xnnpack_sign_rule, "xnnpack_sign_rule"},
};
constexpr std::span<const EnumEntry<ZeroPointChoice>> enum_table(ZeroPointChoice) { return kZeroPointChoiceTable; }
std::string_view name(ZeroPointChoice z);

enum class ReduceRange : std::uint8_t {
  none,
  ort_int8,  // int8 only: [-64, 64] (ORT GetQuantizationParameter<int8_t, ReduceRange=true>)
  halve,     // qmin/2, qmax/2 truncating: int8 [-64, 63], uint8 [0, 127] (PyTorch)
};
inline constexpr EnumEntry<ReduceRange> kReduceRangeTable[] = {
    {ReduceRange::none, "none"},
    {ReduceRange::ort_int8, "ort_int8"},
    {ReduceRange::halve, "halve"},
};
constexpr std::span<const EnumEntry<ReduceRange>> enum_table(ReduceRange) { return kReduceRangeTable; }
std::string_view name(ReduceRange r);

struct QParamsRule {
  QParamsRecipe recipe = QParamsRecipe::onnx_ort;
  QParamsScheme scheme = QParamsScheme::asymmetric;
  bool include_zero = true;  // extend [min, max] to contain 0 (false: a range without 0 is an error)
  ZeroPointChoice zero_point = ZeroPointChoice::from_min;
  RoundingMode nudge = RoundingMode::rne;  // the zero point's rounding to an integer
  ReduceRange reduce_range = ReduceRange::none;
  bool narrow_range = false;      // signed types drop their most negative value (gemmlowp narrow_range)
  double scale_floor = 0;         // 0: none. FBGEMM/ATen SMALL_SCALE_THRESHOLD 6.1e-5f (with the
                                  // range rescaled); PyTorch observers eps = 2^-23 (a plain max)
  DType arithmetic = DType::f32;  // f32 or f64: the format of the recipe's main operations

  bool operator==(const QParamsRule&) const = default;
};

// ---- Operands of the quantized GEMM and convolution (oracles/qlinear.hpp) ----------------------

enum class ActivationQuantization : std::uint8_t {
  static_params,       // float values quantized with the given params (or integer values already quantized)
  dynamic_per_tensor,  // DRQ: one (scale, zero point) from the tensor's min/max under `rule`
  dynamic_per_row,     // DRQ: one per row of the [rows, K] view, rows = the product of all but the last dim
};
inline constexpr EnumEntry<ActivationQuantization> kActivationQuantizationTable[] = {
    {ActivationQuantization::static_params, "static"},
    {ActivationQuantization::dynamic_per_tensor, "dynamic_per_tensor"},
    {ActivationQuantization::dynamic_per_row, "dynamic_per_row"},
};
constexpr std::span<const EnumEntry<ActivationQuantization>> enum_table(ActivationQuantization) {
  return kActivationQuantizationTable;
}
std::string_view name(ActivationQuantization q);

// The activation (A of a GEMM, the input of a convolution): float values quantized by the path,
// or integer values already quantized (one per element; `quantization` must be static_params).
struct ActivationOperand {
  Tensor values;
  DType format = DType::u8;  // the quantized format (i8, u8, i16, u16, i4, u4); ignored for integer values
  QuantParams params;        // static; ignored when dynamic
  ActivationQuantization quantization = ActivationQuantization::static_params;
  QParamsRule rule{};  // dynamic: the parameter choice (choose_qparams.hpp; default: ONNX/ORT from_min)
};

// Weights: integer values (one per element), int4 values packed two per byte (unpacked in the
// path with `packing`), or float values quantized by the path with `params`.
struct QWeights {
  Tensor values;
  DType format = DType::i8;            // integer format of the quantized weights (i4/u4 for packed data)
  std::optional<Int4Packing> packing;  // set: `values` is the u8 output of pack_int4 for a tensor of `shape`
  Shape shape;                         // the logical shape, needed only with `packing`
  QuantParams params;
};

// The weights' logical shape (one element per value, packed or not).
inline const Shape& logical_shape(const QWeights& w) { return w.packing ? w.shape : w.values.shape(); }

// ---- Output stage (oracles/qlinear.hpp) --------------------------------------------------------

enum class OutputKind : std::uint8_t { int32, dequantized, requantized };
inline constexpr EnumEntry<OutputKind> kOutputKindTable[] = {
    {OutputKind::int32, "int32"},
    {OutputKind::dequantized, "dequantized"},
    {OutputKind::requantized, "requantized"},
};
constexpr std::span<const EnumEntry<OutputKind>> enum_table(OutputKind) { return kOutputKindTable; }
std::string_view name(OutputKind k);

struct OutputStage {
  OutputKind kind = OutputKind::int32;
  DType format = DType::i32;      // i32 | a float format (f32, f16, bf16, f64) | an integer format (i8, u8, ...)
  double scale = 1.0;             // requantized: s_out, exactly representable in the scales' format
  std::int64_t zero_point = 0;    // requantized
  std::optional<IntRange> clamp;  // requantized: a fused activation as output integers (fused_activation_range)
};

// ---- GEMM (oracles/qgemm.hpp) ------------------------------------------------------------------

enum class WeightLayout : std::uint8_t {
  k_by_n,  // B is [K, N]
  n_by_k,  // B is [N, K], "transposed"
};
inline constexpr EnumEntry<WeightLayout> kWeightLayoutTable[] = {
    {WeightLayout::k_by_n, "k_by_n"},
    {WeightLayout::n_by_k, "n_by_k"},
};
constexpr std::span<const EnumEntry<WeightLayout>> enum_table(WeightLayout) { return kWeightLayoutTable; }
std::string_view name(WeightLayout l);

struct QGemmOp {
  ActivationOperand a;  // [batch..., M, K]
  QWeights b;           // [batch..., K, N] or [batch..., N, K] by b_layout (batch: batched_gemm_shape)
  WeightLayout b_layout = WeightLayout::k_by_n;
  std::optional<Tensor> bias;  // [N]: i32 (scale s_a*s_b[n], added to the accumulator) or float (added to v)
  OutputStage output;
};

// The sizes of a GEMM: rows R (= batch * M), depth K, columns N, B's K dimension, and the output
// shape [batch..., M, N]. Throws InputError when A and B disagree on K.
struct GemmShape {
  std::int64_t rows = 0, depth = 0, cols = 0;
  int b_k_axis = 0;
  Shape out_shape;
};
GemmShape gemm_shape(const Shape& a, const Shape& b, WeightLayout layout);

// A GEMM whose B may have leading batch dimensions too (qgemm; weight_only_gemm and every 2-D
// consumer use gemm_shape, which rejects them). The batch dimensions of A [a..., M, K] and B
// [b..., K, N] broadcast as numpy.matmul does (ONNX MatMul, QLinearMatMul and MatMulInteger follow
// it): aligned from the right, each pair equal or one of them 1, a missing one counting as 1.
// The output is [broadcast batch..., M, N] = `batches` batches of `m` rows; `rows` = batches * m.
// Output batch i reads A's batch a_batch[i] and B's matrix b_batch[i] (flat over each operand's
// own batch dimensions). For a 2-D B this is gemm_shape: A's batch folds into rows, b_batch is 0.
struct BatchedGemmShape : GemmShape {
  Shape batch;                        // the output's batch dimensions
  std::int64_t batches = 1, m = 0;    // product of `batch`; rows of one batch (M)
  std::vector<std::int64_t> a_batch;  // [batches]
  std::vector<std::int64_t> b_batch;  // [batches]
  bool batched_b = false;             // B has batch dimensions (rank > 2)

  std::int64_t a_row(std::int64_t r) const { return a_batch[static_cast<std::size_t>(r / m)] * m + r % m; }
  std::int64_t b_matrix(std::int64_t r) const { return b_batch[static_cast<std::size_t>(r / m)]; }
};
// Throws InputError when K differs or the batch dimensions do not broadcast.
BatchedGemmShape batched_gemm_shape(const Shape& a, const Shape& b, WeightLayout layout);

// ---- 2-D convolution (oracles/qconv2d.hpp: layouts, geometry, padding conventions) --------------

enum class ConvLayout : std::uint8_t { nchw, nhwc };
enum class ConvPadding : std::uint8_t { real_zero, quantized_zero };
inline constexpr EnumEntry<ConvLayout> kConvLayoutTable[] = {
    {ConvLayout::nchw, "nchw"},
    {ConvLayout::nhwc, "nhwc"},
};
constexpr std::span<const EnumEntry<ConvLayout>> enum_table(ConvLayout) { return kConvLayoutTable; }
inline constexpr EnumEntry<ConvPadding> kConvPaddingTable[] = {
    {ConvPadding::real_zero, "real_zero"},
    {ConvPadding::quantized_zero, "quantized_zero"},
};
constexpr std::span<const EnumEntry<ConvPadding>> enum_table(ConvPadding) { return kConvPaddingTable; }
std::string_view name(ConvLayout l);
std::string_view name(ConvPadding p);

struct Conv2dGeometry {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
};

// Resolved sizes and the index arithmetic of one convolution: the single definition of which input
// element each tap reads, shared by qconv2d and the float convolution of pipelines.hpp.
struct Conv2dShape {
  ConvLayout layout = ConvLayout::nchw;
  Conv2dGeometry geometry;
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  std::int64_t out_height = 0, out_width = 0;
  std::int64_t group_in_channels = 0, group_out_channels = 0;

  std::int64_t depth() const { return group_in_channels * kernel_h * kernel_w; }  // K of one dot product
  Shape output_shape() const;
  std::int64_t input_index(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const;
  std::int64_t output_index(std::int64_t n, std::int64_t oc, std::int64_t oh, std::int64_t ow) const;
  std::int64_t weight_index(std::int64_t oc, std::int64_t ic, std::int64_t kh, std::int64_t kw) const;  // OIHW
  // The input element that tap k of output (n, group g, oh, ow) reads, or -1 for a padded tap.
  std::int64_t tap_source(std::int64_t n, std::int64_t g, std::int64_t oh, std::int64_t ow, std::int64_t k) const;
};

// Throws InputError for inconsistent shapes or geometry.
Conv2dShape resolve_conv2d(const Shape& input, ConvLayout layout, const Shape& weight, const Conv2dGeometry& g);

struct QConv2dOp {
  ActivationOperand input;  // [N, C, H, W] or [N, H, W, C]
  ConvLayout layout = ConvLayout::nchw;
  QWeights weight;             // OIHW
  std::optional<Tensor> bias;  // [OC]
  Conv2dGeometry geometry;
  ConvPadding padding = ConvPadding::real_zero;
  OutputStage output;
};

// ---- Weight-only GEMM (oracles/weight_only.hpp) ------------------------------------------------

struct WeightOnlyGemmOp {
  Tensor a;    // float activations [batch..., M, K] (f32, f16, bf16, f64), used exactly
  QWeights b;  // i8/u8/i4/u4 values, packed int4, or float weights quantized first; params per tensor,
               // per column, or blocked along K
  WeightLayout b_layout = WeightLayout::k_by_n;
  std::optional<Tensor> bias;  // float [N]
  DType out = DType::f32;      // a float format
};

// ---- 2-D convolution with float activations (oracles/conv2d.hpp) ------------------------------

// A float input convolved with float weights (the k x k float convolution: ONNX Conv) or with
// integer weights dequantized by their parameters (the weight-only / hybrid convolution: StableHLO's
// hybrid convolution), + an optional float bias; the exact sum rounded once into `out`.
struct Conv2dOp {
  Tensor input;  // float [N, C, H, W] or [N, H, W, C] (f32, f16, bf16, f64), used exactly
  ConvLayout layout = ConvLayout::nchw;
  QWeights weight;             // OIHW: float values used exactly (params ignored), or i8/u8/i4/u4 values (or packed
                               // int4) dequantized with params per tensor or per output channel (axis 0)
  std::optional<Tensor> bias;  // float [OC]
  Conv2dGeometry geometry;     // padded taps are the real 0
  DType out = DType::f32;      // a float format
};

// ---- Block-scaled formats (oracles/mx.hpp: OCP Microscaling v1.0 and NVFP4, each rule's source) --

// The element format with its block scale: OCP MX v1.0 (E8M0 scale over 32 elements) and NVFP4
// (E2M1 elements, an E4M3 scale over 16 elements, and a per-tensor f32 scale).
enum class MxFormat : std::uint8_t { mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, nvfp4 };
inline constexpr EnumEntry<MxFormat> kMxFormatTable[] = {
    {MxFormat::mxfp8_e4m3, "mxfp8_e4m3"}, {MxFormat::mxfp8_e5m2, "mxfp8_e5m2"}, {MxFormat::mxfp6_e3m2, "mxfp6_e3m2"},
    {MxFormat::mxfp6_e2m3, "mxfp6_e2m3"}, {MxFormat::mxfp4, "mxfp4"},           {MxFormat::mxint8, "mxint8"},
    {MxFormat::nvfp4, "nvfp4"},
};
constexpr std::span<const EnumEntry<MxFormat>> enum_table(MxFormat) { return kMxFormatTable; }
std::string_view name(MxFormat f);

// How an MX block's E8M0 shared exponent is derived from the block's largest magnitude (NVFP4 has
// its own rule, oracles/mx.hpp).
enum class MxScaleRule : std::uint8_t { floor, ceil, even, rceil };
inline constexpr EnumEntry<MxScaleRule> kMxScaleRuleTable[] = {
    {MxScaleRule::floor, "floor", "floor(log2 amax) - emax_elem (OCP MX v1.0 6.3, torchao FLOOR, microxcaling)"},
    {MxScaleRule::ceil, "ceil", "ceil(log2 amax) - emax_elem (torchao CEIL)"},
    {MxScaleRule::even, "even", "amax rounded to the element's precision first, then floor (torchao EVEN)"},
    {MxScaleRule::rceil, "rceil", "2^ceil(log2(amax / max_elem)), the quotient in f32 (cuBLAS, torchao RCEIL)"},
};
constexpr std::span<const EnumEntry<MxScaleRule>> enum_table(MxScaleRule) { return kMxScaleRuleTable; }
std::string_view name(MxScaleRule r);

// Blocks of `block_size` consecutive elements along `axis` (the last block may be short).
struct MxBlocking {
  MxFormat format = MxFormat::mxfp8_e4m3;
  int axis = -1;                       // negative counts from the end
  std::int64_t block_size = 32;        // OCP MX: 32; NVFP4: 16
  std::optional<double> global_scale;  // NVFP4's per-tensor f32 scale (unset in quantize: amax / (448 * 6))
};

// One operand of a block-scaled GEMM: float values the op quantizes (mx_quantize's rules) into
// `format`, in blocks along K.
struct MxGemmOperand {
  Tensor values;                           // f32, f16 or bf16
  MxFormat format = MxFormat::mxfp8_e4m3;  // A and B may differ (mxfp8_e4m3 x mxfp4)
  std::optional<double> global_scale;      // NVFP4's per-tensor f32 scale (unset: amax / (448 * 6))
};

// Which operand of an mx_gemm.
enum class MxGemmSide : std::uint8_t { a, b };

// ---- Requantize (oracles/requantize.hpp) -------------------------------------------------------

struct RequantizeParams {
  DType scale_dtype = DType::f32;  // the format of all three scales
  double input_scale = 1.0;
  std::vector<double> weight_scales{1.0};  // one (per tensor) or one per channel along `axis`
  std::optional<int> axis;                 // the accumulator's channel axis; negative counts from the end
  double output_scale = 1.0;
  std::vector<std::int64_t> output_zero_points;  // empty (all zero), one, or one per channel along `axis`
};

// ---- Requests ----------------------------------------------------------------------------------

// y = QuantizeLinear(x): float (or int32) x -> integer y, or float x -> float8 y (f8e4m3fn,
// f8e5m2; zero points 0; oracles/fp8.hpp).
struct QuantizeOp {
  Tensor x;
  QuantParams params;
  DType out = DType::i8;
  bool saturate = true;  // float8 outputs only: ONNX's `saturate` attribute (overflow to +-max, else inf/NaN)
};

// y = DequantizeLinear(q): integer q (or float8 q, zero points 0) -> float y.
struct DequantizeOp {
  Tensor q;
  QuantParams params;
  DType out = DType::f32;
};

// y = requantize(acc): integer accumulators (scale s_in * s_w) -> integer y (scale s_out).
struct RequantizeOp {
  Tensor acc;
  RequantizeParams params;
  DType out = DType::i8;
};

// (scale, zero point) = choose(profile): the parameters an implementation derives from observed
// values (ONNX DynamicQuantizeLinear's y_scale and y_zero_point; a graph compiler's parameters from
// a calibration profile, as Glow's). The min and max of `profile` (per tensor, or one range per
// index along `axis`) go through `rule` (oracles/choose_qparams.hpp) for the integer `format`.
// Output: f64 [2] holding (scale, zero point), or [C, 2] with an axis of extent C.
struct ChooseQParamsOp {
  Tensor profile;  // f32, f16 or bf16 observed values, every one finite
  DType format = DType::u8;
  QParamsRule rule{};
  std::optional<int> axis;  // negative counts from the end
};

// y = dequantize(quantize(x)) in an MX or NVFP4 format ("fake quantization"): each element's value
// as the format stores it (element x block scale [x global scale]), in f32. A difference in the
// scale shows in every element of its block, a difference in one element's rounding in that element.
struct MxQuantizeOp {
  Tensor x;  // f32, f16 or bf16
  MxBlocking blocking;
  MxScaleRule scale_rule = MxScaleRule::floor;        // MX formats only
  RoundingMode element_rounding = RoundingMode::rne;  // OCP: ties to even; microxcaling "nearest": rna
};

// y = the value of MX/NVFP4 codes, in f32: element codes (u8, one per element: the element format's
// bits, MXINT8 as two's complement) times the block's scale (u8: E8M0, or E4M3 for NVFP4, one per
// block along the axis) [times the global scale].
struct MxDequantizeOp {
  Tensor elements;
  Tensor scales;
  MxBlocking blocking;
};

// Y = A . B with A and B quantized into MX / NVFP4 formats in blocks along K (OCP MX v1.0 6.2 "Dot":
// X(A) X(B) sum P_i(A) P_i(B) per block pair, the block dots summed), + an optional float bias [N];
// the exact sum rounded once into `out` (oracles/mx_gemm.hpp).
struct MxGemmOp {
  MxGemmOperand a;  // [batch..., M, K] (the batch folds into rows)
  MxGemmOperand b;  // [K, N] or [N, K] by b_layout
  WeightLayout b_layout = WeightLayout::k_by_n;
  std::int64_t block_size = 32;                       // along K, one size for both (OCP MX: 32; NVFP4: 16)
  MxScaleRule scale_rule = MxScaleRule::floor;        // both operands' MX scales
  RoundingMode element_rounding = RoundingMode::rne;  // both operands' elements
  std::optional<Tensor> bias;                         // float [N]
  DType out = DType::f32;                             // f32, f16 or bf16
};

// The mx_quantize request of one operand of an mx_gemm: its values, its format and global scale,
// blocks of op.block_size along its K axis (A: the last; B: 0 for k_by_n, 1 for n_by_k), the op's
// scale rule and element rounding.
MxQuantizeOp mx_gemm_quantize_request(const MxGemmOp& op, MxGemmSide side);

// C = saturate(round((sA·(A − zA) + sB·(B − zB)) / sC) + zC): the quantized elementwise add (ONNX
// Runtime com.microsoft QLinearAdd, TFLite/XNNPACK quantized ADD, Glow's quantized BatchedAdd of a
// lowered FC's bias). Per-tensor parameters; B broadcasts over A by numpy's rule (B's dimensions
// match A's trailing ones or are 1). How the value is evaluated is the spec's add scheme
// (oracles/qadd.hpp).
struct QAddOp {
  Tensor a;              // i8 or u8
  QuantParams a_params;  // per tensor: one scale, one zero point
  Tensor b;              // i8, u8, or i32 (a quantized bias)
  QuantParams b_params;  // per tensor
  OutputStage output;    // kind requantized, format i8 or u8, scale and zero point (no clamp)
};

// QGemmOp and QConv2dOp: the full quantized paths. WeightOnlyGemmOp: float activations times
// dequantized weights. Conv2dOp: a float convolution (float or dequantized weights). MxQuantizeOp,
// MxDequantizeOp: block-scaled formats; MxGemmOp: their GEMM. ChooseQParamsOp: parameters chosen from
// a profile. QAddOp: the quantized elementwise add.
using OpRequest = std::variant<QuantizeOp, DequantizeOp, RequantizeOp, QGemmOp, QConv2dOp, WeightOnlyGemmOp, Conv2dOp,
                               MxQuantizeOp, MxDequantizeOp, ChooseQParamsOp, MxGemmOp, QAddOp>;

std::string_view op_name(const OpRequest& op);
// The op's main input (the tensor whose elements the outputs correspond to).
const Tensor& op_input(const OpRequest& op);
DType op_output_dtype(const OpRequest& op);
// The shape of the op's output, from its operands' shapes and parameters alone (nothing is
// evaluated), so a case that takes another case's output can be checked when it is loaded.
Shape op_output_shape(const OpRequest& op);

}  // namespace qc
