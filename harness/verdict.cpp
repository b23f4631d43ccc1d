#include "harness/verdict.hpp"
#include "harness/phase_times.hpp"

#include "harness/compare.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <cstdlib>

namespace qc {
namespace {

// Elements that decide a tolerance verdict: |delta| above the tolerance (or +0 against -0).
std::vector<std::int64_t> beyond_tolerance(const Reference& ref, const Tensor& out, std::int64_t tol) {
  std::vector<std::int64_t> v;
  const bool floats = is_float(out.dtype());
  for (std::int64_t i = 0; i < out.size(); ++i) {
    if (!ref.specified[static_cast<std::size_t>(i)] || same_element(ref.expected, out, i)) continue;
    const std::int64_t d =
        floats ? ulp_delta(out.dtype(), ref.expected.bits(i), out.bits(i)) : out.get_int(i) - ref.expected.get_int(i);
    if (d == 0 || std::llabs(d) > tol) v.push_back(i);  // d == 0 with different bits: a signed zero
  }
  return v;
}

}  // namespace

Judgement judge_output(const Expectation& ex, const std::string& spec_name, const std::string& claim,
                       const OpRequest& op, const Reference& ref, const Tensor& out, int max_worst,
                       const Spec* ref_spec) {
  Judgement j;
  if (out.dtype() != ref.expected.dtype() || out.shape() != ref.expected.shape()) {
    j.reason = "backend returned " + std::string(name(out.dtype())) + " " + shape_str(out.shape()) + ", expected " +
               std::string(name(ref.expected.dtype())) + " " + shape_str(ref.expected.shape());
    return j;
  }
  j.shape_ok = true;
  j.metrics = compare(ref, out, max_worst);
  j.mismatches = mismatch_indices(ref.expected, out, ref.specified);
  j.deciding = j.mismatches;
  const Metrics& m = j.metrics;
  const std::string unit = m.unit == "ulp" ? " ULP" : " LSB";
  const std::string counts = std::to_string(m.exact) + "/" + std::to_string(m.compared) + " exact";
  const std::string worst = m.mismatches() ? ", max |delta| " + std::to_string(m.max_abs) + unit : "";
  switch (ex.kind) {
    case Expectation::Kind::exact:
      j.pass = m.mismatches() == 0;
      j.reason = counts + worst + " against " + spec_name;
      break;
    case Expectation::Kind::max_lsb:
    case Expectation::Kind::max_ulp: {
      const bool right_unit = (ex.kind == Expectation::Kind::max_ulp) == (m.unit == "ulp");
      j.pass = right_unit && m.max_abs <= ex.tolerance && m.signed_zero_mismatches == 0;
      if (right_unit) j.deciding = beyond_tolerance(ref, out, ex.tolerance);
      j.reason = counts + ", max |delta| " + std::to_string(m.max_abs) + unit + " (allowed " +
                 std::to_string(ex.tolerance) +
                 (right_unit ? "" : std::string(", but the expectation is in ") + (m.unit == "ulp" ? "LSB" : "ULP")) +
                 ") against " + spec_name;
      break;
    }
    case Expectation::Kind::dot_product: {
      if (!ref.dot_product) {
        j.reason = "a dot_product expectation needs a dot-product op (weight_only_gemm, conv2d, mx_gemm)";
        break;
      }
      const DotProductVerdict v = ref.dot_product(out);
      j.pass = v.pass;
      j.reason = (v.pass ? std::string("within the TOSA dot-product bounds")
                         : "outside the TOSA dot-product bounds: " + v.reason) +
                 "; " + counts + worst + " against the correctly rounded " + spec_name;
      break;
    }
    case Expectation::Kind::claim: {
      const auto claimed = find_preset(claim);
      if (!claimed) {
        j.reason = "backend claims unknown preset '" + claim + "'";
        break;
      }
      // A claim that cannot evaluate the case (a multiplier its scheme cannot represent) does not
      // define it: the backend should have declined it, so that is the verdict's reason, not a
      // run that stops.
      try {
        const PhaseTimer timer(Phase::claim);
        j.claim_reference.emplace(ref_spec ? evaluate_beside(op, *claimed, *ref_spec, ref) : evaluate(op, *claimed));
      } catch (const InputError& e) {
        j.reason = "its claim " + claim + " does not define this case (" + e.what() + "); " + counts +
                   " against the spec " + spec_name;
        break;
      }
      const Reference& cref = *j.claim_reference;
      j.deciding = mismatch_indices(cref.expected, out, cref.specified);
      j.deciding_distances = distances(cref.expected, out, j.deciding);
      j.claim_mismatches = static_cast<std::int64_t>(j.deciding.size());
      j.pass = j.claim_mismatches == 0;
      j.reason = std::to_string(j.claim_mismatches) + " mismatches against its claim " + claim + "; " + counts +
                 " against the spec " + spec_name;
      break;
    }
  }
  if (ex.kind != Expectation::Kind::claim) j.deciding_distances = distances(ref.expected, out, j.deciding);
  return j;
}

}  // namespace qc
