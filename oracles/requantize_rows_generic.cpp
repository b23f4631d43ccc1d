// The ideal requantize row kernel for the baseline ISA, and the choice among the builds
// (requantize_rows.hpp).
#include "oracles/kernel_isa.hpp"
#include "oracles/requantize_rows_kernel.hpp"

#include <cstdlib>
#include <vector>

namespace qc::requantize_rows {

std::int64_t run_generic(const Params& p, const std::int64_t* acc, const double* cf, Row row) {
  return run_kernel(p, acc, cf, row);
}

std::span<const Variant> variants() {
  static const std::vector<Variant> v = [] {
    std::vector<Variant> r{{"generic", &run_generic}};
#if QCONFORM_ORACLE_X86
    if (__builtin_cpu_supports("avx2")) r.push_back({"avx2", &run_avx2});
    if (cpu_runs_avx512_builds()) r.push_back({"avx512", &run_avx512});
#endif
    return r;
  }();
  return v;
}

Kernel kernel() {
  static const Kernel k = variant_named(variants(), std::getenv("QCONFORM_ORACLE_ISA"));
  return k;
}

}  // namespace qc::requantize_rows
