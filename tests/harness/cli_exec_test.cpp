// Exec runners that misbehave (python/tests/data/fault_runner.py: json and numpy, no qconform) in a
// CLI run together with cpu-ref: each fault becomes that runner's verdict, cpu-ref's results are
// those of a run without it, and the reports are written.
#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

namespace qc {
namespace {

namespace fs = std::filesystem;
using testing::run_qconform_output;

const std::string kRequantizeCases = std::string(QCONFORM_SOURCE_DIR) + "/cases/requantize.json";

std::string runner(const std::string& mode) {
  return "'exec:/usr/bin/python3 " + std::string(QCONFORM_SOURCE_DIR) + "/python/tests/data/fault_runner.py " + mode +
         "'";
}

class CliExec : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("qconform_cli_exec_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto r = run_qconform_output("run --backend cpu-ref " + kRequantizeCases + " -q --no-reproducers -o " +
                                       (dir_ / "alone").string());
    ASSERT_EQ(r.code, 0) << r.output;
    alone_ = testing::report_results(dir_ / "alone" / "report.json");
    ASSERT_EQ(alone_.size(), 4u);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs cpu-ref and the runner in `mode`; every result of the runner must have `verdict` and a
  // reason containing each of `reason_parts`.
  void check(const std::string& mode, const std::string& flags, const std::string& verdict,
             const std::vector<std::string>& reason_parts) {
    SCOPED_TRACE(mode);
    const fs::path out = dir_ / mode;
    const auto r = run_qconform_output("run --backend cpu-ref --backend " + runner(mode) + " " + kRequantizeCases +
                                       " " + flags + " -q --no-reproducers -o " + out.string());
    EXPECT_EQ(r.code, 1) << r.output;
    for (const char* f : {"report.json", "report.html", "report.junit.xml"}) EXPECT_TRUE(fs::exists(out / f)) << f;
    const auto got = testing::report_results(out / "report.json");
    int mine = 0;
    for (const auto& [key, vr] : got) {
      if (key.second == "cpu-ref") {
        EXPECT_EQ(vr, alone_.at(key)) << key.first;
        continue;
      }
      ++mine;
      EXPECT_EQ(key.second, "fault-" + mode);
      EXPECT_EQ(vr.first, verdict) << key.first << ": " << vr.second;
      for (const std::string& part : reason_parts)
        EXPECT_NE(vr.second.find(part), std::string::npos) << key.first << ": '" << part << "' not in " << vr.second;
    }
    EXPECT_EQ(mine, 4);
  }

  fs::path dir_;
  testing::ReportResults alone_;
};

TEST_F(CliExec, SegfaultIsCrashWithSignalAndStderr) {
  check("segv", "", "CRASH", {"exec runner", "signal 11", "SIGSEGV", "fault runner: run in mode segv"});
}

TEST_F(CliExec, AbortIsCrash) { check("abort", "", "CRASH", {"exec runner", "signal 6", "SIGABRT"}); }

// --isolate must not fork for an exec runner: the fault is the exec backend's own TIMEOUT (the
// forked path would say "no answer within").
TEST_F(CliExec, HangIsTimeoutAndIsolateDoesNotFork) {
  check("hang", "--timeout 2 --isolate", "TIMEOUT",
        {"exec runner", "no answer within 2 s and was killed", "fault runner: run in mode hang"});
}

TEST_F(CliExec, WrongShapeIsFail) { check("shape", "", "FAIL", {}); }

TEST_F(CliExec, GarbageIsMalformedCrash) { check("garbage", "", "CRASH", {"malformed reply", "not JSON"}); }

TEST_F(CliExec, ExitZeroMidRunIsCrashNotPass) { check("exit0", "", "CRASH", {"exited with status 0"}); }

TEST_F(CliExec, OkFalseIsBackendThrew) { check("throw", "", "CRASH", {"backend threw: no kernel for this"}); }

TEST_F(CliExec, OtherProtocolVersionIsRefusedAtStartup) {
  const fs::path out = dir_ / "v2";
  const auto r = run_qconform_output("run --backend cpu-ref --backend " + runner("version2") + " " + kRequantizeCases +
                                     " -q -o " + out.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("fault_runner.py version2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("version 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("version 1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "report.json"));
}

TEST_F(CliExec, TwoRunnersMayNotShareAName) {
  const auto r = run_qconform_output("run --backend " + runner("segv") + " --backend 'exec:/usr/bin/python3 -u " +
                                     std::string(QCONFORM_SOURCE_DIR) + "/python/tests/data/fault_runner.py segv' " +
                                     kRequantizeCases + " -q -o " + (dir_ / "clash").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("both named 'fault-segv'"), std::string::npos) << r.output;
}

TEST_F(CliExec, ARunnerThatCannotStartIsAnInputError) {
  const auto r = run_qconform_output("run --backend 'exec:/nonexistent/runner' " + kRequantizeCases + " -q -o " +
                                     (dir_ / "none").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/runner"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace qc
