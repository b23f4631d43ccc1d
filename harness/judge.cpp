#include "harness/judge.hpp"
#include "harness/phase_times.hpp"

#include "harness/compare.hpp"
#include "harness/isolation.hpp"
#include "harness/verdict.hpp"
#include "oracles/presets.hpp"

#include <chrono>

namespace qc {

BackendResult started(const Case& c, const Backend& b) {
  BackendResult r;
  r.backend = b.name();
  r.claim = b.claim();
  r.expectation = c.expectation_for(r.backend).str();
  return r;
}

BackendRun run_and_judge(const Case& c, const OpRequest& oracle_op, const OpRequest& backend_op, const Reference& ref,
                         Backend& b, const RunOptions& opt, const std::vector<InputVariation>& propagated) {
  BackendRun run;
  BackendResult& r = run.result;
  r = started(c, b);
  const Expectation ex = c.expectation_for(r.backend);
  // availability() and supports() are the backend's code too: what they throw is this pair's
  // CRASH (or TIMEOUT, for an exec runner that hangs), not the end of the run.
  Availability av, sup;
  std::optional<CallResult> asked = fault_of([&] { av = b.availability(); });
  if (!asked && av.available) asked = fault_of([&] { sup = b.supports(backend_op); });
  if (asked) {
    r.verdict = asked->verdict;
    r.reason = asked->reason;
    run.device_lost = asked->device_lost;
    return run;
  }
  if (!av.available) {
    r.verdict = Verdict::skip;
    r.reason = av.reason;
    return run;
  }
  if (!sup.available) {
    r.verdict = Verdict::skip;
    r.reason = sup.reason;
    return run;
  }
  const auto t0 = std::chrono::steady_clock::now();
  CallResult call = [&] {
    const PhaseTimer timer(Phase::backend);
    return call_backend(b, backend_op, CallPolicy{opt.isolate, opt.timeout_seconds});
  }();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!call.out) {
    r.verdict = call.verdict;
    r.reason = call.reason;
    run.device_lost = call.device_lost;
    return run;
  }
  const Tensor& out = *call.out;
  Judgement j = [&] {
    const PhaseTimer timer(Phase::compare);
    return judge_output(ex, c.spec.name, r.claim, backend_op, ref, out, opt.max_worst,
                        propagated.empty() ? &c.spec : nullptr);
  }();
  r.verdict = j.pass ? Verdict::pass : Verdict::fail;
  r.reason = std::move(j.reason);
  if (!j.shape_ok) {
    r.fingerprint = "shape";
    return run;
  }
  r.metrics = std::move(j.metrics);
  r.claim_mismatches = j.claim_mismatches;
  std::int64_t explained_over = static_cast<std::int64_t>(j.mismatches.size());
  if (opt.attribute_causes) {
    const PhaseTimer timer(Phase::causes);
    // The claim, judged already, is a candidate whose answer is known (causes.hpp, KnownPreset).
    const auto claimed = j.claim_reference ? find_preset(r.claim) : std::nullopt;
    attribute_causes(oracle_op, c.spec, ref, out, j.mismatches, r, propagated,
                     claimed && propagated.empty() ? KnownPreset{&*claimed, &*j.claim_reference} : KnownPreset{});
    // A claim broken only where the spec sees nothing (elements it leaves open, as NaN under onnx):
    // those mismatches are explained against the claimed preset instead, and say so.
    if (j.claim_reference && j.mismatches.empty() && !j.deciding.empty()) {
      BackendResult against_claim;
      attribute_causes(oracle_op, *find_preset(r.claim), *j.claim_reference, out, j.deciding, against_claim, {});
      for (CauseCount& cc : against_claim.causes) {
        cc.description = "against its claim " + r.claim + ": " + cc.description;
        r.causes.push_back(std::move(cc));
      }
      r.unexplained = against_claim.unexplained;
      r.unexplained_sampled = against_claim.unexplained_sampled;
      explained_over = static_cast<std::int64_t>(j.deciding.size());
    }
  }
  std::vector<std::int64_t> deciding = std::move(j.deciding);
  if (r.verdict == Verdict::fail) r.fingerprint = fingerprint(deciding, j.deciding_distances);
  if (!r.causes.empty()) {  // the best candidate, with its evidence
    const CauseCount& best = r.causes.front();
    r.reason += "; reproduced by " + best.cause + " (" + std::to_string(best.count) + "/" +
                std::to_string(best.mismatches_sampled > 0 ? best.mismatches_sampled : explained_over) +
                (best.mismatches_sampled > 0 ? " sampled mismatches" : "") +
                (best.matches_sampled > 0 ? "; breaks " + std::to_string(best.matches_broken) + " of " +
                                                std::to_string(best.matches_sampled) + " sampled matches"
                                          : "") +
                ")";
  }
  run.output = std::move(call.out);
  run.deciding = std::move(deciding);
  return run;
}

}  // namespace qc
