// Run-time ISA detection and dispatch.
#include "backends/vnni/vnni.hpp"
#include "qconform/error.hpp"

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace qc::vnni {
namespace {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;
  bool os_ymm = false;  // XCR0 has SSE and AVX state: the OS saves ymm registers
};

#if defined(__x86_64__)
// XGETBV(0) without needing the xsave target; only called when CPUID.1:ECX.OSXSAVE is set.
std::uint64_t xgetbv0() {
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}

CpuFeatures probe() {
  CpuFeatures f;
  __builtin_cpu_init();
  // libgcc's cpuinfo checks the OS state (XCR0 ymm / zmm bits) before it reports AVX2 or AVX-512.
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512_vnni = __builtin_cpu_supports("avx512vnni");
  // AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4, with the OS saving ymm state.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 27)) != 0)  // OSXSAVE
    f.os_ymm = (xgetbv0() & 0x6) == 0x6;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx_vnni = f.os_ymm && (eax & (1u << 4)) != 0;
  }
  return f;
}
#else
CpuFeatures probe() { return {}; }
#endif

// The CPU does not change while the process runs: probed once.
const CpuFeatures& features() {
  static const CpuFeatures f = probe();
  return f;
}

// The feature each ISA needs, in the order they are reported when missing.
std::optional<std::string> missing_on_cpu(Isa isa) {
#if !defined(__x86_64__)
  if (isa != Isa::scalar) return std::string("x86-64");
#endif
  const CpuFeatures& f = features();
  switch (isa) {
    case Isa::scalar:
      return std::nullopt;
    case Isa::avx2_maddubs:
      if (!f.avx2) return std::string("avx2");
      if (!f.fma) return std::string("fma");
      return std::nullopt;
    case Isa::avxvnni:
      if (!f.avx2) return std::string("avx2");
      if (!f.fma) return std::string("fma");
      if (!f.avx_vnni) return std::string("avx_vnni");
      return std::nullopt;
    case Isa::vnni512:
      if (!f.avx512f) return std::string("avx512f");
      if (!f.avx512bw) return std::string("avx512bw");
      if (!f.avx512_vnni) return std::string("avx512_vnni");
      return std::nullopt;
  }
  return std::nullopt;
}

// The feature named when an ISA is disabled by the environment: the one that defines it.
std::string_view defining_feature(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2_maddubs:
      return "avx2";
    case Isa::avxvnni:
      return "avx_vnni";
    case Isa::vnni512:
      return "avx512_vnni";
  }
  return "?";
}

bool disabled_by_env(Isa isa) {
  const char* env = std::getenv("QCONFORM_VNNI_DISABLE");
  if (!env) return false;
  std::string_view list(env);
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (parse_isa(item) == isa) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::string_view name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2_maddubs:
      return "avx2_maddubs";
    case Isa::avxvnni:
      return "avxvnni";
    case Isa::vnni512:
      return "vnni512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view s) {
  for (Isa isa : kAllIsas)
    if (name(isa) == s) return isa;
  return std::nullopt;
}

std::optional<std::string> missing_feature(Isa isa) {
  if (isa != Isa::scalar && disabled_by_env(isa))
    return std::string(defining_feature(isa)) + " (disabled by QCONFORM_VNNI_DISABLE)";
  return missing_on_cpu(isa);
}

Isa detect_isa() {
  for (Isa isa : {Isa::vnni512, Isa::avxvnni, Isa::avx2_maddubs})
    if (available(isa)) return isa;
  return Isa::scalar;
}

Isa select_isa() {
  const char* env = std::getenv("QCONFORM_VNNI_FORCE");
  if (!env || !*env) return detect_isa();
  const std::optional<Isa> isa = parse_isa(env);
  if (!isa)
    throw InputError(std::string("QCONFORM_VNNI_FORCE=") + env +
                     ": not an ISA (expected scalar, avx2_maddubs, avxvnni or vnni512)");
  if (const auto missing = missing_feature(*isa))
    throw InputError(std::string("QCONFORM_VNNI_FORCE=") + env + ": this CPU lacks " + *missing);
  return *isa;
}

}  // namespace qc::vnni
