// avx2_maddubs micro-kernel: the pre-VNNI AVX2 sequence that MLAS, FBGEMM and oneDNN use on CPUs
// without VNNI, kept on purpose as a numerics hazard:
//     vpmaddubsw  t16 = sat16(au[2j]·w[2j] + au[2j+1]·w[2j+1])   (u8 x s8 adjacent pairs -> int16, SATURATING)
//     vpmaddwd    t32 = t16[2i] + t16[2i+1]                       (by ones: exact)
//     vpaddd      acc += t32                                       (wrap)
// The pairs are adjacent K indices of the packed group of four, i.e. (2j, 2j+1) of the GEMM's K
// order. 255·127 + 255·127 = 64770 becomes 32767. Weights restricted to 7 bits ([-64, 63],
// QuantSpec::weights_7bit) keep every pair within int16 (|pair| <= 32640).
// 4 rows x 16 columns (2 ymm): 8 accumulators + 2 weights + broadcast + ones + a temporary.
#include "backends/vnni/kernels.hpp"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#define QC_AVX2_TARGET __attribute__((target("avx2,fma")))
#define QC_AVX2_MR 4
#define QC_AVX2_NRV 2
#define QC_AVX2_KC_GROUPS 128
#define QC_AVX2_MC 192
#define QC_AVX2_DOT(acc, x, w) _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((x), (w)), ones16))
#define QC_AVX2_KERNELS avx2_maddubs_kernels
#include "backends/vnni/avx2_tile.inc"

#else

namespace qc::vnni::detail {
const KernelSet& avx2_maddubs_kernels() {
  static const KernelSet set{};
  return set;
}
}  // namespace qc::vnni::detail

#endif
