// Rounding modes by name: part of the vocabulary of requests (a dynamic quantization rule's
// zero-point rounding) and of policies. The single decision rule every path uses is in
// oracles/rounding.hpp.
#pragma once

#include "qconform/enum_table.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace qc {

enum class RoundingMode : std::uint8_t {
  rne,    // ties to even: nearbyint/rint, cvtps2dq, __float2int_rn, np.rint
  rna,    // ties away from zero: std::round, roundf
  rhu,    // ties toward +inf: floor(x + 0.5), (v + 2^(s-1)) >> s
  rhd,    // ties toward -inf: ceil(x - 0.5)
  rtz,    // toward zero: static_cast<int>(float)
  floor,  // toward -inf
  ceil,   // toward +inf
};
inline constexpr EnumEntry<RoundingMode> kRoundingModeTable[] = {
    {RoundingMode::rne, "rne", "round to nearest, ties to even"},
    {RoundingMode::rna, "rna", "round to nearest, ties away from zero"},
    {RoundingMode::rhu, "rhu", "round to nearest, ties toward +inf (floor(x+0.5))"},
    {RoundingMode::rhd, "rhd", "round to nearest, ties toward -inf (ceil(x-0.5))"},
    {RoundingMode::rtz, "rtz", "toward zero (truncate)"},
    {RoundingMode::floor, "floor", "toward -inf (floor)"},
    {RoundingMode::ceil, "ceil", "toward +inf (ceil)"},
};
constexpr std::span<const EnumEntry<RoundingMode>> enum_table(RoundingMode) { return kRoundingModeTable; }

inline constexpr auto kAllRoundingModes = table_values<RoundingMode>();

std::string_view name(RoundingMode m);
std::string_view describe(RoundingMode m);
std::optional<RoundingMode> parse_rounding_mode(std::string_view s);

constexpr bool is_nearest(RoundingMode m) {
  return m == RoundingMode::rne || m == RoundingMode::rna || m == RoundingMode::rhu || m == RoundingMode::rhd;
}

}  // namespace qc
