// The HIP host API the hip backend uses, on both platforms.
//
// AMD (hipcc, or any compiler with __HIP_PLATFORM_AMD__): HIP's own runtime header.
// NVIDIA (nvcc, or the host compiler with QCONFORM_HIP_CUDA defined): each name below is mapped
// onto the CUDA runtime. HIP's own NVIDIA headers would do this mapping, but Debian's HIP 5.2
// nvidia_detail headers do not compile against CUDA 13 (they name runtime APIs CUDA 13 removed),
// so the few names we use are mapped here, one line each, following the HIP API's own
// definitions (HIP documentation, "HIP runtime API reference"; hip/nvidia_detail/
// nvidia_hip_runtime_api.h in ROCm/hip, which maps the same names the same way).
//
// The mapping is deliberately small: a name the backend starts to use must be added here, and
// the AMD compile check (backends/hip/CMakeLists.txt, target qconform_hip_amd_check) keeps the
// sources honest on the other side.
#pragma once

#if defined(__HIP_PLATFORM_AMD__) || (defined(__HIP__) && !defined(QCONFORM_HIP_CUDA))

#include <hip/hip_runtime.h>
#define QCONFORM_HIP_PLATFORM_NAME "AMD HIP"

#elif defined(__CUDACC__) || defined(QCONFORM_HIP_CUDA)

#include <cuda_runtime.h>
#define QCONFORM_HIP_PLATFORM_NAME "NVIDIA CUDA"
#define QCONFORM_HIP_ON_CUDA 1

// Types.
using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipMemcpyKind = cudaMemcpyKind;
using hipFuncAttribute = cudaFuncAttribute;

// Constants.
inline constexpr hipError_t hipSuccess = cudaSuccess;
inline constexpr hipError_t hipErrorInvalidValue = cudaErrorInvalidValue;
inline constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr hipFuncAttribute hipFuncAttributeMaxDynamicSharedMemorySize =
    cudaFuncAttributeMaxDynamicSharedMemorySize;

// Errors.
inline const char* hipGetErrorName(hipError_t e) { return cudaGetErrorName(e); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }

// Devices and versions.
inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) { return cudaGetDeviceProperties(p, d); }
inline hipError_t hipDriverGetVersion(int* v) { return cudaDriverGetVersion(v); }
inline hipError_t hipRuntimeGetVersion(int* v) { return cudaRuntimeGetVersion(v); }

// Memory.
template <class T>
hipError_t hipMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind k) {
  return cudaMemcpy(dst, src, bytes, k);
}

// Kernel attributes.
inline hipError_t hipFuncSetAttribute(const void* f, hipFuncAttribute a, int v) {
  return cudaFuncSetAttribute(f, a, v);
}

// Streams and events.
inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) { return cudaEventRecord(e, s); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) { return cudaEventElapsedTime(ms, a, b); }

// Kernel launch (device code only: the triple-chevron syntax needs nvcc).
#if defined(__CUDACC__)
#define hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)
#endif

#else
#error "hip_compat.hpp: compile with hipcc (AMD), nvcc (NVIDIA), or define QCONFORM_HIP_CUDA for host code"
#endif
