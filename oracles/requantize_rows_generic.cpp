// The ideal requantize row kernel for the baseline ISA, and the choice among the builds
// (requantize_rows.hpp).
#include "oracles/requantize_rows_kernel.hpp"
#include "qconform/error.hpp"

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace qc::requantize_rows {

std::int64_t run_generic(const Params& p, const std::int64_t* acc, const double* cf, Row row) {
  return run_kernel(p, acc, cf, row);
}

std::span<const Variant> variants() {
  static const std::vector<Variant> v = [] {
    std::vector<Variant> r{{"generic", &run_generic}};
#if QCONFORM_ORACLE_X86
    // __builtin_cpu_supports also checks that the OS saves the vector registers (XCR0).
    if (__builtin_cpu_supports("avx2")) r.push_back({"avx2", &run_avx2});
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
      r.push_back({"avx512", &run_avx512});
#endif
    return r;
  }();
  return v;
}

Kernel kernel() {
  static const Kernel k = [] {
    const char* isa = std::getenv("QCONFORM_ORACLE_ISA");
    const std::span<const Variant> v = variants();
    if (isa == nullptr || *isa == '\0') return v.back().kernel;
    std::string names;
    for (const Variant& e : v) {
      if (std::string_view(isa) == e.isa) return e.kernel;
      names += names.empty() ? e.isa : std::string(", ") + e.isa;
    }
    throw InputError("QCONFORM_ORACLE_ISA=" + std::string(isa) + ": this machine runs " + names);
  }();
  return k;
}

}  // namespace qc::requantize_rows
