// Run-time dispatch: cpuid detection, QCONFORM_VNNI_FORCE, and QCONFORM_VNNI_DISABLE (which
// simulates a CPU without a feature, so the SKIP path runs on any machine).
#include "backends/vnni/vnni.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace qc::vnni {
namespace {

// Sets an environment variable for one scope (gtest runs tests in one thread).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string message_of(void (*f)()) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(VnniDispatch, NamesRoundTrip) {
  for (Isa isa : kAllIsas) EXPECT_EQ(parse_isa(name(isa)), isa);
  EXPECT_FALSE(parse_isa("sse2"));
}

TEST(VnniDispatch, DetectPicksTheBestAvailable) {
  const ScopedEnv force("QCONFORM_VNNI_FORCE", nullptr);
  const ScopedEnv disable("QCONFORM_VNNI_DISABLE", nullptr);
  EXPECT_FALSE(missing_feature(Isa::scalar));
  const Isa best = detect_isa();
  EXPECT_TRUE(available(best));
  for (Isa isa : kAllIsas) {
    if (static_cast<int>(isa) > static_cast<int>(best)) {
      EXPECT_FALSE(available(isa)) << name(isa);
    }
  }
  EXPECT_EQ(select_isa(), best);
  // avxvnni needs avx2 too; a CPU with avx512_vnni has avx2 here (both probed independently).
  for (Isa isa : kAllIsas) {
    const auto missing = missing_feature(isa);
    std::printf("[ info ] %-13s %s\n", std::string(name(isa)).c_str(),
                missing ? ("lacks " + *missing).c_str() : "available");
  }
}

TEST(VnniDispatch, ForceSelectsAnAvailableIsa) {
  const ScopedEnv disable("QCONFORM_VNNI_DISABLE", nullptr);
  for (Isa isa : kAllIsas) {
    const ScopedEnv force("QCONFORM_VNNI_FORCE", std::string(name(isa)).c_str());
    if (available(isa))
      EXPECT_EQ(select_isa(), isa);
    else
      EXPECT_THROW(select_isa(), InputError);
  }
}

TEST(VnniDispatch, ForceRejectsUnknownNames) {
  const ScopedEnv force("QCONFORM_VNNI_FORCE", "vnni1024");
  const std::string m = message_of([] { (void)select_isa(); });
  EXPECT_NE(m.find("QCONFORM_VNNI_FORCE=vnni1024"), std::string::npos) << m;
  EXPECT_NE(m.find("expected scalar, avx2_maddubs, avxvnni or vnni512"), std::string::npos) << m;
}

TEST(VnniDispatch, DisableSimulatesAMissingFeature) {
  const ScopedEnv force("QCONFORM_VNNI_FORCE", nullptr);
  const ScopedEnv disable("QCONFORM_VNNI_DISABLE", "vnni512,avxvnni");
  ASSERT_TRUE(missing_feature(Isa::vnni512));
  EXPECT_EQ(*missing_feature(Isa::vnni512), "avx512_vnni (disabled by QCONFORM_VNNI_DISABLE)");
  EXPECT_EQ(*missing_feature(Isa::avxvnni), "avx_vnni (disabled by QCONFORM_VNNI_DISABLE)");
  EXPECT_FALSE(missing_feature(Isa::scalar));
  const Isa best = detect_isa();
  EXPECT_TRUE(best == Isa::avx2_maddubs || best == Isa::scalar);
  {
    const ScopedEnv force2("QCONFORM_VNNI_FORCE", "vnni512");
    const std::string m = message_of([] { (void)select_isa(); });
    EXPECT_NE(m.find("this CPU lacks avx512_vnni"), std::string::npos) << m;
  }
  // Weights packed for an ISA the CPU lacks are refused at run time (never a SIGILL).
  GemmParams p;
  p.n = 1;
  p.k = 1;
  const PackedWeights w = pack_weights(p, std::vector<std::int8_t>{1}, Isa::vnni512);
  const std::uint8_t a = 1;
  std::int32_t out = 0;
  try {
    gemm(w, 1, &a, 1, &out, 1);
    FAIL() << "ran a disabled ISA";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("avx512_vnni"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qc::vnni
