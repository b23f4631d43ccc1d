// The integer GEMM's AVX2 tile kernel (int_gemm.hpp): oracles/CMakeLists.txt compiles this file
// with -mavx2 on x86-64, and available() offers it only where cpuid reports AVX2. The operands are
// packed as int16 and multiplied with vpmaddwd, whose pair sums are exact in int32 (|pair| <=
// 2·255·128); vpmaddubsw would saturate them to int16.
#if QCONFORM_ORACLE_X86
#include "oracles/int_gemm.hpp"
#include "oracles/int_gemm_pack.hpp"

#include <immintrin.h>

#include <cstring>

namespace qc::int_gemm {
namespace avx2_detail {

// 6 rows x 16 columns: 12 ymm accumulators, 2 for B's columns, one broadcast and one product.
constexpr int kMr = 6, kNr = 16;

inline __m256i broadcast2(const std::int16_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Adds 8 int32 lanes into 8 int64 values at c.
inline void add_8(std::int64_t* c, __m256i v) {
  const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v));
  const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1));
  auto* p = reinterpret_cast<__m256i*>(c);
  _mm256_storeu_si256(p, _mm256_add_epi64(_mm256_loadu_si256(p), lo));
  _mm256_storeu_si256(p + 1, _mm256_add_epi64(_mm256_loadu_si256(p + 1), hi));
}

// Stores 8 int32 lanes as 8 int64 values at c.
inline void store_8(std::int64_t* c, __m256i v) {
  auto* p = reinterpret_cast<__m256i*>(c);
  _mm256_storeu_si256(p, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)));
  _mm256_storeu_si256(p + 1, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
}

// The accumulators are named variables, not an array: GCC keeps an array of vectors in memory and
// stores it on every step.
#define QC_AVX2_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

void tile(const void* av, const void* bv, std::int64_t kp, std::int64_t* c, std::int64_t rs, std::int64_t cs, int rows,
          int cols, bool store) {
  const auto* a = static_cast<const std::int16_t*>(av);
  const auto* b = static_cast<const std::int16_t*>(bv);
#define QC_AVX2_ZERO(i) __m256i c##i##_0 = _mm256_setzero_si256(), c##i##_1 = _mm256_setzero_si256();
  QC_AVX2_ROWS(QC_AVX2_ZERO)
#undef QC_AVX2_ZERO
  for (std::int64_t g = 0; g < kp / 2; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNr * 2));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNr * 2 + 16));
    const std::int16_t* ag = a + g * kMr * 2;
#define QC_AVX2_STEP(i)                                              \
  {                                                                  \
    const __m256i x = broadcast2(ag + (i)*2);                        \
    c##i##_0 = _mm256_add_epi32(c##i##_0, _mm256_madd_epi16(x, b0)); \
    c##i##_1 = _mm256_add_epi32(c##i##_1, _mm256_madd_epi16(x, b1)); \
  }
    QC_AVX2_ROWS(QC_AVX2_STEP)
#undef QC_AVX2_STEP
  }
  if (rows == kMr && cols == kNr && cs == 1) {
    if (store) {
#define QC_AVX2_PUT(i)           \
  store_8(c + (i)*rs, c##i##_0); \
  store_8(c + (i)*rs + 8, c##i##_1);
      QC_AVX2_ROWS(QC_AVX2_PUT)
#undef QC_AVX2_PUT
      return;
    }
#define QC_AVX2_ADD(i)         \
  add_8(c + (i)*rs, c##i##_0); \
  add_8(c + (i)*rs + 8, c##i##_1);
    QC_AVX2_ROWS(QC_AVX2_ADD)
#undef QC_AVX2_ADD
    return;
  }
  alignas(32) std::int32_t t[kMr][kNr];
#define QC_AVX2_STORE(i)                                              \
  _mm256_store_si256(reinterpret_cast<__m256i*>(&t[i][0]), c##i##_0); \
  _mm256_store_si256(reinterpret_cast<__m256i*>(&t[i][8]), c##i##_1);
  QC_AVX2_ROWS(QC_AVX2_STORE)
#undef QC_AVX2_STORE
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) c[i * rs + j * cs] = (store ? 0 : c[i * rs + j * cs]) + t[i][j];
}
#undef QC_AVX2_ROWS

}  // namespace avx2_detail

KernelShape kernel_avx2() {
  return {avx2_detail::kMr,
          avx2_detail::kNr,
          2,
          true,
          &avx2_detail::tile,
          &int_gemm_pack_panel<std::int16_t, 2, false>,
          &int_gemm_pack_panel<std::int16_t, 2, true>,
          &int_gemm_minmax,
          &int_gemm_subtract};
}

}  // namespace qc::int_gemm
#endif
