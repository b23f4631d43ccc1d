#include "client_kernels.h"

#include <math.h>

static int32_t clamp_i32(float v, int32_t lo, int32_t hi) {
  if (v < (float)lo) return lo;
  if (v > (float)hi) return hi;
  return (int32_t)v;
}

void ck_quantize_f32(const float* x, size_t n, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t* q) {
  const float r = 1.0f / scale;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i] * r;
    if (isnan(v)) {
      q[i] = zp;
      continue;
    }
    /* Clamp in float first: roundf of a huge value does not fit an int32. */
    const float lo = (float)(qmin - zp), hi = (float)(qmax - zp);
    q[i] = clamp_i32(roundf(v < lo ? lo : v > hi ? hi : v), qmin - zp, qmax - zp) + zp;
  }
}

void ck_gemm_s32(const int32_t* a, const int32_t* b, int b_kn, size_t M, size_t K, size_t N, int32_t za,
                 const int32_t* zb, size_t zb_count, const int32_t* bias, int32_t* acc) {
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      const int32_t z = zb_count == 1 ? zb[0] : zb[n];
      int64_t s = 0;
      for (size_t k = 0; k < K; ++k) {
        const int32_t bv = b_kn ? b[k * N + n] : b[n * K + k];
#ifdef CLIENT_PLANTED_REGRESSION
        /* The planted regression (examples/client, CI): the weight zero point is forgotten. */
        (void)z;
        s += (int64_t)(a[m * K + k] - za) * bv;
#else
        s += (int64_t)(a[m * K + k] - za) * (bv - z);
#endif
      }
      if (bias) s += bias[n];
      acc[m * N + n] = (int32_t)(uint32_t)s; /* int32 wrap, as the hardware accumulator */
    }
}

void ck_requantize_f32(const int32_t* acc, size_t M, size_t N, float sa, const float* sb, size_t sb_count, float so,
                       int32_t zp, int32_t lo, int32_t hi, int32_t* y) {
  for (size_t n = 0; n < N; ++n) {
    const float m = (sa * (sb_count == 1 ? sb[0] : sb[n])) / so;
    for (size_t i = 0; i < M; ++i) {
      const float v = roundf((float)acc[i * N + n] * m) + (float)zp;
      y[i * N + n] = clamp_i32(v, lo, hi);
    }
  }
}
