// Presets: named numerics specs that reproduce one real implementation bit for bit, each a
// short declarative list of choices with the public source it is taken from (see
// docs/numerics.md "Presets" and "Preset sources"). Implementations change their numerics
// over time: the plain name is current behaviour, and `name@version` keeps an earlier behaviour.
#pragma once

#include "oracles/int_accumulate.hpp"
#include "oracles/policy.hpp"
#include "oracles/qadd.hpp"
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
  // The order of a convolution's dot product (pairs of int16_pair_saturate run along it).
  ConvDepthOrder conv_depth_order = ConvDepthOrder::c_kh_kw;
  // How int16 pairs form (int16_pair_saturate only).
  PairRule pair_rule = PairRule::u8s8_whole_k;
  // Some implementations run convolutions on another kernel than GEMMs (oneDNN 2.6 on a host without
  // VNNI: matmul through its vpmaddubsw GEMM, convolution with plain weights through its exact
  // reference kernel). Unset: `accumulation`. A case file's "accumulation" override sets both.
  std::optional<Accumulation> conv_accumulation;
  std::string qparams;  // the choose_qparams preset used for dynamic quantization
  // The quantized elementwise add (qadd): whose arithmetic evaluates it (oracles/qadd.hpp).
  AddPolicy add{};

  const QuantizePolicy& quantize_for(DType input) const {
    const bool half = input == DType::f16 || input == DType::bf16;
    return half && quantize_half_input ? *quantize_half_input : quantize;
  }
};

// The built-in presets (this file).
const std::vector<Spec>& presets();
// Finds "name" or "name@version" among the built-in presets, then the registered ones; nullopt if
// unknown.
std::optional<Spec> find_preset(std::string_view name);

// Custom presets (docs/numerics.md, "Custom presets and claims"): a team's own named spec, declared
// in a policy file (cases/case.hpp load_preset_file reads one) and registered for the rest of the process.
// Registered presets are found by find_preset, so case files' "spec" and backends' claims can name
// them. Throws InputError for a name that is empty, holds a character outside [A-Za-z0-9._@-]
// ("+" marks explicit policies, ":" a backend's claim variant), or is already a built-in or a
// registered preset. Thread-safe.
void register_preset(Spec s);
// The registered presets, in registration order.
std::vector<Spec> registered_presets();
// Every known preset name: the built-in ones, then the registered ones.
std::vector<std::string> preset_names();
bool is_builtin_preset(std::string_view name);
// Forgets every registered preset (for tests).
void clear_registered_presets();

}  // namespace qc
