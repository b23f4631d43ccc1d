// The hip backend is fork-safe for the runner: everything the runner asks in its own process
// (name, claim, description, availability, facts, supports) leaves the GPU runtime uninitialised,
// so the children that `qconform run --isolate` forks for run() can initialise their own
// (backend.cpp, "The device"). isolate_cli_test.cpp runs the CLI that way.
#include "backends/hip/backend.hpp"
#include "tests/hip/cases.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace qc::gpu {
namespace {

TEST(HipForkSafety, TheRunnersQuestionsLeaveTheRuntimeUninitialised) {
  ASSERT_FALSE(hip_runtime_used_in_this_process()) << "an earlier test in this process called run()";
  const OpRequest op = test::elementwise_cases().front().op;
  for (HipVariant v : all_hip_variants()) {
    const HipBackend b(v);
    EXPECT_FALSE(b.name().empty());
    EXPECT_FALSE(b.claim().empty());
    EXPECT_FALSE(b.description().empty());
    const Availability a = b.availability();
    if (a.available) {
      EXPECT_FALSE(b.facts()["gpu"].empty());
    } else {
      // The prober's answer came back over the pipe whole: the runtime's own words.
      EXPECT_NE(a.reason.find("device"), std::string::npos) << a.reason;
    }
    EXPECT_TRUE(b.supports(op).available) << hip_variant_name(v);
  }
  EXPECT_FALSE(hip_runtime_used_in_this_process());
  // The CUDA runtime loads the driver library when it initialises; on a machine with a GPU this
  // shows the parent never did, independently of the backend's own flag. (Without a driver there
  // is no libcuda to load: only the prober tried, which strace -f shows.)
  std::ifstream maps("/proc/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_EQ(mapped.find("libcuda.so"), std::string::npos);
}

}  // namespace
}  // namespace qc::gpu
