// The hip backend's whole launch plan (backends/hip/plan.hpp) run by the CPU executor: operand
// preparation, int4 unpacking, the compensation sums, both GEMM main loops (dp4a tiles and the
// emulated mma.sync tiles), the implicit-GEMM convolution and the epilogues, against the oracle
// under each variant's claimed preset. This is the kernels' indexing, checked without a GPU; what
// only a GPU can show (the intrinsics, cp.async, the real mma layout, races) is in gpu_test.cpp.
#include "backends/hip/plan.hpp"
#include "backends/hip/backend.hpp"
#include "cases/case.hpp"
#include "harness/runner.hpp"
#include "tests/hip/cases.hpp"
#include "tests/hip/host_exec.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace qc::gpu {
namespace {

using test::HostExec;
using test::NamedOp;

// Runs `op` through the plan on the CPU for every variant that supports it; returns how many ran.
int check_all_variants(const NamedOp& c, GemmPath path) {
  int ran = 0;
  for (HipVariant v : all_hip_variants()) {
    const HipBackend backend(v);
    if (!backend.supports(c.op).available) continue;
    HostExec ex(path);
    const Tensor out = plan::run(ex, c.op, hip_recipe(v));
    const test::Mismatches m = test::compare_to_claim(c.op, out, hip_variant_claim(v));
    EXPECT_EQ(m.count, 0) << c.name << " on " << hip_variant_name(v) << " (" << (path == GemmPath::mma ? "mma" : "dp4a")
                          << "):" << m.first;
    ++ran;
  }
  return ran;
}

class HipPlanGemm : public ::testing::TestWithParam<NamedOp> {};

TEST_P(HipPlanGemm, Dp4aTilesMatchTheClaims) { EXPECT_GT(check_all_variants(GetParam(), GemmPath::dp4a), 0); }
TEST_P(HipPlanGemm, MmaTilesMatchTheClaims) { EXPECT_GT(check_all_variants(GetParam(), GemmPath::mma), 0); }

INSTANTIATE_TEST_SUITE_P(OddShapes, HipPlanGemm, ::testing::ValuesIn(test::gemm_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(HipPlan, Int32AccumulatorWraps) {
  const NamedOp c = test::int32_wrap_case();
  // The exact sums, -2284800000 and 70000 * (200 * -128) = -1792000000 (row 1, column 0), and the
  // wrapped -2284800000 + 2^32 = 2010167296 that the claim (int32 wrap) expects.
  EXPECT_EQ(check_all_variants(c, GemmPath::dp4a), 6);
  HostExec ex;
  const Tensor out = plan::run(ex, c.op, hip_recipe(HipVariant::div));
  EXPECT_EQ(out.get_int(0), 2010167296);
  EXPECT_EQ(out.get_int(2), -1792000000);
}

class HipPlanConv : public ::testing::TestWithParam<NamedOp> {};
TEST_P(HipPlanConv, ImplicitGemmMatchesTheClaims) { EXPECT_GT(check_all_variants(GetParam(), GemmPath::dp4a), 0); }
INSTANTIATE_TEST_SUITE_P(Geometries, HipPlanConv, ::testing::ValuesIn(test::conv_cases()),
                         [](const auto& info) { return info.param.name; });

class HipPlanElementwise : public ::testing::TestWithParam<NamedOp> {};
TEST_P(HipPlanElementwise, MatchesTheClaims) { EXPECT_EQ(check_all_variants(GetParam(), GemmPath::dp4a), 6); }
INSTANTIATE_TEST_SUITE_P(Ops, HipPlanElementwise, ::testing::ValuesIn(test::elementwise_cases()),
                         [](const auto& info) { return info.param.name; });

// What each variant leaves out is a SKIP with a reason, never a silent wrong answer.
TEST(HipPlan, UnsupportedRequestsSayWhy) {
  const HipBackend fma(HipVariant::fma), div(HipVariant::div);
  test::GemmSpec g{
      .M = 2, .K = 3, .N = 4, .out = qc::OutputKind::dequantized, .out_format = DType::f32, .bias_f32 = true};
  const OpRequest with_float_bias = test::make_gemm(g, 1);
  EXPECT_TRUE(div.supports(with_float_bias).available);
  const Availability a = fma.supports(with_float_bias);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("fuse"), std::string::npos) << a.reason;
  QGemmOp blocked = test::make_gemm({.M = 2, .K = 8, .N = 2, .per_channel = false}, 2);
  blocked.b.params.axis = 0;
  blocked.b.params.block_size = 4;
  blocked.b.params.scales = {0.01, 0.02, 0.01, 0.02};
  blocked.b.params.zero_points = {0, 0, 0, 0};
  EXPECT_FALSE(div.supports(blocked).available);
  EXPECT_FALSE(div.supports(WeightOnlyGemmOp{}).available);
}

// Without a GPU (this machine, CI) every variant is unavailable, naming the runtime's answer; with
// one, each names its device facts.
TEST(HipPlan, AvailabilityNamesTheReasonOrTheDevice) {
  for (HipVariant v : all_hip_variants()) {
    const HipBackend b(v);
    const Availability a = b.availability();
    if (a.available) {
      EXPECT_FALSE(b.facts()["gpu"].empty());
      EXPECT_FALSE(b.facts()["compute_capability"].empty());
    } else {
      EXPECT_FALSE(a.reason.empty());
      EXPECT_TRUE(a.reason.find("device") != std::string::npos || a.reason.find("sm_") != std::string::npos)
          << a.reason;
    }
  }
}

// A hip variant whose kernels run on the CPU executor: the name, claim and supports() of the real
// backend, always available.
class EmulatedHip final : public Backend {
 public:
  explicit EmulatedHip(HipVariant v) : real_(v), v_(v) {}
  std::string name() const override { return real_.name(); }
  std::string description() const override { return real_.description(); }
  std::string claim() const override { return real_.claim(); }
  Availability supports(const OpRequest& op) const override { return real_.supports(op); }
  Tensor run(const OpRequest& op) override {
    HostExec ex(GemmPath::dp4a);
    return plan::run(ex, op, hip_recipe(v_));
  }

 private:
  HipBackend real_;
  HipVariant v_;
};

// The project's own case files through the runner, as a GPU run would see them, with the kernels'
// code on the CPU executor: every (case, variant) meets its expectation, and nothing crashes (a
// supported request the claim cannot evaluate would throw). suite_expectations_test.cpp keeps the
// expectations right for the claims; this shows the kernels' code computes the claims on the
// suites' own data.
TEST(HipPlan, CaseFilesOnTheCpuExecutor) {
  const RunReport report = test::run_default_suites_as<EmulatedHip>(QCONFORM_SOURCE_DIR);
  int ran = 0;
  for (const CaseResult& c : report.cases)
    for (const BackendResult& b : c.backends) {
      if (b.verdict == Verdict::skip) continue;
      ++ran;
      EXPECT_EQ(b.verdict, Verdict::pass)
          << c.id << " on " << b.backend << " (expectation " << b.expectation << "): " << b.reason;
    }
  EXPECT_GT(ran, 100);
}

}  // namespace
}  // namespace qc::gpu
