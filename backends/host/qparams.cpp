#include "backends/host/qparams.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace qc::host {
namespace {

bool is_glow(const QParamsRule& r) {
  return r.recipe == QParamsRecipe::glow && r.zero_point == ZeroPointChoice::smaller_error &&
         r.nudge == RoundingMode::rna && r.arithmetic == DType::f64 && r.include_zero &&
         r.reduce_range == ReduceRange::none && !r.narrow_range && r.scale_floor == 0;
}

// Glow quantization::chooseQuantizationParams (pytorch/glow lib/Quantization/Base/Base.cpp) for
// 8- and 16-bit formats, without KL calibration.
void glow_params(float min, float max, DType format, QParamsScheme schema, double& scale, std::int64_t& zp) {
  // "We extend the [min, max] interval to ensure that it contains 0."
  min = std::min(min, 0.0f);
  max = std::max(max, 0.0f);
  const auto qmin = int_min(format), qmax = int_max(format);
  // SymmetricWithUnsigned: asymmetric for a range with min >= 0 (zp = qmin), else Symmetric.
  if (schema == QParamsScheme::symmetric_unsigned && min < 0) schema = QParamsScheme::symmetric;
  if (schema == QParamsScheme::symmetric || schema == QParamsScheme::power_of_two) {
    const double rmin = min / static_cast<double>(qmin), rmax = max / static_cast<double>(qmax);
    if (rmin > rmax)
      max = static_cast<float>(rmin * static_cast<double>(qmax));
    else
      min = static_cast<float>(rmax * static_cast<double>(qmin));
  }
  double s = (static_cast<double>(max) - min) / (static_cast<double>(qmax) - static_cast<double>(qmin));
  if (s == 0) s = 0.1;
  const double from_min = static_cast<double>(qmin) - min / s, from_max = static_cast<double>(qmax) - max / s;
  const double err_min = std::abs(static_cast<double>(qmin)) + std::abs(min / s);
  const double err_max = std::abs(static_cast<double>(qmax)) + std::abs(max / s);
  double initial = err_min < err_max ? from_min : from_max;
  if (std::abs(max + min) <= std::numeric_limits<float>::epsilon()) initial = 0;  // a float sum
  zp = initial < static_cast<double>(qmin)   ? qmin
       : initial > static_cast<double>(qmax) ? qmax
                                             : static_cast<std::int64_t>(std::round(initial));
  if (schema == QParamsScheme::power_of_two) s = std::exp2(std::ceil(std::log2(s)));
  scale = static_cast<float>(s);
}

}  // namespace

void dynamic_quantize_linear_params(float xmin, float xmax, DType format, double& scale, std::int64_t& zp) {
  const auto qmin = static_cast<float>(int_min(format)), qmax = static_cast<float>(int_max(format));
  const float lo = std::min(xmin, 0.0f), hi = std::max(xmax, 0.0f);
  const float s = hi == lo ? 1.0f : (hi - lo) / (qmax - qmin);
  const float initial = qmin - lo / s;
  const float clipped = std::max(qmin, std::min(qmax, initial));
  scale = s;
  zp = static_cast<std::int64_t>(std::nearbyint(clipped));  // default FP environment: ties to even
}

Availability supports_choose_qparams(const ChooseQParamsOp& op) {
  const DType t = op.profile.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    return {false, "parameters are chosen from f32, f16 or bf16 profiles"};
  for (std::int64_t i = 0; i < op.profile.size(); ++i)
    if (!std::isfinite(op.profile.get_double(i))) return {false, "a profile holding NaN or infinity has no range"};
  const DType f = op.format;
  if (op.rule == QParamsRule{}) {
    if (f != DType::u8 && f != DType::i8) return {false, "ONNX's rule chooses parameters for u8 and i8"};
    return {};
  }
  if (is_glow(op.rule)) {
    if (f != DType::u8 && f != DType::i8 && f != DType::i16)
      return {false, "Glow's rule is implemented here for u8, i8 and i16"};
    const bool symmetric = op.rule.scheme == QParamsScheme::symmetric || op.rule.scheme == QParamsScheme::power_of_two;
    if (symmetric && int_min(f) >= 0) return {false, "Glow's symmetric schemas need a signed format"};
    return {};
  }
  return {false, "the host code implements the ONNX DynamicQuantizeLinear rule and Glow's four schemas only"};
}

Tensor run_choose_qparams(const ChooseQParamsOp& op) {
  const Tensor& x = op.profile;
  std::int64_t dim = 1, inner = x.size();
  if (op.axis) {
    const int a = resolve_axis(*op.axis, x.rank());
    dim = x.shape()[static_cast<std::size_t>(a)];
    inner = 1;
    for (std::size_t k = static_cast<std::size_t>(a) + 1; k < x.shape().size(); ++k) inner *= x.shape()[k];
  }
  std::vector<float> mins(static_cast<std::size_t>(dim), std::numeric_limits<float>::infinity());
  std::vector<float> maxs(static_cast<std::size_t>(dim), -std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<std::size_t>((i / inner) % dim);
    const auto v = static_cast<float>(x.get_double(i));  // f32, f16 and bf16 values are exact in float
    mins[c] = std::min(mins[c], v);
    maxs[c] = std::max(maxs[c], v);
  }
  Tensor y(DType::f64, op.axis ? Shape{dim, 2} : Shape{2});
  for (std::size_t c = 0; c < mins.size(); ++c) {
    double scale = 0;
    std::int64_t zp = 0;
    if (op.rule == QParamsRule{})
      dynamic_quantize_linear_params(mins[c], maxs[c], op.format, scale, zp);
    else
      glow_params(mins[c], maxs[c], op.format, op.rule.scheme, scale, zp);
    y.set_double(static_cast<std::int64_t>(2 * c), scale);
    y.set_double(static_cast<std::int64_t>(2 * c + 1), static_cast<double>(zp));
  }
  return y;
}

}  // namespace qc::host
