// The plain loops the benchmarks measure against: what a competent engineer writes without
// intrinsics, built like the best plain code (baselines.cpp is compiled with -O3 -march=native, its
// pointers are __restrict, and its rounding is one GCC vectorizes). Built for baseline x86-64 the
// same loops call libm per element and run several times slower, which would flatter every ratio.
#pragma once

#include <cstdint>

namespace qc::bench {

// ONNX QuantizeLinear in float: q = clamp(nearbyint(x / scale) + zero_point, -128, 127).
void quantize_f32_s8(const float* x, std::int64_t n, float scale, float zero_point, std::int8_t* q);

// A float requantize: q = clamp(nearbyint(acc * multiplier) + zero_point, -128, 127).
void requantize_s32_s8(const std::int32_t* acc, std::int64_t n, float multiplier, float zero_point, std::int8_t* q);

// c[m, n] = sum_k a[m, k] * b[k, n] in int32, u8 x s8 (row-major; the loop order keeps the
// innermost loop unit-stride).
void gemm_u8s8_s32(const std::uint8_t* a, const std::int8_t* b, std::int64_t m, std::int64_t n, std::int64_t k,
                   std::int32_t* c);

// An NHWC u8 x s8 convolution, zero points 0, to int32: x [h, w, c], weights [kh, kw, c, oc]
// (innermost unit-stride), stride 1, `pad` on every side, output [h, w, oc].
void conv_nhwc_u8s8_s32(const std::uint8_t* x, const std::int32_t* w, std::int64_t h, std::int64_t wd, std::int64_t c,
                        std::int64_t oc, std::int64_t k, std::int64_t pad, std::int32_t* y);

}  // namespace qc::bench
