// `qconform infer` runs on every backend the binary has: each available one answers its probes
// (exit 0), each unavailable one exits 77 saying why, and none crashes. It once died of SIGSEGV on
// the x86 kernels, which read the weights' shape from a field only packed weights set. The x86
// accumulations are known from the ISA: vpmaddubsw sums u8 x s8 pairs saturated to int16 (Intel SDM,
// PMADDUBSW), vpdpbusd sums groups of four products into int32 without an int16 step (VPDPBUSD).
#include "cli_run.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace qc::testing
