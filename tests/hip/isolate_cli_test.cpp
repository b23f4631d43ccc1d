// `qconform run --isolate` on the six hip variants, end to end through the binary. The parent
// asks each variant's availability and facts without initialising the GPU runtime, so each forked
// child initialises its own: with a GPU every verdict is PASS (the cases hold each variant to its
// claim where it parts from the spec); without one every verdict is SKIP with the probe's reason.
// Never CRASH (what a child that inherited an initialised runtime would give) or TIMEOUT.
#include "backends/hip/backend.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace qc::gpu {
namespace {

namespace fs = std::filesystem;

TEST(HipIsolate, EachChildInitialisesItsOwnRuntime) {
  const fs::path dir = fs::temp_directory_path() / ("qconform_hip_isolate_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string cmd = std::string(QCONFORM_BIN) + " run " + QCONFORM_SOURCE_DIR + "/cases/requantize.json --isolate" +
                    " --timeout 120 --report-dir " + dir.string();
  for (HipVariant v : all_hip_variants()) cmd += " --backend " + hip_variant_name(v);
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) output += buf.data();
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << output;

  const Availability gpu = hip_device_availability();
  EXPECT_EQ(WEXITSTATUS(status), gpu.available ? 0 : 77) << output;  // 77: every result SKIP
  std::ifstream in(dir / "report.json");
  ASSERT_TRUE(in) << output;
  const nlohmann::json report = nlohmann::json::parse(in);
  int results = 0, passed = 0;
  for (const auto& c : report["cases"])
    for (const auto& b : c["backends"]) {
      ++results;
      const std::string where =
          c["id"].get<std::string>() + " on " + b["backend"].get<std::string>() + ": " + b["reason"].get<std::string>();
      if (gpu.available) {  // a SKIP here is a request the variant does not support, with its own reason
        EXPECT_TRUE(b["verdict"] == "PASS" || (b["verdict"] == "SKIP" && b["reason"] != gpu.reason)) << where;
        passed += b["verdict"] == "PASS";
      } else {
        EXPECT_EQ(b["verdict"], "SKIP") << where;
        EXPECT_EQ(b["reason"], gpu.reason) << where;
      }
    }
  EXPECT_GT(results, 0);
  if (gpu.available) {
    EXPECT_GT(passed, 0);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qc::gpu
