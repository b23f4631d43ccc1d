// The hip backend's int8 GEMM against cuBLASLt in the same run: C = A B^T with A [M][K] and
// B [N][K] signed bytes, C [M][N] int32 (default M = N = K = 4096). Each of qconform's main loops
// (dp4a tiles; mma.sync tensor cores on NVIDIA sm_80+) and cublasLtMatmul (CUDA_R_8I operands,
// CUBLAS_COMPUTE_32I, int32 output: the "TN" int8 layout IMMA kernels take) is timed with events
// over the same device buffers; the program prints TOPS (2 M N K per call) for each, checks that
// every C element agrees, and prints the ratio of the best hip loop to cuBLASLt (goal >= 0.5).
// Without a usable GPU it prints why and exits 0.
//
// Usage: hip_gemm_bench [M N K] [iterations]
#include "backends/hip/backend.hpp"
#include "backends/hip/hip_compat.hpp"
#include "backends/hip/kernels.hpp"
#include "cases/generators.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#define CHECK_HIP(expr)                                                               \
  do {                                                                                \
    const hipError_t e_ = (expr);                                                     \
    if (e_ != hipSuccess) {                                                           \
      std::fprintf(stderr, "hip_gemm_bench: %s: %s\n", #expr, hipGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)
#define CHECK_LT(expr)                                                                             \
  do {                                                                                             \
    const cublasStatus_t s_ = (expr);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      std::fprintf(stderr, "hip_gemm_bench: %s: cuBLAS status %d\n", #expr, static_cast<int>(s_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// Milliseconds per call of f over `iters` calls after 3 warm-up calls.
template <class F>
double time_ms(F&& f, int iters) {
  for (int i = 0; i < 3; ++i) f();
  hipEvent_t start, stop;
  CHECK_HIP(hipEventCreate(&start));
  CHECK_HIP(hipEventCreate(&stop));
  CHECK_HIP(hipEventRecord(start, nullptr));
  for (int i = 0; i < iters; ++i) f();
  CHECK_HIP(hipEventRecord(stop, nullptr));
  CHECK_HIP(hipEventSynchronize(stop));
  float ms = 0;
  CHECK_HIP(hipEventElapsedTime(&ms, start, stop));
  CHECK_HIP(hipEventDestroy(start));
  CHECK_HIP(hipEventDestroy(stop));
  return ms / iters;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t M = 4096, N = 4096, K = 4096;
  int iters = 20;
  if (argc >= 4) M = std::atoll(argv[1]), N = std::atoll(argv[2]), K = std::atoll(argv[3]);
  if (argc >= 5) iters = std::atoi(argv[4]);
  const qc::Availability a = qc::hip_device_availability();
  if (!a.available) {
    std::printf("hip_gemm_bench: skipped, no usable GPU: %s\n", a.reason.c_str());
    return 0;
  }
  if (K % 64 != 0 || M % 4 != 0 || N % 4 != 0) {
    std::fprintf(stderr, "hip_gemm_bench: K must be a multiple of 64, M and N of 4\n");
    return 2;
  }
  const auto facts = qc::HipBackend(qc::HipVariant::div).facts();
  std::printf("device: %s (sm %s), driver %s, runtime %s\n", facts.at("gpu").c_str(),
              facts.at("compute_capability").c_str(), facts.at("driver_version").c_str(),
              facts.at("runtime_version").c_str());

  // Operands from the project's seeded generator: uniform signed bytes (the low byte of each draw).
  qc::SplitMix64 rng(42);
  std::vector<std::int8_t> ha(static_cast<std::size_t>(M * K)), hb(static_cast<std::size_t>(N * K));
  for (auto& v : ha) v = static_cast<std::int8_t>(rng.next());
  for (auto& v : hb) v = static_cast<std::int8_t>(rng.next());
  std::int8_t *da = nullptr, *db = nullptr;
  std::int32_t *dc = nullptr, *dref = nullptr;
  CHECK_HIP(hipMalloc(&da, ha.size()));
  CHECK_HIP(hipMalloc(&db, hb.size()));
  CHECK_HIP(hipMalloc(&dc, static_cast<std::size_t>(M * N) * sizeof(std::int32_t)));
  CHECK_HIP(hipMalloc(&dref, static_cast<std::size_t>(M * N) * sizeof(std::int32_t)));
  CHECK_HIP(hipMemcpy(da, ha.data(), ha.size(), hipMemcpyHostToDevice));
  CHECK_HIP(hipMemcpy(db, hb.data(), hb.size(), hipMemcpyHostToDevice));

  // cuBLASLt is column-major: the row-major product C = A B^T, read column-major, is C^T = B A^T,
  // so cuBLASLt's "A" is our B (K x N, ld K, transposed) and its "B" our A (K x M, ld K), and its
  // N x M result (ld N) lands row-major [M][N] like ours.
  cublasLtHandle_t lt;
  CHECK_LT(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)));
  cublasLtMatrixLayout_t la, lb, lc;
  CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, static_cast<std::uint64_t>(K), static_cast<std::uint64_t>(N), K));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, static_cast<std::uint64_t>(K), static_cast<std::uint64_t>(M), K));
  CHECK_LT(
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, static_cast<std::uint64_t>(N), static_cast<std::uint64_t>(M), N));
  const std::size_t workspace_bytes = std::size_t{64} << 20;
  void* workspace = nullptr;
  CHECK_HIP(hipMalloc(&workspace, workspace_bytes));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                sizeof(workspace_bytes)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heuristic, &found));
  if (found == 0) {
    std::fprintf(stderr, "hip_gemm_bench: cuBLASLt has no int8 algorithm for this problem\n");
    return 1;
  }
  const std::int32_t alpha = 1, beta = 0;
  auto cublas = [&] {
    CHECK_LT(cublasLtMatmul(lt, desc, &alpha, db, la, da, lb, &beta, dref, lc, dref, lc, &heuristic.algo, workspace,
                            workspace_bytes, nullptr));
  };

  // qconform: the same operands as the GEMM's shifted bytes (s8 needs no shift), int32 output, no
  // zero points (so no compensation sums).
  qc::gpu::GemmArgs p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.Kp = K;
  p.b = db;
  p.epilogue.kind = qc::gpu::OutputKind::int32;
  p.epilogue.out = dc;
  p.epilogue.ldc = N;
  const qc::gpu::DenseA A{da, K};

  const double ops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  auto tops = [&](double ms) { return ops / (ms * 1e-3) / 1e12; };
  const double lt_ms = time_ms(cublas, iters);
  std::printf("cuBLASLt int8 (CUBLAS_COMPUTE_32I)   %8.3f ms  %8.1f TOPS\n", lt_ms, tops(lt_ms));
  std::vector<std::int32_t> ref(static_cast<std::size_t>(M * N)), got(ref.size());
  CHECK_HIP(hipMemcpy(ref.data(), dref, ref.size() * sizeof(std::int32_t), hipMemcpyDeviceToHost));

  double best = 1e300;
  bool all_equal = true;
  std::vector<qc::gpu::GemmPath> paths{qc::gpu::GemmPath::dp4a};
  // An available backend on NVIDIA is sm_80 or later (its availability probe), where mma.sync runs.
  if (qc::gpu::gemm_has_mma_path()) paths.push_back(qc::gpu::GemmPath::mma);
  for (qc::gpu::GemmPath path : paths) {
    const double ms = time_ms([&] { CHECK_HIP(qc::gpu::launch_gemm(A, p, path, nullptr)); }, iters);
    CHECK_HIP(hipMemcpy(got.data(), dc, got.size() * sizeof(std::int32_t), hipMemcpyDeviceToHost));
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < got.size(); ++i) mismatches += got[i] != ref[i];
    all_equal = all_equal && mismatches == 0;
    std::printf("qconform hip %-24s %8.3f ms  %8.1f TOPS  (%.3fx cuBLASLt; %zu of %zu elements differ)\n",
                path == qc::gpu::GemmPath::mma ? "mma.sync m16n8k32" : "dp4a", ms, tops(ms), lt_ms / ms, mismatches,
                got.size());
    best = std::min(best, ms);
  }
  std::printf("ratio (best qconform / cuBLASLt throughput): %.3f (goal >= 0.5)\n", lt_ms / best);

  CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
  CHECK_LT(cublasLtMatrixLayoutDestroy(la));
  CHECK_LT(cublasLtMatrixLayoutDestroy(lb));
  CHECK_LT(cublasLtMatrixLayoutDestroy(lc));
  CHECK_LT(cublasLtMatmulDescDestroy(desc));
  CHECK_LT(cublasLtDestroy(lt));
  CHECK_HIP(hipFree(workspace));
  CHECK_HIP(hipFree(da));
  CHECK_HIP(hipFree(db));
  CHECK_HIP(hipFree(dc));
  CHECK_HIP(hipFree(dref));
  return all_equal ? 0 : 1;
}
