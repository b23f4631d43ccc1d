// The runner: joins cases, the oracle and backends, and decides verdicts.
#pragma once

#include "backends/backend.hpp"
#include "cases/case.hpp"
#include "reports/result.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qc {

struct Baseline;

struct RunOptions {
  int max_worst = 10;  // worst elements kept per (case, backend)
  // Re-evaluate the spec with one policy dimension changed to name the causes of mismatches.
  bool attribute_causes = true;
  // Known mismatches: matching results become XFAIL, passing ones XPASS (harness/baseline.hpp).
  const Baseline* baseline = nullptr;
  // Where to write a reproducer case for each failing (case, backend); empty: none.
  std::string reproducer_dir;
  // Run each backend call in a child process: a crash (signal) becomes CRASH, and with
  // timeout_seconds > 0 a call running longer is killed and reported TIMEOUT. Only for backends
  // built into the binary (a Python backend runs in its own interpreter's process).
  bool isolate = false;
  double timeout_seconds = 0;
  // Called after each (case, backend) with the number done and the total.
  std::function<void(const CaseResult&, const BackendResult&, std::size_t, std::size_t)> progress;
};

// Runs every case on every backend in `backends` (unavailable ones are reported as SKIP).
RunReport run_cases(const std::vector<Suite>& suites, const std::vector<Backend*>& backends, const RunOptions& opt);

// Exit code of a run: 1 if any FAIL/XPASS/CRASH/TIMEOUT, 77 if nothing ran (all SKIP or no
// case), else 0.
int exit_code(const RunReport& r);

RunMetadata collect_metadata();

}  // namespace qc
