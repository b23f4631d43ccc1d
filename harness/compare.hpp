// Element-by-element comparison of a backend's output with the oracle's: integer outputs in
// LSB, float outputs in ULP of the output format (ordered bit patterns; NaN equals NaN; +0 and
// -0 are told apart and counted on their own).
#pragma once

#include "harness/evaluate.hpp"
#include "reports/result.hpp"

namespace qc {

Metrics compare(const Reference& ref, const Tensor& actual, int max_worst);

// Signed distance in ULP between two values of float format t given as bit patterns:
// position(actual) - position(expected) in the ordered sequence of the format's values (+0 and
// -0 share a position). NaN is at 0 from NaN and kUlpInfinite from anything else.
inline constexpr std::int64_t kUlpInfinite = std::int64_t{1} << 62;
std::int64_t ulp_delta(DType t, std::uint64_t expected, std::uint64_t actual);

// Number of specified elements where `a` and `b` differ bit for bit (NaN payloads aside).
std::int64_t count_mismatches(const Tensor& a, const Tensor& b, const std::vector<std::uint8_t>& specified);

}  // namespace qc
