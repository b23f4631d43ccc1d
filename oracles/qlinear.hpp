// What the quantized GEMM and convolution paths share (docs/design.md "Quantized GEMM and
// convolution paths"): how their operands are quantized, the numerics policy, and the output
// stage that turns integer accumulators into the requested output (int32, a dequantized float,
// or a requantized int8/uint8 with a fused clamp). qgemm.hpp and qconv2d.hpp differ only in how
// they gather the operands into dot products.
//
// The exact result of one output element is the real number
//     v = Σ_s  s_a[s] · s_b[s] · acc_s  (+ bias)
// where s runs over K segments (one, unless a parameter is blocked along K; see qgemm.hpp) and
// acc_s = Σ_{k in s} (a_k - za_s)(b_k - zb_s) is exact. The output stage evaluates v under the
// policy from what the accumulator actually holds (an int32 wrap, a saturated pair), and labels
// each element against the exact value:
//   int32        the accumulator (+ int32 bias), converted to i32 with wrap; `saturated` where an
//                accumulation overflowed.
//   dequantized  float(acc_s) * (float(s_a) * float(s_b)) per segment, summed in segment order,
//                plus float(bias), every conversion and operation rounded (RNE) in the
//                DequantizePolicy's compute format (exact: one rounding at the end), then cast (RNE)
//                to the output format. The
//                accumulator has no zero point, so the four DequantizeOrders coincide. Labels are
//                tie / near_tie / clear against the output grid (kNearTieDistance output ulps),
//                `saturated` for an overflowed accumulation or a non-finite result.
//   requantized  one segment: requantize_element(acc, s_a, s_b, s_out) under the RequantizePolicy
//                (every scheme), with the fused clamp intersected into its clip; several segments
//                or a float bias: only RequantizeScheme::ideal is defined (round(v / s_out) + zp
//                exactly), since the fixed-point schemes take one accumulator and one multiplier.
#pragma once

#include "oracles/choose_qparams.hpp"
#include "oracles/int4.hpp"
#include "oracles/int_accumulate.hpp"
#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "oracles/requantize.hpp"
#include "qconform/ops.hpp"
#include "qconform/qparams.hpp"
#include "qconform/tensor.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qc {

// ---- Operands --------------------------------------------------------------------------------

// An operand after quantization: integer values and the parameters they are quantized with.
struct QuantizedOperand {
  Tensor q;            // integer values, one per element
  QuantParams params;  // validated against q's shape (possibly the [rows, K] view of a dynamic per-row A)
};

// Quantizes (static or dynamic) or validates the activation. Throws InputError on bad parameters or
// a NaN the quantize policy leaves unspecified.
QuantizedOperand quantize_activation(const ActivationOperand& a, const QuantizePolicy& policy);
// Unpacks, quantizes or validates the weights.
QuantizedOperand quantize_weights(const QWeights& w, const QuantizePolicy& policy);

// An operand's integer values and parameters, where they are.
struct OperandView {
  const Tensor& q;
  const QuantParams& params;
};
// quantize_activation and quantize_weights without their copy of integer values that need no
// quantization (1 MiB at 1024 x 1024, a pass on the calling thread): the view is then of the op's
// own values and parameters (valid while the op lives), else of `storage`, which takes the
// function's result. The same checks and errors.
OperandView activation_view(const ActivationOperand& a, const QuantizePolicy& policy, QuantizedOperand& storage);
OperandView weights_view(const QWeights& w, const QuantizePolicy& policy, QuantizedOperand& storage);

// The real values a quantized operand stands for, in its row-major order: (q - zp) * s exactly, or,
// with `format`, the values dequantize.hpp rounds them to in that float format under `policy`.
std::vector<Rational> dequantized_values(const QuantizedOperand& x, std::optional<DType> format,
                                         const DequantizePolicy& policy);

// ---- Output ----------------------------------------------------------------------------------

enum class FusedActivation : std::uint8_t { none, relu, relu6, relu_n1_to_1 };
inline constexpr EnumEntry<FusedActivation> kFusedActivationTable[] = {
    {FusedActivation::none, "none"},
    {FusedActivation::relu, "relu"},
    {FusedActivation::relu6, "relu6"},
    {FusedActivation::relu_n1_to_1, "relu_n1_to_1"},
};
constexpr std::span<const EnumEntry<FusedActivation>> enum_table(FusedActivation) { return kFusedActivationTable; }
std::string_view name(FusedActivation a);

// The output integer range of a fused activation. tensorflow/lite/kernels/kernel_util.cc::
// CalculateActivationRangeQuantizedImpl: quantize(f) = zp + (int)TfLiteRound(f / scale) with the
// division in f32 and TfLiteRound = std::round (half away); relu [max(qmin, q(0)), qmax], relu6
// [max(qmin, q(0)), min(qmax, q(6))], relu_n1_to_1 [max(qmin, q(-1)), min(qmax, q(1))].
IntRange fused_activation_range(FusedActivation a, float scale, std::int64_t zero_point, DType out);

// ---- Policy ----------------------------------------------------------------------------------

struct QGemmPolicy {
  QuantizePolicy quantize{};                             // activations (and float weights)
  Accumulation accumulation = Accumulation::int32_wrap;  // ONNX: "accumulation may overflow if and only if in 32 bits"
  ZeroPointCorrection zero_points = ZeroPointCorrection::subtract_first;
  ConvDepthOrder conv_depth_order = ConvDepthOrder::c_kh_kw;
  PairRule pair_rule = PairRule::u8s8_whole_k;  // read by int16_pair_saturate only
  RequantizePolicy requantize{};                // requantized outputs
  DequantizePolicy dequantize{};                // dequantized outputs: the compute format of the float stage
  bool operator==(const QGemmPolicy&) const = default;
};

// ---- The shared output stage -----------------------------------------------------------------

// The integer result of a GEMM or convolution and what each accumulator is worth: output element e
// has segments s = 0..S-1 with accumulator value[e*S + s]; its bias is channel[e] (its column when
// `channel` is empty).
//
// Scales without a table per element: element e is row e / cols, column e % cols; segment s of it
// takes A's scale a.scales[a_index[row*S + s]] and B's scale b.scales[b_index[(b_table*S + s)*cols +
// column]] with b_table = row / rows_per_b. A GEMM gives one index per row of A and one per column
// of B (one B table per batch of a batched B); cols = 1 and rows_per_b = 1 make both tables per
// element, for outputs that are not rows by columns (a convolution, selected elements).
struct ScaledAccumulators {
  Shape shape;  // output shape
  std::int64_t segments = 1;
  AccumulatorValues value;
  std::unordered_map<std::int64_t, BigInt> exact_where_different;  // keyed by e*S + s
  std::int64_t cols = 1, rows_per_b = 1;
  std::vector<std::int32_t> a_index, b_index;
  std::vector<std::int32_t> channel;
  std::int64_t channels = 0;  // how many output channels the op has (a bias has one value each)
  AccumulationProof proof;

  std::int32_t a_at(std::int64_t e, std::int64_t s) const {
    return a_index[static_cast<std::size_t>((e / cols) * segments + s)];
  }
  std::int32_t b_at(std::int64_t e, std::int64_t s) const {
    const std::int64_t row = e / cols;
    return b_index[static_cast<std::size_t>(((row / rows_per_b) * segments + s) * cols + e % cols)];
  }
  std::int64_t channel_at(std::int64_t e) const {
    return channel.empty() ? e % cols : channel[static_cast<std::size_t>(e)];
  }
};

// The accumulators of elements `only` (flat indices into all.shape, any order) of a whole result,
// gathered: element j of the result is all's element only[j] (shape [only.size()]).
ScaledAccumulators select_accumulators(const ScaledAccumulators& all, const std::vector<std::int64_t>& only);

// What the output stage takes: the integer stage of a qgemm or qconv2d (at all its elements, or at
// some) and the operands' parameters after quantization (finish_output's `a` and `b`).
struct LinearAccumulators {
  ScaledAccumulators acc;
  QuantParams a, b;
};

// What was proven about several integer GEMMs together (a convolution's groups, a batched GEMM's
// batches): what holds for every one of them. `first`: `into` takes p as it is.
void merge_proof(AccumulationProof& into, const AccumulationProof& p, bool first);

// Result of qgemm and qconv2d.
class QLinearResult {
 public:
  Tensor y;                   // the output, shape ScaledAccumulators::shape
  std::vector<Label> labels;  // one per element
  AccumulationProof proof;    // how the integer stage was proven exact (or where it was not)
  // Requantized outputs under a non-ideal scheme, and dequantized outputs with several segments or
  // a float bias: how many elements their fast paths left to the per-element definition (for tests;
  // 0 on every other path).
  std::int64_t slow_elements = 0;

  // The exact pre-rounding value of element i, from the exact accumulators: the integer sum (+ bias)
  // for int32 outputs; the real v for dequantized outputs; v / s_out + zp for requantized outputs.
  Rational exact_value(std::int64_t i) const;
  // What the accumulator of element i, segment s holds under the policy, and its exact value.
  std::int64_t accumulator(std::int64_t i, std::int64_t s = 0) const;
  BigInt exact_accumulator(std::int64_t i, std::int64_t s = 0) const;
  // The int32 bias added to element i's accumulator (0 without one; one segment only).
  std::int64_t int_bias(std::int64_t i) const;
  std::int64_t segments() const;
  // s_a * s_b of element i, segment s: what one unit of its accumulator is worth.
  Rational scale_product(std::int64_t i, std::int64_t s = 0) const;
  // Every step of element i from its exact accumulators to its output under `policy` (the policy the
  // result was computed with): the accumulation as the policy holds it, the bias, then the output
  // stage (the multiplier's derivation and each rounding of the requantize scheme, or each float
  // operation of the dequantization). For `qconform explain`.
  std::vector<TraceStep> trace(std::int64_t i, const QGemmPolicy& policy) const;
  // The integer stage of elements `only` (flat indices) as this result holds it: the accumulators
  // gathered, with the operands' parameters, so that another output stage can finish them
  // (finish_output) without summing again.
  LinearAccumulators accumulators_at(const std::vector<std::int64_t>& only) const;
  // Every element's: to finish the same sums under another output stage.
  LinearAccumulators accumulators() const;

  struct State;
  std::shared_ptr<const State> state;
};

// The output stage, one definition for qgemm and qconv2d. `bias`: none, i32 (one per channel, added
// to the accumulator with the accumulator's own addition; needs one segment) or a float format
// (added to the real value; float outputs, or the ideal requantize scheme). Throws InputError for
// combinations the policy cannot express.
QLinearResult finish_output(ScaledAccumulators acc, const QuantParams& a, const QuantParams& b,
                            const std::optional<Tensor>& bias, const OutputStage& out, const QGemmPolicy& policy);
inline QLinearResult finish_output(LinearAccumulators acc, const std::optional<Tensor>& bias, const OutputStage& out,
                                   const QGemmPolicy& policy) {
  return finish_output(std::move(acc.acc), acc.a, acc.b, bias, out, policy);
}

// finish_output with the integer stage run inside it, so that the output stage can take each group
// of rows while it is still in cache, on the thread that summed it (the ideal requantize's row
// kernel does): `acc` comes without its values, exact_where_different and proof, which `sums`
// returns (accumulate_gemm, given `ready`). The result is finish_output's on the completed
// accumulators, errors included.
QLinearResult finish_output_by_rows(ScaledAccumulators acc, const QuantParams& a, const QuantParams& b,
                                    const std::optional<Tensor>& bias, const OutputStage& out,
                                    const QGemmPolicy& policy,
                                    const std::function<IntGemmAccumulators(const SumRowsReady*)>& sums);

// The ideal requantize scheme applied to a real value x = v / s_out: requantize_element of
// accumulator 1 with the exact multiplier x, so rounding, zero-point placement, clamp and label are
// requantize.hpp's own (RequantizeScheme::ideal; p.scheme must be ideal).
RequantizeElement requantize_real(const Rational& v_over_scale, double scale, DType scale_dtype,
                                  std::int64_t zero_point, DType out, const RequantizePolicy& p, bool trace = false);

// The dot product behind one output element of a GEMM or convolution, as the policy quantizes the
// operands: position j (in the policy's depth order) multiplies a[j] - za[j] by b[j] - zb[j]. The
// sources are flat indices into the activation (GEMM A, convolution input) and the weights as given
// (-1: a padded tap, which holds `a[j]` = the padding value). For `qconform explain`.
struct DotTerms {
  std::vector<std::int64_t> a, za, a_source;
  std::vector<std::int64_t> b, zb, b_source;
  std::vector<std::int64_t> segment_starts{0};  // positions where a K segment (own scales) starts
  std::vector<double> a_scale, b_scale;         // per segment
  std::int64_t bias_channel = 0;                // the bias value (and output channel) of the element
};

// Where an exact value v lies against the grid of float format `out`: tie (a midpoint between two
// neighbours), near_tie (within kNearTieDistance of the neighbours' spacing), clear. The rational form
// of dequantize's exact_product_label.
Label float_grid_label(const Rational& v, DType out);
// The same label for a v known through a double: v = t when sticky == 0; otherwise v lies strictly
// between t and its neighbouring double in the direction sign(sticky) (t rounded to nearest from v,
// with the sign of the residual v - t). t is 0 or a normal double (|t| >= 2^-1022), and t == 0 only
// with sticky == 0. Every value the label compares v with (the grid, its midpoints, the near-tie band's
// edges and the largest finite value) is a double, so t and the residual's sign decide it exactly.
Label float_grid_label(double t, int sticky, DType out);

// The exact value of a finite float or integer tensor element.
Rational exact_element(const Tensor& t, std::int64_t i);

}  // namespace qc
