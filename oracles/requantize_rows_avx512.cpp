// The ideal requantize row kernel built for AVX512 (requantize_rows.hpp): oracles/CMakeLists.txt
// compiles this file with its target flags on x86-64, and variants() calls it only where cpuid
// reports the ISA.
#if QCONFORM_ORACLE_X86
#include "oracles/requantize_rows_kernel.hpp"

namespace qc::requantize_rows {

std::int64_t run_avx512(const Params& p, const std::int64_t* acc, const double* cf, Row row) {
  return run_kernel(p, acc, cf, row);
}

}  // namespace qc::requantize_rows
#endif
