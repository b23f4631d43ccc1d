// Per-element labels: where an element sits relative to the hazards real implementations
// disagree on, so mismatch counts can be split by cause class.
#pragma once

#include "qconform/enum_table.hpp"

#include <cstdint>
#include <string_view>

namespace qc {

enum class Label : std::uint8_t {
  clear,      // far from any rounding boundary
  near_tie,   // within kNearTieDistance of a half-integer, but not on it
  tie,        // exactly on a half-integer: the tie rule decides
  saturated,  // the clamp changed the result
  special,    // NaN or infinite input (or intermediate), or a subnormal input
};
inline constexpr EnumEntry<Label> kLabelTable[] = {
    {Label::clear, "clear"},         {Label::near_tie, "near_tie"}, {Label::tie, "tie"},
    {Label::saturated, "saturated"}, {Label::special, "special"},
};
constexpr std::span<const EnumEntry<Label>> enum_table(Label) { return kLabelTable; }
inline constexpr int kLabelCount = static_cast<int>(std::size(kLabelTable));

// An element whose value before the final rounding lies within this distance (in output
// steps) of a half-integer is a near tie. 2^-10: far below any fp32 quotient's ulp near small
// integers (2^-20 at 8), so a differently ordered fp32 recipe can move such an element across.
inline constexpr double kNearTieDistance = 1.0 / 1024.0;

constexpr std::string_view name(Label l) { return table_name(l); }

}  // namespace qc
