#include "benchmarks/baselines.hpp"

#include <cmath>

namespace qc::bench {

// nearbyintf with SSE4.1 or later is one (v)roundps in the current rounding mode, which GCC inlines
// and vectorizes; the clamps are min/max.
void quantize_f32_s8(const float* __restrict x, std::int64_t n, float scale, float zero_point,
                     std::int8_t* __restrict q) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] / scale) + zero_point;
    q[i] = static_cast<std::int8_t>(v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v));
  }
}

void requantize_s32_s8(const std::int32_t* __restrict acc, std::int64_t n, float multiplier, float zero_point,
                       std::int8_t* __restrict q) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(static_cast<float>(acc[i]) * multiplier) + zero_point;
    q[i] = static_cast<std::int8_t>(v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v));
  }
}

void gemm_u8s8_s32(const std::uint8_t* __restrict a, const std::int8_t* __restrict b, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::int32_t* __restrict c) {
  for (std::int64_t i = 0; i < m * n; ++i) c[i] = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const std::int32_t x = a[i * k + p];
      const std::int8_t* __restrict brow = b + p * n;
      std::int32_t* __restrict crow = c + i * n;
      for (std::int64_t j = 0; j < n; ++j) crow[j] += x * brow[j];
    }
}

void conv_nhwc_u8s8_s32(const std::uint8_t* __restrict x, const std::int32_t* __restrict w, std::int64_t h,
                        std::int64_t wd, std::int64_t c, std::int64_t oc, std::int64_t k, std::int64_t pad,
                        std::int32_t* __restrict y) {
  for (std::int64_t oh = 0; oh < h; ++oh)
    for (std::int64_t ow = 0; ow < wd; ++ow) {
      std::int32_t* __restrict acc = y + (oh * wd + ow) * oc;
      for (std::int64_t o = 0; o < oc; ++o) acc[o] = 0;
      for (std::int64_t kh = 0; kh < k; ++kh)
        for (std::int64_t kw = 0; kw < k; ++kw) {
          const std::int64_t ih = oh - pad + kh, iw = ow - pad + kw;
          if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;  // zero point 0: padding adds nothing
          for (std::int64_t ch = 0; ch < c; ++ch) {
            const std::int32_t v = x[(ih * wd + iw) * c + ch];
            const std::int32_t* __restrict wrow = w + ((kh * k + kw) * c + ch) * oc;
            for (std::int64_t o = 0; o < oc; ++o) acc[o] += v * wrow[o];
          }
        }
    }
}

}  // namespace qc::bench
