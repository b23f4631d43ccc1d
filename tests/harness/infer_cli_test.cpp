// `qconform infer` runs on every backend the binary has: each available one answers its probes
// (exit 0), each unavailable one exits 77 saying why, and none crashes. It once died of SIGSEGV on
// the x86 kernels, which read the weights' shape from a field only packed weights set. The x86
// accumulations are known from the ISA: vpmaddubsw sums u8 x s8 pairs saturated to int16 (Intel SDM,
// PMADDUBSW), vpdpbusd sums groups of four products into int32 without an int16 step (VPDPBUSD).
#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace qc::testing {
namespace {

struct Listed {
  std::string name;
  bool available;
};

std::vector<Listed> built_in_backends() {
  const auto r = run_qconform_output("list backends");
  EXPECT_EQ(r.code, 0) << r.output;
  std::vector<Listed> out;
  std::istringstream in(r.output);
  const std::regex line(R"(^  (\S+)  claims \S+  (available|unavailable).*)");
  std::smatch m;
  for (std::string s; std::getline(in, s);)
    if (std::regex_match(s, m, line)) out.push_back({m[1], m[2] == "available"});
  return out;
}

TEST(InferCli, RunsOnEveryBackend) {
  const auto backends = built_in_backends();
  ASSERT_GE(backends.size(), 5u);  // cpu-ref, the three x86 kernels, the hip variants
  for (const Listed& b : backends) {
    SCOPED_TRACE(b.name);
    const auto r = run_qconform_output("infer --backend " + b.name);
    if (!b.available) {
      EXPECT_EQ(r.code, 77) << r.output;
      EXPECT_NE(r.output.find(b.name + " is not available"), std::string::npos) << r.output;
      continue;
    }
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.find(b.name + ": 0 probe elements"), std::string::npos) << r.output;
    if (b.name == "avx2-maddubs") {
      EXPECT_NE(r.output.find("qgemm.accumulation: int16_pair_saturate\n"), std::string::npos) << r.output;
    }
    if (b.name == "vnni512" || b.name == "avxvnni") {
      EXPECT_NE(r.output.find("qgemm.accumulation: "), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("int16_pair_saturate"), std::string::npos) << r.output;
    }
  }
}

// The CPU reference claiming TFLite requantizes by gemmlowp's double rounding
// (backends/cpu_ref, tensorflow/lite/kernels/internal/common.h MultiplyByQuantizedMultiplier); under
// its default ONNX claim it rounds the exact product once. infer tells them apart on its own
// (the requantize probes' multiplier 1/4 puts accumulators where they part), and --json writes the
// same findings.
TEST(InferCli, NamesTheRequantizeSchemeOfEachCpuRefClaim) {
  const std::filesystem::path json =
      std::filesystem::temp_directory_path() / ("qconform_infer_" + std::to_string(::getpid()) + ".json");
  auto r = run_qconform_output("infer --backend cpu-ref:tflite-reference --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = read_json(json);
  std::filesystem::remove(json);
  std::vector<std::string> schemes;
  for (const auto& f : j["findings"])
    if (f["op"] == "requantize" && f["dimension"] == "scheme") schemes = f["values"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "gemmlowp_double"), schemes.end()) << r.output;
  EXPECT_EQ(std::find(schemes.begin(), schemes.end(), "ideal"), schemes.end()) << r.output;
  const auto presets = j["presets"].get<std::vector<std::string>>();  // as docs/ci.md shows
  EXPECT_NE(std::find(presets.begin(), presets.end(), "tflite-reference"), presets.end()) << r.output;
  r = run_qconform_output("infer --backend cpu-ref");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::regex scheme_line("\\n  requantize\\.scheme: ([^\\n]*)\\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, scheme_line)) << r.output;
  EXPECT_NE(m[1].str().find("ideal"), std::string::npos) << r.output;
  EXPECT_EQ(m[1].str().find("gemmlowp_double"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace qc::testing
