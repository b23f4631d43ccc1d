// vnni512 micro-kernel: AVX512-VNNI vpdpbusd (u8 x s8 -> s32, four products per int32 lane,
// wrapping add), 12 rows x 32 columns (2 zmm) of int32 accumulators.
//
// Register budget (32 zmm): 24 accumulators + 2 weight vectors + 1 broadcast activation word = 27.
// Per group of four K: 2 aligned 64-byte loads of the weight panel, 12 broadcast loads of A
// (vpbroadcastd; vpdpbusd's embedded broadcast applies to the signed operand, i.e. the weights,
// so A is broadcast into a register) and 24 vpdpbusd: 1536 multiply-adds for 14 loads; twelve
// independent chains per weight vector cover vpdpbusd's latency.
//
// Why 12 x 32 and not 8 x 48 or 6 x 64 (all 24 accumulators): measured with benchmarks/vnni_bench.cpp
// on Zen 5, 12 x 32 and 8 x 48 run the 1024^3 GEMM alike (~750-800 GOPS) but a 64-channel conv
// wastes a third of 8 x 48's second panel (N = 64 = 48 + 16); 6 x 64 was slower on both.
//
// Every function carries its own target attribute, so this file builds with the baseline x86-64
// flags and nothing here runs unless cpuid said avx512f + avx512bw + avx512_vnni.
#include "backends/vnni/kernels.hpp"

#if defined(__x86_64__)

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers, on the self-initialized
// `_mm512_undefined_*` pass-through operands that _mm512_min_ps / _mm512_cvtps_epi32 expand to
// (gcc.gnu.org bug 105593). The warning's location is the header, so it is silenced for this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#define QC_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define QC_ALWAYS_INLINE inline __attribute__((always_inline))

namespace qc::vnni::detail {
namespace {

// Tile shape and blocking; overridable with -D for tuning experiments (see vnni512_kernels()).
#ifndef QC_VNNI512_MR
#define QC_VNNI512_MR 12
#define QC_VNNI512_NRV 2
#endif
#ifndef QC_VNNI512_KCG
#define QC_VNNI512_KCG 256
#define QC_VNNI512_MC 192
#endif
constexpr int kMr = QC_VNNI512_MR;
constexpr int kNrv = QC_VNNI512_NRV;  // zmm vectors per row
constexpr int kNr = 16 * kNrv;

QC_VNNI512 QC_ALWAYS_INLINE __mmask16 lane_mask(int valid) {
  if (valid >= 16) return static_cast<__mmask16>(0xFFFF);
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1u);
}

QC_VNNI512 void epilogue(const TileArgs& t, std::int32_t* c, int rows);

template <int MR>
QC_VNNI512 void tile(const TileArgs& t) {
  __m512i acc[MR][kNrv];
  if (t.load_partial) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kNrv; ++v) acc[r][v] = _mm512_loadu_si512(t.partial + r * t.ld_partial + 16 * v);
  } else {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kNrv; ++v) acc[r][v] = _mm512_setzero_si512();
  }

  const std::uint8_t* a = t.a;
  const std::int8_t* b = t.b;
  for (std::int64_t g = t.kgroups; g > 0; --g) {
    __m512i w[kNrv];
#pragma GCC unroll 4
    for (int v = 0; v < kNrv; ++v) w[v] = _mm512_load_si512(b + 64 * v);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      std::int32_t word;
      std::memcpy(&word, a + r * t.a_stride, 4);
      const __m512i x = _mm512_set1_epi32(word);
#pragma GCC unroll 4
      for (int v = 0; v < kNrv; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], x, w[v]);
    }
    a += 4;
    b += 4 * kNr;
  }

  if (!t.final) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kNrv; ++v) _mm512_storeu_si512(t.partial + r * t.ld_partial + 16 * v, acc[r][v]);
    return;
  }

  // The epilogue works from memory: indexing `acc` in its (not unrolled) loops would make GCC keep
  // the accumulators on the stack inside the K loop too.
  alignas(64) std::int32_t c[MR][kNr];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNrv; ++v) _mm512_store_si512(&c[r][16 * v], acc[r][v]);
  epilogue(t, &c[0][0], MR);
}

// acc += col_term[n] - zw[n] * rowsum[m] (int32 wrapping: vpaddd, vpmulld, vpsubd), then the output.
// c: rows x kNr int32, 64-byte aligned.
QC_VNNI512 void epilogue(const TileArgs& t, std::int32_t* c, int rows) {
  for (int v = 0; v < kNrv; ++v) {
    const __m512i ct = _mm512_loadu_si512(t.col_term + 16 * v);
    const __m512i zw = t.row_sum ? _mm512_loadu_si512(t.w_zp + 16 * v) : _mm512_setzero_si512();
    for (int r = 0; r < rows; ++r) {
      std::int32_t* p = c + r * kNr + 16 * v;
      __m512i x = _mm512_add_epi32(_mm512_load_si512(p), ct);
      if (t.row_sum) x = _mm512_sub_epi32(x, _mm512_mullo_epi32(_mm512_set1_epi32(t.row_sum[r]), zw));
      _mm512_store_si512(p, x);
    }
  }
  auto acc = [c](int r, int v) { return c + r * kNr + 16 * v; };
  __mmask16 mask[kNrv];
#pragma GCC unroll 4
  for (int v = 0; v < kNrv; ++v) mask[v] = lane_mask(t.n_valid - 16 * v);

  switch (t.store) {
    case Store::int32: {
      auto* out = static_cast<std::int32_t*>(t.out);
      for (int r = 0; r < rows; ++r)
        for (int v = 0; v < kNrv; ++v)
          if (mask[v] == 0xFFFF)
            _mm512_storeu_si512(out + r * t.ld_out + 16 * v, _mm512_load_si512(acc(r, v)));
          else if (mask[v])
            _mm512_mask_storeu_epi32(out + r * t.ld_out + 16 * v, mask[v], _mm512_load_si512(acc(r, v)));
      break;
    }
    case Store::f32: {
      auto* out = static_cast<float*>(t.out);
      for (int v = 0; v < kNrv; ++v) {
        if (!mask[v]) continue;
        const __m512 d = _mm512_loadu_ps(t.scale + 16 * v);
        const __m512 bias = t.bias_f ? _mm512_loadu_ps(t.bias_f + 16 * v) : _mm512_setzero_ps();
        for (int r = 0; r < rows; ++r) {
          __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(acc(r, v))), d);  // fl(float(acc) * d)
          if (t.bias_f) y = _mm512_add_ps(y, bias);                                       // fl(... + bf): no FMA
          if (mask[v] == 0xFFFF)
            _mm512_storeu_ps(out + r * t.ld_out + 16 * v, y);
          else
            _mm512_mask_storeu_ps(out + r * t.ld_out + 16 * v, mask[v], y);
        }
      }
      break;
    }
    case Store::u8:
    case Store::s8: {
      // XNNPACK fp32 requantization: scale in f32, clamp in float against [lo - zo, hi - zo],
      // cvtps2dq (MXCSR round to nearest even), + zo; the value is in range, so the truncating
      // vpmovdb stores it exactly for either signedness.
      auto* out = static_cast<std::int8_t*>(t.out);
      const __m512 lo = _mm512_set1_ps(t.lo);
      const __m512 hi = _mm512_set1_ps(t.hi);
      const __m512i zo = _mm512_set1_epi32(t.out_zp);
      for (int v = 0; v < kNrv; ++v) {
        if (!mask[v]) continue;
        const __m512 s = _mm512_loadu_ps(t.scale + 16 * v);
        for (int r = 0; r < rows; ++r) {
          __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(acc(r, v))), s);
          y = _mm512_min_ps(_mm512_max_ps(y, lo), hi);
          const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(y), zo);
          if (mask[v] == 0xFFFF)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * t.ld_out + 16 * v), _mm512_cvtepi32_epi8(q));
          else
            _mm512_mask_cvtepi32_storeu_epi8(out + r * t.ld_out + 16 * v, mask[v], q);
        }
      }
      break;
    }
  }
}

}  // namespace

const KernelSet& vnni512_kernels() {
  // K block 1024 (256 groups): the weight slice 1024 x 32 = 32 KiB stays in a 48 KiB L1D while
  // the A rows stream past it (K = 1024 then needs no partial sums); M block 192 rows: the A block
  // 192 x 1024 = 192 KiB stays in L2. Chosen with benchmarks/vnni_bench.cpp (KC 512 / 1024,
  // MC 96 / 192 / 384).
  static const KernelSet set = [] {
    KernelSet s{kMr, kNr, QC_VNNI512_KCG, QC_VNNI512_MC, {}};
    // tile<r> for r = 1..kMr (the conditional keeps larger heights from being instantiated).
    const TileFn all[12] = {&tile<1>,
                            &tile<(kMr >= 2 ? 2 : 1)>,
                            &tile<(kMr >= 3 ? 3 : 1)>,
                            &tile<(kMr >= 4 ? 4 : 1)>,
                            &tile<(kMr >= 5 ? 5 : 1)>,
                            &tile<(kMr >= 6 ? 6 : 1)>,
                            &tile<(kMr >= 7 ? 7 : 1)>,
                            &tile<(kMr >= 8 ? 8 : 1)>,
                            &tile<(kMr >= 9 ? 9 : 1)>,
                            &tile<(kMr >= 10 ? 10 : 1)>,
                            &tile<(kMr >= 11 ? 11 : 1)>,
                            &tile<(kMr >= 12 ? 12 : 1)>};
    for (int r = 0; r < kMr; ++r) s.tiles[r] = all[r];
    return s;
  }();
  return set;
}

}  // namespace qc::vnni::detail

#else  // not x86-64: missing_feature() reports vnni512 unavailable, so this is never called

namespace qc::vnni::detail {
const KernelSet& vnni512_kernels() {
  static const KernelSet set{};
  return set;
}
}  // namespace qc::vnni::detail

#endif
