#include "harness/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace qc {
namespace {

bool is_nan_bits(DType t, std::uint64_t b) { return std::isnan(float_bits_to_double(t, b)); }

// The position of a float bit pattern in the ordered sequence of the format's values.
std::int64_t ordered(DType t, std::uint64_t b) {
  const int bits = info(t).bits;
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  const auto mag = static_cast<std::int64_t>(b & (sign - 1));
  return (b & sign) ? -mag : mag;
}

std::size_t bucket(std::int64_t d) { return static_cast<std::size_t>(std::min<std::int64_t>(std::abs(d), 4)); }

}  // namespace

std::string value_text(const Tensor& t, std::int64_t i) {
  if (is_int(t.dtype())) return std::to_string(t.get_int(i));
  return describe_value(t.get_double(i));
}

bool same_element(const Tensor& a, const Tensor& b, std::int64_t i) {
  if (is_int(a.dtype())) return a.get_int(i) == b.get_int(i);
  const std::uint64_t x = a.bits(i), y = b.bits(i);
  if (is_nan_bits(a.dtype(), x) || is_nan_bits(a.dtype(), y))
    return is_nan_bits(a.dtype(), x) && is_nan_bits(a.dtype(), y);
  return x == y;
}

namespace {

template <class W>
void equal_words(const std::byte* a, const std::byte* b, std::size_t n, std::uint8_t* out) {
  const auto* x = reinterpret_cast<const W*>(a);
  const auto* y = reinterpret_cast<const W*>(b);
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] == y[i] ? 1 : 0;
}

}  // namespace

std::vector<std::uint8_t> same_elements(const Tensor& a, const Tensor& b) {
  const auto n = static_cast<std::size_t>(a.size());
  std::vector<std::uint8_t> eq(n);
  const std::byte* x = a.bytes().data();
  const std::byte* y = b.bytes().data();
  switch (info(a.dtype()).storage_bytes) {  // integers are their stored bytes; 4-bit ones a byte each
    case 1:
      equal_words<std::uint8_t>(x, y, n, eq.data());
      break;
    case 2:
      equal_words<std::uint16_t>(x, y, n, eq.data());
      break;
    case 4:
      equal_words<std::uint32_t>(x, y, n, eq.data());
      break;
    default:
      equal_words<std::uint64_t>(x, y, n, eq.data());
      break;
  }
  if (is_float(a.dtype()))  // any NaN equals any NaN
    for (std::size_t i = 0; i < n; ++i)
      if (!eq[i]) eq[i] = same_element(a, b, static_cast<std::int64_t>(i)) ? 1 : 0;
  return eq;
}

std::int64_t ulp_delta(DType t, std::uint64_t expected, std::uint64_t actual) {
  const bool ne = is_nan_bits(t, expected), na = is_nan_bits(t, actual);
  if (ne || na) return ne && na ? 0 : kUlpInfinite;
  return ordered(t, actual) - ordered(t, expected);
}

Metrics compare(const Reference& ref, const Tensor& actual, int max_worst) {
  Metrics m;
  const Tensor& exp = ref.expected;
  const bool floats = is_float(exp.dtype());
  m.unit = floats ? "ulp" : "lsb";
  m.elements = exp.size();
  m.has_to_exact = floats && ref.correctly_rounded.has_value();
  struct Bad {
    std::int64_t index, delta;
  };
  // The worst max_worst mismatches, kept as they come in a heap whose top is the least bad of them:
  // memory and work bounded by max_worst, not by the mismatches.
  const auto keep = static_cast<std::size_t>(std::max(max_worst, 0));
  const auto worse = [](const Bad& x, const Bad& y) {
    return x.delta != y.delta ? x.delta > y.delta : x.index < y.index;
  };
  std::vector<Bad> bad;
  bad.reserve(keep);
  for (std::int64_t i = 0; i < m.elements; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const auto l = static_cast<std::size_t>(ref.labels.empty() ? Label::clear : ref.labels[u]);
    ++m.label_total[l];
    if (!ref.specified[u]) {
      ++m.unspecified;
      continue;
    }
    ++m.compared;
    std::int64_t d;
    if (floats) {
      d = ulp_delta(exp.dtype(), exp.bits(i), actual.bits(i));
      if (m.has_to_exact) {
        const std::int64_t e = ulp_delta(exp.dtype(), ref.correctly_rounded->bits(i), actual.bits(i));
        ++m.histogram_to_exact[bucket(e)];
        m.max_to_exact = std::max(m.max_to_exact, std::abs(e));
      }
    } else {
      d = actual.get_int(i) - exp.get_int(i);
    }
    ++m.histogram[bucket(d)];
    if (same_element(exp, actual, i)) {
      ++m.exact;
      continue;
    }
    if (d == 0) ++m.signed_zero_mismatches;  // floats: +0 against -0
    ++m.label_mismatch[l];
    m.max_abs = std::max(m.max_abs, std::abs(d));
    if (std::abs(d) < kUlpInfinite) m.signed_sum += d;
    const Bad b{i, std::abs(d)};
    if (bad.size() < keep) {
      bad.push_back(b);
      std::push_heap(bad.begin(), bad.end(), worse);
    } else if (keep > 0 && worse(b, bad.front())) {
      std::pop_heap(bad.begin(), bad.end(), worse);
      bad.back() = b;
      std::push_heap(bad.begin(), bad.end(), worse);
    }
  }
  std::sort_heap(bad.begin(), bad.end(), worse);  // worst first
  for (std::size_t k = 0; k < bad.size(); ++k) {
    ElementDiff d;
    d.index = bad[k].index;
    unravel(d.index, exp.shape(), d.coords);
    d.expected = value_text(exp, d.index);
    d.actual = value_text(actual, d.index);
    d.delta = floats ? ulp_delta(exp.dtype(), exp.bits(d.index), actual.bits(d.index))
                     : actual.get_int(d.index) - exp.get_int(d.index);
    d.label = ref.labels.empty() ? Label::clear : ref.labels[static_cast<std::size_t>(d.index)];
    if (ref.describe) ref.describe(d.index, d);
    m.worst.push_back(std::move(d));
  }
  return m;
}

std::vector<std::int64_t> mismatch_indices(const Tensor& a, const Tensor& b, const SpecifiedMask& specified) {
  const std::vector<std::uint8_t> eq = same_elements(a, b);
  std::vector<std::int64_t> v;
  for (std::size_t i = 0; i < eq.size(); ++i)
    if (!eq[i] && specified[i]) v.push_back(static_cast<std::int64_t>(i));
  return v;
}

std::vector<std::int64_t> distances(const Tensor& expected, const Tensor& actual,
                                    const std::vector<std::int64_t>& indices) {
  std::vector<std::int64_t> d;
  d.reserve(indices.size());
  const bool floats = is_float(expected.dtype());
  for (const std::int64_t i : indices)
    d.push_back(floats ? ulp_delta(expected.dtype(), expected.bits(i), actual.bits(i))
                       : actual.get_int(i) - expected.get_int(i));
  return d;
}

namespace {

// FNV-1a (64 bit) over the values as 8 little-endian bytes each: stable across hosts and runs, so a
// baseline written on one machine matches a run on another.
std::string fnv1a_hex(const std::vector<std::int64_t>& values) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::int64_t v : values) {
    auto u = static_cast<std::uint64_t>(v);
    for (int byte = 0; byte < 8; ++byte, u >>= 8) {
      h ^= u & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// "count:indices" of a fingerprint: everything before its second ':' (all of a two-part one).
std::string_view where_part(std::string_view f) {
  const auto first = f.find(':');
  if (first == std::string_view::npos) return f;
  return f.substr(0, f.find(':', first + 1));
}

}  // namespace

std::string fingerprint(const std::vector<std::int64_t>& indices, const std::vector<std::int64_t>& distances) {
  return std::to_string(indices.size()) + ":" + fnv1a_hex(indices) + ":" + fnv1a_hex(distances);
}

bool same_fingerprint(const std::string& now, const std::string& recorded, bool ignore_magnitude) {
  const bool two_parts = std::count(recorded.begin(), recorded.end(), ':') == 1;
  if (ignore_magnitude || two_parts) return where_part(now) == where_part(recorded);
  return now == recorded;
}

std::int64_t count_mismatches(const Tensor& a, const Tensor& b, const SpecifiedMask& specified) {
  const std::vector<std::uint8_t> eq = same_elements(a, b);
  std::int64_t n = 0;
  for (std::size_t i = 0; i < eq.size(); ++i)
    if (!eq[i] && specified[i]) ++n;
  return n;
}

}  // namespace qc
