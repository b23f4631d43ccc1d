// One backend's run of one case, judged: availability and support, the call (in process or
// isolated, harness/isolation.hpp), the verdict (harness/verdict.hpp), causes and the fingerprint.
// The runner (harness/runner.cpp) schedules these runs; this is what each one does.
#pragma once

#include "cases/case.hpp"
#include "harness/causes.hpp"  // InputVariation
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"  // RunOptions
#include "reports/result.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace qc {

// One backend's run of one case: its result, and its output while a later case may need it.
struct BackendRun {
  BackendResult result;
  std::optional<Tensor> output;        // set when the backend gave the op's format and shape
  std::vector<std::int64_t> deciding;  // the elements the verdict rests on
  bool device_lost = false;            // the backend's device is unusable for the rest of the process
};

// The result a backend's run of `c` starts from: the backend, its claim and its expectation.
BackendResult started(const Case& c, const Backend& b);

// Runs `backend_op` on `b` and judges the output under the case's expectation. `oracle_op` is the
// op the reference `ref` was evaluated from. They are one op, except for a case that takes operands
// from other cases: there the oracle's op holds the oracle's outputs of those cases and the
// backend's op this backend's own (`propagated` then names what the difference explains).
BackendRun run_and_judge(const Case& c, const OpRequest& oracle_op, const OpRequest& backend_op, const Reference& ref,
                         Backend& b, const RunOptions& opt, const std::vector<InputVariation>& propagated);

}  // namespace qc
