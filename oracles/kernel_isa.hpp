// Choosing among a kernel's per-ISA builds at run time, shared by the oracle's kernels that are
// built once per ISA (quantize_f32_*.cpp, requantize_rows_*.cpp).
#pragma once

#include "qconform/error.hpp"

#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace qc {

#if QCONFORM_ORACLE_X86
// The AVX-512 builds use F, BW, VL and DQ (oracles/CMakeLists.txt). __builtin_cpu_supports also
// checks that the OS saves the vector registers (XCR0).
inline bool cpu_runs_avx512_builds() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

// The build QCONFORM_ORACLE_ISA names (`isa`), or the widest this CPU runs (the last of `v`) when it
// names none; an InputError lists the builds this CPU runs.
template <class Variant>
auto variant_named(std::span<const Variant> v, const char* isa) -> decltype(v.back().kernel) {
  if (isa == nullptr || *isa == '\0') return v.back().kernel;
  std::string names;
  for (const Variant& e : v) {
    if (std::string_view(isa) == e.isa) return e.kernel;
    names += names.empty() ? e.isa : std::string(", ") + e.isa;
  }
  throw InputError("QCONFORM_ORACLE_ISA=" + std::string(isa) + ": this machine runs " + names);
}

}  // namespace qc
