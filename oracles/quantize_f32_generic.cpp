// The f32 quantize kernel for the baseline ISA, and the choice among the builds (quantize_f32.hpp).
#include "oracles/kernel_isa.hpp"
#include "oracles/quantize_f32_kernel.hpp"

#include <cstdlib>

namespace qc::quantize_f32 {

void run_generic(const Params& p, Out out, const float* x, std::int64_t n, void* q, Label* labels, std::int64_t base,
                 std::vector<std::int64_t>& slow) {
  run_kernel(p, out, x, n, q, labels, base, slow);
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

Kernel kernel_named(const char* isa) { return variant_named(variants(), isa); }

Kernel kernel() {
  static const Kernel k = kernel_named(std::getenv("QCONFORM_ORACLE_ISA"));
  return k;
}

}  // namespace qc::quantize_f32
