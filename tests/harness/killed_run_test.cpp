// A run killed with SIGKILL (a CI job cancelled, an OOM kill) leaves no backend process behind:
// the forked child of an isolated call and an exec runner both die with the harness
// (qc::die_with_parent). Each route runs a backend that hangs, the harness is killed while it
// waits, and no process whose command line carries the test's token may remain.
#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace qc::testing {
namespace {

namespace fs = std::filesystem;

class KilledRun : public TempDirTest {
 protected:
  // Starts `args` in the background, kills qconform with SIGKILL after two seconds, and returns how
  // many processes matching `token` are alive a second later, but for the shell that runs all this
  // (its command line holds the token: $$ is left out) and pgrep itself (the pattern is written
  // "qckil[l]...", which does not match its own text).
  int survivors(const std::string& args, const std::string& token) {
    const std::string pattern = "qckil[l]" + token.substr(std::string("qckill").size());
    const CliResult r = run_shell(qconform_command(args) + " >/dev/null 2>&1 & p=$!; sleep 2; kill -9 $p; " +
                                  "wait $p 2>/dev/null; sleep 1; pgrep -f '" + pattern + "' | grep -vx $$ | wc -l");
    return std::stoi(r.output);
  }
  std::string token(const std::string& route) const { return "qckill_" + std::to_string(::getpid()) + "_" + route; }
  std::string case_file(const std::string& t) const {
    const fs::path p = dir_ / (t + ".json");
    std::ofstream(p) << R"({"suite": "s", "cases": [{"name": "q", "op": "quantize", "spec": "onnx",
      "input": {"dtype": "f32", "shape": [4], "data": [0.5, 1.5, -2.5, 3.0]}, "scale": 1.0, "zero_point": 0,
      "output_dtype": "i8"}]})";
    return p.string();
  }
};

TEST_F(KilledRun, AnIsolatedPluginCallDiesWithTheHarness) {
  // The forked child has the harness's command line, which names the case file, which holds the token.
  const std::string t = token("plugin");
  EXPECT_EQ(
      survivors("run " + case_file(t) + " --plugin " + QCONFORM_TEST_PLUGIN_FAULTY +
                    " --backend plugin-hang --isolate --timeout 60 -q --no-reproducers -o " + (dir_ / "out").string(),
                t),
      0);
}

TEST_F(KilledRun, AnExecRunnerDiesWithTheHarness) {
  // The runner is a copy of the fault runner named after the token, so its command line holds it.
  const std::string t = token("exec");
  const fs::path runner = dir_ / (t + "_runner.py");
  fs::copy_file(fs::path(QCONFORM_SOURCE_DIR) / "python/tests/data/fault_runner.py", runner);
  EXPECT_EQ(survivors("run " + case_file("case") + " --backend 'exec:/usr/bin/python3 " + runner.string() +
                          " hang' --timeout 60 -q --no-reproducers -o " + (dir_ / "out").string(),
                      t),
            0);
}

}  // namespace
}  // namespace qc::testing
