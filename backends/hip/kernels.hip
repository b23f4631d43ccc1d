// The hip backend's kernels: thin __global__ wrappers around the __host__ __device__ element
// functions (numerics.hpp) and GEMM phases (gemm_tile.hpp), and the host functions that launch
// them (kernels.hpp). One translation unit, compiled by nvcc (sm_80, sm_90) or hipcc (gfx90a).
#include "backends/hip/kernels.hpp"

namespace qc::gpu {
namespace {

constexpr int kThreads = 256;

// Elementwise kernels use grid-stride loops over a capped grid, so any n fits one launch.
unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 8192 ? 8192 : blocks);
}

__device__ std::int64_t first_index() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ std::int64_t index_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

__global__ void quantize_kernel(const float* x, std::int64_t n, const float* scales, const std::int32_t* zero_points,
                                ParamLayout layout, bool half_scale, std::int32_t lo, std::int32_t hi, Recipe recipe,
                                std::int32_t* q) {
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    const std::int64_t k = param_index(i, layout);
    q[i] = quantize_element(x[i], scales[k], zero_points != nullptr ? zero_points[k] : 0, lo, hi, recipe, half_scale);
  }
}

__global__ void dequantize_kernel(const std::int32_t* q, std::int64_t n, const float* scales,
                                  const std::int32_t* zero_points, ParamLayout layout, bool half_scale, Recipe recipe,
                                  bool f16_out, void* y) {
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    const std::int64_t k = param_index(i, layout);
    const float v =
        dequantize_element(q[i], scales[k], zero_points != nullptr ? zero_points[k] : 0, recipe, half_scale);
    if (f16_out)
      static_cast<std::uint16_t*>(y)[i] = f16_bits(v);
    else
      static_cast<float*>(y)[i] = v;
  }
}

__global__ void requantize_kernel(const std::int32_t* acc, std::int64_t n, float s_in, const float* w_scales,
                                  bool w_per_channel, const std::int32_t* zero_points, bool zp_per_channel,
                                  ParamLayout channel, float s_out, std::int32_t lo, std::int32_t hi, Rounding rounding,
                                  std::int32_t* y) {
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    const std::int64_t c = param_index(i, channel);
    const float m = requantize_multiplier(s_in, w_scales[w_per_channel ? c : 0], s_out);
    const std::int32_t zp = zero_points != nullptr ? zero_points[zp_per_channel ? c : 0] : 0;
    y[i] = requantize_element(acc[i], m, zp, lo, hi, rounding);
  }
}

__global__ void unpack_int4_kernel(const std::uint8_t* packed, std::int64_t n, std::int64_t length, std::int64_t inner,
                                   bool low_first, bool is_signed, std::int32_t* values) {
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    const NibbleSource s = int4_source(i, length, inner, low_first);
    values[i] = int4_value(packed[s.byte], s.high, is_signed);
  }
}

__global__ void pack_int4_kernel(const std::int32_t* values, std::int64_t bytes, std::int64_t length,
                                 std::int64_t inner, bool low_first, std::uint8_t* packed) {
  for (std::int64_t b = first_index(); b < bytes; b += index_stride())
    packed[b] = int4_packed_byte(values, b, length, inner, low_first);
}

__global__ void to_operand_kernel(const std::int32_t* src, std::int64_t rows, std::int64_t K, std::int64_t row_stride,
                                  std::int64_t k_stride, std::int32_t shift, std::int8_t* dst, std::int64_t Kp) {
  const std::int64_t n = rows * Kp;
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    dst[i] = operand_byte(src, i / Kp, i % Kp, K, row_stride, k_stride, shift);
  }
}

template <class ALoader>
__global__ void row_sums_kernel(ALoader a, std::int64_t M, std::int64_t K, int groups, std::int32_t* rows) {
  for (std::int64_t i = first_index(); i < M * groups; i += index_stride())
    rows[i] = row_sum(a, i % M, static_cast<int>(i / M), K);
}

__global__ void col_sums_kernel(const std::int8_t* b, std::int64_t rows, std::int64_t K, std::int64_t Kp,
                                std::int32_t* cols) {
  for (std::int64_t r = first_index(); r < rows; r += index_stride()) cols[r] = col_sum(b + r * Kp, K);
}

// The dp4a GEMM: block (x, y, z) computes the 64 x 64 tile at columns 64x, rows 64y of group z,
// loading and multiplying 32 bytes of K per step (gemm_tile.hpp, Dp4aTile).
template <class ALoader>
__global__ void __launch_bounds__(Dp4aTile::kThreads) gemm_dp4a_kernel(ALoader a, GemmArgs p) {
  __shared__ Dp4aTile::Shared sh;
  Dp4aTile::Accum acc = {};
  const int g = static_cast<int>(blockIdx.z), tid = static_cast<int>(threadIdx.x);
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * Dp4aTile::kM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * Dp4aTile::kN;
  for (std::int64_t k0 = 0; k0 < p.Kp; k0 += Dp4aTile::kK) {
    Dp4aTile::load(a, p, g, m0, n0, k0, tid, sh);
    __syncthreads();
    Dp4aTile::compute(sh, tid, acc);
    __syncthreads();  // before the next step overwrites the tile
  }
  Dp4aTile::finish(p, g, m0, n0, tid, acc);
}

#if defined(QCONFORM_HIP_ON_CUDA)
// The tensor-core GEMM (gemm_tile.hpp, MmaTile): 128 x 256 tiles, K in steps of 64 bytes through a
// kStages-deep cp.async pipeline in dynamic shared memory (96 KiB: more than the 48 KiB a static
// array may take), then the results through the same memory to the epilogue. One block per
// multiprocessor's worth of registers: 8 warps with 128 accumulators each.
__global__ void __launch_bounds__(MmaTile::kThreads, 1) gemm_mma_kernel(DenseA a, GemmArgs p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char gemm_shared[];
  MmaTile::Shared& sh = *reinterpret_cast<MmaTile::Shared*>(gemm_shared);
  MmaTile::Accum acc = {};
  const int g = static_cast<int>(blockIdx.z), tid = static_cast<int>(threadIdx.x);
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * MmaTile::kM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * MmaTile::kN;
  const std::int64_t steps = p.Kp / MmaTile::kK;
  const MmaTile::Copies copies = MmaTile::copies(a, p, g, m0, n0, tid);
  // Prologue: steps 0 .. kStages - 2 in flight, one commit group each (empty past the end, so
  // that the group count, and with it wait<kStages - 2>, stays uniform).
  for (int s = 0; s < MmaTile::kStages - 1; ++s) {
    if (s < steps) MmaTile::load(copies, s, sh);
    MmaTile::commit();
  }
  for (std::int64_t s = 0; s < steps; ++s) {
    // kStages - 1 + s groups are committed; with at most kStages - 2 pending, step s has landed
    // for this thread, and after the barrier for every thread.
    MmaTile::wait<MmaTile::kStages - 2>();
    __syncthreads();
    // The barrier also means every warp is done with step s - 1, whose stage the copy of step
    // s + kStages - 1 now overwrites.
    const std::int64_t next = s + MmaTile::kStages - 1;
    if (next < steps) MmaTile::load(copies, next, sh);
    MmaTile::commit();
    MmaTile::compute(sh, s, tid, acc);
  }
  MmaTile::wait<0>();
  __syncthreads();  // every warp's last ldmatrix is done before the results overwrite the stages
  std::int32_t* words = reinterpret_cast<std::int32_t*>(gemm_shared);
  for (int half = 0; half < 2; ++half) {
    MmaTile::stash(acc, tid, half, words);
    __syncwarp();  // a warp reads back only its own block ...
    MmaTile::finish(p, g, m0, n0, tid, half, words);
    __syncwarp();  // ... and overwrites it only when every lane has read it
  }
#endif
}
#endif

}  // namespace

hipError_t launch_quantize(const float* x, std::int64_t n, const float* scales, const std::int32_t* zero_points,
                           ParamLayout layout, bool half_scale, std::int32_t lo, std::int32_t hi, const Recipe& recipe,
                           std::int32_t* q, hipStream_t stream) {
  hipLaunchKernelGGL(quantize_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream, x, n, scales, zero_points, layout,
                     half_scale, lo, hi, recipe, q);
  return hipGetLastError();
}

hipError_t launch_dequantize(const std::int32_t* q, std::int64_t n, const float* scales,
                             const std::int32_t* zero_points, ParamLayout layout, bool half_scale, const Recipe& recipe,
                             bool f16_out, void* y, hipStream_t stream) {
  hipLaunchKernelGGL(dequantize_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream, q, n, scales, zero_points, layout,
                     half_scale, recipe, f16_out, y);
  return hipGetLastError();
}

hipError_t launch_requantize(const std::int32_t* acc, std::int64_t n, float s_in, const float* w_scales,
                             bool w_per_channel, const std::int32_t* zero_points, bool zp_per_channel,
                             ParamLayout channel, float s_out, std::int32_t lo, std::int32_t hi, Rounding rounding,
                             std::int32_t* y, hipStream_t stream) {
  hipLaunchKernelGGL(requantize_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream, acc, n, s_in, w_scales,
                     w_per_channel, zero_points, zp_per_channel, channel, s_out, lo, hi, rounding, y);
  return hipGetLastError();
}

hipError_t launch_unpack_int4(const std::uint8_t* packed, std::int64_t n, std::int64_t length, std::int64_t inner,
                              bool low_first, bool is_signed, std::int32_t* values, hipStream_t stream) {
  hipLaunchKernelGGL(unpack_int4_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream, packed, n, length, inner,
                     low_first, is_signed, values);
  return hipGetLastError();
}

hipError_t launch_pack_int4(const std::int32_t* values, std::int64_t n, std::int64_t length, std::int64_t inner,
                            bool low_first, std::uint8_t* packed, hipStream_t stream) {
  const std::int64_t bytes = n / (length * inner) * ((length + 1) / 2) * inner;
  hipLaunchKernelGGL(pack_int4_kernel, dim3(grid_for(bytes)), dim3(kThreads), 0, stream, values, bytes, length, inner,
                     low_first, packed);
  return hipGetLastError();
}

hipError_t launch_to_operand(const std::int32_t* src, std::int64_t rows, std::int64_t K, std::int64_t row_stride,
                             std::int64_t k_stride, std::int32_t shift, std::int8_t* dst, std::int64_t Kp,
                             hipStream_t stream) {
  hipLaunchKernelGGL(to_operand_kernel, dim3(grid_for(rows * Kp)), dim3(kThreads), 0, stream, src, rows, K, row_stride,
                     k_stride, shift, dst, Kp);
  return hipGetLastError();
}

hipError_t launch_row_sums(const DenseA& a, std::int64_t M, std::int64_t K, std::int32_t* rows, hipStream_t stream) {
  hipLaunchKernelGGL(row_sums_kernel<DenseA>, dim3(grid_for(M)), dim3(kThreads), 0, stream, a, M, K, 1, rows);
  return hipGetLastError();
}

hipError_t launch_row_sums(const ConvA& a, std::int64_t M, std::int64_t K, int groups, std::int32_t* rows,
                           hipStream_t stream) {
  hipLaunchKernelGGL(row_sums_kernel<ConvA>, dim3(grid_for(M * groups)), dim3(kThreads), 0, stream, a, M, K, groups,
                     rows);
  return hipGetLastError();
}

hipError_t launch_col_sums(const std::int8_t* b, std::int64_t rows, std::int64_t K, std::int64_t Kp, std::int32_t* cols,
                           hipStream_t stream) {
  hipLaunchKernelGGL(col_sums_kernel, dim3(grid_for(rows)), dim3(kThreads), 0, stream, b, rows, K, Kp, cols);
  return hipGetLastError();
}

// A GEMM grid: x over column tiles, y over row tiles, z over groups (y and z are limited to 65535).
static bool grid_fits(std::int64_t M, std::int64_t N, int groups, int tile_m, int tile_n) {
  return (M + tile_m - 1) / tile_m <= 65535 && (N + tile_n - 1) / tile_n <= 0x7FFFFFFF && groups <= 65535;
}

bool gemm_has_mma_path() {
#if defined(QCONFORM_HIP_ON_CUDA)
  return true;
#else
  return false;
#endif
}

hipError_t launch_gemm(const DenseA& a, const GemmArgs& p, GemmPath path, hipStream_t stream) {
  if (!gemm_launchable(a, p, path)) return hipErrorInvalidValue;
#if defined(QCONFORM_HIP_ON_CUDA)
  if (path == GemmPath::mma) {
    if (!grid_fits(p.M, p.N, p.groups, MmaTile::kM, MmaTile::kN)) return hipErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>((p.N + MmaTile::kN - 1) / MmaTile::kN),
                    static_cast<unsigned>((p.M + MmaTile::kM - 1) / MmaTile::kM), static_cast<unsigned>(p.groups));
    constexpr int shared_bytes = sizeof(MmaTile::Shared);
    // Above 48 KiB of dynamic shared memory a kernel must opt in (CUDA C++ Programming Guide,
    // "Shared Memory": cudaFuncAttributeMaxDynamicSharedMemorySize); sm_80 and sm_90 allow it.
    const hipError_t e = hipFuncSetAttribute(reinterpret_cast<const void*>(&gemm_mma_kernel),
                                             hipFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
    if (e != hipSuccess) return e;
    hipLaunchKernelGGL(gemm_mma_kernel, grid, dim3(MmaTile::kThreads), shared_bytes, stream, a, p);
    return hipGetLastError();
  }
#else
  (void)path;
#endif
  if (!grid_fits(p.M, p.N, p.groups, Dp4aTile::kM, Dp4aTile::kN)) return hipErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((p.N + Dp4aTile::kN - 1) / Dp4aTile::kN),
                  static_cast<unsigned>((p.M + Dp4aTile::kM - 1) / Dp4aTile::kM), static_cast<unsigned>(p.groups));
  hipLaunchKernelGGL(gemm_dp4a_kernel<DenseA>, grid, dim3(Dp4aTile::kThreads), 0, stream, a, p);
  return hipGetLastError();
}

hipError_t launch_conv2d(const ConvA& a, const GemmArgs& p, hipStream_t stream) {
  if (!grid_fits(p.M, p.N, p.groups, Dp4aTile::kM, Dp4aTile::kN)) return hipErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((p.N + Dp4aTile::kN - 1) / Dp4aTile::kN),
                  static_cast<unsigned>((p.M + Dp4aTile::kM - 1) / Dp4aTile::kM), static_cast<unsigned>(p.groups));
  hipLaunchKernelGGL(gemm_dp4a_kernel<ConvA>, grid, dim3(Dp4aTile::kThreads), 0, stream, a, p);
  return hipGetLastError();
}

}  // namespace qc::gpu
