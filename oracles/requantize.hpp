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

}  // namespace qc
