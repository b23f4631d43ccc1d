// Per-element labels: where an element sits relative to the hazards real implementations
// disagree on, so mismatch counts can be split by cause class.
#pragma once

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
inline constexpr int kLabelCount = 5;

// An element whose value before the final rounding lies within this distance (in output
// steps) of a half-integer is a near tie. 2^-10: far below any fp32 quotient's ulp near small
// integers (2^-20 at 8), so a differently ordered fp32 recipe can move such an element across.
inline constexpr double kNearTieDistance = 1.0 / 1024.0;

constexpr std::string_view name(Label l) {
  switch (l) {
    case Label::clear:
      return "clear";
    case Label::near_tie:
      return "near_tie";
    case Label::tie:
      return "tie";
    case Label::saturated:
      return "saturated";
    case Label::special:
      return "special";
  }
  return "?";
}

}  // namespace qc
