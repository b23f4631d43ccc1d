// What the property tests share: their element budget, random choices, the comparison of the
// oracle's two paths (run one input through the slow path and the fast path, keeping each result
// or the InputError it threw: the paths must agree on both) and the run's summary.
#pragma once

#include "cases/generators.hpp"  // SplitMix64

#include "oracles/labels.hpp"
#include "oracles/quantize.hpp"  // OraclePath
#include "qconform/error.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>

namespace qc::test {

// Elements each property test compares. The default (10^6, a few seconds) keeps the test command
// fast; QCONFORM_PROPERTY_ELEMENTS sets another budget: CI runs 4 * 10^6 (.ci/run), the bench mode
// 10^9 (docs/numerics.md "Exactness checks and the bench mode").
inline std::int64_t element_budget() {
  if (const char* e = std::getenv("QCONFORM_PROPERTY_ELEMENTS")) return std::atoll(e);
  return 1'000'000;
}

template <class T>
T pick(SplitMix64& rng, std::initializer_list<T> items) {
  return items.begin()[rng.below(items.size())];
}

// Runs worker(seed) on two threads, seeds 1 and 2 (the machines CI runs on have two cores).
template <class Worker>
void run_on_two_threads(Worker worker) {
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
}

// The first failure the test's threads met (later ones are dropped: one counterexample is enough).
struct FirstFailure {
  std::mutex mu;
  std::string first_failure;
  std::atomic<bool> failed{false};
  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (!failed.exchange(true)) first_failure = what;
  }
};

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

// The run's tally, printed after the test: how much was compared, how much of it the fast path
// decided itself, and the labels met.
inline void print_path_summary(std::int64_t compared, std::int64_t tensors, std::int64_t error_tensors,
                               std::int64_t fast_elements,
                               const std::array<std::atomic<std::int64_t>, kLabelCount>& by_label, double seconds) {
  std::printf(
      "checked %lld elements in %lld tensors (%lld more tensors raised the same InputError on both paths), "
      "%lld of them on the fast path (%.1f%%), %.1f s\n",
      static_cast<long long>(compared), static_cast<long long>(tensors - error_tensors),
      static_cast<long long>(error_tensors), static_cast<long long>(fast_elements),
      100.0 * static_cast<double>(fast_elements) / static_cast<double>(std::max<std::int64_t>(1, compared)), seconds);
  std::printf("labels:");
  for (std::size_t l = 0; l < by_label.size(); ++l)
    std::printf(" %s %lld", std::string(name(static_cast<Label>(l))).c_str(),
                static_cast<long long>(by_label[l].load()));
  std::printf("\n");
}

}  // namespace qc::test
