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
//   MmaTile   (NVIDIA sm_80+) 128 x 256 output tile, K in steps of 64 bytes, 8 warps of 64 x 64,
//             each a 4 x 8 grid of mma.sync m16n8k32 s8 x s8 -> s32 tensor-core products fed by
//             ldmatrix from swizzled shared memory, a 4-stage cp.async pipeline, and an epilogue
//             through shared memory.
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

// What the output stage reads of one global column, read once per column: every thread of
// both tiles' epilogues keeps its columns fixed and walks rows, so these loads and the
// requantize multiplier (a division) are not repeated per element.
struct OutColumn {
  std::int64_t col = 0;  // global column: output channel oc for a convolution
  std::int32_t col_sum = 0, zb = 0, bias = 0;
  float w_scale = 1.0f, bias_f32 = 0.0f, multiplier = 1.0f;
};

// Column n of group g (n within the group, cols the group's width).
QC_HD OutColumn output_column(const Epilogue& e, int g, std::int64_t cols, std::int64_t n) {
  OutColumn c;
  c.col = g * cols + n;
  if (e.row_sums != nullptr) {
    c.col_sum = e.col_sums[c.col];
    c.zb = e.zb != nullptr ? e.zb[c.col] : 0;
  }
  if (e.bias_i32 != nullptr) c.bias = e.bias_i32[c.col];
  if (e.kind == OutputKind::f32 || e.kind == OutputKind::f16) {
    c.w_scale = e.w_scales[c.col];
    if (e.bias_f32 != nullptr) c.bias_f32 = e.bias_f32[c.col];
  } else if (e.kind == OutputKind::requantized) {
    c.multiplier = requantize_multiplier(e.a_scale, e.w_scales[c.col], e.out_scale);
  }
  return c;
}

// The epilogue of element (m, column c) of group g: groups_m is the rows per group, K the true depth.
QC_HD void store_output(const Epilogue& e, const OutColumn& c, std::int64_t m, int g, std::int64_t groups_m,
                        std::int64_t K, std::int32_t raw) {
  std::int32_t acc = raw;
  if (e.row_sums != nullptr)
    acc = compensate(raw, e.row_sums[g * groups_m + m], c.col_sum, e.za, c.zb, static_cast<std::int32_t>(K));
  if (e.bias_i32 != nullptr) acc = wrapping_add(acc, c.bias);
  const std::int64_t at = e.conv_output ? e.conv.output_index(m, c.col) : m * e.ldc + c.col;
  switch (e.kind) {
    case OutputKind::int32:
      static_cast<std::int32_t*>(e.out)[at] = acc;
      break;
    case OutputKind::f32:
    case OutputKind::f16: {
      const float v = dequantize_accumulator(acc, e.a_scale, c.w_scale, e.bias_f32 != nullptr, c.bias_f32);
      if (e.kind == OutputKind::f32)
        static_cast<float*>(e.out)[at] = v;
      else
        static_cast<std::uint16_t*>(e.out)[at] = f16_bits(v);
      break;
    }
    case OutputKind::requantized:
      static_cast<std::int32_t*>(e.out)[at] =
          requantize_element(acc, c.multiplier, e.out_zero_point, e.lo, e.hi, e.rounding);
      break;
  }
}

// Everything one GEMM launch needs besides the A loader.
struct GemmArgs {
  std::int64_t M = 0, N = 0, K = 0, Kp = 0;  // N: columns per group; Kp: K padded (multiple of the tile's K)
  int groups = 1;
  const std::int8_t* b = nullptr;  // [groups*N][Kp]
  Epilogue epilogue;
};

// What the main loops assume of a GEMM launch (launch_gemm refuses anything else, HostExec
// throws): K padded to whole 64-byte steps (both loops step over Kp, so another Kp would drop its
// tail), A's rows at least that long, and 4-byte words (dp4a) or, for the tensor-core tile's
// cp.async copies of 16 bytes, 16-byte aligned rows (PTX ISA, "cp.async": the source is naturally
// aligned). plan.hpp pads K to 64 in fresh allocations.
inline bool gemm_launchable(const DenseA& a, const GemmArgs& p, GemmPath path) {
  const std::int64_t align = path == GemmPath::mma ? 16 : 4;
  auto aligned = [&](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % align == 0; };
  return p.K >= 0 && p.Kp % 64 == 0 && p.Kp >= p.K && a.lda >= p.Kp && a.lda % align == 0 && aligned(a.a) &&
         aligned(p.b);
}

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
    for (int j = 0; j < 4; ++j) {
      const std::int64_t n = n0 + tx + 16 * j;
      if (n >= p.N) continue;
      const OutColumn c = output_column(p.epilogue, g, p.N, n);
      QC_UNROLL
      for (int i = 0; i < 4; ++i) {
        const std::int64_t m = m0 + ty + 16 * i;
        if (m < p.M) store_output(p.epilogue, c, m, g, p.M, p.K, acc.v[i][j]);
      }
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
//
// The fragments come from shared memory by ldmatrix.sync.aligned.m8n8.x4.shared.b16 (PTX ISA,
// "ldmatrix"): lanes 8q .. 8q+7 give the addresses of rows 0..7 of 8 x 16-byte matrix q, and lane
// l receives in register q bytes 4(l % 4) .. 4(l % 4)+3 of row l / 4 of matrix q. Since A and B
// are both stored k-contiguous (A row-major, B n-major), one x4 load is exactly one A fragment
// (matrices: rows 0-7 / 8-15 x bytes 0-15 / 16-31) or the B fragments of two n8 tiles (matrices:
// columns 0-7 / 8-15 x bytes 0-15 / 16-31), with no shuffling of bytes.
//
// The block: 128 x 256 outputs, 8 warps of 64 x 64 (2 along M x 4 along N), each a 4 x 8 grid of
// mma tiles, the shape of CUTLASS's sm80 int8 "128x256x64_64x64x64" tensor-op GEMM: per 32 bytes
// of K a warp reads 4 KiB of fragments for 131072 products (64 x 32 warps would read 3 KiB for
// half as many, and be bound by shared-memory bandwidth). K goes in steps of 64 bytes through a
// kStages-deep cp.async pipeline, so the copies of the next kStages - 1 steps are in flight while
// one step is multiplied (one barrier per step).
//
// Shared memory is the pipeline: per stage an A tile of 128 and a B tile of 256 rows x 64 bytes
// (four 16-byte chunks), 96 KiB in all. Chunk c of row r is stored at chunk c ^ ((r >> 1) & 3).
// Why: the 8 addresses of one ldmatrix matrix are 8 consecutive rows at the same chunk; 64-byte
// rows would put rows r and r + 2 in the same banks (a 4-way conflict), while swizzled the 8 rows
// land in the 8 different 16-byte bank groups of a 128-byte line ((r & 1) picks the half line, the
// XOR the chunk within it). mma_tile_test.cpp checks this for every load.
//
// After the main loop the same memory holds the results, half a warp's columns at a time: each
// warp stashes 64 x 32 int32 (swizzled too, staged()), and each lane then walks one column down
// the rows: the column's output parameters are read once, and every row's 32 outputs of a warp go
// to consecutive addresses.
struct MmaTile {
  static constexpr int kM = 128, kN = 256, kK = 64;  // output tile, K bytes per step (two mma k-steps)
  static constexpr int kStages = 4;                  // the cp.async pipeline's depth
  static constexpr int kThreads = 256;               // 8 warps: 2 along M x 4 along N
  static constexpr int kWarpM = 64, kWarpN = 64;     // a warp's outputs: 4 m16 x 8 n8 mma tiles
  static constexpr int kStagedCols = 32;             // columns of a warp stashed per epilogue pass
  struct Shared {
    std::int8_t a[kStages][kM * kK];
    std::int8_t b[kStages][kN * kK];
  };
  static constexpr int kStagedWords = kWarpM * kStagedCols;  // one warp's results per pass
  static_assert(kThreads / 32 * kStagedWords * 4 <= static_cast<int>(sizeof(Shared)),
                "an epilogue pass fits in the pipeline's shared memory");
  static_assert(kThreads % (kK / 16) == 0 && kM % (kThreads / (kK / 16)) == 0 && kN % (kThreads / (kK / 16)) == 0,
                "each thread copies the same chunk of rows kThreads / 4 apart");
  struct Accum {
    std::int32_t v[4][8][4];  // [m16 tile i][n8 tile j][c register]
  };
  struct Fragments {
    std::int32_t a[4][4];   // [m16 tile i][register]
    std::int32_t bp[4][4];  // [n16 pair jj][ldmatrix register]: b_reg() names them per n8 tile
  };

  // The pipeline stage that step s (K bytes 64 s .. 64 s + 63) goes through.
  QC_HD static int stage_of(std::int64_t step) { return static_cast<int>(step % kStages); }
  // Byte offset of (row, 16-byte chunk) in one stage's A or B tile.
  QC_HD static int swizzled(int row, int chunk) { return row * kK + 16 * (chunk ^ ((row >> 1) & 3)); }
  // Register r of n8 tile j's B fragment, from the pair's ldmatrix registers.
  QC_HD static std::int32_t b_reg(const Fragments& f, int j, int r) { return f.bp[j >> 1][2 * (j & 1) + r]; }

  // 16 bytes from global memory into shared memory; zeros when !valid (cp.async with a source
  // size of 0 fills the destination with zeros).
  QC_HD static void copy16(std::int8_t* dst, const std::int8_t* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    // src is always a valid address (a row past the edge reads row 0's); with a source size of 0
    // nothing is read.
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
  // Wait until at most `Pending` of this thread's committed groups are still in flight.
  template <int Pending>
  QC_HD static void wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
  }

  // One thread's copies, worked out once per block: thread tid copies chunk tid % 4 of rows
  // tid / 4 + 64 x of A (x < 2) and B (x < 4), so each step only adds its K offset. Dense A only
  // (16-byte rows of a padded [M][Kp] matrix); a row past M or N is zero-filled.
  static constexpr int kRowsApart = kThreads / (kK / 16);  // 64
  static constexpr int kCopiesA = kM / kRowsApart, kCopiesB = kN / kRowsApart;
  struct Copies {
    const std::int8_t* a = nullptr;         // A's row tid / 4, at the thread's chunk
    const std::int8_t* b = nullptr;         // B's row tid / 4 of the group, at the thread's chunk
    const std::int8_t* a_edge = nullptr;    // a readable address for the rows past M ...
    const std::int8_t* b_edge = nullptr;    // ... and past N
    std::int64_t a_apart = 0, b_apart = 0;  // bytes between rows 64 apart
    unsigned valid = 0;                     // bit x: A copy x in range; bit kCopiesA + x: B copy x
    int dst = 0;                            // the first copy's offset in a stage's tile
  };
  QC_HD static Copies copies(const DenseA& A, const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, int tid) {
    Copies c;
    const int row = tid / (kK / 16), chunk = tid % (kK / 16);
    c.a_edge = A.a;
    c.b_edge = p.b + static_cast<std::int64_t>(g) * p.N * p.Kp;
    c.a = c.a_edge + (m0 + row) * A.lda + 16 * chunk;
    c.b = c.b_edge + (n0 + row) * p.Kp + 16 * chunk;
    c.a_apart = kRowsApart * A.lda;
    c.b_apart = kRowsApart * p.Kp;
    for (int x = 0; x < kCopiesA; ++x) c.valid |= (m0 + row + kRowsApart * x < p.M ? 1u : 0u) << x;
    for (int x = 0; x < kCopiesB; ++x) c.valid |= (n0 + row + kRowsApart * x < p.N ? 1u : 0u) << (kCopiesA + x);
    c.dst = swizzled(row, chunk);  // rows 64 apart share the swizzle: (r >> 1) & 3 is the same
    return c;
  }
  QC_HD static void load(const Copies& c, std::int64_t step, Shared& sh) {
    const std::int64_t k0 = step * kK;
    const int stage = stage_of(step);
    QC_UNROLL
    for (int x = 0; x < kCopiesA; ++x) {
      const bool valid = (c.valid >> x) & 1u;
      copy16(sh.a[stage] + c.dst + x * kRowsApart * kK, valid ? c.a + x * c.a_apart + k0 : c.a_edge, valid);
    }
    QC_UNROLL
    for (int x = 0; x < kCopiesB; ++x) {
      const bool valid = (c.valid >> (kCopiesA + x)) & 1u;
      copy16(sh.b[stage] + c.dst + x * kRowsApart * kK, valid ? c.b + x * c.b_apart + k0 : c.b_edge, valid);
    }
  }

  // The row this lane addresses in the ldmatrix of m16 tile i (A) or n16 pair jj (B) at mma
  // k-step ks: a byte offset in the stage's tile.
  QC_HD static int a_row_offset(int warp, int lane, int ks, int i) {
    const int q = lane / 8;
    return swizzled((warp / 4) * kWarpM + 16 * i + 8 * (q & 1) + lane % 8, 2 * ks + (q >> 1));
  }
  QC_HD static int b_row_offset(int warp, int lane, int ks, int jj) {
    const int q = lane / 8;
    return swizzled((warp % 4) * kWarpN + 16 * jj + 8 * (q >> 1) + lane % 8, 2 * ks + (q & 1));
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __device__ static void ldmatrix_x4(const std::int8_t* row, std::int32_t (&r)[4]) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  }
  __device__ static void mma(std::int32_t (&d)[4], const std::int32_t (&a)[4], std::int32_t b0, std::int32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  // One thread's share of step s: per mma k-step, 4 + 4 ldmatrix.x4 and 4 x 8 mma.
  __device__ static void compute(const Shared& sh, std::int64_t step, int tid, Accum& acc) {
    const int warp = tid / 32, lane = tid % 32, stage = stage_of(step);
    QC_UNROLL
    for (int ks = 0; ks < kK / 32; ++ks) {
      Fragments f;
      QC_UNROLL
      for (int i = 0; i < 4; ++i) ldmatrix_x4(sh.a[stage] + a_row_offset(warp, lane, ks, i), f.a[i]);
      QC_UNROLL
      for (int jj = 0; jj < 4; ++jj) ldmatrix_x4(sh.b[stage] + b_row_offset(warp, lane, ks, jj), f.bp[jj]);
      QC_UNROLL
      for (int i = 0; i < 4; ++i) QC_UNROLL
      for (int j = 0; j < 8; ++j) mma(acc.v[i][j], f.a[i], b_reg(f, j, 0), b_reg(f, j, 1));
    }
  }
#endif

  // Where element (row, col) of warp `warp`'s 64 x 32 staged results is: an int32 index into the
  // shared memory, viewed as words. The 16-byte chunk c of row r goes to c ^ s(r), with
  // s(r) = 2 (r & 3) + ((r >> 2) & 1): the 16 lanes of a half-warp stash 4 rows x 2 adjacent chunks
  // (8-byte stores are served a half-warp at a time), and s gives each row a different pair.
  QC_HD static int staged(int warp, int row, int col) {
    const int s = 2 * (row & 3) + ((row >> 2) & 1);
    return warp * kStagedWords + row * kStagedCols + 4 * ((col >> 2) ^ s) + (col & 3);
  }
  // Element (i, j, register r) of a lane: its row and column in its warp's 64 x 64 block.
  QC_HD static void position(int lane, int i, int j, int r, int& row, int& col) {
    row = 16 * i + lane / 4 + (r >= 2 ? 8 : 0);
    col = 8 * j + 2 * (lane % 4) + (r & 1);
  }
  // Every thread puts its accumulators of columns 32 half .. 32 half + 31 (n8 tiles 4 half ..
  // 4 half + 3) into its warp's staging block. Registers (0, 1) and (2, 3) are adjacent columns,
  // one 8-byte store each. Before the first pass a barrier (the last step's ldmatrix reads of other
  // warps share these bytes); between passes the warp's own finish() must be done (__syncwarp).
  QC_HD static void stash(const Accum& acc, int tid, int half, std::int32_t* words) {
    const int warp = tid / 32, lane = tid % 32;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) QC_UNROLL
    for (int jh = 0; jh < 4; ++jh) QC_UNROLL
    for (int r = 0; r < 4; r += 2) {
      const int j = 4 * half + jh;
      int row, col;
      position(lane, i, jh, r, row, col);
      std::int32_t* at = words + staged(warp, row, col);
#if defined(QC_DEVICE_PASS)
      *reinterpret_cast<int2*>(at) = make_int2(acc.v[i][j][r], acc.v[i][j][r + 1]);
#else
      at[0] = acc.v[i][j][r];
      at[1] = acc.v[i][j][r + 1];
#endif
    }
  }
  // Lane l of a warp writes column 32 half + l of the warp's block, row by row (after its stash).
  QC_HD static void finish(const GemmArgs& p, int g, std::int64_t m0, std::int64_t n0, int tid, int half,
                           const std::int32_t* words) {
    const int warp = tid / 32, lane = tid % 32;
    const std::int64_t n = n0 + (warp % 4) * kWarpN + kStagedCols * half + lane;
    const std::int64_t m_first = m0 + (warp / 4) * kWarpM;
    if (n >= p.N) return;
    const OutColumn c = output_column(p.epilogue, g, p.N, n);
    for (int row = 0; row < kWarpM && m_first + row < p.M; ++row)
      store_output(p.epilogue, c, m_first + row, g, p.M, p.K, words[staged(warp, row, lane)]);
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
