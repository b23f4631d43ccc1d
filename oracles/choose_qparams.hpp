// Parameter choice: a float range [min, max] -> scale and zero point, exactly as each
// implementation's code computes it (docs/numerics.md "Choosing quantization parameters").
//
// Each implementation is one recipe, a named function in choose_qparams.cpp that transcribes
// the cited code operation by operation: every float operation is evaluated with qc::Arith in
// the format the code uses (f32 for `float`, f64 for `double`), conversions included, so the
// result is the code's result bit for bit. The recipes differ in more than their parameters
// (the order of operations, where the scale is rounded to float, which zero-point formula,
// which special cases), so a QParamsRule names its recipe and then the choices that recipe's
// code exposes. Presets below are the rows of that table in docs/numerics.md.
//
// Which fields each recipe reads (a setting the recipe's code cannot express is an InputError):
//   recipe            scheme                      zero_point               nudge  reduce_range   other
//   onnx_ort          asymmetric, symmetric(i8)   from_min                 any    ort_int8       arithmetic
//   gemmlowp          asymmetric                  smaller_error            any    -              arithmetic
//   fbgemm            asymmetric, symmetric,      smaller_error            any    -              scale_floor
//                     power_of_two
//   pytorch_aten      as fbgemm                   smaller_error_difference any    halve          scale_floor
//   pytorch_observer  asymmetric, symmetric       from_min (round first)   any    halve          scale_floor,
//                                                                                                arithmetic
//   xnnpack_qd8       asymmetric                  xnnpack_sign_rule        any    -              arithmetic
//   glow              all four                    smaller_error            any    -              arithmetic
// include_zero and narrow_range are read by every recipe (all cited callers extend the range to
// contain 0; narrow_range is gemmlowp's flag, applied to the integer range of any recipe).
//
// Transcendental steps (log2, log, exp2 in the power-of-two rules) call the host C library,
// as the cited code does; they only matter for scales within a few ulps of a power of two.
#pragma once

#include "oracles/format.hpp"
#include "oracles/rounding.hpp"
#include "qconform/ops.hpp"
#include "qconform/qparams.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace qc {

struct ChosenQParams {
  double scale = 1;                // exactly representable in scale_dtype; the code's own value,
                                   // even where that is 0 (gemmlowp for min == max == 0)
  DType scale_dtype = DType::f32;  // the format the code stores the scale in
  std::int64_t zero_point = 0;
  std::int64_t qmin = 0, qmax = 0;  // the integer range the rule used
  // XNNPACK quantizes with x * r + zp where r = 255/(max - min) in f32 is formed first and
  // scale = 1/r; 1/scale is not always r again, so a quantize policy emulating XNNPACK needs r.
  std::optional<double> quantize_multiplier;
};

// min, max: the observed range (finite, min <= max); q: the integer format.
// Throws InputError for a non-finite or inverted range, a non-integer q, or a rule setting the
// recipe's code cannot express.
ChosenQParams choose_qparams(float min, float max, DType q, const QParamsRule& rule);

// The integer range a rule quantizes to: the format's range with narrow_range and reduce_range
// applied, and Glow's int32 -> int30 reduction (getQuantizedRange).
std::pair<std::int64_t, std::int64_t> qparams_range(DType q, const QParamsRule& rule);

// A chosen pair as per-tensor QuantParams (throws InputError when the scale is not positive and
// finite, e.g. gemmlowp's scale 0 for an all-zero range).
QuantParams to_quant_params(const ChosenQParams& c);

// Dynamic quantization (DRQ): the min and max of x (per tensor when `axis` is empty, else one
// range per index along `axis`, e.g. axis 0 for the rows of an [M, K] activation), then
// choose_qparams for each. x: f32, f16 or bf16 (values exact in float), every element finite.
struct DynamicQParams {
  QuantParams params;                 // per tensor or per axis, scale_dtype from the rule
  std::vector<ChosenQParams> chosen;  // one per parameter index, with quantize multipliers
  std::vector<double> mins, maxs;     // the observed range of each, before the rule extends it to 0
};
DynamicQParams choose_dynamic_qparams(const Tensor& x, DType q, const QParamsRule& rule,
                                      std::optional<int> axis = std::nullopt);

// Named presets: one rule per implementation, each citing its source.
struct QParamsPreset {
  std::string_view name;
  std::string_view source;  // repository path::function
  QParamsRule rule;
};
std::span<const QParamsPreset> qparams_presets();
std::optional<QParamsRule> find_qparams_preset(std::string_view name);

}  // namespace qc
