// The integer GEMM's packing and min/max loops (int_gemm.hpp), included by one source file per ISA
// (int_gemm.cpp, int_gemm_avx2.cpp, int_gemm_avx512.cpp), each compiled with its own target flags so
// the compiler vectorizes them for that ISA. Everything here has internal linkage (an unnamed
// namespace), so the builds never meet at link time; the names are the oracle's alone (unity builds).
#pragma once

#include "oracles/int_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qc::int_gemm {
namespace {

// Whether a panel's packing writes every element of it: no lane past `lines`, no piece padded
// (to a multiple of 4, whatever G).
inline bool int_gemm_panel_full(const PackJob& j) {
  if (j.lines < j.W) return false;
  for (std::size_t i = 0; i < j.piece_count; ++i)
    if (j.pieces[i].len != j.pieces[i].packed_len) return false;
  return true;
}

// From bytes of type S whose values of one line are contiguous (A's rows, B given as [N, K]): 16
// values at a time widened, offset and summed (the compiler vectorizes that), then stored a group at
// a time.
template <class E, int G, class S>
void int_gemm_pack_rows(const PackJob& j) {
  static_assert(16 % G == 0);
  E* dst = static_cast<E*>(j.dst);
  for (std::int64_t l = 0; l < j.lines; ++l) {
    const S* line = static_cast<const S*>(j.bytes) + l * j.line_stride;
    for (std::size_t i = 0; i < j.piece_count; ++i) {
      const Piece& c = j.pieces[i];
      std::int32_t sum = 0;  // at most kPieceK values of at most 255 in magnitude
      E* d = dst + (c.packed / G) * j.W * G + l * G;
      const S* x = line + c.k0;
      std::int64_t k = 0;
      for (; k + 16 <= c.len; k += 16) {
        E v[16];
        for (int t = 0; t < 16; ++t) {
          const std::int32_t y = std::int32_t{x[k + t]} + j.offset;
          v[t] = static_cast<E>(y);
          sum += y;
        }
        for (int g = 0; g < 16 / G; ++g) std::memcpy(d + (k / G + g) * j.W * G, v + g * G, sizeof(E) * G);
      }
      for (; k < c.len; ++k) {  // the rest; a last short group's remainder stays zero
        const std::int32_t y = std::int32_t{x[k]} + j.offset;
        d[(k / G) * j.W * G + k % G] = static_cast<E>(y);
        sum += y;
      }
      if (j.sums) j.sums[l * j.S + c.segment] += sum;
    }
  }
}

// From bytes of type S laid out [K, lines] (B given as [K, N]: line_stride 1, k_stride N): each of
// a group's G rows of K is read along the lines (contiguous, vectorized) into the group's
// interleaved lanes; the sums are kept per line.
template <class E, int G, class S>
void int_gemm_pack_k_rows(const PackJob& j, std::int64_t first_line = 0) {
  constexpr int kMaxW = 64;
  E* dst = static_cast<E*>(j.dst);
  const S* src = static_cast<const S*>(j.bytes);
  const auto lines = static_cast<int>(std::min<std::int64_t>(j.lines, kMaxW));  // W <= 32 in every build
  for (std::size_t i = 0; i < j.piece_count; ++i) {
    const Piece& c = j.pieces[i];
    std::int32_t sum[kMaxW] = {};
    for (std::int64_t k = 0; k < c.len; k += G) {
      E* d = dst + ((c.packed + k) / G) * j.W * G;
      const int here = static_cast<int>(std::min<std::int64_t>(G, c.len - k));
      for (int t = 0; t < here; ++t) {
        const S* row = src + (c.k0 + k + t) * j.k_stride;
        for (int l = static_cast<int>(first_line); l < lines; ++l) {
          const std::int32_t y = std::int32_t{row[l]} + j.offset;
          d[l * G + t] = static_cast<E>(y);
          sum[l] += y;
        }
      }
    }
    if (j.sums)
      for (int l = static_cast<int>(first_line); l < lines; ++l) j.sums[l * j.S + c.segment] += sum[l];
  }
}

#if defined(__SSE2__)
// SSE2 (every x86-64 build) for the packing from bytes. Adding the offset's low byte modulo 256
// gives each value's own byte, since the offset moves every value into the target's byte range (A's
// [0, 255], B's [-128, 127]: byte_offsets); `Signed` says which, and so how a byte widens.
inline void int_gemm_store32(void* p, __m128i v) {
  const std::int32_t x = _mm_cvtsi128_si32(v);
  std::memcpy(p, &x, 4);
}

template <bool Signed>
inline __m128i int_gemm_widen_lo(__m128i y) {  // bytes 0-7 as int16
  return Signed ? _mm_srai_epi16(_mm_unpacklo_epi8(y, y), 8) : _mm_unpacklo_epi8(y, _mm_setzero_si128());
}
template <bool Signed>
inline __m128i int_gemm_widen_hi(__m128i y) {  // bytes 8-15 as int16
  return Signed ? _mm_srai_epi16(_mm_unpackhi_epi8(y, y), 8) : _mm_unpackhi_epi8(y, _mm_setzero_si128());
}

// Lines contiguous in K (A's rows, B as [N, K]): 16 values a step; their sum from psadbw (on the
// bytes biased to unsigned for a signed target).
template <class E, int G, bool Signed>
void int_gemm_pack_rows_sse2(const PackJob& j) {
  static_assert((sizeof(E) == 1 && G == 4) || (sizeof(E) == 2 && G == 2));
  E* dst = static_cast<E*>(j.dst);
  const __m128i off = _mm_set1_epi8(static_cast<char>(j.offset & 0xff));
  const __m128i bias = _mm_set1_epi8(Signed ? static_cast<char>(0x80) : 0);
  const __m128i zero = _mm_setzero_si128();
  const std::int64_t step = j.W * G;  // elements of E from one group of a lane to its next
  for (std::int64_t l = 0; l < j.lines; ++l) {
    const std::uint8_t* line = static_cast<const std::uint8_t*>(j.bytes) + l * j.line_stride;
    for (std::size_t i = 0; i < j.piece_count; ++i) {
      const Piece& c = j.pieces[i];
      E* d = dst + (c.packed / G) * step + l * G;
      const std::uint8_t* x = line + c.k0;
      __m128i sad = zero;
      std::int64_t k = 0;
      for (; k + 16 <= c.len; k += 16) {
        const __m128i y = _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + k)), off);
        sad = _mm_add_epi64(sad, _mm_sad_epu8(_mm_xor_si128(y, bias), zero));
        E* dk = d + (k / G) * step;
        if constexpr (sizeof(E) == 1) {
          int_gemm_store32(dk, y);
          int_gemm_store32(dk + step, _mm_srli_si128(y, 4));
          int_gemm_store32(dk + 2 * step, _mm_srli_si128(y, 8));
          int_gemm_store32(dk + 3 * step, _mm_srli_si128(y, 12));
        } else {
          const __m128i lo = int_gemm_widen_lo<Signed>(y), hi = int_gemm_widen_hi<Signed>(y);
          int_gemm_store32(dk, lo);
          int_gemm_store32(dk + step, _mm_srli_si128(lo, 4));
          int_gemm_store32(dk + 2 * step, _mm_srli_si128(lo, 8));
          int_gemm_store32(dk + 3 * step, _mm_srli_si128(lo, 12));
          int_gemm_store32(dk + 4 * step, hi);
          int_gemm_store32(dk + 5 * step, _mm_srli_si128(hi, 4));
          int_gemm_store32(dk + 6 * step, _mm_srli_si128(hi, 8));
          int_gemm_store32(dk + 7 * step, _mm_srli_si128(hi, 12));
        }
      }
      std::int64_t lanes[2];
      std::memcpy(lanes, &sad, sizeof(lanes));
      std::int64_t sum = lanes[0] + lanes[1] - (Signed ? 128 * k : 0);
      using Src = std::conditional_t<Signed, std::int8_t, std::uint8_t>;  // the target's reading of a byte
      for (; k < c.len; ++k) {  // the rest; a last short group's remainder stays zero
        const std::int32_t y = static_cast<Src>(static_cast<std::uint8_t>(x[k] + j.offset));
        d[(k / G) * step + k % G] = static_cast<E>(y);
        sum += y;
      }
      if (j.sums) j.sums[l * j.S + c.segment] += sum;
    }
  }
}

// B as [K, N] (line_stride 1, k_stride N): 16 lanes at a time, a group's G rows of K read along the
// lanes and interleaved into the lanes' groups with unpacks; the lanes' sums kept in int16 for up
// to 128 rows (|sum| <= 128 * 255 < 2^15), then in int32. Lanes past the last multiple of 16 go
// to the portable loop.
template <class E, int G, bool Signed>
std::int64_t int_gemm_pack_k_rows_sse2(const PackJob& j) {
  static_assert((sizeof(E) == 1 && G == 4) || (sizeof(E) == 2 && G == 2));
  E* dst = static_cast<E*>(j.dst);
  const std::uint8_t* src = static_cast<const std::uint8_t*>(j.bytes);
  const __m128i off = _mm_set1_epi8(static_cast<char>(j.offset & 0xff));
  const __m128i zero = _mm_setzero_si128();
  const std::int64_t full = j.lines / 16 * 16;
  for (std::size_t i = 0; i < j.piece_count; ++i) {
    const Piece& c = j.pieces[i];
    for (std::int64_t l0 = 0; l0 < full; l0 += 16) {
      __m128i s32[4] = {zero, zero, zero, zero}, s16_lo = zero, s16_hi = zero;
      int in16 = 0;
      const auto flush = [&] {
        const __m128i sign_lo = Signed ? _mm_srai_epi16(s16_lo, 15) : zero;
        const __m128i sign_hi = Signed ? _mm_srai_epi16(s16_hi, 15) : zero;
        s32[0] = _mm_add_epi32(s32[0], _mm_unpacklo_epi16(s16_lo, sign_lo));
        s32[1] = _mm_add_epi32(s32[1], _mm_unpackhi_epi16(s16_lo, sign_lo));
        s32[2] = _mm_add_epi32(s32[2], _mm_unpacklo_epi16(s16_hi, sign_hi));
        s32[3] = _mm_add_epi32(s32[3], _mm_unpackhi_epi16(s16_hi, sign_hi));
        s16_lo = s16_hi = zero;
        in16 = 0;
      };
      for (std::int64_t k = 0; k < c.len; k += G) {
        __m128i x[G];
        for (int t = 0; t < G; ++t) {
          if (k + t >= c.len) {  // K's padding: zeros
            x[t] = zero;
            continue;
          }
          x[t] = _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (c.k0 + k + t) * j.k_stride + l0)),
                              off);
          s16_lo = _mm_add_epi16(s16_lo, int_gemm_widen_lo<Signed>(x[t]));
          s16_hi = _mm_add_epi16(s16_hi, int_gemm_widen_hi<Signed>(x[t]));
          if (++in16 == 128) flush();
        }
        auto* d = reinterpret_cast<__m128i*>(dst + ((c.packed + k) / G) * j.W * G + l0 * G);
        if constexpr (sizeof(E) == 1) {
          const __m128i t0 = _mm_unpacklo_epi8(x[0], x[1]), t1 = _mm_unpackhi_epi8(x[0], x[1]);
          const __m128i t2 = _mm_unpacklo_epi8(x[2], x[3]), t3 = _mm_unpackhi_epi8(x[2], x[3]);
          _mm_storeu_si128(d, _mm_unpacklo_epi16(t0, t2));
          _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t0, t2));
          _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t1, t3));
          _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t1, t3));
        } else {
          const __m128i a_lo = int_gemm_widen_lo<Signed>(x[0]), a_hi = int_gemm_widen_hi<Signed>(x[0]);
          const __m128i b_lo = int_gemm_widen_lo<Signed>(x[1]), b_hi = int_gemm_widen_hi<Signed>(x[1]);
          _mm_storeu_si128(d, _mm_unpacklo_epi16(a_lo, b_lo));
          _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(a_lo, b_lo));
          _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(a_hi, b_hi));
          _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(a_hi, b_hi));
        }
      }
      flush();
      if (j.sums) {
        std::int32_t lane[16];
        std::memcpy(lane, s32, sizeof(lane));
        for (int t = 0; t < 16; ++t) j.sums[(l0 + t) * j.S + c.segment] += lane[t];
      }
    }
  }
  return full;
}
#endif

// Packed k `kp` of lane l goes to dst[(kp / G) * W * G + l * G + kp % G].
// `Signed`: the packed values' range is B's [-128, 127], else A's [0, 255] (byte_offsets).
template <class E, int G, bool Signed>
void int_gemm_pack_panel(const PackJob& j) {
  E* dst = static_cast<E*>(j.dst);
  if (j.bytes) {
    if (!int_gemm_panel_full(j)) std::fill_n(dst, j.packed_k * j.W, E{0});  // the padding stays zero
    const bool rows = j.k_stride == 1;
#if defined(__SSE2__)
    if (rows) return int_gemm_pack_rows_sse2<E, G, Signed>(j);
    const std::int64_t done = int_gemm_pack_k_rows_sse2<E, G, Signed>(j);
    if (done == j.lines) return;
#else
    const std::int64_t done = 0;
#endif
    if (j.bytes_signed)
      rows ? int_gemm_pack_rows<E, G, std::int8_t>(j) : int_gemm_pack_k_rows<E, G, std::int8_t>(j, done);
    else
      rows ? int_gemm_pack_rows<E, G, std::uint8_t>(j) : int_gemm_pack_k_rows<E, G, std::uint8_t>(j, done);
    return;
  }
  std::fill_n(dst, j.packed_k * j.W, E{0});  // the padding (lanes past `lines`, k past a piece's end) stays zero
  for (std::int64_t l = 0; l < j.lines; ++l) {
    const std::int32_t* line = j.src + l * j.K;
    for (std::size_t i = 0; i < j.piece_count; ++i) {
      const Piece& c = j.pieces[i];
      std::int64_t sum = 0;
      E* d = dst + (c.packed / G) * j.W * G + l * G;
      const std::int32_t* x = line + c.k0;
      std::int64_t k = 0;
      for (; k + G <= c.len; k += G, d += j.W * G) {  // one lane's group: G values, one store
        E group[G];
        for (int t = 0; t < G; ++t) {
          const std::int32_t v = x[k + t] + j.offset;
          group[t] = static_cast<E>(v);
          sum += v;
        }
        std::memcpy(d, group, sizeof(group));
      }
      for (int t = 0; k < c.len; ++k, ++t) {  // the last, short group (the rest of it stays zero)
        const std::int32_t v = x[k] + j.offset;
        d[t] = static_cast<E>(v);
        sum += v;
      }
      if (j.sums) j.sums[l * j.S + c.segment] += sum;
    }
  }
}

// Built per ISA like the rest of this file: baseline x86-64 has no vector 64-bit subtraction wider
// than two lanes.
void int_gemm_subtract(std::uint64_t* v, std::int64_t stride, const std::uint64_t* w, std::uint64_t row_term,
                       std::int64_t n) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) v[i] = v[i] - row_term - w[i];
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) v[i * stride] = v[i * stride] - row_term - w[i];
}

void int_gemm_minmax(const std::int32_t* v, std::int64_t n, std::int32_t& lo, std::int32_t& hi) {
  // Written so GCC vectorizes it: constant starting values and selects (std::min from v[0] stays scalar).
  std::int32_t l = std::numeric_limits<std::int32_t>::max(), h = std::numeric_limits<std::int32_t>::min();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t x = v[i];
    l = x < l ? x : l;
    h = x > h ? x : h;
  }
  lo = l;
  hi = h;
}

}  // namespace
}  // namespace qc::int_gemm
