// The verdict rule: whether one output of a backend meets one expectation. It is defined here once;
// the runner (run_cases), the shrinker (still_fails) and everything else that judges an output
// call judge_output, so a shrunk reproducer fails exactly when the runner says its case fails.
#pragma once

#include <optional>

#include "cases/case.hpp"
#include "harness/evaluate.hpp"
#include "reports/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace qc {

// What the rule decides for one output.
struct Judgement {
  bool pass = false;
  std::string reason;  // what decided it, for the report
  // The output has the op's format and shape; when false, nothing below is computed.
  bool shape_ok = false;
  Metrics metrics;                               // the output against the spec's reference
  std::vector<std::int64_t> mismatches;          // specified elements that differ from the spec, in order
  std::vector<std::int64_t> deciding;            // the elements the verdict rests on (its fingerprint)
  std::vector<std::int64_t> deciding_distances;  // their signed LSB/ULP distances from what decided
  std::int64_t claim_mismatches = -1;            // claim expectations: mismatches against the claimed preset
  std::optional<Reference> claim_reference;      // claim expectations: the op under the claimed preset
};

// Judges `out`, the output `backend` (which claims the preset named `claim`) gave for `op`, against
// `ex`. `ref` is the spec's reference for the same op (evaluate(op, spec), where `spec_name` names
// the spec); a claim expectation evaluates `op` under the claimed preset. `max_worst` bounds the
// worst elements kept in the metrics.
//
// The rule: the output must have the reference's format and shape; then
//   exact        every specified element equal bit for bit (NaN equals NaN);
//   max_lsb/ulp  the metrics' unit is the expectation's, |delta| <= tolerance and no +0 for -0;
//   dot_product  the op is a dot-product op and the output is within TOSA's bounds;
//   claim        every element the claimed preset specifies equal bit for bit (an unknown claim fails).
// `ref_spec`, when given, is the spec `ref` is `op`'s answer under: a claim that sums the integer
// stage as it does is finished from ref's sums (evaluate_beside).
Judgement judge_output(const Expectation& ex, const std::string& spec_name, const std::string& claim,
                       const OpRequest& op, const Reference& ref, const Tensor& out, int max_worst,
                       const Spec* ref_spec = nullptr);

}  // namespace qc
