// The f32 quantize kernel for the baseline ISA, and the choice among the builds (quantize_f32.hpp).
#include "oracles/quantize_f32_kernel.hpp"
#include "qconform/error.hpp"

#include <cstdlib>
#include <string>
#include <string_view>

namespace qc::quantize_f32 {

void run_generic(const Params& p, Out out, const float* x, std::int64_t n, void* q, Label* labels, std::int64_t base,
                 std::vector<std::int64_t>& slow) {
  run_kernel(p, out, x, n, q, labels, base, slow);
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

Kernel kernel_named(const char* isa) {
  const std::span<const Variant> v = variants();
  if (isa == nullptr || *isa == '\0') return v.back().kernel;
  std::string names;
  for (const Variant& e : v) {
    if (std::string_view(isa) == e.isa) return e.kernel;
    names += names.empty() ? e.isa : std::string(", ") + e.isa;
  }
  throw InputError("QCONFORM_ORACLE_ISA=" + std::string(isa) + ": this machine runs " + names);
}

Kernel kernel() {
  static const Kernel k = kernel_named(std::getenv("QCONFORM_ORACLE_ISA"));
  return k;
}

}  // namespace qc::quantize_f32
