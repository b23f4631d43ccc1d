// Running the qconform binary from a test and reading back what it wrote: the exit status and
// output of a command line (with environment variables for it), a JSON file, and a report with
// the fields that differ between any two runs dropped.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace qc::testing {

// The shell words that start qconform: `run` takes its shard from a test runner's variables, so
// the ones this test binary may itself run under are removed (a sharded test binary would shard
// every run it starts), then `env` (NAME=VALUE words, shell-quoted where needed) is added. The
// build's peers (docs/peers.md) are left out (an empty QCONFORM_PEERS) unless `env` names a manifest:
// these tests judge the CLI, not the libraries.
inline std::string qconform_command(const std::string& args, const std::string& env = "") {
  return "env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE -u TEST_SHARD_INDEX "
         "-u TEST_TOTAL_SHARDS -u TEST_SHARD_STATUS_FILE " +
         env + (env.find("QCONFORM_PEERS=") == std::string::npos ? " QCONFORM_PEERS= " : " ") + QCONFORM_BIN + " " +
         args;
}

// `qconform ARGS`, its output discarded: the exit status (-1 if it did not exit).
inline int run_qconform(const std::string& args, const std::string& env = "") {
  const int rc = std::system((qconform_command(args, env) + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct CliResult {
  int code = -1;       // the exit status, -1 if it did not exit
  std::string output;  // stdout and stderr together
};

// A shell command line with its output (stdout and stderr).
inline CliResult run_shell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) r.output += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `qconform ARGS` with its output.
inline CliResult run_qconform_output(const std::string& args, const std::string& env = "") {
  return run_shell(qconform_command(args, env));
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// The first `n` cases of a case file, written to `dest` as a suite of their own (a short run of the
// default suites); returns dest's path.
inline std::string write_first_cases(const std::filesystem::path& suite_file, std::size_t n,
                                     const std::filesystem::path& dest) {
  nlohmann::json suite = read_json(suite_file);
  auto& cases = suite["cases"];
  cases.erase(cases.begin() + static_cast<std::ptrdiff_t>(std::min(n, cases.size())), cases.end());
  std::ofstream(dest) << suite.dump(1);
  return dest.string();
}

// (case id, backend) -> (verdict, reason) of every result in a report.json.
using ReportResults = std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>>;
inline ReportResults report_results(const std::filesystem::path& report_json) {
  ReportResults out;
  const nlohmann::json report = read_json(report_json);
  for (const auto& c : report["cases"])
    for (const auto& b : c["backends"]) out[{c["id"], b["backend"]}] = {b["verdict"], b["reason"]};
  return out;
}

// Timing fields differ between any two runs.
inline void drop_timing(nlohmann::json& j) {
  if (j.is_object()) {
    j.erase("seconds");
    j.erase("started_at");
    for (auto& [k, v] : j.items()) drop_timing(v);
  } else if (j.is_array()) {
    for (auto& v : j) drop_timing(v);
  }
}

// A test with a fresh folder of its own (named after the process, the suite and the test), removed
// afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("qconform_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

}  // namespace qc::testing
