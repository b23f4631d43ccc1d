// Presets: named numerics specs that reproduce one real implementation bit for bit, each a
// short declarative list of choices with the public source it is taken from (see
// docs/presets.md and ../shared/NUMERICS.md). Implementations change their numerics over time:
// the plain name is current behaviour, and `name@version` keeps an earlier behaviour.
#pragma once

#include "oracles/int_accumulate.hpp"
#include "oracles/policy.hpp"
#include "oracles/requantize.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qc {

// A numerics spec: a policy for every op, with its provenance.
struct Spec {
  std::string name;                  // "onnx", "migraphx-ref@2023.10", or "<preset>+custom" for explicit policies
  std::string description;           // one line
  std::vector<std::string> sources;  // repository path::function, one per citation
  QuantizePolicy quantize;
  // Some implementations take another code path for f16/bf16 inputs (ORT CPU).
  std::optional<QuantizePolicy> quantize_half_input;
  DequantizePolicy dequantize;
  RequantizePolicy requantize;
  Accumulation accumulation = Accumulation::int32_wrap;
  // How GEMM/conv zero points enter the accumulation: subtracted from the operands first, or
  // the raw bytes multiplied and a correction added (what vpmaddubsw kernels do).
  ZeroPointCorrection zero_points = ZeroPointCorrection::subtract_first;
  std::string qparams;  // the choose_qparams preset used for dynamic quantization

  const QuantizePolicy& quantize_for(DType input) const {
    const bool half = input == DType::f16 || input == DType::bf16;
    return half && quantize_half_input ? *quantize_half_input : quantize;
  }
};

const std::vector<Spec>& presets();
// Finds "name" or "name@version"; nullopt if unknown.
std::optional<Spec> find_preset(std::string_view name);

}  // namespace qc
