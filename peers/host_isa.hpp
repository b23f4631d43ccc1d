// The x86 features this host has that decide which SIMD kernels a library picks, for a peer's facts
// ("x86-64 sse4.1 ... avx512vnni"); shared by the plugin peers.
#pragma once

#include <string>

namespace qc::peers {

inline std::string host_isa() {
  std::string s = "x86-64";
  __builtin_cpu_init();
  // __builtin_cpu_supports takes a string literal, so one line per feature.
#define QCONFORM_ISA(F) \
  if (__builtin_cpu_supports(F)) s += " " F
  QCONFORM_ISA("sse4.1");
  QCONFORM_ISA("sse4.2");
  QCONFORM_ISA("avx");
  QCONFORM_ISA("xop");
  QCONFORM_ISA("avx2");
  QCONFORM_ISA("fma");
  QCONFORM_ISA("avx512f");
  QCONFORM_ISA("avx512bw");
  QCONFORM_ISA("avx512dq");
  QCONFORM_ISA("avx512vl");
  QCONFORM_ISA("avx512vnni");
#undef QCONFORM_ISA
  return s;
}

}  // namespace qc::peers
