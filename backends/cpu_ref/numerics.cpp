#include "backends/cpu_ref/numerics.hpp"

#include "backends/cpu_ref/formats.hpp"

#include <array>

namespace qc::cpu_ref {
namespace {

// Each row restates its preset (oracles/presets.cpp) in cpu-ref's terms; the sources are the
// preset's.
constexpr std::array<Numerics, 3> kNumerics = {{
    // onnx/onnx onnx/defs/quantization/defs.cc::QuantizeLinear_ver25_doc: saturate(round(x / y_scale)
    // + y_zero_point), rounding half to even, the division in the scale's type;
    // doc_strings.cc::kDoc_DequantizeLinear_ver24: (x - x_zero_point) * x_scale;
    // math/utils.cc::QLinearMatMulDoc: the requantization is exact, rounded half to even.
    {.preset = "onnx",
     .description = "ONNX: x / s in the scale's type, nearbyint, + zp; (q - zp) * s; exact requantize",
     .reciprocal = false,
     .quantize_in = FloatType::scale_type,
     .ties_away = false,
     .nan_to_qmax = false,
     .dequantize_in = FloatType::scale_type,
     .requantize = RequantizeRoutine::exact},
    // tensorflow/tensorflow tensorflow/lite/kernels/internal/reference/quantize.h::AffineQuantize:
    // TfLiteRound(val / static_cast<float>(scale)) + zero_point (std::round: ties away);
    // reference/dequantize.h::Dequantize: static_cast<float>(scale * (val - zero_point)), scale a
    // double; common.cc::MultiplyByQuantizedMultiplier and quantization_util.cc::QuantizeMultiplier.
    {.preset = "tflite-reference",
     .description = "TFLite reference: x / (float)s, std::round (ties away), + zp; (q - zp) * s in double; gemmlowp "
                    "requantize",
     .reciprocal = false,
     .quantize_in = FloatType::f32,
     .ties_away = true,
     .nan_to_qmax = false,
     .dequantize_in = FloatType::f64,
     .requantize = RequantizeRoutine::gemmlowp},
    // pytorch/FBGEMM include/fbgemm/QuantUtils.h::Quantize: zero_point + nearbyint(src * (1.f / scale));
    // src/QuantUtilsAvx2.cc::QuantizeAvx2 (min_ps takes NaN to qmax); OutputProcessing-inl.h::
    // ReQuantizeOutput: nearbyint(acc * (act_scale * weight_scale / out_scale as float)) + zp.
    {.preset = "pytorch-cpu",
     .description = "PyTorch CPU (FBGEMM): x * (1.f / s), nearbyint, + zp, NaN -> qmax; float(q - zp) * s; f32 "
                    "requantize",
     .reciprocal = true,
     .quantize_in = FloatType::f32,
     .ties_away = false,
     .nan_to_qmax = true,
     .dequantize_in = FloatType::f32,
     .requantize = RequantizeRoutine::f32_multiplier},
}};

}  // namespace

std::span<const Numerics> claimable() { return kNumerics; }

const Numerics* find_numerics(std::string_view preset) {
  for (const Numerics& n : kNumerics)
    if (n.preset == preset) return &n;
  return nullptr;
}

std::string claimable_list() {
  std::string s;
  for (const Numerics& n : kNumerics) s += (s.empty() ? "" : ", ") + std::string(n.preset);
  return s;
}

double FloatIn::round(double v) const { return round_to_format(t, v); }

FloatIn float_in(FloatType f, DType scale_dtype) {
  switch (f) {
    case FloatType::scale_type:
      return {scale_dtype};
    case FloatType::f32:
      return {DType::f32};
    case FloatType::f64:
      return {DType::f64};
  }
  return {scale_dtype};
}

}  // namespace qc::cpu_ref
