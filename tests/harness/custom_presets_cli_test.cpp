// Custom presets and claims through the qconform binary: --preset-file and QCONFORM_PRESETS on
// `list presets` and `run`, bad policy files (exit 2, nothing written), `run --expect claim` on the
// default suites, and the commands docs/numerics.md and docs/ci.md show, run as written.
#include "cli_run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace qc {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_qconform;
using testing::run_qconform_output;

const std::string kSource = QCONFORM_SOURCE_DIR;
const std::string kPolicy = kSource + "/docs/examples/mykernel-presets.json";
const std::string kMykernelCases = kSource + "/docs/examples/mykernel-cases.json";

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliCustomPresets : public testing::TempDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
};

// verdict -> count over a report.
std::map<std::string, int> counts(const fs::path& report) {
  std::map<std::string, int> m;
  const nlohmann::json j = read_json(report);  // kept: a temporary's member dies before the loop
  for (const auto& c : j["cases"])
    for (const auto& b : c["backends"]) ++m[b["verdict"].get<std::string>()];
  return m;
}

TEST_F(CliCustomPresets, ListPresetsShowsThemWithTheirFileFromTheFlagOrTheEnvironment) {
  const auto plain = run_qconform_output("list presets");
  EXPECT_EQ(plain.code, 0);
  EXPECT_EQ(plain.output.find("mykernel-1.0"), std::string::npos);
  for (const auto& [args, env] : {std::pair<std::string, std::string>{"list presets --preset-file " + kPolicy, ""},
                                  {"list presets", "QCONFORM_PRESETS=" + kPolicy},
                                  // named both ways, and an empty entry: read once
                                  {"list presets --preset-file " + kPolicy, "QCONFORM_PRESETS=:" + kPolicy + ":"}}) {
    const auto r = run_qconform_output(args, env);
    EXPECT_EQ(r.code, 0) << args << " " << env << "\n" << r.output;
    EXPECT_NE(
        r.output.find("  mykernel-1.0  mykernel 1.0: ONNX QuantizeLinear, but std::round (ties away from zero)  [" +
                      kPolicy + "]"),
        std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("  onnx  "), std::string::npos);
  }
}

TEST_F(CliCustomPresets, ACaseFileNamingACustomPresetRunsUnderIt) {
  const std::string out = (dir_ / "out").string();
  // Without the policy file the case file is bad input.
  const auto unknown = run_qconform_output("run " + kMykernelCases + " --backend cpu-ref -q -o " + out);
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown preset 'mykernel-1.0'"), std::string::npos) << unknown.output;
  EXPECT_FALSE(fs::exists(out));
  // Ties away: the TFLite reference rounds as the custom preset does; cpu-ref (ties to even) does not.
  EXPECT_EQ(run_qconform("run " + kMykernelCases + " --preset-file " + kPolicy +
                         " --backend cpu-ref:tflite-reference -q -o " + out),
            0);
  const auto j = read_json(fs::path(out) / "report.json");
  EXPECT_EQ(j["cases"][0]["backends"][0]["verdict"], "PASS");
  EXPECT_EQ(run_qconform("run " + kMykernelCases + " --backend cpu-ref -q -o " + out, "QCONFORM_PRESETS=" + kPolicy),
            1);
  const auto b = read_json(fs::path(out) / "report.json")["cases"][0]["backends"][0];
  EXPECT_EQ(b["verdict"], "FAIL");
  // 2.5, 0.5 and -2.5 differ (3, 1, -3 against cpu-ref's 2, 0, -2); 1.25 -> 1 under both.
  EXPECT_NE(b["reason"].get<std::string>().find("1/4 exact"), std::string::npos) << b["reason"];
  EXPECT_NE(b["reason"].get<std::string>().find("against mykernel-1.0"), std::string::npos) << b["reason"];
  // In the fidelity mode cpu-ref is judged against its claim, onnx, and passes.
  EXPECT_EQ(run_qconform("run " + kMykernelCases + " --backend cpu-ref --expect claim -q -o " + out,
                         "QCONFORM_PRESETS=" + kPolicy),
            0);
}

// A bad policy file, a built-in name or a name declared twice: exit 2 naming the file and the
// field, and the earlier report is untouched.
TEST_F(CliCustomPresets, BadPolicyFilesStopTheRunBeforeAnythingIsWritten) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(run_qconform("run " + kMykernelCases + " --preset-file " + kPolicy +
                         " --backend cpu-ref:tflite-reference -q -o " + out.string()),
            0);
  const std::string before = read_text(out / "report.json");
  const fs::path bad = write("bad.json", R"({"preset": "x-1", "spec": {"preset": "onnx", "rounding": "sideways"}})");
  const fs::path builtin = write("builtin.json", R"({"preset": "tflite-reference", "spec": "onnx"})");
  const fs::path again = write("again.json", R"({"preset": "mykernel-1.0", "spec": "onnx"})");
  struct Bad {
    std::string args, env, needle;
  };
  const std::vector<Bad> cases = {
      {"--preset-file " + bad.string(), "",
       "--preset-file: " + bad.string() + ": field 'spec.rounding': unknown value"},
      {"", "QCONFORM_PRESETS=" + bad.string(), "QCONFORM_PRESETS: " + bad.string() + ": field 'spec.rounding'"},
      {"--preset-file " + builtin.string(), "",
       builtin.string() + ": field 'preset': preset 'tflite-reference' is built in"},
      {"--preset-file " + kPolicy + " --preset-file " + again.string(), "",
       again.string() + ": field 'preset': preset 'mykernel-1.0' is already registered"},
      {"--preset-file " + (dir_ / "missing.json").string(), "", "missing.json: cannot open preset file"},
  };
  for (const Bad& b : cases) {
    const auto r = run_qconform_output(
        "run " + kMykernelCases + " " + b.args + " --backend cpu-ref:tflite-reference -q -o " + out.string(), b.env);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.output;
    EXPECT_NE(r.output.find(b.needle), std::string::npos) << r.output;
    EXPECT_EQ(read_text(out / "report.json"), before) << b.args;
  }
  const auto list = run_qconform_output("list presets --preset-file " + bad.string());
  EXPECT_EQ(list.code, 2);
  EXPECT_NE(list.output.find("field 'spec.rounding'"), std::string::npos) << list.output;
}

// The commands docs/numerics.md and docs/ci.md show, run as written from a folder with the built
// binary at build/cli/qconform and the docs and suites beside it; then what docs/ci.md says of the
// two default runs they make (against the spec and with --expect claim), read from their reports
// rather than run again (each is a whole default run).
TEST_F(CliCustomPresets, TheDocsCommandsRunAndTheClaimPassesTheTfliteVariant) {
  struct Shown {
    std::string doc, command;
    int code;
    std::string needle;  // in the output
  };
  const std::vector<Shown> shown = {
      {"numerics.md", "build/cli/qconform list presets --preset-file docs/examples/mykernel-presets.json", 0,
       "mykernel-1.0  mykernel 1.0"},
      {"numerics.md",
       "build/cli/qconform run docs/examples/mykernel-cases.json --preset-file docs/examples/mykernel-presets.json "
       "--backend cpu-ref:tflite-reference -q -o out-mykernel",
       0, "out-mykernel/report.json"},
      {"numerics.md",
       "QCONFORM_PRESETS=docs/examples/mykernel-presets.json build/cli/qconform oracle quantize --spec "
       "mykernel-1.0 --scale 1 --to i8 --values '[2.5, 0.5, -2.5, 1.25]'",
       0, "[3,1,-3,1]"},
      {"ci.md", "build/cli/qconform run --backend cpu-ref:tflite-reference -q -o out-spec", 1, "out-spec"},
      {"ci.md", "build/cli/qconform run --expect claim --backend cpu-ref:tflite-reference -q -o out-claim", 0,
       "out-claim"},
  };
  fs::create_directories(dir_ / "build" / "cli");
  fs::create_symlink(QCONFORM_BIN, dir_ / "build" / "cli" / "qconform");
  fs::create_directory_symlink(kSource + "/docs", dir_ / "docs");
  fs::create_directory_symlink(kSource + "/cases", dir_ / "cases");
  for (const Shown& s : shown) {
    const std::string doc = read_text(kSource + "/docs/" + s.doc);
    ASSERT_NE(doc.find("\n" + s.command + "\n"), std::string::npos) << "docs/" << s.doc << " no longer shows:\n"
                                                                    << s.command;
    // Without the runner's own shard variables, as run_qconform starts qconform.
    std::ofstream(dir_ / "cmd.sh") << s.command << "\n";
    FILE* p = popen(("cd " + dir_.string() +
                     " && env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u TEST_SHARD_INDEX "
                     "-u TEST_TOTAL_SHARDS -u TEST_SHARD_STATUS_FILE -u QCONFORM_PRESETS sh cmd.sh 2>&1")
                        .c_str(),
                    "r");
    ASSERT_NE(p, nullptr);
    std::string output;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) output += buf;
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == s.code) << s.command << "\n" << output;
    std::string compact = output;
    std::erase(compact, ' ');
    EXPECT_TRUE(output.find(s.needle) != std::string::npos || compact.find(s.needle) != std::string::npos)
        << s.command << "\n"
        << output;
  }
  const fs::path spec = dir_ / "out-spec", claim = dir_ / "out-claim";
  const auto s = counts(spec / "report.json"), c = counts(claim / "report.json");
  EXPECT_EQ(s.count("FAIL") ? s.at("FAIL") : 0, 13);  // docs/backends.md and docs/ci.md
  EXPECT_EQ(c.count("FAIL"), 0u);
  EXPECT_EQ(c.at("PASS"), s.at("PASS") + 13) << "the 13 cases that fail against the spec pass against the claim";
  EXPECT_EQ(c.count("SKIP") ? c.at("SKIP") : 0, s.count("SKIP") ? s.at("SKIP") : 0);
  // Every result is judged by the claim, but for the dot-product ones.
  const nlohmann::json claimed = read_json(claim / "report.json");
  for (const auto& cs : claimed["cases"])
    for (const auto& b : cs["backends"]) {
      const std::string e = b["expectation"];
      EXPECT_TRUE(e == "claim" || e == "dot_product") << cs["id"] << " " << e;
    }
  // A baseline of the mode and the gate.
  ASSERT_EQ(run_qconform("baseline " + (claim / "report.json").string() + " -o " + (dir_ / "base.json").string()), 0);
  EXPECT_EQ(run_qconform("run --expect claim --backend cpu-ref:tflite-reference -q --no-causes --no-reproducers "
                         "--baseline " +
                         (dir_ / "base.json").string() + " --gate -o " + (dir_ / "gate").string()),
            0);
  // --expect takes spec or claim only.
  const auto bad = run_qconform_output("run --expect nothing -q -o " + (dir_ / "x").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

}  // namespace
}  // namespace qc
