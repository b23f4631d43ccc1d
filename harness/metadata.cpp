// The facts a report records about the run's host and build (RunMetadata): the tool's version and
// revision, the compiler, the host name, the CPU model and the x86 features the kernels dispatch on.
#include "harness/runner.hpp"

#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <ctime>
#include <fstream>
#include <string>

#include "qconform_revision.hpp"

#ifndef QCONFORM_VERSION
#define QCONFORM_VERSION "0.0.0"
#endif

namespace qc {
namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

RunMetadata collect_metadata() {
  RunMetadata m;
  m.tool_version = QCONFORM_VERSION;
  m.git_revision = QCONFORM_GIT_REVISION;
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "gcc " __VERSION__;
#endif
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
#if defined(__x86_64__)
  // CPUID leaf 1, ECX bit 29 (Intel SDM vol. 2A, CPUID): clang 14's __builtin_cpu_supports has no "f16c".
  const auto has_f16c = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  };
  __builtin_cpu_init();
  struct F {
    const char* name;
    bool on;
  };
  const F feats[] = {{"sse4.1", __builtin_cpu_supports("sse4.1") != 0},
                     {"avx2", __builtin_cpu_supports("avx2") != 0},
                     {"fma", __builtin_cpu_supports("fma") != 0},
                     {"f16c", has_f16c()},
                     {"avx512f", __builtin_cpu_supports("avx512f") != 0},
                     {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
                     {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0}};
  for (const F& f : feats)
    if (f.on) m.cpu_features.push_back(f.name);
#endif
  m.started_at = now_utc();
  return m;
}

}  // namespace qc
