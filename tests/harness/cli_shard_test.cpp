// `qconform run` sharded by a test runner: googletest's GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS and
// Bazel's TEST_SHARD_INDEX/TEST_TOTAL_SHARDS (0-based) pick the shard when --shard is not given,
// TEST_SHARD_STATUS_FILE is created, and bad values are input errors. Also --shard's own checks,
// and the example of docs/ci.md, run as written.
#include "cli_run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qc {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_qconform;
using testing::run_qconform_output;

class CliShards : public testing::TempDirTest {};

const std::string kShardedCases = std::string(QCONFORM_SOURCE_DIR) + "/cases/quantize_linear.json " +
                                  QCONFORM_SOURCE_DIR + "/cases/qgemm.json " + QCONFORM_SOURCE_DIR + "/cases/vnni.json";

// "case backend VERDICT", one per result, in the report's order.
std::vector<std::string> verdicts(const fs::path& report) {
  std::vector<std::string> out;
  const nlohmann::json j = read_json(report);
  for (const auto& c : j["cases"])
    for (const auto& b : c["backends"])
      out.push_back(c["id"].get<std::string>() + " " + b["backend"].get<std::string>() + " " +
                    b["verdict"].get<std::string>());
  return out;
}

std::string shard_of(const fs::path& report) { return read_json(report)["metadata"]["shard"]; }

TEST_F(CliShards, ShardsFromEitherRunnersEnvironmentMergeToTheUnshardedRun) {
  ASSERT_EQ(run_qconform("run " + kShardedCases + " -q -o " + (dir_ / "all").string()), 0);
  const std::vector<std::string> all = verdicts(dir_ / "all" / "report.json");
  ASSERT_GT(all.size(), 10u);
  for (const std::string runner : {"GTEST_", "TEST_"}) {
    SCOPED_TRACE(runner);
    std::string inputs;
    std::size_t cases = 0;
    for (int i = 0; i < 3; ++i) {
      const fs::path d = dir_ / (runner + std::to_string(i)), status = dir_ / (runner + "status" + std::to_string(i));
      std::string env = runner + "SHARD_INDEX=" + std::to_string(i) + " " +
                        (runner == "GTEST_" ? "GTEST_TOTAL_SHARDS=3" : "TEST_TOTAL_SHARDS=3");
      if (runner == "TEST_") env += " TEST_SHARD_STATUS_FILE=" + status.string();
      ASSERT_EQ(run_qconform("run " + kShardedCases + " -q -o " + d.string(), env), 0) << env;
      // Recorded as the equivalent --shard records it (1-based).
      EXPECT_EQ(shard_of(d / "report.json"), std::to_string(i + 1) + "/3");
      EXPECT_EQ(fs::exists(status), runner == "TEST_") << "Bazel's status file, created";
      const std::size_t n = read_json(d / "report.json")["cases"].size();
      EXPECT_GT(n, 0u);
      EXPECT_LT(n, all.size());
      cases += n;
      inputs += " " + (d / "report.json").string();
    }
    const fs::path merged = dir_ / (runner + "merged");
    // Two of the three: refused (exit 2), nothing written.
    const std::string two = inputs.substr(0, inputs.rfind(' '));
    EXPECT_EQ(run_qconform("merge" + two + " -o " + (dir_ / (runner + "partial")).string()), 2);
    EXPECT_FALSE(fs::exists(dir_ / (runner + "partial") / "report.json"));
    ASSERT_EQ(run_qconform("merge" + inputs + " -o " + merged.string()), 0);
    EXPECT_EQ(verdicts(merged / "report.json"), all);
    EXPECT_EQ(read_json(merged / "report.json")["cases"].size(), cases);
  }
  // The same shard as --shard 2/3: the same cases, results and recorded shard.
  ASSERT_EQ(run_qconform("run " + kShardedCases + " -q --shard 2/3 -o " + (dir_ / "flag").string()), 0);
  EXPECT_EQ(verdicts(dir_ / "flag" / "report.json"), verdicts(dir_ / "GTEST_1" / "report.json"));
  EXPECT_EQ(verdicts(dir_ / "flag" / "report.json"), verdicts(dir_ / "TEST_1" / "report.json"));
  EXPECT_EQ(shard_of(dir_ / "flag" / "report.json"), "2/3");
  // Bazel sets both pairs: agreeing, they are one shard.
  ASSERT_EQ(run_qconform("run " + kShardedCases + " -q -o " + (dir_ / "both").string(),
                         "GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=3 TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=3"),
            0);
  EXPECT_EQ(verdicts(dir_ / "both" / "report.json"), verdicts(dir_ / "flag" / "report.json"));
  EXPECT_EQ(shard_of(dir_ / "both" / "report.json"), "2/3");
}

TEST_F(CliShards, AnExplicitShardWinsOverTheEnvironment) {
  const fs::path status = dir_ / "status";
  // Even malformed variables: --shard is what runs, and the run does not announce that it follows
  // the runner's sharding.
  for (const std::string env : {"GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=3", "TEST_SHARD_INDEX=x TEST_TOTAL_SHARDS=3"}) {
    const std::string d = (dir_ / "r").string();
    ASSERT_EQ(run_qconform("run " + kShardedCases + " -q --shard 3/3 -o " + d,
                           env + " TEST_SHARD_STATUS_FILE=" + status.string()),
              0)
        << env;
    EXPECT_EQ(shard_of(dir_ / "r" / "report.json"), "3/3");
    EXPECT_FALSE(fs::exists(status));
  }
  // With no shard variables the status file is still created: the whole run is the one shard.
  ASSERT_EQ(run_qconform("run " + kShardedCases + " -q -o " + (dir_ / "r").string(),
                         "TEST_SHARD_STATUS_FILE=" + status.string()),
            0);
  EXPECT_TRUE(fs::exists(status));
  EXPECT_EQ(shard_of(dir_ / "r" / "report.json"), "");
}

TEST_F(CliShards, MalformedShardVariablesAreInputErrors) {
  const fs::path out = dir_ / "out", status = dir_ / "status";
  struct Bad {
    std::string env, message;
  };
  const Bad bad[] = {
      {"GTEST_SHARD_INDEX=x GTEST_TOTAL_SHARDS=3", "GTEST_SHARD_INDEX='x'"},
      {"GTEST_SHARD_INDEX=1x GTEST_TOTAL_SHARDS=3", "GTEST_SHARD_INDEX='1x'"},
      {"GTEST_SHARD_INDEX=-1 GTEST_TOTAL_SHARDS=3", "GTEST_SHARD_INDEX='-1'"},
      {"GTEST_SHARD_INDEX= GTEST_TOTAL_SHARDS=3", "GTEST_SHARD_INDEX=''"},
      {"GTEST_SHARD_INDEX=3 GTEST_TOTAL_SHARDS=3", "GTEST_SHARD_INDEX='3': expected a whole number from 0 to 2"},
      {"GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=0", "GTEST_TOTAL_SHARDS='0'"},
      {"GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=three", "GTEST_TOTAL_SHARDS='three'"},
      {"GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=99999999999", "GTEST_TOTAL_SHARDS='99999999999'"},
      {"GTEST_SHARD_INDEX=1", "GTEST_SHARD_INDEX='1' is set but GTEST_TOTAL_SHARDS is not"},
      {"TEST_SHARD_INDEX=a TEST_TOTAL_SHARDS=2", "TEST_SHARD_INDEX='a'"},
      {"TEST_SHARD_INDEX=2 TEST_TOTAL_SHARDS=2", "TEST_SHARD_INDEX='2'"},
      {"TEST_SHARD_INDEX=0 TEST_TOTAL_SHARDS=-2", "TEST_TOTAL_SHARDS='-2'"},
      {"TEST_TOTAL_SHARDS=2", "TEST_TOTAL_SHARDS='2' is set but TEST_SHARD_INDEX is not"},
      {"GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=2 TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2",
       "two different shards: GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=2 and TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2"},
  };
  for (const Bad& b : bad) {
    const testing::CliResult r = run_qconform_output("run " + kShardedCases + " -q -o " + out.string(),
                                                     b.env + " TEST_SHARD_STATUS_FILE=" + status.string());
    EXPECT_EQ(r.code, 2) << b.env << ": " << r.output;
    EXPECT_NE(r.output.find(b.message), std::string::npos) << b.env << ": " << r.output;
    EXPECT_FALSE(fs::exists(out)) << b.env << ": nothing is written";
    EXPECT_FALSE(fs::exists(status)) << b.env << ": nothing is written";
  }
  const testing::CliResult r = run_qconform_output("run " + kShardedCases + " -q -o " + out.string(),
                                                   "TEST_SHARD_STATUS_FILE=" + (dir_ / "no" / "such").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("TEST_SHARD_STATUS_FILE='" + (dir_ / "no" / "such").string() + "': cannot create it"),
            std::string::npos)
      << r.output;
}

TEST_F(CliShards, ShardFlagTakesTwoPlainNumbers) {
  const fs::path out = dir_ / "out";
  for (const std::string s : {"0/3", "4/3", "1/0", "x/3", "1/y", "1x/3", "1/3x", "+1/3", "1/+3", "-1/3", "' 1/3'",
                              "'1/3 '", "1/", "/3", "1/3/3", "1", "99999999999/99999999999"}) {
    const testing::CliResult r =
        run_qconform_output("run " + kShardedCases + " -q --shard " + s + " -o " + out.string());
    EXPECT_EQ(r.code, 2) << s << ": " << r.output;
    EXPECT_NE(r.output.find("--shard: expected i/n with 1 <= i <= n"), std::string::npos) << s << ": " << r.output;
    EXPECT_FALSE(fs::exists(out)) << s;
  }
  EXPECT_EQ(run_qconform("run " + kShardedCases + " -q --shard 3/3 -o " + out.string()), 0);
  EXPECT_EQ(shard_of(out / "report.json"), "3/3");
}

// docs/ci.md's example, run as written from a folder with the built binary at
// build/cli/qconform and the suites at cases/: its merged report equals the unsharded run.
TEST_F(CliShards, TheExampleOfTheDocsRuns) {
  const std::string example =
      "for i in 0 1 2; do\n"
      "  GTEST_SHARD_INDEX=$i GTEST_TOTAL_SHARDS=3 build/cli/qconform run cases/qgemm.json cases/vnni.json -q -o "
      "shard$i\n"
      "done\n"
      "build/cli/qconform merge shard0/report.json shard1/report.json shard2/report.json -o merged\n";
  std::ifstream in(fs::path(QCONFORM_SOURCE_DIR) / "docs" / "ci.md");
  std::stringstream doc;
  doc << in.rdbuf();
  ASSERT_NE(doc.str().find("```\n" + example + "```\n"), std::string::npos) << "docs/ci.md no longer shows:\n"
                                                                            << example;
  fs::create_directories(dir_ / "build" / "cli");
  fs::create_symlink(QCONFORM_BIN, dir_ / "build" / "cli" / "qconform");
  fs::create_directory_symlink(fs::path(QCONFORM_SOURCE_DIR) / "cases", dir_ / "cases");
  std::ofstream(dir_ / "example.sh") << example;
  // Without the runner's own shard variables, as run_qconform starts qconform.
  const std::string cmd = "cd " + dir_.string() +
                          " && env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u TEST_SHARD_INDEX -u TEST_TOTAL_SHARDS "
                          "-u TEST_SHARD_STATUS_FILE QCONFORM_PEERS= sh -e example.sh >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_EQ(run_qconform("run " + std::string(QCONFORM_SOURCE_DIR) + "/cases/qgemm.json " + QCONFORM_SOURCE_DIR +
                         "/cases/vnni.json -q -o " + (dir_ / "all").string()),
            0);
  const std::vector<std::string> all = verdicts(dir_ / "all" / "report.json");
  EXPECT_GT(all.size(), 10u);
  EXPECT_EQ(verdicts(dir_ / "merged" / "report.json"), all);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(shard_of(dir_ / ("shard" + std::to_string(i)) / "report.json"), std::to_string(i + 1) + "/3");
}

}  // namespace
}  // namespace qc

namespace qc::side_by_side_test {

// `run --jobs`: backends run side by side on each case (harness/runner.hpp, RunOptions::jobs), and
// the report is the same as one backend at a time, case for case and field for field, chains and
// agreement statements included (pipelines, seed004's parameter links).
TEST(CliJobs, TheReportIsTheSameForAnyNumberOfJobs) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("qconform-jobs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cases = std::string(QCONFORM_SOURCE_DIR) + "/cases/pipelines.json " + QCONFORM_SOURCE_DIR +
                            "/cases/seed004_glow_profiles.json " + QCONFORM_SOURCE_DIR + "/cases/qgemm.json";
  nlohmann::json reports[2];
  for (const int jobs : {1, 3}) {
    const std::filesystem::path out = dir / ("jobs" + std::to_string(jobs));
    ASSERT_EQ(testing::run_qconform("run " + cases +
                                    " -b cpu-ref -b vnni512 -b avx2-maddubs -b cpu-ref:tflite-reference -q " +
                                    "--no-reproducers --jobs " + std::to_string(jobs) + " -o " + out.string()),
              0);
    reports[jobs == 1 ? 0 : 1] = testing::read_json(out / "report.json");
    testing::drop_timing(reports[jobs == 1 ? 0 : 1]);
  }
  EXPECT_EQ(reports[0]["cases"], reports[1]["cases"]);
  EXPECT_EQ(reports[0]["summary"], reports[1]["summary"]);
  EXPECT_EQ(testing::run_qconform("run " + cases + " -q --jobs -1 -o " + (dir / "bad").string()), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace qc::side_by_side_test
