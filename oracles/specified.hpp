// Which elements of a result the spec pins down. Every one, unless the policy leaves some open
// (NaN under an `unspecified` rule), so the common case stores nothing and costs no pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qc {

class SpecifiedMask {
 public:
  SpecifiedMask() = default;
  explicit SpecifiedMask(std::size_t n) : n_(n) {}  // all n elements specified

  std::size_t size() const { return n_; }
  bool all() const { return open_.empty(); }
  bool operator[](std::size_t i) const { return open_.empty() || open_[i] == 0; }
  void set(std::size_t i, bool specified) {
    if (open_.empty()) {
      if (specified) return;
      open_.assign(n_, 0);
    }
    open_[i] = specified ? 0 : 1;
  }
  bool operator==(const SpecifiedMask& o) const {
    if (n_ != o.n_) return false;
    for (std::size_t i = 0; i < n_; ++i)
      if ((*this)[i] != o[i]) return false;
    return true;
  }

 private:
  std::size_t n_ = 0;
  std::vector<std::uint8_t> open_;  // empty, or 1 for each open element
};

}  // namespace qc
