// avxvnni micro-kernel: the 256-bit VEX form of vpdpbusd (AVX-VNNI; Alder Lake and later, Zen 5),
// 4 rows x 24 columns (3 ymm). VEX encoding reaches only ymm0-15: 12 accumulators + 3 weight
// vectors + 1 broadcast = 16. The arithmetic is vnni512's: four u8 x s8 products per int32 lane,
// summed exactly and added with wrap.
#include "backends/vnni/kernels.hpp"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#define QC_AVX2_TARGET __attribute__((target("avx2,fma,avxvnni")))
#ifndef QC_AVXVNNI_MR
#define QC_AVXVNNI_MR 4
#define QC_AVXVNNI_NRV 3
#endif
#define QC_AVX2_MR QC_AVXVNNI_MR
#define QC_AVX2_NRV QC_AVXVNNI_NRV
// K block 512: the 512 x 24 weight slice (12 KiB) stays in L1; A block 192 x 512 in L2.
#define QC_AVX2_KC_GROUPS 128
#define QC_AVX2_MC 192
// _mm256_dpbusd_avx_epi32 is {vex} vpdpbusd (the _mm256_dpbusd_epi32 spelling is AVX512VL's EVEX form).
#define QC_AVX2_DOT(acc, x, w) _mm256_dpbusd_avx_epi32((acc), (x), (w))
#define QC_AVX2_KERNELS avxvnni_kernels
#include "backends/vnni/avx2_tile.inc"

#else

namespace qc::vnni::detail {
const KernelSet& avxvnni_kernels() {
  static const KernelSet set{};
  return set;
}
}  // namespace qc::vnni::detail

#endif
