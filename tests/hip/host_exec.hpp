// The CPU executor of backends/hip/plan.hpp: every kernel of kernels.hip run on the host, thread
// by thread, with the same __host__ __device__ element functions and GEMM phases. The GEMM runs
// each block's phases in the kernel's barrier order (every thread's load, then every thread's
// compute, ...); the tensor-core product and ldmatrix are emulated from the PTX ISA's fragment
// and matrix layouts, written here independently of MmaTile (which only computes the addresses
// each lane gives ldmatrix and how the registers map onto mma operands).
#pragma once

#include "backends/hip/gemm_tile.hpp"
#include "backends/hip/numerics.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace qc::gpu::test {

template <class T>
class HostBuffer {
 public:
  explicit HostBuffer(std::size_t n) : v_(n) {}
  explicit HostBuffer(std::vector<T> v) : v_(std::move(v)) {}
  T* get() const { return const_cast<T*>(v_.data()); }
  std::vector<T> download() const { return v_; }

 private:
  std::vector<T> v_;
};

// mma.sync.m16n8k32.row.col.s32.s8.s8.s32 for one warp, from the PTX ISA's fragment layout
// (lane l, group g = l / 4, t = l % 4; the register's byte j is k = base + j):
//   A: a0 = A[g][4t + j], a1 = A[g + 8][4t + j], a2 = A[g][16 + 4t + j], a3 = A[g + 8][16 + 4t + j]
//   B: b0 = B[4t + j][g], b1 = B[16 + 4t + j][g]
//   D: d0 = D[g][2t], d1 = D[g][2t + 1], d2 = D[g + 8][2t], d3 = D[g + 8][2t + 1]; D = A B + C mod 2^32.
inline void mma_m16n8k32(const std::int32_t (&a)[32][4], const std::int32_t (&b)[32][2], std::int32_t (&d)[32][4]) {
  auto byte = [](std::int32_t w, int j) {
    return std::int32_t{static_cast<std::int8_t>(static_cast<std::uint32_t>(w) >> (8 * j))};
  };
  std::int32_t A[16][32], B[32][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int j = 0; j < 4; ++j) {
      A[g][4 * t + j] = byte(a[l][0], j);
      A[g + 8][4 * t + j] = byte(a[l][1], j);
      A[g][16 + 4 * t + j] = byte(a[l][2], j);
      A[g + 8][16 + 4 * t + j] = byte(a[l][3], j);
      B[4 * t + j][g] = byte(b[l][0], j);
      B[16 + 4 * t + j][g] = byte(b[l][1], j);
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int r = 0; r < 4; ++r) {
      std::uint32_t s = static_cast<std::uint32_t>(d[l][r]);
      for (int k = 0; k < 32; ++k) s += static_cast<std::uint32_t>(A[rows[r]][k] * B[k][cols[r]]);
      d[l][r] = static_cast<std::int32_t>(s);
    }
  }
}

// The dp4a GEMM kernel for every block of the grid.
template <class ALoader>
void run_dp4a(const ALoader& A, const GemmArgs& p) {
  using T = Dp4aTile;
  auto sh = std::make_unique<T::Shared>();
  std::vector<T::Accum> acc(T::kThreads);
  for (int g = 0; g < p.groups; ++g)
    for (std::int64_t m0 = 0; m0 < p.M; m0 += T::kM)
      for (std::int64_t n0 = 0; n0 < p.N; n0 += T::kN) {
        for (auto& a : acc) a = T::Accum{};
        for (std::int64_t k0 = 0; k0 < p.Kp; k0 += T::kK) {
          for (int tid = 0; tid < T::kThreads; ++tid) T::load(A, p, g, m0, n0, k0, tid, *sh);
          for (int tid = 0; tid < T::kThreads; ++tid) T::compute(*sh, tid, acc[static_cast<std::size_t>(tid)]);
        }
        for (int tid = 0; tid < T::kThreads; ++tid) T::finish(p, g, m0, n0, tid, acc[static_cast<std::size_t>(tid)]);
      }
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 for one warp, from the PTX ISA: lanes 8q .. 8q + 7
// give the addresses of rows 0..7 of 8 x 16-byte matrix q (each 16-byte aligned), and lane l
// receives in register q bytes 4 (l % 4) .. 4 (l % 4) + 3 of row l / 4 of matrix q. `offset` is
// each lane's address as a byte offset from `base`, inside [0, bytes).
inline void ldmatrix_x4(const std::int8_t* base, std::size_t bytes, const int (&offset)[32], std::int32_t (&r)[32][4]) {
  for (int lane = 0; lane < 32; ++lane)
    if (offset[lane] < 0 || offset[lane] % 16 != 0 || static_cast<std::size_t>(offset[lane]) + 16 > bytes)
      throw std::logic_error("ldmatrix: lane " + std::to_string(lane) + " gives offset " +
                             std::to_string(offset[lane]) + ", not a 16-byte row inside the " + std::to_string(bytes) +
                             "-byte tile");
  for (int l = 0; l < 32; ++l)
    for (int q = 0; q < 4; ++q) std::memcpy(&r[l][q], base + offset[8 * q + l / 4] + 4 * (l % 4), 4);
}

// The tensor-core GEMM kernel for every block, in the kernel's order: the prologue's copies of
// steps 0 .. kStages - 2, then per step the copy of step s + kStages - 1 (into the stage step
// s - 1 used: done immediately here, so a stage schedule that overwrote step s's tile before its
// products would fail), each warp's fragments by the emulated ldmatrix and its products by the
// emulated mma; finally, per half of the columns, every thread's stash, then every thread's column
// of outputs.
inline void run_mma(const DenseA& A, const GemmArgs& p) {
  using T = MmaTile;
  auto sh = std::make_unique<T::Shared>();
  std::vector<T::Accum> acc(T::kThreads);
  std::vector<T::Copies> copies(T::kThreads);
  std::vector<std::int32_t> words(sizeof(T::Shared) / 4);
  const std::int64_t steps = p.Kp / T::kK;
  auto load = [&](std::int64_t step) {
    for (int tid = 0; tid < T::kThreads; ++tid) T::load(copies[static_cast<std::size_t>(tid)], step, *sh);
  };
  for (int g = 0; g < p.groups; ++g)
    for (std::int64_t m0 = 0; m0 < p.M; m0 += T::kM)
      for (std::int64_t n0 = 0; n0 < p.N; n0 += T::kN) {
        for (int tid = 0; tid < T::kThreads; ++tid)
          copies[static_cast<std::size_t>(tid)] = T::copies(A, p, g, m0, n0, tid);
        for (auto& a : acc) a = T::Accum{};
        for (int s = 0; s < T::kStages - 1 && s < steps; ++s) load(s);
        for (std::int64_t s = 0; s < steps; ++s) {
          if (s + T::kStages - 1 < steps) load(s + T::kStages - 1);
          const int stage = T::stage_of(s);
          for (int warp = 0; warp < T::kThreads / 32; ++warp)
            for (int ks = 0; ks < T::kK / 32; ++ks) {
              T::Fragments f[32];
              int offset[32];
              std::int32_t r[32][4];
              for (int i = 0; i < 4; ++i) {
                for (int lane = 0; lane < 32; ++lane) offset[lane] = T::a_row_offset(warp, lane, ks, i);
                ldmatrix_x4(sh->a[stage], sizeof sh->a[stage], offset, r);
                for (int lane = 0; lane < 32; ++lane) std::memcpy(f[lane].a[i], r[lane], sizeof r[lane]);
              }
              for (int jj = 0; jj < 4; ++jj) {
                for (int lane = 0; lane < 32; ++lane) offset[lane] = T::b_row_offset(warp, lane, ks, jj);
                ldmatrix_x4(sh->b[stage], sizeof sh->b[stage], offset, r);
                for (int lane = 0; lane < 32; ++lane) std::memcpy(f[lane].bp[jj], r[lane], sizeof r[lane]);
              }
              for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 8; ++j) {
                  std::int32_t a[32][4], b[32][2], d[32][4];
                  for (int lane = 0; lane < 32; ++lane) {
                    for (int q = 0; q < 4; ++q) a[lane][q] = f[lane].a[i][q];
                    for (int q = 0; q < 2; ++q) b[lane][q] = T::b_reg(f[lane], j, q);
                    for (int q = 0; q < 4; ++q) d[lane][q] = acc[static_cast<std::size_t>(warp * 32 + lane)].v[i][j][q];
                  }
                  mma_m16n8k32(a, b, d);
                  for (int lane = 0; lane < 32; ++lane)
                    for (int q = 0; q < 4; ++q) acc[static_cast<std::size_t>(warp * 32 + lane)].v[i][j][q] = d[lane][q];
                }
            }
        }
        for (int half = 0; half < 2; ++half) {
          std::fill(words.begin(), words.end(), 0x5A5A5A5A);  // stale bytes, not zeros, where nothing was stashed
          for (int tid = 0; tid < T::kThreads; ++tid)
            T::stash(acc[static_cast<std::size_t>(tid)], tid, half, words.data());
          for (int tid = 0; tid < T::kThreads; ++tid) T::finish(p, g, m0, n0, tid, half, words.data());
        }
      }
}

// The executor: each method is its kernel's per-element body over all elements.
class HostExec {
 public:
  template <class T>
  using Buffer = HostBuffer<T>;

  explicit HostExec(GemmPath path = GemmPath::dp4a) : path_(path) {}

  template <class T>
  Buffer<T> alloc(std::size_t n) {
    return Buffer<T>(n);
  }
  template <class T>
  Buffer<T> upload(const std::vector<T>& v) {
    return Buffer<T>(v);
  }
  void sync() {}

  void quantize(const float* x, std::int64_t n, const float* scales, const std::int32_t* zps, ParamLayout l,
                bool half_scale, std::int32_t lo, std::int32_t hi, const Recipe& r, std::int32_t* q) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t k = param_index(i, l);
      q[i] = quantize_element(x[i], scales[k], zps != nullptr ? zps[k] : 0, lo, hi, r, half_scale);
    }
  }
  void dequantize(const std::int32_t* q, std::int64_t n, const float* scales, const std::int32_t* zps, ParamLayout l,
                  bool half_scale, const Recipe& r, bool f16, void* y) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t k = param_index(i, l);
      const float v = dequantize_element(q[i], scales[k], zps != nullptr ? zps[k] : 0, r, half_scale);
      if (f16)
        static_cast<std::uint16_t*>(y)[i] = f16_bits(v);
      else
        static_cast<float*>(y)[i] = v;
    }
  }
  void requantize(const std::int32_t* acc, std::int64_t n, float s_in, const float* w, bool w_per_channel,
                  const std::int32_t* zps, bool zp_per_channel, ParamLayout channel, float s_out, std::int32_t lo,
                  std::int32_t hi, Rounding rounding, std::int32_t* y) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t c = param_index(i, channel);
      const float m = requantize_multiplier(s_in, w[w_per_channel ? c : 0], s_out);
      y[i] = requantize_element(acc[i], m, zps != nullptr ? zps[zp_per_channel ? c : 0] : 0, lo, hi, rounding);
    }
  }
  void unpack_int4(const std::uint8_t* packed, std::int64_t n, std::int64_t length, std::int64_t inner, bool low_first,
                   bool is_signed, std::int32_t* values) {
    for (std::int64_t i = 0; i < n; ++i) {
      const NibbleSource s = int4_source(i, length, inner, low_first);
      values[i] = int4_value(packed[s.byte], s.high, is_signed);
    }
  }
  void to_operand(const std::int32_t* src, std::int64_t rows, std::int64_t K, std::int64_t row_stride,
                  std::int64_t k_stride, std::int32_t shift, std::int8_t* dst, std::int64_t Kp) {
    for (std::int64_t i = 0; i < rows * Kp; ++i)
      dst[i] = operand_byte(src, i / Kp, i % Kp, K, row_stride, k_stride, shift);
  }
  void row_sums(const DenseA& a, std::int64_t M, std::int64_t K, std::int32_t* rows) {
    for (std::int64_t m = 0; m < M; ++m) rows[m] = row_sum(a, m, 0, K);
  }
  void row_sums(const ConvA& a, std::int64_t M, std::int64_t K, int groups, std::int32_t* rows) {
    for (std::int64_t i = 0; i < M * groups; ++i) rows[i] = row_sum(a, i % M, static_cast<int>(i / M), K);
  }
  void col_sums(const std::int8_t* b, std::int64_t rows, std::int64_t K, std::int64_t Kp, std::int32_t* cols) {
    for (std::int64_t r = 0; r < rows; ++r) cols[r] = col_sum(b + r * Kp, K);
  }
  GemmPath gemm_path(std::int64_t, std::int64_t) const { return path_; }
  void gemm(const DenseA& a, const GemmArgs& p, GemmPath path) {
    if (!gemm_launchable(a, p, path)) throw std::invalid_argument("HostExec::gemm: a launch launch_gemm refuses");
    if (path == GemmPath::mma)
      run_mma(a, p);
    else
      run_dp4a(a, p);
  }
  void conv2d(const ConvA& a, const GemmArgs& p) { run_dp4a(a, p); }

 private:
  GemmPath path_;
};

}  // namespace qc::gpu::test
