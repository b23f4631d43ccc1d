// Presets: named numerics specs that reproduce one real implementation bit for bit, each with
// the public source it is taken from (see docs/presets.md and ../shared/NUMERICS.md).
#pragma once

#include "oracles/policy.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qc {

// A numerics spec: a policy for every op, with its provenance.
struct Spec {
  std::string name;         // "onnx", "migraphx-ref@2023.10", or "custom" for explicit policies
  std::string description;  // one line
  std::vector<std::string> sources;  // repository path::function, one per citation
  QuantizePolicy quantize;
};

const std::vector<Spec>& presets();
// Finds "name" or "name@version"; nullopt if unknown.
std::optional<Spec> find_preset(std::string_view name);

}  // namespace qc
