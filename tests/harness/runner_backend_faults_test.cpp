// A backend's availability() and supports() are its code too: a BackendFault or any exception they
// throw is that (case, backend)'s CRASH or TIMEOUT, and the run and the other backends' results go on.
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "harness/runner.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace qc {
namespace {

class Throwing : public Backend {
 public:
  enum class Where { availability, supports };
  Throwing(Where w, bool fault) : where_(w), fault_(fault) {}
  std::string name() const override { return "throwing"; }
  std::string description() const override { return "throws"; }
  std::string claim() const override { return "onnx"; }
  Availability availability() const override {
    if (where_ == Where::availability) raise();
    return {};
  }
  Availability supports(const OpRequest&) const override {
    if (where_ == Where::supports) raise();
    return {};
  }
  Tensor run(const OpRequest&) override { throw std::logic_error("run must not be reached"); }

 private:
  void raise() const {
    if (fault_) throw BackendFault(BackendFault::Kind::timeout, "hung in the question");
    throw std::runtime_error("broken question");
  }
  Where where_;
  bool fault_;
};

void check(Throwing::Where where, bool fault, Verdict want, const std::string& reason) {
  const std::vector<Suite> suites = load_suites({std::string(QCONFORM_SOURCE_DIR) + "/cases/requantize.json"});
  auto cpu = make_backend("cpu-ref");
  Throwing t(where, fault);
  const RunReport r = run_cases(suites, {&t, cpu.get()}, RunOptions{});
  ASSERT_EQ(r.cases.size(), 4u);
  for (const CaseResult& c : r.cases) {
    ASSERT_EQ(c.backends.size(), 2u);
    EXPECT_EQ(c.backends[0].verdict, want) << c.id << ": " << c.backends[0].reason;
    EXPECT_NE(c.backends[0].reason.find(reason), std::string::npos) << c.backends[0].reason;
    EXPECT_EQ(c.backends[1].verdict, Verdict::pass) << c.id;
  }
}

TEST(RunnerBackendFaults, AvailabilityThrowingIsCrash) {
  check(Throwing::Where::availability, false, Verdict::crash, "backend threw: broken question");
}
TEST(RunnerBackendFaults, SupportsThrowingIsCrash) {
  check(Throwing::Where::supports, false, Verdict::crash, "backend threw: broken question");
}
TEST(RunnerBackendFaults, SupportsFaultIsItsKind) {
  check(Throwing::Where::supports, true, Verdict::timeout, "hung in the question");
}
TEST(RunnerBackendFaults, AvailabilityFaultIsItsKind) {
  check(Throwing::Where::availability, true, Verdict::timeout, "hung in the question");
}

}  // namespace
}  // namespace qc
