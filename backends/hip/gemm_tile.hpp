// The int8 GEMM and implicit-GEMM convolution of the hip backend, written as __host__ __device__
// phases so that one definition runs on the GPU (kernels.hip) and, thread by thread and phase by
// phase, on the CPU (tests/hip/host_exec.hpp; plan_test.cpp checks every index computation without
// a GPU).
//
// The problem. Operands are stored as signed bytes "shifted": a u8 value v is stored as v - 128
// (and its zero point with it), s8/i4/u4 values as they are. One GEMM computes, per group g,
//   raw[m][n] = Σ_k a'(m, k, g) · b'[g*N + n][k]            (int32, wrapping)
// for m < M, n < N, k < K, where B is stored n-major ([groups*N][Kp], K padded with zeros to Kp)
// and A comes from a loader: a dense [M][Kp] matrix (GEMM) or the taps of a convolution gathered
// on the fly (implicit GEMM: no im2col buffer). The epilogue then forms, per element,
//   acc = compensate(raw, Σ_k a', Σ_k b', za', zb')   = Σ (a - za)(b - zb) mod 2^32
// adds an int32 bias with the same wrapping addition, and writes int32, a dequantized f32/f16 or
// a requantized integer (numerics.hpp).
//
// Two main loops:
//   Dp4aTile  64 x 64 output tile, K in steps of 32 bytes, 256 threads with 4 x 4 outputs each;
//             the inner product is dot4 (__dp4a on NVIDIA, the sdot4 builtin on AMD).
//   MmaTile   (NVIDIA sm_80+) 128 x 128 output tile, K in steps of 64 bytes, 8 warps of 64 x 32,
//             each a 4 x 4 grid of mma.sync m16n8k32 s8 x s8 -> s32 tensor-core products, tiles
//             copied with cp.async into a double-buffered shared memory.
// Both accumulate in int32 with wrap-around (dp4a, sdot4 without clamp and the s32 mma all add
// modulo 2^32), so they give the same raw sums as any other order.
#pragma once

#include "backends/hip/numerics.hpp"

#include <cstdint>
#include <cstring>

namespace qc::gpu {

// The two GEMM main loops (below): dp4a/sdot4 tiles everywhere, mma.sync tensor cores on NVIDIA.
enum class GemmPath : std::uint8_t { dp4a, mma };

// ---- The one device helper for 4-way int8 dot products ----------------------------------------

// c + Σ_{j<4} a.byte[j] * b.byte[j] with signed bytes, modulo 2^32.
QC_HD std::int32_t dot4(std::int32_t a, std::int32_t b, std::int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);  // CUDA Math API: "four-way signed int8 dot product with int32 accumulate"
#elif defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx942__))
  return __builtin_amdgcn_sdot4(a, b, c, false);  // V_DOT4_I32_I8, no clamp: wraps
#else
  std::uint32_t s = static_cast<std::uint32_t>(c);
  for (int j = 0; j < 4; ++j) {
    const auto x = static_cast<std::int8_t>(static_cast<std::uint32_t>(a) >> (8 * j));
    const auto y = static_cast<std::int8_t>(static_cast<std::uint32_t>(b) >> (8 * j));
    s += static_cast<std::uint32_t>(std::int32_t{x} * std::int32_t{y});
  }
  return static_cast<std::int32_t>(s);
#endif
}

// Four bytes at p (4-byte aligned) as one little-endian word: byte j holds element k + j.
QC_HD std::int32_t load_word(const std::int8_t* p) {
#if defined(QC_DEVICE_PASS)
  return *reinterpret_cast<const std::int32_t*>(p);
#else
  std::int32_t w;
  std::memcpy(&w, p, 4);  // x86 and every GPU here are little-endian
  return w;
#endif
}
QC_HD std::int32_t pack_word(std::int32_t b0, std::int32_t b1, std::int32_t b2, std::int32_t b3) {
  return static_cast<std::int32_t>(
      (static_cast<std::uint32_t>(b0) & 0xFFu) | ((static_cast<std::uint32_t>(b1) & 0xFFu) << 8) |
      ((static_cast<std::uint32_t>(b2) & 0xFFu) << 16) | ((static_cast<std::uint32_t>(b3) & 0xFFu) << 24));
}

// ---- A loaders --------------------------------------------------------------------------------

// Dense A: [M][lda] shifted bytes, K zero-padded up to lda.
struct DenseA {
  const std::int8_t* a = nullptr;
  std::int64_t lda = 0;
  QC_HD std::int32_t byte(std::int64_t m, std::int64_t k, int /*group*/) const { return a[m * lda + k]; }
  QC_HD std::int32_t word(std::int64_t m, std::int64_t kw, int /*group*/) const {
    return load_word(a + m * lda + 4 * kw);
  }
};

// A 2-D convolution as a GEMM (ONNX Conv geometry, weights OIHW): row m is output pixel
// (n, oh, ow) with m = (n * OH + oh) * OW + ow; column k is the tap k = (ic * KH + kh) * KW + kw of
// the group's filter, the OIHW flattening, so B's row for output channel oc is the filter itself.
struct ConvGeometry {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t group_channels = 0;  // C / groups
  bool nhwc = true;

  QC_HD std::int64_t depth() const { return group_channels * kernel_h * kernel_w; }
  QC_HD std::int64_t pixels() const { return batch * out_h * out_w; }
  // The input element that tap k of output pixel m reads in group g, or -1 for a tap in the padding.
  QC_HD std::int64_t tap(std::int64_t m, int g, std::int64_t k) const {
    const std::int64_t ow = m % out_w, oh = (m / out_w) % out_h, n = m / (out_w * out_h);
    const std::int64_t kw = k % kernel_w, kh = (k / kernel_w) % kernel_h, ic = k / (kernel_w * kernel_h);
    const std::int64_t h = oh * stride_h - pad_top + kh * dilation_h;
    const std::int64_t w = ow * stride_w - pad_left + kw * dilation_w;
    if (h < 0 || h >= height || w < 0 || w >= width) return -1;
    const std::int64_t c = g * group_channels + ic;
    return nhwc ? ((n * height + h) * width + w) * channels + c : ((n * channels + c) * height + h) * width + w;
  }
  // Where output (pixel m, channel oc) goes: NHWC [N, OH, OW, OC] or NCHW [N, OC, OH, OW].
  QC_HD std::int64_t output_index(std::int64_t m, std::int64_t oc) const {
    if (nhwc) return m * out_channels + oc;
    const std::int64_t hw = out_h * out_w;
    return ((m / hw) * out_channels + oc) * hw + m % hw;
  }
};

// Convolution A: the shifted input bytes in their own layout, gathered per tap. A tap in the
// padding holds `pad`: the activation's zero point (real-zero padding: (za - za) * w = 0) or
// the stored value of q = 0 (quantized-zero padding); past K (the padding up to Kp) it is 0.
struct ConvA {
  const std::int8_t* x = nullptr;
  ConvGeometry g;
  std::int32_t pad = 0;
  QC_HD std::int32_t byte(std::int64_t m, std::int64_t k, int group) const {
    if (k >= g.depth()) return 0;
    const std::int64_t src = g.tap(m, group, k);
    return src < 0 ? pad : x[src];
  }
  QC_HD std::int32_t word(std::int64_t m, std::int64_t kw, int group) const {
    return pack_word(byte(m, 4 * kw, group), byte(m, 4 * kw + 1, group), byte(m, 4 * kw + 2, group),
                     byte(m, 4 * kw + 3, group));
  }
};

// ---- Epilogue ---------------------------------------------------------------------------------

enum class OutputKind : std::uint8_t { int32, f32, f16, requantized };

struct Epilogue {
  OutputKind kind = OutputKind::int32;
  // Compensation: row sums [groups][M], column sums [groups*N] (both null: zero points are 0).
  const std::int32_t* row_sums = nullptr;
  const std::int32_t* col_sums = nullptr;
  std::int32_t za = 0;                     // shifted activation zero point
  const std::int32_t* zb = nullptr;        // shifted weight zero points, one per global column (or null: 0)
  const std::int32_t* bias_i32 = nullptr;  // per global column
  const float* bias_f32 = nullptr;         // per global column (f32 and f16 outputs)
  float a_scale = 1.0f;
  const float* w_scales = nullptr;  // one per global column
  float out_scale = 1.0f;           // requantized
  std::int32_t out_zero_point = 0, lo = 0, hi = 0;
  Rounding rounding = Rounding::float2int_rn;
  void* out = nullptr;  // int32 (int32 and requantized), float, or uint16 (f16 bits)
  // Output placement: dense GEMM y[m * ldc + global column]; a convolution uses conv.output_index.
  std::int64_t ldc = 0;
  bool conv_output = false;
  ConvGeometry conv;
};

// The epilogue of element (m, n) of group g: n is the column within the group, K the true depth.
QC_HD void store_output(const Epilogue& e, std::int64_t m, std::int64_t n, int g, std::int64_t groups_m,
                        std::int64_t cols, std::int64_t K, std::int32_t raw) {
  const std::int64_t col = g * cols + n;  // global column: output channel oc for a convolution
  std::int32_t acc = raw;
  if (e.row_sums != nullptr)
    acc = compensate(raw, e.row_sums[g * groups_m + m], e.col_sums[col], e.za, e.zb != nullptr ? e.zb[col] : 0,
                     static_cast<std::int32_t>(K));
  if (e.bias_i32 != nullptr) acc = wrapping_add(acc, e.bias_i32[col]);
  const std::int64_t at = e.conv_output ? e.conv.output_index(m, col) : m * e.ldc + col;
  switch (e.kind) {
    case OutputKind::int32:
      static_cast<std::int32_t*>(e.out)[at] = acc;
      break;
    case OutputKind::f32:
    case OutputKind::f16: {
      const float v = dequantize_accumulator(acc, e.a_scale, e.w_scales[col], e.bias_f32 != nullptr,
                                             e.bias_f32 != nullptr ? e.bias_f32[col] : 0.0f);
      if (e.kind == OutputKind::f32)
        static_cast<float*>(e.out)[at] = v;
      else
        static_cast<std::uint16_t*>(e.out)[at] = f16_bits(v);
      break;
    }
    case OutputKind::requantized: {
      const float mult = requantize_multiplier(e.a_scale, e.w_scales[col], e.out_scale);
      static_cast<std::int32_t*>(e.out)[at] = requantize_element(acc, mult, e.out_zero_point, e.lo, e.hi, e.rounding);
      break;
    }
  }
}

// Everything one GEMM launch needs besides the A loader.
struct GemmArgs {
  std::int64_t M = 0, N = 0, K = 0, Kp = 0;  // N: columns per group; Kp: K padded (multiple of the tile's K)
  int groups = 1;
  const std::int8_t* b = nullptr;  // [groups*N][Kp]
  Epilogue epilogue;
};

// ---- dp4a tile --------------------------------------------------------------------------------

struct Dp4aTile {
  static constexpr int kM = 64, kN = 64, kK = 32;  // output tile, K bytes per step
  static constexpr int kWords = kK / 4;            // 4-byte words per row per step
  static constexpr int kThreads = 256;             // 16 x 16 threads, 4 x 4 outputs each
  // Rows padded by one word: in compute(), the 16 threads of a half-warp read 16 different B rows
  // at the same word, 9 words apart, which hit 16 different banks (8 apart would share 4 ways).
  struct Shared {
    std::int32_t a[kM][kWords + 1];
    std::int32_t b[kN][kWords + 1];
  };
  struct Accum {
    std::int32_t v[4][4];
  };

  // Every thread copies 2 words of A and 2 of B for the step starting at byte k0. Rows past M or
  // N are zero (their outputs are never written); K needs no check, B and dense A are padded.
  template <class ALoader>
  QC_HD static void load(const ALoader& A, const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, std::int64_t k0,
                         int tid, Shared& sh) {
    for (int w = tid; w < kM * kWords; w += kThreads) {
      const int row = w / kWords, col = w % kWords;
      const std::int64_t m = m0 + row, n = n0 + row;
      sh.a[row][col] = m < p.M ? A.word(m, k0 / 4 + col, g) : 0;
      sh.b[row][col] = n < p.N ? load_word(p.b + (g * p.N + n) * p.Kp + k0 + 4 * col) : 0;
    }
  }

  // Thread (tx, ty) = (tid % 16, tid / 16) owns rows ty + 16i and columns tx + 16j (i, j < 4).
  QC_HD static void compute(const Shared& sh, int tid, Accum& acc) {
    const int tx = tid % 16, ty = tid / 16;
    QC_UNROLL
    for (int kw = 0; kw < kWords; ++kw) {
      std::int32_t a[4], b[4];
      QC_UNROLL
      for (int i = 0; i < 4; ++i) a[i] = sh.a[ty + 16 * i][kw];
      QC_UNROLL
      for (int j = 0; j < 4; ++j) b[j] = sh.b[tx + 16 * j][kw];
      QC_UNROLL
      for (int i = 0; i < 4; ++i) QC_UNROLL
      for (int j = 0; j < 4; ++j) acc.v[i][j] = dot4(a[i], b[j], acc.v[i][j]);
    }
  }

  QC_HD static void finish(const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, int tid, const Accum& acc) {
    const int tx = tid % 16, ty = tid / 16;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) QC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const std::int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < p.M && n < p.N) store_output(p.epilogue, m, n, g, p.M, p.N, p.K, acc.v[i][j]);
    }
  }
};

// ---- Tensor-core tile (NVIDIA mma.sync m16n8k32, sm_80 and later) -------------------------------

// The register fragments of mma.m16n8k32 with .s8 operands (PTX ISA, "Matrix fragments for
// mma.m16n8k32"), for lane l with group = l / 4 and t = l % 4; each register holds 4 bytes of
// consecutive k, the lowest k in the lowest byte:
//   A (16 x 32, row-major): a0 = A[group][4t..4t+3],    a1 = A[group+8][4t..4t+3],
//                           a2 = A[group][16+4t..],      a3 = A[group+8][16+4t..]
//   B (32 x 8, column-major): b0 = B[4t..4t+3][group],  b1 = B[16+4t..16+4t+3][group]
//   C, D (16 x 8, s32):     c0 = C[group][2t], c1 = C[group][2t+1], c2 = C[group+8][2t], c3 = C[group+8][2t+1]
struct MmaTile {
  static constexpr int kM = 128, kN = 128, kK = 64;  // output tile, K bytes per step (two mma k-steps)
  static constexpr int kThreads = 256;               // 8 warps: 2 along M x 4 along N, 64 x 32 each
  // Shared rows of 64 bytes padded to 80 (20 words): the 8 row groups x 4 word offsets of one
  // fragment load land in 32 different banks; 80 keeps the 16-byte cp.async destinations aligned.
  static constexpr int kRowBytes = kK + 16, kRowWords = kRowBytes / 4;
  struct Shared {
    std::int8_t a[2][kM][kRowBytes];
    std::int8_t b[2][kN][kRowBytes];
  };
  struct Accum {
    std::int32_t v[4][4][4];  // [m16 tile i][n8 tile j][c register]
  };

  // 16 bytes from global memory into shared memory; zeros when !valid (cp.async with a source
  // size of 0 fills the destination with zeros).
  QC_HD static void copy16(std::int8_t* dst, const std::int8_t* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    // src is always a valid address (callers clamp the row); with a source size of 0 nothing is read.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
#else
    if (valid)
      std::memcpy(dst, src, 16);
    else
      std::memset(dst, 0, 16);
#endif
  }
  QC_HD static void commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
  }
  // Wait until at most `pending` committed groups are still in flight (0 or 1).
  QC_HD static void wait(int pending) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (pending == 0)
      asm volatile("cp.async.wait_group 0;\n" ::);
    else
      asm volatile("cp.async.wait_group 1;\n" ::);
#else
    (void)pending;
#endif
  }

  // Dense A only (16-byte rows of a padded [M][Kp] matrix). Each thread issues 2 copies of A and
  // 2 of B: chunk c of 512 is row c / 4, bytes 16 * (c % 4) of the step.
  QC_HD static void load(const DenseA& A, const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, std::int64_t k0,
                         int tid, int stage, Shared& sh) {
    for (int c = tid; c < kM * (kK / 16); c += kThreads) {
      const int row = c / (kK / 16), off = 16 * (c % (kK / 16));
      const std::int64_t m = m0 + row, n = n0 + row;
      copy16(&sh.a[stage][row][off], A.a + (m < p.M ? m : 0) * A.lda + k0 + off, m < p.M);
      copy16(&sh.b[stage][row][off], p.b + (g * p.N + (n < p.N ? n : 0)) * p.Kp + k0 + off, n < p.N);
    }
  }

  QC_HD static std::int32_t shared_word(const std::int8_t (*rows)[kRowBytes], int row, int word) {
#if defined(QC_DEVICE_PASS)
    return reinterpret_cast<const std::int32_t*>(rows[row])[word];
#else
    std::int32_t w;
    std::memcpy(&w, rows[row] + 4 * word, 4);
    return w;
#endif
  }

  struct Fragments {
    std::int32_t a[4][4];  // [m16 tile i][register]
    std::int32_t b[4][2];  // [n8 tile j][register]
  };
  // Lane `lane` of warp `warp`: its fragments for mma k-step ks (bytes 32 ks .. 32 ks + 31 of the step).
  QC_HD static void fragments(const Shared& sh, int stage, int warp, int lane, int ks, Fragments& f) {
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32, group = lane / 4, t = lane % 4, w0 = 8 * ks;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = wm + 16 * i + group;
      f.a[i][0] = shared_word(sh.a[stage], r, w0 + t);
      f.a[i][1] = shared_word(sh.a[stage], r + 8, w0 + t);
      f.a[i][2] = shared_word(sh.a[stage], r, w0 + 4 + t);
      f.a[i][3] = shared_word(sh.a[stage], r + 8, w0 + 4 + t);
    }
    QC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int n = wn + 8 * j + group;
      f.b[j][0] = shared_word(sh.b[stage], n, w0 + t);
      f.b[j][1] = shared_word(sh.b[stage], n, w0 + 4 + t);
    }
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __device__ static void mma(std::int32_t (&d)[4], const std::int32_t (&a)[4], const std::int32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  // One thread's share of the step in `stage`: 2 k-steps x 4 x 4 mma.
  __device__ static void compute(const Shared& sh, int stage, int tid, Accum& acc) {
    const int warp = tid / 32, lane = tid % 32;
    QC_UNROLL
    for (int ks = 0; ks < kK / 32; ++ks) {
      Fragments f;
      fragments(sh, stage, warp, lane, ks, f);
      QC_UNROLL
      for (int i = 0; i < 4; ++i) QC_UNROLL
      for (int j = 0; j < 4; ++j) mma(acc.v[i][j], f.a[i], f.b[j]);
    }
  }
#endif

  // Element (i, j, register r) of lane `lane` in warp `warp`: its row and column in the tile.
  QC_HD static void position(int warp, int lane, int i, int j, int r, int& row, int& col) {
    row = (warp / 4) * 64 + 16 * i + lane / 4 + (r >= 2 ? 8 : 0);
    col = (warp % 4) * 32 + 8 * j + 2 * (lane % 4) + (r & 1);
  }

  QC_HD static void finish(const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, int tid, const Accum& acc) {
    const int warp = tid / 32, lane = tid % 32;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) QC_UNROLL
    for (int j = 0; j < 4; ++j) QC_UNROLL
    for (int r = 0; r < 4; ++r) {
      int row, col;
      position(warp, lane, i, j, r, row, col);
      const std::int64_t m = m0 + row, n = n0 + col;
      if (m < p.M && n < p.N) store_output(p.epilogue, m, n, g, p.M, p.N, p.K, acc.v[i][j][r]);
    }
  }
};

// ---- Operand preparation and the compensation sums -------------------------------------------

// Element (r, k) of an integer operand as the GEMM stores it: row r of [rows][Kp], the value at
// src[r * row_stride + k * k_stride] minus the shift, and 0 in the padding k >= K. The strides
// select the layout: [K, N] weights are read with (1, N), [N, K] weights and A with (K, 1).
QC_HD std::int8_t operand_byte(const std::int32_t* src, std::int64_t r, std::int64_t k, std::int64_t K,
                               std::int64_t row_stride, std::int64_t k_stride, std::int32_t shift) {
  return static_cast<std::int8_t>(k < K ? src[r * row_stride + k * k_stride] - shift : 0);
}

template <class ALoader>
QC_HD std::int32_t row_sum(const ALoader& A, std::int64_t m, int g, std::int64_t K) {
  std::int32_t s = 0;
  for (std::int64_t k = 0; k < K; ++k) s = wrapping_add(s, A.byte(m, k, g));
  return s;
}
QC_HD std::int32_t col_sum(const std::int8_t* b_row, std::int64_t K) {
  std::int32_t s = 0;
  for (std::int64_t k = 0; k < K; ++k) s = wrapping_add(s, b_row[k]);
  return s;
}

}  // namespace qc::gpu
