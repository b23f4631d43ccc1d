// Backend plugins through the CLI: the C ABI carries every op kind (cpu-ref behind it gives cpu-ref's
// results on every default case), faults in a plugin become verdicts under --isolate/--timeout with
// the other backends' results and the reports intact, and a library that is not a plugin of this ABI
// version is refused with exit 2 naming the file (and both versions).
#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace qc::testing {
namespace {

namespace fs = std::filesystem;

const std::string kPluginSrc = QCONFORM_SOURCE_DIR;

class Plugin : public TempDirTest {};

// (case id) -> (verdict, reason) of one backend in a report.
std::map<std::string, std::pair<std::string, std::string>> results_of(const nlohmann::json& report,
                                                                      const std::string& backend) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& c : report["cases"])
    for (const auto& b : c["backends"])
      if (b["backend"] == backend) out[c["id"].get<std::string>()] = {b["verdict"], b["reason"]};
  return out;
}

// (case id) -> what one backend's outputs measured against the spec: the metrics (with the worst
// elements' actual values) and the causes. Independent of the expectation, which cases key by name.
std::map<std::string, nlohmann::json> measured(const nlohmann::json& report, const std::string& backend) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& c : report["cases"])
    for (const auto& b : c["backends"])
      if (b["backend"] == backend)
        out[c["id"].get<std::string>()] = {b.value("metrics", nlohmann::json()), b.value("causes", nlohmann::json())};
  return out;
}

TEST_F(Plugin, CpuRefThroughTheAbiGivesCpuRefsResultsOnEveryDefaultCase) {
  const fs::path& d = dir_;
  const int rc = run_qconform("run " + kPluginSrc + "/cases --plugin " + QCONFORM_TEST_PLUGIN_CPUREF +
                              " --backend cpu-ref --backend plugin-cpu-ref --no-reproducers -o " + d.string());
  ASSERT_EQ(rc, 0);
  const auto report = read_json(d / "report.json");
  const auto direct = measured(report, "cpu-ref");
  const auto through = measured(report, "plugin-cpu-ref");
  ASSERT_GT(direct.size(), 100u);
  ASSERT_EQ(direct.size(), through.size());
  for (const auto& [id, r] : direct) {
    ASSERT_TRUE(through.count(id)) << id;
    EXPECT_EQ(through.at(id), r) << id;
  }
}

TEST_F(Plugin, QconformPluginsVariableLoadsTheSamePlugin) {
  const auto r = run_qconform_output("list backends", std::string("QCONFORM_PLUGINS=") + QCONFORM_TEST_PLUGIN_CPUREF);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plugin-cpu-ref"), std::string::npos) << r.output;
}

// A backend that calls exit(0) in the harness's process must not end the run with exit 0 and no
// report: the run exits 1 naming what happened and leaves the earlier report as it was; isolated,
// the same backend is a CRASH among the other results.
TEST_F(Plugin, ABackendThatExitsZeroNeverPassesTheRun) {
  const fs::path& d = dir_;
  const std::string cases = write_first_cases(kPluginSrc + "/cases/quantize_linear.json", 2, d / "two.json");
  fs::create_directories(d / "out");
  { std::ofstream(d / "out" / "report.json") << "{\"earlier\": true}\n"; }
  const auto r =
      run_qconform_output("run " + cases + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY +
                          " --backend cpu-ref --backend plugin-exit0 --no-reproducers -o " + (d / "out").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("a backend ended the process (exit)"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(d / "out" / "report.json"), nlohmann::json::parse("{\"earlier\": true}"));
  const auto iso = run_qconform_output("run " + cases + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY +
                                       " --backend cpu-ref --backend plugin-exit0 --isolate --no-reproducers -o " +
                                       (d / "iso").string());
  EXPECT_EQ(iso.code, 1) << iso.output;
  const auto report = read_json(d / "iso" / "report.json");
  for (const auto& [id, res] : results_of(report, "cpu-ref")) EXPECT_EQ(res.first, "PASS") << id;
  const auto exits = results_of(report, "plugin-exit0");
  ASSERT_EQ(exits.size(), 2u);
  for (const auto& [id, res] : exits) {
    EXPECT_EQ(res.first, "CRASH") << id;
    EXPECT_NE(res.second.find("status 0"), std::string::npos) << res.second;
  }
}

// --isolate covers every call into the backend, the one-element reproducer's too: a backend that
// fails a case and then dies on its reproducer used to take the harness down with it.
TEST_F(Plugin, IsolationCoversTheReproducerStep) {
  const fs::path& d = dir_;
  const std::string cases = write_first_cases(kPluginSrc + "/cases/quantize_linear.json", 2, d / "two.json");
  const auto r =
      run_qconform_output("run " + cases + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY +
                          " --backend cpu-ref --backend plugin-segv-on-one --isolate -o " + (d / "out").string());
  EXPECT_EQ(r.code, 1) << r.output;
  const auto report = read_json(d / "out" / "report.json");
  const auto results = results_of(report, "plugin-segv-on-one");
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [id, res] : results) EXPECT_EQ(res.first, "FAIL") << id;
  for (const auto& c : report["cases"])
    for (const auto& b : c["backends"])
      if (b["backend"] == "plugin-segv-on-one") {
        ASSERT_TRUE(b.contains("reproducer")) << b.dump();
        EXPECT_TRUE(fs::exists(b["reproducer"].get<std::string>())) << b.dump();
      }
}

// qconform shrink calls the backend many times; with --isolate a backend that dies on the small
// cases shrinking tries is contained like in a run: each death counts as a failure, and the shrunk
// case is the one-element case that kills it. Without isolation the signal ends qconform.
TEST_F(Plugin, ShrinkUnderIsolationContainsABackendThatDies) {
  const fs::path& d = dir_;
  const std::string cases = write_first_cases(kPluginSrc + "/cases/quantize_linear.json", 1, d / "one.json");
  const std::string shrink = "shrink " + cases + " --case ties_at_half_integers --plugin " +
                             QCONFORM_TEST_PLUGIN_FAULTY + " --backend plugin-segv-on-one -o " +
                             (d / "small.json").string();
  auto r = run_qconform_output(shrink + " --isolate");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto small = read_json(d / "small.json");
  EXPECT_EQ(small["cases"][0]["input"]["shape"], nlohmann::json::parse("[1]")) << small.dump();
  r = run_qconform_output(shrink);
  EXPECT_EQ(r.code, 128 + 11) << r.output;  // killed by SIGSEGV, as the shell reports it
}

TEST_F(Plugin, ItsPresetDeclarationsAreRegisteredAndClaimable) {
  const auto r = run_qconform_output(std::string("list presets --plugin ") + QCONFORM_TEST_PLUGIN_FAULTY);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("faulty-1.0"), std::string::npos) << r.output;
  // A case naming the plugin's preset: 2.5 and -0.5 at scale 1 round away from zero (3, -1), where
  // onnx's ties to even give 2 and 0; cpu-ref (onnx) therefore fails 2 of 2 against it.
  const fs::path& d = dir_;
  std::ofstream(d / "c.json") << R"({"suite": "p", "cases": [{"name": "ties", "op": "quantize",
    "input": {"dtype": "f32", "shape": [2], "data": [2.5, -0.5]}, "scale": 1.0, "zero_point": 0,
    "output_dtype": "i8", "spec": "faulty-1.0", "expect": {"*": "exact"}}]})";
  const auto run = run_qconform_output("run " + (d / "c.json").string() + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY +
                                       " --backend cpu-ref --no-reproducers -o " + (d / "out").string());
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_NE(run.output.find("0/2 exact"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("against faulty-1.0"), std::string::npos) << run.output;
}

TEST_F(Plugin, AnotherAbiVersionIsRefusedNamingTheFileAndBothVersions) {
  const fs::path& d = dir_;
  { std::ofstream(d / "report.json") << "{\"earlier\": true}\n"; }
  const auto r = run_qconform_output("run " + kPluginSrc + "/cases/quantize_linear.json --plugin " +
                                     QCONFORM_TEST_PLUGIN_ABI99 + " -o " + d.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(QCONFORM_TEST_PLUGIN_ABI99), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("version 99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("version 1"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(d / "report.json"), nlohmann::json::parse("{\"earlier\": true}"));
}

TEST_F(Plugin, NotAPluginOrMissingIsAnInputError) {
  for (const std::string& p : {std::string(QCONFORM_TEST_PLUGIN_NONE), std::string("/nonexistent/libnone.so")}) {
    const auto r = run_qconform_output("list backends --plugin " + p);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(p), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace qc::testing
