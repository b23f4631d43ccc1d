// The policy fields of a spec in the case format ("spec": {"rounding": ..., "dequantize": {...},
// "requantize": {...}}): each field's name, how the case writer writes it and how the loader reads
// it, defined once. The schema's lists of these fields are checked against these tables by a test.
#pragma once

#include "oracles/policy.hpp"

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <string_view>

namespace qc {

template <class P>
struct SpecField {
  std::string_view name;
  // The field's value as the case format writes it; null where it has none (an unset clip).
  nlohmann::json (*write)(const P&);
  // Sets the field from `v`: an empty string, or why `v` is not a value of this field.
  std::string (*read)(const nlohmann::json& v, P&);
};

// The quantize fields, which a spec writes at its top level.
std::span<const SpecField<QuantizePolicy>> quantize_fields();
// "dequantize": {...}
std::span<const SpecField<DequantizePolicy>> dequantize_fields();
// "requantize": {...}. "scheme" comes first: reading it resets the policy to the scheme's source
// defaults (requantize_policy_for), so the fields after it override those.
std::span<const SpecField<RequantizePolicy>> requantize_fields();

}  // namespace qc
