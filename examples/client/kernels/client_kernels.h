/* A client team's small int8 kernel library, written the way many are: quantize multiplies by the
 * reciprocal of the scale and rounds with roundf (ties away from zero); the GEMM accumulates u8 x s8
 * (or s8 x s8) products in int32 and requantizes in float with roundf. Deliberately not ONNX-exact. */
#ifndef CLIENT_KERNELS_H
#define CLIENT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* q[i] = clamp(roundf(x[i] * (1/scale)) + zp, qmin, qmax); NaN gives zp. */
void ck_quantize_f32(const float* x, size_t n, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t* q);

/* acc[m][n] = sum_k (a[m][k] - za) * (b[k][n] - zb[n]) (+ bias[n]), int32. b is [K, N] (b_kn != 0) or
 * [N, K]; zb has one value per column, or one for all (zb_count == 1). */
void ck_gemm_s32(const int32_t* a, const int32_t* b, int b_kn, size_t M, size_t K, size_t N, int32_t za,
                 const int32_t* zb, size_t zb_count, const int32_t* bias, int32_t* acc);

/* y = clamp(roundf((float)acc * m) + zp, lo, hi) with m = (float)(sa * sb[n]) / so in f32. */
void ck_requantize_f32(const int32_t* acc, size_t M, size_t N, float sa, const float* sb, size_t sb_count, float so,
                       int32_t zp, int32_t lo, int32_t hi, int32_t* y);

#ifdef __cplusplus
}
#endif

#endif
