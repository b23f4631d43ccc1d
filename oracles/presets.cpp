#include "oracles/presets.hpp"

namespace qc {
namespace {

using K = ComputeFormat::Kind;

std::vector<Spec> make_presets() {
  std::vector<Spec> v;
  {
    Spec s;
    s.name = "onnx";
    s.description = "ONNX QuantizeLinear: saturate(round(x / y_scale) + zp), division in the scale's type, ties to even";
    s.sources = {"onnx/onnx onnx/defs/quantization/defs.cc::QuantizeLinear_ver25_doc"};
    s.quantize.order = QuantizeOrder::div_then_add_int;
    s.quantize.compute = {K::scale_type, 0};
    s.quantize.rounding = RoundingMode::rne;
    s.quantize.clamp = Clamp::int_after;
    s.quantize.nan = NanRule::unspecified;
    v.push_back(s);
  }
  return v;
}

}  // namespace

const std::vector<Spec>& presets() {
  static const std::vector<Spec> kPresets = make_presets();
  return kPresets;
}

std::optional<Spec> find_preset(std::string_view name) {
  for (const Spec& s : presets())
    if (s.name == name) return s;
  return std::nullopt;
}

}  // namespace qc
