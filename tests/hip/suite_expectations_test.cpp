// The default suites' expectations for the hip variants, checked without a GPU.
//
// `qconform run` judges every registered backend, the six hip variants included, against the
// expectation each case states for it. On a GPU a variant computes exactly its claimed preset
// (numerics_test.cpp and plan_test.cpp show the kernels' code does), so a GPU run passes exactly
// where the oracle under the claim meets the case's expectation. This test makes that hold for
// every case of cases/*.json and every variant that supports it: where the expectation is against
// the spec ("exact", "max_lsb", "max_ulp"), the claimed preset's output must meet it; where a case
// holds a variant to its claim by name ("hip-f16": "claim"), the claim must really part from the
// spec there (else the entry hides nothing and the case should keep "exact").
#include "backends/hip/backend.hpp"
#include "cases/case.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/presets.hpp"
#include "tests/hip/cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace qc::gpu {
namespace {

// A hip variant as a GPU would run it if its kernels compute its claim: the real backend's name,
// claim and supports(), and the oracle under the claimed preset as its output.
class ClaimedPreset final : public Backend {
 public:
  explicit ClaimedPreset(HipVariant v) : real_(v), claim_(*find_preset(real_.claim())) {}
  std::string name() const override { return real_.name(); }
  std::string description() const override { return "the oracle under " + real_.claim(); }
  std::string claim() const override { return real_.claim(); }
  Availability supports(const OpRequest& op) const override { return real_.supports(op); }
  Tensor run(const OpRequest& op) override { return evaluate(op, claim_).expected; }

 private:
  HipBackend real_;
  Spec claim_;
};

std::vector<Suite> default_suites() { return load_suites({std::filesystem::path(QCONFORM_SOURCE_DIR) / "cases"}); }

const Case& find_case(const std::vector<Suite>& suites, const std::string& id) {
  for (const Suite& s : suites)
    for (const Case& c : s.cases)
      if (c.id() == id) return c;
  throw std::runtime_error("no case " + id);
}

// Every (case, variant) judged against the spec passes when the variant outputs its claim, and the
// claim specifies every element the spec does (an element the claim leaves open could be anything).
TEST(HipSuiteExpectations, TheClaimMeetsEveryExpectationAgainstTheSpec) {
  const std::vector<Suite> suites = default_suites();
  const RunReport report = test::run_default_suites_as<ClaimedPreset>(QCONFORM_SOURCE_DIR);
  int against_spec = 0;
  for (const CaseResult& c : report.cases) {
    // Each case's references once: the six variants share the spec and, mostly, their claims.
    const Case& cs = find_case(suites, c.id);
    std::optional<Reference> spec_ref;
    std::map<std::string, Reference> claim_refs;
    for (const BackendResult& b : c.backends) {
      if (b.verdict == Verdict::skip || b.expectation == "claim") continue;
      ++against_spec;
      EXPECT_EQ(b.verdict, Verdict::pass)
          << c.id << " on " << b.backend << " (claim " << b.claim << ", expectation " << b.expectation
          << "): " << b.reason << "\n  a GPU run would fail here; give the case \"" << b.backend
          << "\": \"claim\" if the variant differs from the spec by design";
      if (!spec_ref) spec_ref = evaluate(cs.op, cs.spec);
      const Reference& spec = *spec_ref;
      auto it = claim_refs.find(b.claim);
      if (it == claim_refs.end()) it = claim_refs.emplace(b.claim, evaluate(cs.op, *find_preset(b.claim))).first;
      const Reference& claim = it->second;
      for (std::size_t i = 0; i < spec.specified.size(); ++i)
        if (spec.specified[i] && !claim.specified[i]) {
          ADD_FAILURE() << c.id << " on " << b.backend << ": " << b.claim << " leaves element " << i << " open, which "
                        << cs.spec.name << " specifies";
          break;
        }
    }
  }
  // The suites hold the variants to the spec in many places (quantize_linear, dequantize_linear,
  // requantize): if this drops to a handful, the suites or supports() changed under the test.
  EXPECT_GT(against_spec, 100);
}

// A case that names a variant with "claim" does so because the variant differs from the spec
// there; where the claim equals the spec on the case's data the entry must go (back to "exact").
TEST(HipSuiteExpectations, ClaimEntriesForAVariantMarkARealDifference) {
  int entries = 0;
  for (const Suite& s : default_suites())
    for (const Case& c : s.cases)
      for (HipVariant v : all_hip_variants()) {
        const HipBackend b(v);
        const auto it = c.expect.find(b.name());
        if (it == c.expect.end() || it->second.kind != Expectation::Kind::claim || !b.supports(c.op).available)
          continue;
        ++entries;
        const Reference spec = evaluate(c.op, c.spec);
        const Reference claim = evaluate(c.op, *find_preset(b.claim()));
        EXPECT_GT(count_mismatches(spec.expected, claim.expected, spec.specified), 0)
            << c.id() << ": \"" << b.name() << "\": \"claim\", but " << b.claim() << " equals " << c.spec.name
            << " on this case's data; the variant should be held to \"exact\"";
      }
  EXPECT_GT(entries, 0);
}

}  // namespace
}  // namespace qc::gpu
