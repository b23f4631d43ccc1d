// Quantize, dequantize and requantize of the x86 backend: the f32 arithmetic of MLAS
// (MlasQuantizeLinear: x / s, clamp in float, cvtps2dq, + zp) and of XNNPACK's fp32 requantization
// (float(acc) * multiplier, clamp in float, cvtps2dq, + zp), one IEEE rounding per operation, in
// 16 (AVX-512) or 8 (AVX2) lanes, with a scalar model of the same operations for the tails and
// for CPUs without AVX2; and MLAS's AVX2 QLinearAdd (qadd). The elements split across the worker threads
// (qconform/parallel.hpp).
#include "backends/vnni/vnni.hpp"
#include "qconform/parallel.hpp"

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// _mm512_undefined_* passthrough of the unmasked intrinsics), as in kernel_vnni512.cpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <climits>
#include <cmath>

namespace qc::vnni {
namespace {

// vmaxps/vminps semantics: where either operand is NaN the second one is the result, so a NaN
// quotient clamps to the lower bound (MLAS sends NaN to qmin this way).
inline float max_ps(float a, float b) { return a > b ? a : b; }
inline float min_ps(float a, float b) { return a < b ? a : b; }
// cvtps2dq under the default MXCSR: round to nearest even.
inline std::int32_t cvtps2dq(float v) { return static_cast<std::int32_t>(std::nearbyint(v)); }

void quantize_scalar(const float* x, std::size_t n, const ElementwiseParams& p, std::int32_t* q) {
  for (std::size_t i = 0; i < n; ++i) q[i] = cvtps2dq(min_ps(max_ps(x[i] / p.scale, p.lo), p.hi)) + p.zero_point;
}
void dequantize_scalar(const std::int32_t* q, std::size_t n, const ElementwiseParams& p, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<float>(q[i] - p.zero_point) * p.scale;
}
void requantize_scalar(const std::int32_t* acc, std::size_t n, const ElementwiseParams& p, std::int32_t* q) {
  for (std::size_t i = 0; i < n; ++i)
    q[i] = cvtps2dq(min_ps(max_ps(static_cast<float>(acc[i]) * p.scale, p.lo), p.hi)) + p.zero_point;
}

__attribute__((target("avx2"))) void quantize_avx2(const float* x, std::size_t n, const ElementwiseParams& p,
                                                   std::int32_t* q) {
  const __m256 s = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), lo), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_add_epi32(_mm256_cvtps_epi32(v), zp));
  }
  quantize_scalar(x + i, n - i, p, q + i);
}
__attribute__((target("avx2"))) void dequantize_avx2(const std::int32_t* q, std::size_t n, const ElementwiseParams& p,
                                                     float* y) {
  const __m256 s = _mm256_set1_ps(p.scale);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i d = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i)), zp);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(d), s));
  }
  dequantize_scalar(q + i, n - i, p, y + i);
}
__attribute__((target("avx2"))) void requantize_avx2(const std::int32_t* acc, std::size_t n, const ElementwiseParams& p,
                                                     std::int32_t* q) {
  const __m256 m = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i)));
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(f, m), lo), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_add_epi32(_mm256_cvtps_epi32(v), zp));
  }
  requantize_scalar(acc + i, n - i, p, q + i);
}

__attribute__((target("avx512f"))) void quantize_avx512(const float* x, std::size_t n, const ElementwiseParams& p,
                                                        std::int32_t* q) {
  const __m512 s = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(_mm512_loadu_ps(x + i), s), lo), hi);
    _mm512_storeu_si512(q + i, _mm512_add_epi32(_mm512_cvtps_epi32(v), zp));
  }
  quantize_scalar(x + i, n - i, p, q + i);
}
__attribute__((target("avx512f"))) void dequantize_avx512(const std::int32_t* q, std::size_t n,
                                                          const ElementwiseParams& p, float* y) {
  const __m512 s = _mm512_set1_ps(p.scale);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i d = _mm512_sub_epi32(_mm512_loadu_si512(q + i), zp);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(d), s));
  }
  dequantize_scalar(q + i, n - i, p, y + i);
}
__attribute__((target("avx512f"))) void requantize_avx512(const std::int32_t* acc, std::size_t n,
                                                          const ElementwiseParams& p, std::int32_t* q) {
  const __m512 m = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 f = _mm512_cvtepi32_ps(_mm512_loadu_si512(acc + i));
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(f, m), lo), hi);
    _mm512_storeu_si512(q + i, _mm512_add_epi32(_mm512_cvtps_epi32(v), zp));
  }
  requantize_scalar(acc + i, n - i, p, q + i);
}

// ---- qadd (vnni.hpp QAddParams: MLAS qladd_avx2.cpp's arithmetic) -------------------------------

// cvtps2dq (ties to even; NaN and values outside int32 give the integer indefinite INT32_MIN),
// then the packs' saturation, which together clamp to [lo, hi].
inline std::int32_t qadd_convert(float t, const QAddParams& p) {
  const std::int32_t r = std::isnan(t) || !(std::fabs(t) < 0x1p31f) ? INT32_MIN : cvtps2dq(t);
  return r < p.lo ? p.lo : r > p.hi ? p.hi : r;
}
void qadd_scalar(const std::int32_t* a, const std::int32_t* b, std::size_t n, const QAddParams& p, std::int32_t* out) {
  if (p.b_scalar) {
    const float fixed = p.fixed + static_cast<float>(b[0]) * p.ratio_b;  // strict fp: two roundings
    for (std::size_t i = 0; i < n; ++i) out[i] = qadd_convert(std::fma(static_cast<float>(a[i]), p.ratio_a, fixed), p);
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    out[i] = qadd_convert(
        std::fma(static_cast<float>(a[i]), p.ratio_a, std::fma(static_cast<float>(b[i]), p.ratio_b, p.fixed)), p);
}
__attribute__((target("avx2,fma"))) void qadd_avx2(const std::int32_t* a, const std::int32_t* b, std::size_t n,
                                                   const QAddParams& p, std::int32_t* out) {
  const __m256 ra = _mm256_set1_ps(p.ratio_a), rb = _mm256_set1_ps(p.ratio_b);
  const __m256 fixed =
      p.b_scalar ? _mm256_set1_ps(p.fixed + static_cast<float>(b[0]) * p.ratio_b) : _mm256_set1_ps(p.fixed);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 fa = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    __m256 t;
    if (p.b_scalar) {
      t = _mm256_fmadd_ps(fa, ra, fixed);
    } else {
      const __m256 fb = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
      t = _mm256_fmadd_ps(fa, ra, _mm256_fmadd_ps(fb, rb, fixed));
    }
    // MLAS packs int32 -> int16 -> 8 bits with saturation; a clamp to [lo, hi] is the same map
    // (INT32_MIN from cvtps2dq saturates to the low end either way).
    const __m256i q = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(t), lo), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), q);
  }
  qadd_scalar(a + i, p.b_scalar ? b : b + i, n - i, p, out + i);
}

// Splits [0, n) across the worker threads and runs the ISA's kernel on each part.
template <class In, class Out, class Kernel>
void split(const In* in, std::size_t n, const ElementwiseParams& p, Out* out, Kernel kernel) {
  parallel_ranges(static_cast<std::int64_t>(n), 1 << 16,
                  [&](std::int64_t a, std::int64_t b) { kernel(in + a, static_cast<std::size_t>(b - a), p, out + a); });
}

// The build of a kernel for `isa`: AVX-512 on vnni512, AVX2 on the 256-bit ISAs, else scalar.
template <class Kernel>
Kernel pick(Isa isa, Kernel avx512, Kernel avx2, Kernel scalar) {
  return isa == Isa::vnni512 ? avx512 : (isa == Isa::avxvnni || isa == Isa::avx2_maddubs) ? avx2 : scalar;
}

}  // namespace

void quantize(Isa isa, const float* x, std::size_t n, const ElementwiseParams& p, std::int32_t* q) {
  split(x, n, p, q, pick(isa, quantize_avx512, quantize_avx2, quantize_scalar));
}

void dequantize(Isa isa, const std::int32_t* q, std::size_t n, const ElementwiseParams& p, float* y) {
  split(q, n, p, y, pick(isa, dequantize_avx512, dequantize_avx2, dequantize_scalar));
}

void requantize(Isa isa, const std::int32_t* acc, std::size_t n, const ElementwiseParams& p, std::int32_t* q) {
  split(acc, n, p, q, pick(isa, requantize_avx512, requantize_avx2, requantize_scalar));
}

// MLAS has only an AVX2 QLinearAdd kernel on x86 (it runs on AVX-512 hosts too): every ISA but the
// scalar one takes it.
void qadd(Isa isa, const std::int32_t* a, const std::int32_t* b, std::size_t n, const QAddParams& p,
          std::int32_t* out) {
  const auto kernel = isa == Isa::scalar ? qadd_scalar : qadd_avx2;
  parallel_ranges(static_cast<std::int64_t>(n), 1 << 16, [&](std::int64_t x, std::int64_t y) {
    kernel(a + x, p.b_scalar ? b : b + x, static_cast<std::size_t>(y - x), p, out + x);
  });
}

}  // namespace qc::vnni
