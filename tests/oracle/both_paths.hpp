// The property tests' comparison of the oracle's two paths: run one input through the slow path and
// the fast path, keeping each result or the InputError it threw (the paths must agree on both).
#pragma once

#include "oracles/error.hpp"
#include "oracles/quantize.hpp"  // OraclePath

#include <string>

namespace qc::test {

template <class Result>
struct BothPaths {
  Result slow, fast;
  std::string slow_error, fast_error;  // empty when the path returned
};

// run(OraclePath) -> Result.
template <class Run>
auto run_both_paths(Run run) {
  BothPaths<decltype(run(OraclePath::slow))> r;
  try {
    r.slow = run(OraclePath::slow);
  } catch (const InputError& e) {
    r.slow_error = e.what();
  }
  try {
    r.fast = run(OraclePath::fast);
  } catch (const InputError& e) {
    r.fast_error = e.what();
  }
  return r;
}

}  // namespace qc::test
