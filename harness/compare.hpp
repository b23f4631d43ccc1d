// Element-by-element comparison of a backend's output with the oracle's.
#pragma once

#include "oracles/labels.hpp"
#include "oracles/tensor.hpp"
#include "reports/result.hpp"

#include <functional>
#include <string>
#include <vector>

namespace qc {

struct Reference {
  const Tensor& expected;
  const std::vector<std::uint8_t>& specified;  // 0: the spec leaves the element open
  const std::vector<Label>& labels;
};

// Integer outputs: exact matches, |delta| histogram, bias, label splits and the `max_worst`
// worst elements. `describe(i)` fills an element's input and exact value (called only for
// the few elements kept).
Metrics compare_integers(const Reference& ref, const Tensor& actual, int max_worst,
                         const std::function<void(std::int64_t, ElementDiff&)>& describe);

// Number of specified elements where `a` and `b` differ.
std::int64_t count_mismatches(const Tensor& a, const Tensor& b, const std::vector<std::uint8_t>& specified);

}  // namespace qc
