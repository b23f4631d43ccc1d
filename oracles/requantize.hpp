// Requantize (int32 accumulator -> int8/uint8/int16) under any RequantizePolicy, exactly; and the
// integer accumulation that produces the accumulator (exact, int32 wrap / saturate, int64, and the
// int16 pair saturation of x86 vpmaddubsw).
//
// A policy names one real scheme (docs/numerics.md "Requantization schemes in real
// implementations"): the ideal exact rational, a float multiplier formed and applied in stated
// IEEE formats (evaluated with qc::Arith, one rounding per operation), or one of the fixed-point
// schemes of oracles/fixed_point.hpp with the rule that turns the real multiplier into integers.
// Every element gets a Label relative to the ideal exact value.
#pragma once

#include "oracles/fixed_point.hpp"
#include "oracles/ieee.hpp"
#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "oracles/quantize.hpp"  // TraceStep
#include "qconform/ops.hpp"
#include "qconform/tensor.hpp"

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qc {

// ---- Policy ----------------------------------------------------------------------------------

enum class RequantizeScheme : std::uint8_t {
  ideal,               // round(acc * s_in*s_w/s_out) on exact rationals, with `rounding`
  float_multiplier,    // multiplier and product in IEEE formats (ORT MLAS, oneDNN, FBGEMM float, ONNX ref, Glow
                       // interpreter, TVM FP)
  gemmlowp_double,     // TFLite default: RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << ls, M), rs)
  tflite_single,       // TFLITE_SINGLE_ROUNDING: (x*M + 2^(30-shift)) >> (31-shift)
  tflite_int64,        // TFLite int16x8: int64 accumulator, 16-bit reduced multiplier
  tosa_single,         // TOSA RESCALE scale32, SINGLE_ROUND
  tosa_double,         // TOSA RESCALE scale32, DOUBLE_ROUND
  tosa_scale16,        // TOSA RESCALE scale32 = false (apply_scale_16)
  xnnpack_rndnu,       // (acc*M24 + 2^(s-1)) >> s with the f32 scale's significand, clamp, + zp
  xnnpack_fp32,        // lrintf(clamp((float)acc * scale, qmin-zp, qmax-zp)) + zp
  qnnpack_precise,     // round half away on |acc| * M24 >> s
  qnnpack_q31,         // Q31 high multiply (round half up), then a round-half-away shift
  glow_int32,          // ((((x >> pre) * S) + 2^(post-1)) >> post) + offset in int32
  stablehlo_truncate,  // stablehlo-legalize-quant-to-math: f32(acc) * f32 scale, convert (truncates)
  fbgemm_fixed_point,  // zp + ((acc*M + 2^(rs-1)) >> rs), FBGEMM RequantizeFixedPoint
  gemmlowp_scalar,     // gemmlowp's own output stage, scalar: as gemmlowp_double, the pre-shift saturating
};
inline constexpr std::array<RequantizeScheme, 16> kAllRequantizeSchemes = {
    RequantizeScheme::ideal,          RequantizeScheme::float_multiplier,   RequantizeScheme::gemmlowp_double,
    RequantizeScheme::tflite_single,  RequantizeScheme::tflite_int64,       RequantizeScheme::tosa_single,
    RequantizeScheme::tosa_double,    RequantizeScheme::tosa_scale16,       RequantizeScheme::xnnpack_rndnu,
    RequantizeScheme::xnnpack_fp32,   RequantizeScheme::qnnpack_precise,    RequantizeScheme::qnnpack_q31,
    RequantizeScheme::glow_int32,     RequantizeScheme::stablehlo_truncate, RequantizeScheme::fbgemm_fixed_point,
    RequantizeScheme::gemmlowp_scalar};
std::string_view name(RequantizeScheme s);
std::string_view describe(RequantizeScheme s);
std::optional<RequantizeScheme> parse_requantize_scheme(std::string_view s);

// How the real multiplier s_in*s_w/s_out is formed, each operation rounded to `multiplier_format`.
enum class MultiplierOrder : std::uint8_t {
  left_to_right,        // (s_in * s_w) / s_out  (ORT ComputeOutputScale, XNNPACK, FBGEMM, TFLite per-channel in f64)
  product_then_divide,  // (s_in * s_w) rounded to the scales' own format, then / s_out in multiplier_format
                        // (TFLite legacy GetQuantizedConvolutionMultipler: fp32 product, double division)
  per_op,               // no multiplier: ((f(acc) * s_in) * s_w) / s_out, each in product_format (oneDNN ref)
  reciprocal_scales,    // (1/s_out) / ((1/s_in) * (1/s_w)), each reciprocal rounded first (ideep compute_scales,
                        // PyTorch's onednn engine)
  product_times_reciprocal,  // (s_in * s_w) * (1/s_out) (PyTorch's qnnpack engine, generate_requantization_scales)
};
std::string_view name(MultiplierOrder o);
std::optional<MultiplierOrder> parse_multiplier_order(std::string_view s);

// How a fixed-point scheme turns the formed real multiplier into integers.
enum class MultiplierDerivation : std::uint8_t {
  tflite,               // QuantizeMultiplier, double-rounding build (frexp, RNA to Q31)
  tflite_single_round,  // QuantizeMultiplier, TFLITE_SINGLE_ROUNDING (shift > 30 saturates)
  fp32_mantissa,        // the f32 scale's 24-bit significand and 150 - biased exponent (XNNPACK rndnu, QNNPACK precise)
  qnnpack_q31,          // the f32 significand << 7 as Q31, post shift 126 - biased exponent
  tosa_scale32,         // MLIR computeMultiplierAndShiftTosaScale32
  tosa_scale16,         // MLIR computeMultiplierAndShiftTosaScale16
  glow,                 // Glow quantizeScaleOffset32To8 (pre-shift, integer scale, post-shift)
  fbgemm,               // FBGEMM ChooseRequantizationMultiplier (float doubling/halving, RNE to Q31)
};
std::string_view name(MultiplierDerivation d);
std::optional<MultiplierDerivation> parse_multiplier_derivation(std::string_view s);

// Where the output zero point is added.
enum class ZeroPointAdd : std::uint8_t {
  int_after_rounding,     // round(acc * m) + zp in integers
  float_before_rounding,  // round(acc * m + zp), the addition in product_format (oneDNN, Glow interpreter, TVM FP)
};
std::string_view name(ZeroPointAdd z);
std::optional<ZeroPointAdd> parse_zero_point_add(std::string_view s);

struct RequantizePolicy {
  RequantizeScheme scheme = RequantizeScheme::ideal;
  // Every scheme but `ideal`: how s_in*s_w/s_out is formed. per_op only for the float schemes.
  MultiplierOrder multiplier_order = MultiplierOrder::left_to_right;
  ComputeFormat multiplier_format{ComputeFormat::Kind::f32, 0};  // exact, f64, f32, f16, bf16
  // Fixed-point schemes: the integer multiplier rule (see scheme_accepts()).
  MultiplierDerivation derivation = MultiplierDerivation::tflite;
  // ideal and float_multiplier: the product's format, zero-point placement, rounding and clamp.
  // The fixed-point schemes, xnnpack_fp32 and stablehlo_truncate take these from their source.
  ComputeFormat product_format{ComputeFormat::Kind::f32, 0};
  ZeroPointAdd zero_point = ZeroPointAdd::int_after_rounding;
  RoundingMode rounding = RoundingMode::rne;
  Clamp clamp = Clamp::int_after;
  // Every scheme: the output range (narrow range; an explicit clip such as a fused ReLU6).
  bool narrow_range = false;
  std::optional<std::pair<std::int64_t, std::int64_t>> clip;

  bool operator==(const RequantizePolicy&) const = default;
};

// The policy a scheme's own source uses: its multiplier order and format and its derivation
// (e.g. xnnpack_rndnu: f32 left to right, fp32_mantissa; gemmlowp_double: f64, tflite).
RequantizePolicy requantize_policy_for(RequantizeScheme s);
// Whether a scheme can use a derivation (glow_int32 needs glow and only glow; tosa_scale16 needs a
// 16-bit multiplier; the float schemes and ideal use none).
bool scheme_accepts(RequantizeScheme s, MultiplierDerivation d);
bool scheme_uses_derivation(RequantizeScheme s);
// One line, every field that matters for the scheme: "gemmlowp_double(multiplier=f64 left_to_right,
// derivation=tflite)".
std::string to_string(const RequantizePolicy& p);

// ---- One element -----------------------------------------------------------------------------

// The three scales, each exactly representable in `dtype` (the formats real code keeps them in).
struct RequantizeScales {
  double input = 1.0;
  double weight = 1.0;
  double output = 1.0;
  DType dtype = DType::f32;
};

// Everything a scheme needs per channel, formed once: the exact multiplier, the multiplier as the
// policy forms it, and the scheme's integer parameters.
struct RequantizeMultiplier {
  RequantizeScales scales;
  Rational exact;                        // s_in * s_w / s_out exactly: the ideal multiplier
  ExactFloat formed;                     // as formed under multiplier_order/format (unused for per_op)
  std::optional<ScaleShift> fixed;       // derivations other than glow: real ~= M * 2^-right_shift
  std::optional<GlowScale> glow;         // the glow derivation
  std::optional<float> stablehlo_scale;  // stablehlo_truncate: nullopt when the lowering skips scaling
  std::vector<TraceStep> steps;          // how it was formed and derived (when traced)
};

// Throws InputError when the scales are invalid or the scheme's derivation cannot represent the
// multiplier (e.g. xnnpack_rndnu with a scale >= 256).
RequantizeMultiplier prepare_multiplier(const RequantizeScales& scales, const RequantizePolicy& p, bool trace = false);

struct RequantizeElement {
  std::int64_t q = 0;
  Label label = Label::clear;
  Rational ideal;                // acc * s_in*s_w/s_out + zp, exactly
  std::vector<TraceStep> steps;  // every step (when traced), the multiplier's first
};

// One accumulator value. Labels are relative to the ideal exact value v = acc * s_in*s_w/s_out:
//   saturated  v + zp >= qmax + 1/2 or <= qmin - 1/2: every rounding to nearest is clamped, so the
//              clamp (or a scheme's overflow on the way there) decides the element;
//   tie        v is exactly a half-integer: the schemes' tie rules (RHU, RNA, RNE) part there;
//   near_tie   v within kNearTieDistance of a half-integer: an approximated multiplier (Q31, f32
//              product, a 16-bit multiplier) can move it across;
//   clear      otherwise.
// Measuring against v rather than a scheme's own intermediate gives one element the same label
// under every policy, so mismatches between two policies split by label consistently.
RequantizeElement requantize_element(std::int64_t acc, const RequantizeMultiplier& m, std::int64_t zero_point,
                                     DType out, const RequantizePolicy& p, bool trace = false);
RequantizeElement requantize_element(std::int64_t acc, const RequantizeScales& scales, std::int64_t zero_point,
                                     DType out, const RequantizePolicy& p, bool trace = false);

// ---- Tensor ----------------------------------------------------------------------------------

// Throws InputError naming `where` and the field.
void validate(const RequantizeParams& p, const Shape& acc, DType out, const std::string& where);

struct RequantizeResult {
  Tensor q;
  std::vector<Label> labels;       // empty unless requested
  std::int64_t slow_elements = 0;  // how many elements the fast path handed to the slow path
};

// acc: any integer tensor (int32 accumulators; the int64-input scheme tflite_int64 takes what the
// storage holds). out: an integer format.
//
// Two paths give identical results, labels and errors. The slow path evaluates every element with
// requantize_element (exact rationals for the ideal value and the float recipes). The fast path
// prepares each channel's multiplier the same way, then evaluates the fixed-point schemes in
// machine integers (the same kernels, with their int32 wraps), the f32/f64 float recipes in
// hardware IEEE arithmetic, and the ideal value (the ideal scheme, exact float products and every
// label) with a bounded double approximation settled exactly in 128-bit integers near a boundary;
// it hands an element to the slow path whenever one of its bounds does not hold.
RequantizeResult requantize(const Tensor& acc, const RequantizeParams& p, DType out, const RequantizePolicy& policy,
                            OraclePath path = OraclePath::fast, bool want_labels = true);

// ---- Accumulation ----------------------------------------------------------------------------

enum class Accumulation : std::uint8_t {
  exact,                // arbitrary precision
  int32_wrap,           // int32, two's-complement wrap (ONNX: "accumulation may overflow if and only if in 32 bits")
  int32_saturate,       // int32, each add saturating, in index order k = 0, 1, ...
  int64,                // int64, wrapping
  int16_pair_saturate,  // x86 vpmaddubsw + vpmaddwd + vpaddd: u8 x s8 pairs saturated to int16
};
inline constexpr std::array<Accumulation, 5> kAllAccumulations = {Accumulation::exact, Accumulation::int32_wrap,
                                                                  Accumulation::int32_saturate, Accumulation::int64,
                                                                  Accumulation::int16_pair_saturate};
std::string_view name(Accumulation a);
std::string_view describe(Accumulation a);
std::optional<Accumulation> parse_accumulation(std::string_view s);

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

}  // namespace qc
