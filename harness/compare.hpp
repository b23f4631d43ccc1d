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
// -0 share a position). NaN is at 0 from NaN and kUlpInfinite (reports/result.hpp) from anything
// else.
std::int64_t ulp_delta(DType t, std::uint64_t expected, std::uint64_t actual);

// Element i as reports show it: the integer, or describe_value's decimal and hex float.
std::string value_text(const Tensor& t, std::int64_t i);

// True when element i of a and b is the same value bit for bit (any NaN equals any NaN).
bool same_element(const Tensor& a, const Tensor& b, std::int64_t i);
// same_element for every element of two tensors of one format and size, in one typed pass: 1 where
// they are the same. The pass compares stored bytes (which vectorizes) and asks about NaN only
// where the bytes differ.
std::vector<std::uint8_t> same_elements(const Tensor& a, const Tensor& b);

// The specified elements where `a` and `b` differ, in index order.
std::vector<std::int64_t> mismatch_indices(const Tensor& a, const Tensor& b, const SpecifiedMask& specified);

// The signed distance of each element `indices` of `actual` from `expected`: LSB for integer
// formats, ULP (ulp_delta) for float formats.
std::vector<std::int64_t> distances(const Tensor& expected, const Tensor& actual,
                                    const std::vector<std::int64_t>& indices);

// "<count>:<16 hex digits>:<16 hex digits>": the number of elements a verdict rests on, a hash of
// their flat indices and a hash of their signed distances, so a baseline can tell an unchanged
// known mismatch from one element more or less, and from the same elements moved farther (an
// off-by-one grown to off-by-100) or to the other side.
std::string fingerprint(const std::vector<std::int64_t>& indices, const std::vector<std::int64_t>& distances);

// Whether a fingerprint found now is the one a baseline recorded: every part equal, or with
// `ignore_magnitude` the count and the indices alone. A recorded fingerprint of two parts (written
// before distances were fingerprinted) is compared by count and indices.
bool same_fingerprint(const std::string& now, const std::string& recorded, bool ignore_magnitude);

// Number of specified elements where `a` and `b` differ bit for bit (NaN payloads aside).
std::int64_t count_mismatches(const Tensor& a, const Tensor& b, const SpecifiedMask& specified);

}  // namespace qc
