// The kernels of the hip backend (kernels.hip) as host functions that enqueue them on a stream.
// Every pointer is device memory; each function returns the launch's error (hipGetLastError()).
// Callable from host C++ (the backend adapter, the tests, the benchmark): no device syntax here.
#pragma once

#include "backends/hip/gemm_tile.hpp"
#include "backends/hip/hip_compat.hpp"
#include "backends/hip/numerics.hpp"

#include <cstdint>

namespace qc::gpu {

// q[i] = quantize_element(x[i], scales[k], zero_points[k], lo, hi, recipe, half_scale) with
// k = param_index(i, layout); zero_points may be null (all 0).
hipError_t launch_quantize(const float* x, std::int64_t n, const float* scales, const std::int32_t* zero_points,
                           ParamLayout layout, bool half_scale, std::int32_t lo, std::int32_t hi, const Recipe& recipe,
                           std::int32_t* q, hipStream_t stream);

// y[i] = dequantize_element(q[i], scales[k], zero_points[k], recipe, half_scale), stored as f32
// (y is float*) or as f16 bits (y is uint16_t*, f16_out).
hipError_t launch_dequantize(const std::int32_t* q, std::int64_t n, const float* scales,
                             const std::int32_t* zero_points, ParamLayout layout, bool half_scale, const Recipe& recipe,
                             bool f16_out, void* y, hipStream_t stream);

// y[i] = requantize_element(acc[i], requantize_multiplier(s_in, w_scales[c], s_out), zp[c], lo, hi)
// with c = param_index(i, channel) for the per-channel ones (w_per_channel, zp_per_channel) and 0
// otherwise; zero_points may be null (all 0).
hipError_t launch_requantize(const std::int32_t* acc, std::int64_t n, float s_in, const float* w_scales,
                             bool w_per_channel, const std::int32_t* zero_points, bool zp_per_channel,
                             ParamLayout channel, float s_out, std::int32_t lo, std::int32_t hi, Rounding rounding,
                             std::int32_t* y, hipStream_t stream);

// int4 nibbles of a tensor viewed as [outer, length, inner], packed in pairs along `length`
// (numerics.hpp int4_source). unpack: n logical values from the packed bytes; pack: the
// outer * ceil(length / 2) * inner bytes of n values (each value's low 4 bits; an odd length's
// last byte holds a zero nibble).
hipError_t launch_unpack_int4(const std::uint8_t* packed, std::int64_t n, std::int64_t length, std::int64_t inner,
                              bool low_first, bool is_signed, std::int32_t* values, hipStream_t stream);
hipError_t launch_pack_int4(const std::int32_t* values, std::int64_t n, std::int64_t length, std::int64_t inner,
                            bool low_first, std::uint8_t* packed, hipStream_t stream);

// dst[r * Kp + k] = k < K ? (int8)(src[r * row_stride + k * k_stride] - shift) : 0, for r < rows and
// k < Kp: an integer operand as the shifted, zero-padded bytes the GEMM reads.
hipError_t launch_to_operand(const std::int32_t* src, std::int64_t rows, std::int64_t K, std::int64_t row_stride,
                             std::int64_t k_stride, std::int32_t shift, std::int8_t* dst, std::int64_t Kp,
                             hipStream_t stream);

// The compensation sums: rows[g * M + m] = Σ_{k<K} a'(m, k, g); cols[r] = Σ_{k<K} b[r * Kp + k].
hipError_t launch_row_sums(const DenseA& a, std::int64_t M, std::int64_t K, std::int32_t* rows, hipStream_t stream);
hipError_t launch_row_sums(const ConvA& a, std::int64_t M, std::int64_t K, int groups, std::int32_t* rows,
                           hipStream_t stream);
hipError_t launch_col_sums(const std::int8_t* b, std::int64_t rows, std::int64_t K, std::int64_t Kp, std::int32_t* cols,
                           hipStream_t stream);

// Whether this build has the tensor-core path (NVIDIA builds; it needs a device of sm_80 or later).
bool gemm_has_mma_path();
// The GEMM of gemm_tile.hpp with its epilogue. p.Kp must be a multiple of 64 (both paths' K step).
hipError_t launch_gemm(const DenseA& a, const GemmArgs& p, GemmPath path, hipStream_t stream);
// The implicit-GEMM convolution (dp4a path), one grid z-slice per group.
hipError_t launch_conv2d(const ConvA& a, const GemmArgs& p, hipStream_t stream);

}  // namespace qc::gpu
