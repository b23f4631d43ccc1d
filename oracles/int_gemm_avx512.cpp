// The integer GEMM's AVX-512 VNNI tile kernel (int_gemm.hpp): oracles/CMakeLists.txt compiles this
// file with -mavx512f -mavx512bw -mavx512vnni on x86-64, and available() offers it only where cpuid
// reports those features.
#if QCONFORM_ORACLE_X86
#include "oracles/int_gemm.hpp"
#include "oracles/int_gemm_pack.hpp"

// GCC 12 reports the undefined upper half that its own _mm512_extracti64x4_epi64 and
// _mm512_castsi512_si256 start from as maybe-uninitialized (a false positive of the headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

namespace qc::int_gemm {
namespace avx512_detail {

// 12 rows x 32 columns: 24 zmm accumulators, 2 for B's columns; A's 4 bytes are broadcast from
// memory by each vpdpbusd.
constexpr int kMr = 12, kNr = 32;

inline __m512i broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Adds 16 int32 lanes into 16 int64 values at c.
inline void add_16(std::int64_t* c, __m512i v) {
  const __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v));
  const __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1));
  _mm512_storeu_si512(c, _mm512_add_epi64(_mm512_loadu_si512(c), lo));
  _mm512_storeu_si512(c + 8, _mm512_add_epi64(_mm512_loadu_si512(c + 8), hi));
}

// Stores 16 int32 lanes as 16 int64 values at c.
inline void store_16(std::int64_t* c, __m512i v) {
  _mm512_storeu_si512(c, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
  _mm512_storeu_si512(c + 8, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
}

// The accumulators are named variables, not an array: GCC keeps an array of vectors in memory and
// stores it on every step.
#define QC_VNNI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

void tile(const void* av, const void* bv, std::int64_t kp, std::int64_t* c, std::int64_t rs, std::int64_t cs, int rows,
          int cols, bool store) {
  const auto* a = static_cast<const std::uint8_t*>(av);
  const auto* b = static_cast<const std::int8_t*>(bv);
#define QC_VNNI_ZERO(i) __m512i c##i##_0 = _mm512_setzero_si512(), c##i##_1 = _mm512_setzero_si512();
  QC_VNNI_ROWS(QC_VNNI_ZERO)
#undef QC_VNNI_ZERO
  for (std::int64_t g = 0; g < kp / 4; ++g) {
    const __m512i b0 = _mm512_loadu_si512(b + g * kNr * 4);
    const __m512i b1 = _mm512_loadu_si512(b + g * kNr * 4 + 64);
    const std::uint8_t* ag = a + g * kMr * 4;
#define QC_VNNI_STEP(i)                              \
  {                                                  \
    const __m512i x = broadcast4(ag + (i)*4);        \
    c##i##_0 = _mm512_dpbusd_epi32(c##i##_0, x, b0); \
    c##i##_1 = _mm512_dpbusd_epi32(c##i##_1, x, b1); \
  }
    QC_VNNI_ROWS(QC_VNNI_STEP)
#undef QC_VNNI_STEP
  }
  if (rows == kMr && cols == kNr && cs == 1) {
    if (store) {
#define QC_VNNI_PUT(i)            \
  store_16(c + (i)*rs, c##i##_0); \
  store_16(c + (i)*rs + 16, c##i##_1);
      QC_VNNI_ROWS(QC_VNNI_PUT)
#undef QC_VNNI_PUT
      return;
    }
#define QC_VNNI_ADD(i)          \
  add_16(c + (i)*rs, c##i##_0); \
  add_16(c + (i)*rs + 16, c##i##_1);
    QC_VNNI_ROWS(QC_VNNI_ADD)
#undef QC_VNNI_ADD
    return;
  }
  alignas(64) std::int32_t t[kMr][kNr];
#define QC_VNNI_STORE(i)                  \
  _mm512_store_si512(&t[i][0], c##i##_0); \
  _mm512_store_si512(&t[i][16], c##i##_1);
  QC_VNNI_ROWS(QC_VNNI_STORE)
#undef QC_VNNI_STORE
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) c[i * rs + j * cs] = (store ? 0 : c[i * rs + j * cs]) + t[i][j];
}
#undef QC_VNNI_ROWS

}  // namespace avx512_detail

KernelShape kernel_avx512_vnni() {
  return {avx512_detail::kMr,
          avx512_detail::kNr,
          4,
          false,
          &avx512_detail::tile,
          &int_gemm_pack_panel<std::uint8_t, 4, false>,
          &int_gemm_pack_panel<std::int8_t, 4, true>,
          &int_gemm_minmax,
          &int_gemm_subtract};
}

}  // namespace qc::int_gemm
#endif
