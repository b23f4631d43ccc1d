// Calling a backend's code so that its faults become verdicts: what it throws is a CRASH (or, for
// an exec runner, the TIMEOUT or CRASH its BackendFault names); with isolation the call runs in a
// forked child (qconform/child_process.hpp), so a signal or a hang cannot take the run down.
#pragma once

#include "qconform/backend.hpp"
#include "qconform/error.hpp"
#include "reports/result.hpp"

#include <exception>
#include <optional>
#include <string>

namespace qc {

// The outcome of one backend call: an output tensor, or why there is none.
struct CallResult {
  std::optional<Tensor> out;
  Verdict verdict = Verdict::pass;  // crash or timeout when there is no output
  std::string reason;
  bool device_lost = false;  // the backend's device is unusable for the rest of this process
};

// Runs one call of the backend's code (run, availability, supports); what it throws becomes the
// pair's fault: a BackendFault keeps its kind (an exec runner that crashed or hung), anything else is
// a CRASH.
template <class F>
std::optional<CallResult> fault_of(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (const BackendFault& e) {
    return CallResult{std::nullopt, e.kind() == BackendFault::Kind::timeout ? Verdict::timeout : Verdict::crash,
                      e.what(), e.kind() == BackendFault::Kind::device_lost};
  } catch (const std::exception& e) {
    return CallResult{std::nullopt, Verdict::crash, std::string("backend threw: ") + e.what()};
  }
}

CallResult call_in_process(Backend& b, const OpRequest& op);

// Runs the call in a forked child that sends the output back through a pipe; timeout_seconds > 0
// kills a child that has not answered by then (TIMEOUT). Where no child can be forked, the call runs
// in this process.
CallResult call_isolated(Backend& b, const OpRequest& op, double timeout_seconds);

// How the harness calls a backend's run: in this process, or, with `isolate` or a time limit, in a
// forked child (a backend that contains its faults itself, an exec runner, is called directly).
// Every run call goes through it: the judged run, the reproducer's and shrink's checks.
struct CallPolicy {
  bool isolate = false;
  double timeout_seconds = 0;  // > 0: a limit, which implies isolation
};
CallResult call_backend(Backend& b, const OpRequest& op, const CallPolicy& policy);

// availability() for decisions outside the verdict: a backend whose availability() throws counts
// as available here, so that its run reports the fault as the pair's verdict.
bool is_available(const Backend& b);

}  // namespace qc
