#include "harness/compare.hpp"

#include <algorithm>
#include <cstdlib>

namespace qc {

Metrics compare_integers(const Reference& ref, const Tensor& actual, int max_worst,
                         const std::function<void(std::int64_t, ElementDiff&)>& describe) {
  Metrics m;
  m.elements = ref.expected.size();
  struct Bad {
    std::int64_t index, delta;
  };
  std::vector<Bad> bad;
  for (std::int64_t i = 0; i < m.elements; ++i) {
    const auto l = static_cast<std::size_t>(ref.labels.empty() ? Label::clear : ref.labels[static_cast<std::size_t>(i)]);
    ++m.label_total[l];
    if (!ref.specified[static_cast<std::size_t>(i)]) {
      ++m.unspecified;
      continue;
    }
    ++m.compared;
    const std::int64_t d = actual.get_int(i) - ref.expected.get_int(i);
    const std::int64_t a = std::llabs(d);
    ++m.lsb_histogram[static_cast<std::size_t>(std::min<std::int64_t>(a, 4))];
    if (d == 0) {
      ++m.exact;
      continue;
    }
    ++m.label_mismatch[l];
    m.max_abs_lsb = std::max(m.max_abs_lsb, a);
    m.signed_sum += d;
    bad.push_back({i, a});
  }
  const auto keep = std::min<std::size_t>(bad.size(), static_cast<std::size_t>(std::max(max_worst, 0)));
  std::partial_sort(bad.begin(), bad.begin() + static_cast<long>(keep), bad.end(), [](const Bad& x, const Bad& y) {
    return x.delta != y.delta ? x.delta > y.delta : x.index < y.index;
  });
  for (std::size_t k = 0; k < keep; ++k) {
    ElementDiff d;
    d.index = bad[k].index;
    unravel(d.index, ref.expected.shape(), d.coords);
    d.expected = ref.expected.get_int(d.index);
    d.actual = actual.get_int(d.index);
    d.label = ref.labels.empty() ? Label::clear : ref.labels[static_cast<std::size_t>(d.index)];
    describe(d.index, d);
    m.worst.push_back(std::move(d));
  }
  return m;
}

std::int64_t count_mismatches(const Tensor& a, const Tensor& b, const std::vector<std::uint8_t>& specified) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (specified[static_cast<std::size_t>(i)] && a.get_int(i) != b.get_int(i)) ++n;
  return n;
}

}  // namespace qc
