// The float GEMM of the x86 backend's weight-only (hybrid) path: float activations times weights
// dequantized to f32, as weight-only CPU kernels run it (dequantize a panel, then an f32 FMA
// GEMM). Each output accumulates over k in ascending order with one fused multiply-add per term,
// 16 or 8 columns at a time; rows split across the worker threads.
#include "backends/vnni/vnni.hpp"
#include "qconform/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace qc::vnni {
namespace {

// The loop, the same for every ISA: inlined into each target function below, the compiler
// vectorizes the columns with that ISA's FMA (std::fma is one rounding, whichever instruction
// computes it).
[[gnu::always_inline]] inline void rows_body(const float* a, std::int64_t k, const float* w, std::int64_t n,
                                             const float* bias, float* out, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    float* y = out + r * n;
    for (std::int64_t j = 0; j < n; ++j) y[j] = 0.0f;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const float av = a[r * k + kk];
      const float* wr = w + kk * n;
      for (std::int64_t j = 0; j < n; ++j) y[j] = std::fma(av, wr[j], y[j]);
    }
    if (bias)
      for (std::int64_t j = 0; j < n; ++j) y[j] = y[j] + bias[j];
  }
}

void rows_scalar(const float* a, std::int64_t k, const float* w, std::int64_t n, const float* bias, float* out,
                 std::int64_t r0, std::int64_t r1) {
  rows_body(a, k, w, n, bias, out, r0, r1);
}
__attribute__((target("avx2,fma"))) void rows_avx2(const float* a, std::int64_t k, const float* w, std::int64_t n,
                                                   const float* bias, float* out, std::int64_t r0, std::int64_t r1) {
  rows_body(a, k, w, n, bias, out, r0, r1);
}
__attribute__((target("avx512f"))) void rows_avx512(const float* a, std::int64_t k, const float* w, std::int64_t n,
                                                    const float* bias, float* out, std::int64_t r0, std::int64_t r1) {
  rows_body(a, k, w, n, bias, out, r0, r1);
}

}  // namespace

void float_gemm(Isa isa, const float* a, std::int64_t m, std::int64_t k, const float* w, std::int64_t n,
                const float* bias, float* out) {
  const auto rows = isa == Isa::vnni512 ? rows_avx512 : isa == Isa::scalar ? rows_scalar : rows_avx2;
  parallel_ranges(m, std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(1, k * n)),
                  [&](std::int64_t r0, std::int64_t r1) { rows(a, k, w, n, bias, out, r0, r1); });
}

}  // namespace qc::vnni
