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

// A GPU backend whose kernel faults loses its context for the rest of the process: the runner
// reports that call's CRASH, then every later case of the backend as "not run: the device was lost
// since case X" without calling it again, and the other backends go on.
class LosesItsDevice : public Backend {
 public:
  std::string name() const override { return "lossy"; }
  std::string description() const override { return "loses its device on the first call"; }
  std::string claim() const override { return "onnx"; }
  Availability supports(const OpRequest&) const override { return {}; }
  Tensor run(const OpRequest&) override {
    ++calls;
    throw BackendFault(BackendFault::Kind::device_lost, "an illegal address; the device is unusable");
  }
  int calls = 0;
};

TEST(RunnerBackendFaults, ALostDeviceIsNamedInEveryLaterResultAndNotCalledAgain) {
  const std::vector<Suite> suites = load_suites({std::string(QCONFORM_SOURCE_DIR) + "/cases/requantize.json"});
  auto cpu = make_backend("cpu-ref");
  LosesItsDevice lossy;
  const RunReport r = run_cases(suites, {&lossy, cpu.get()}, RunOptions{});
  ASSERT_EQ(r.cases.size(), 4u);
  EXPECT_EQ(lossy.calls, 1);
  EXPECT_EQ(r.cases[0].backends[0].verdict, Verdict::crash);
  EXPECT_EQ(r.cases[0].backends[0].reason, "an illegal address; the device is unusable");
  for (std::size_t i = 1; i < r.cases.size(); ++i) {
    const BackendResult& b = r.cases[i].backends[0];
    EXPECT_EQ(b.verdict, Verdict::crash) << r.cases[i].id;
    EXPECT_EQ(b.reason, "not run: the device was lost since case " + r.cases[0].id +
                            " (an illegal address; the device is unusable)");
  }
  for (const CaseResult& c : r.cases) EXPECT_EQ(c.backends[1].verdict, Verdict::pass) << c.id;
}

}  // namespace
}  // namespace qc
