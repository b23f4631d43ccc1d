// Every backend fault through every route a C++ backend takes into qconform, one table: the fault
// kernel of tests/plugins/fault_kernel.hpp compiled in (the runner's API, as the CLI runs its
// built-in backends, with --isolate and --timeout), as a plugin (the CLI with --isolate and
// --timeout) and as an exec runner (the CLI with --timeout only: a runner is its own process).
// Each fault must become its row's verdict with its row's words in the reason, on every case, in
// one run beside cpu-ref, whose results must be those of cpu-ref run alone; the run exits 1 and the
// three reports and results.jsonl hold every (case, backend). Python's backends have the same table
// in python/tests/test_fault_routes.py.
#include "../plugins/fault_kernel.hpp"
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "cli_run.hpp"
#include "harness/runner.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace qc::testing {
namespace {

namespace fs = std::filesystem;

struct FaultRow {
  KernelFault fault;
  std::string verdict;
  std::vector<std::string> reason_parts;  // each must be in the reason, on every route
};

// The reasons' words are those every route shares: isolation says "the backend's process exited with
// status 1", an exec runner "exec runner ... exited with status 1".
const std::vector<FaultRow> kTable = {
    {KernelFault::segv, "CRASH", {"signal 11"}},
    {KernelFault::abort, "CRASH", {"signal 6"}},
    {KernelFault::hang, "TIMEOUT", {"no answer within 1 s"}},
    {KernelFault::exit0, "CRASH", {"exited with status 0"}},
    {KernelFault::exit1, "CRASH", {"exited with status 1"}},
    {KernelFault::wrong_shape, "FAIL", {"backend returned i8 [11], expected i8 [10]"}},
    {KernelFault::wrong_dtype, "FAIL", {"backend returned i32 [10], expected i8 [10]"}},
    {KernelFault::throws, "CRASH", {"the kernel refused"}},
    {KernelFault::huge_alloc, "CRASH", {"bad_alloc"}},
};

class FaultRoutes : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    // The first case of the default quantize suite (ten f32 values to i8): every fault costs at most
    // one timeout.
    cases_ = write_first_cases(std::string(QCONFORM_SOURCE_DIR) + "/cases/quantize_linear.json", 1, dir_ / "one.json");
    ASSERT_EQ(read_json(cases_)["cases"][0]["input"]["shape"], nlohmann::json::parse("[10]"));
    const auto r =
        run_qconform_output("run " + cases_ + " --backend cpu-ref --no-reproducers -q -o " + (dir_ / "alone").string());
    ASSERT_EQ(r.code, 0) << r.output;
    alone_ = report_results(dir_ / "alone" / "report.json");
    ASSERT_EQ(alone_.size(), 1u);
  }

  // The report set in `out` of a run of cpu-ref and PREFIX-FAULT for each row.
  void check(const fs::path& out, const std::string& prefix, int exit_code) {
    EXPECT_EQ(exit_code, 1);
    for (const char* f : {"report.json", "report.html", "report.junit.xml", "results.jsonl"})
      EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
    const std::size_t backends = kTable.size() + 1;
    std::ifstream jsonl(out / "results.jsonl");
    std::size_t lines = 0;
    for (std::string line; std::getline(jsonl, line);) ++lines;
    EXPECT_EQ(lines, backends);
    const std::string junit = [&] {
      std::ifstream in(out / "report.junit.xml");
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    EXPECT_NE(junit.find("tests=\"" + std::to_string(backends) + "\""), std::string::npos) << junit.substr(0, 400);

    const ReportResults got = report_results(out / "report.json");
    EXPECT_EQ(got.size(), backends);
    for (const auto& [key, vr] : alone_) {
      ASSERT_TRUE(got.count(key)) << key.first << " " << key.second;
      EXPECT_EQ(got.at(key), vr) << key.first;
    }
    for (const FaultRow& row : kTable) {
      const std::string name = prefix + "-" + kernel_fault_name(row.fault);
      SCOPED_TRACE(name);
      int seen = 0;
      for (const auto& [key, vr] : got) {
        if (key.second != name) continue;
        ++seen;
        EXPECT_EQ(vr.first, row.verdict) << key.first << ": " << vr.second;
        for (const std::string& part : row.reason_parts)
          EXPECT_NE(vr.second.find(part), std::string::npos) << key.first << ": '" << part << "' not in: " << vr.second;
      }
      EXPECT_EQ(seen, 1);
    }
  }

  std::string cases_;
  ReportResults alone_;
};

TEST_F(FaultRoutes, CompiledIn) {
  const std::vector<Suite> suites = load_suites({cases_});
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<Backend*> backends;
  owned.push_back(make_backend("cpu-ref"));
  for (const FaultRow& row : kTable) owned.push_back(std::make_unique<FaultKernel>("builtin", row.fault));
  for (auto& b : owned) backends.push_back(b.get());
  RunOptions opt;
  opt.isolate = true;
  opt.timeout_seconds = 1;
  const RunReport r = run_cases(suites, backends, opt);
  const fs::path out = dir_ / "out";
  std::string jsonl;
  for (const CaseResult& c : r.cases)
    for (const BackendResult& b : c.backends) jsonl += jsonl_line(c, b);
  fs::create_directories(out);
  write_file_atomic(out / "results.partial.jsonl", jsonl);
  write_reports(r, out, out / "results.partial.jsonl");
  check(out, "builtin", exit_code(r));
}

TEST_F(FaultRoutes, Plugin) {
  std::string args = "run " + cases_ + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY + " --backend cpu-ref";
  for (const FaultRow& row : kTable) args += std::string(" --backend plugin-") + kernel_fault_name(row.fault);
  const fs::path out = dir_ / "out";
  const auto r = run_qconform_output(args + " --isolate --timeout 1 --no-reproducers -q -o " + out.string());
  check(out, "plugin", r.code);
}

TEST_F(FaultRoutes, ExecRunner) {
  std::string args = "run " + cases_ + " --backend cpu-ref";
  for (const FaultRow& row : kTable)
    args += std::string(" --backend 'exec:") + QCONFORM_TEST_FAULT_RUNNER + " " + kernel_fault_name(row.fault) + "'";
  const fs::path out = dir_ / "out";
  const auto r = run_qconform_output(args + " --timeout 1 --no-reproducers -q -o " + out.string());
  check(out, "exec", r.code);
}

}  // namespace
}  // namespace qc::testing
