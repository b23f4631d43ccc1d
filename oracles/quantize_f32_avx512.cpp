// The f32 quantize kernel built for AVX512 (quantize_f32.hpp): oracles/CMakeLists.txt compiles this file
// with -mavx512f -mavx512bw -mavx512vl -mavx512dq on x86-64, and variants() calls it only where cpuid reports the ISA.
#if QCONFORM_ORACLE_X86
#include "oracles/quantize_f32_kernel.hpp"

namespace qc::quantize_f32 {

void run_avx512(const Params& p, Out out, const float* x, std::int64_t n, void* q, Label* labels, std::int64_t base,
                std::vector<std::int64_t>& slow) {
  run_kernel(p, out, x, n, q, labels, base, slow);
}

}  // namespace qc::quantize_f32
#endif
