// The C++ side of an exec runner: qc::exec::serve on cpu-ref, with this test binary as the runner
// (started with QCONFORM_TEST_SERVE=cpu-ref, it serves instead of running tests). Driven through
// ExecBackend on every default suite, it gives the results of cpu-ref in process, and what the
// backend prints does not reach the protocol.
#include "backends/exec/exec_backend.hpp"
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "harness/runner.hpp"
#include "qconform/exec_runner.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace qc {
namespace {

// cpu-ref, printing on stdout (as a chatty kernel would) before every answer.
class Chatty : public Backend {
 public:
  Chatty() : inner_(make_backend("cpu-ref")) {}
  std::string name() const override {
    std::printf("chatty name\n");
    std::fflush(stdout);
    return inner_->name();
  }
  std::string description() const override { return inner_->description(); }
  std::string claim() const override { return inner_->claim(); }
  Availability supports(const OpRequest& op) const override {
    std::cout << "chatty supports" << std::endl;
    return inner_->supports(op);
  }
  Tensor run(const OpRequest& op) override {
    std::printf("chatty run\n");
    return inner_->run(op);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

// The runner: this binary started with QCONFORM_TEST_SERVE=cpu-ref and only this test, with the
// protocol pipe on fd 3 and fd 1 on stderr (gtest prints before any test runs).
TEST(ExecServe, Runner) {
  const char* serve = std::getenv("QCONFORM_TEST_SERVE");
  if (!serve || std::string(serve) != "cpu-ref") GTEST_SKIP() << "only as an exec runner";
  std::fflush(stdout);
  ::dup2(3, 1);
  ::close(3);
  Chatty b;
  std::exit(exec::serve(b));
}

TEST(ExecServe, CppRunnerMatchesInProcessOnEveryDefaultSuite) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  ExecBackend runner(
      "exec env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_OUTPUT QCONFORM_TEST_SERVE=cpu-ref '" + self +
          "' --gtest_filter=ExecServe.Runner 3>&1 1>&2",
      60);
  EXPECT_EQ(runner.name(), "cpu-ref");
  EXPECT_TRUE(runner.contains_faults());
  const std::vector<Suite> suites = load_suites({std::string(QCONFORM_SOURCE_DIR) + "/cases"});
  auto cpu = make_backend("cpu-ref");
  RunOptions opt;
  opt.isolate = true;  // must not fork for the runner
  const RunReport a = run_cases(suites, {cpu.get()}, RunOptions{});
  const RunReport b = run_cases(suites, {&runner}, opt);
  ASSERT_EQ(a.cases.size(), b.cases.size());
  int passed = 0;
  for (std::size_t i = 0; i < a.cases.size(); ++i) {
    ASSERT_EQ(a.cases[i].id, b.cases[i].id);
    const BackendResult &x = a.cases[i].backends.at(0), &y = b.cases[i].backends.at(0);
    EXPECT_EQ(x.verdict, y.verdict) << a.cases[i].id << ": " << y.reason;
    EXPECT_EQ(x.reason, y.reason) << a.cases[i].id;
    EXPECT_EQ(x.fingerprint, y.fingerprint) << a.cases[i].id;
    passed += y.verdict == Verdict::pass ? 1 : 0;
  }
  EXPECT_GT(passed, 50);
}

}  // namespace
}  // namespace qc
