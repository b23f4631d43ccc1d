# GPU toolchains for the hip backend (backends/hip), found once at configure time:
#   CMAKE_CUDA_COMPILER  nvcc through CMake's CUDA language (check_language does not enable it);
#                        the NVIDIA flavour is built when it is found (QCONFORM_BUILD_HIP's default);
#   QCONFORM_HIPCC       hipcc (Debian: hipcc, libamdhip64-dev, rocm-device-libs), which compiles the
#                        same kernels for an AMD target as a build-only check.
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc for the hip backend")
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(QCONFORM_HIP_DEFAULT ON)
  # CUDA::cudart for the backend, CUDA::cublasLt for its benchmark; found here, at the top level,
  # so the imported targets are visible in every directory.
  find_package(CUDAToolkit REQUIRED)
else()
  set(QCONFORM_HIP_DEFAULT OFF)
endif()
find_program(QCONFORM_HIPCC hipcc DOC "hipcc for the AMD compile check of the hip kernels")
