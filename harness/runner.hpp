// The runner: joins cases, the oracle and backends, and decides verdicts.
#pragma once

#include "cases/case.hpp"
#include "harness/evaluate.hpp"
#include "qconform/backend.hpp"
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
  // Backends run side by side on each case, up to this many at once (0: one per core, 1: one at a
  // time). Each backend still runs its cases in order, and results are reported in the order of the
  // backends, so the report is the same for any count. Under `isolate` or a timeout (a child process
  // per call, forked) backends run one at a time.
  int jobs = 0;
  // Called after each (case, backend) with the number done and the total.
  std::function<void(const CaseResult&, const BackendResult&, std::size_t, std::size_t)> progress;
  // Called with each output a backend gave for a case of the run (not for the dependencies of a
  // selection), before `progress`: for callers that keep the arrays (Python's keep_outputs).
  std::function<void(const Case&, const BackendResult&, const Tensor&)> on_output;
  // The oracle's reference of a case computed before the run (qconform model: the oracle's chain
  // through the model evaluates every node case once), used instead of evaluating it again; nullopt:
  // evaluate. Only asked for cases that take no operand from another case.
  std::function<std::optional<Reference>(const Case&)> known_reference;
};

// Runs every case on every backend in `backends` (unavailable ones are reported as SKIP).
//
// Chains (docs/cases.md): a case that takes an operand from another case's output is evaluated
// after it. The oracle's reference uses the oracle's output of the earlier case (under that case's
// spec); each backend runs the later case on its own output of the earlier one, so its rounding
// there propagates. Where a backend gave no output for the earlier case (SKIP, CRASH, a wrong
// shape), the later case is SKIP with a reason naming it. A case's agreement statements
// (same_outputs_as, differs_from) are checked on the oracle's outputs (CaseResult::agreements) and
// on each backend's (BackendResult::agreements); a broken one makes that backend's result a FAIL.
// Throws InputError for suites whose links check_links rejects.
RunReport run_cases(const std::vector<Suite>& suites, const std::vector<Backend*>& backends, const RunOptions& opt);

// Start-up check of a run: every backend's claim names a known preset (built in or registered,
// find_preset). Throws InputError naming `where`, the backend and its claim and listing the known
// presets. The CLI calls it before anything runs or is written; run_cases itself still reports an
// unknown claim case by case ("backend claims unknown preset") for callers that skip it.
void check_claims(const std::vector<Backend*>& backends, const std::string& where);

// The fidelity mode (`run --expect claim`): every expectation of every case (and dependency) is
// replaced by "claim", so each backend is judged bit for bit against its own claimed preset instead
// of the case's spec. A dot_product expectation stays: a float dot product (weight_only_gemm) has
// no bit-exact answer under any preset, only TOSA's error bounds. A case with no "*" entry gets one.
void expect_claims(std::vector<Suite>& suites);
// The same for some backends only: each case that does not name the backend in its expectations
// judges it against its claim. The CLI does this for the peers (docs/peers.md): a real library
// claims the versioned preset that reproduces it, and its distance to the case's spec is what the
// report shows, not a failure of the run.
void expect_claims_for(std::vector<Suite>& suites, const std::vector<std::string>& backends);

// The number of agreement statements the oracle's own outputs break: the case's statement
// contradicts its specs, whatever the backends do.
std::int64_t broken_oracle_agreements(const RunReport& r);

// Exit code of a run: 1 if any FAIL/XPASS/CRASH/TIMEOUT or an agreement the oracle's outputs break,
// 77 if nothing ran (all SKIP or no case), else 0.
int exit_code(const RunReport& r);

// The case with every operand it takes from another case of `s` bound to the oracle's output of
// that case (each evaluated under its own spec, recursively), without links or agreements: a case
// that stands alone, for shrinking. Throws InputError when a producer is missing.
Case standalone_case(const Case& c, const Suite& s);

RunMetadata collect_metadata();

}  // namespace qc
