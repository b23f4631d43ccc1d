#include "oracles/int_accumulate.hpp"

#include "oracles/int_gemm.hpp"

#include "qconform/parallel.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

namespace qc {

std::string_view name(ZeroPointCorrection z) { return table_name(z); }

PairedAccumulation paired_accumulation(Accumulation acc, PairRule pairs, DType a, DType b, bool zero_points) {
  if (acc != Accumulation::int16_pair_saturate) return {acc};
  const PairedAccumulation exact{Accumulation::int32_wrap};
  switch (pairs) {
    case PairRule::u8s8_whole_k: {
      const bool unsigned_a = a == DType::u8 || a == DType::u4;
      const bool signed_b = b == DType::i8 || b == DType::i4;
      return unsigned_a && signed_b ? PairedAccumulation{acc} : exact;
    }
    case PairRule::x8s8_shifted_whole_k: {
      const bool signed_b = b == DType::i8 || b == DType::i4;
      if (!signed_b) return exact;
      if (a == DType::u8 || a == DType::u4) return {acc};
      return a == DType::i8 ? PairedAccumulation{acc, true} : exact;
    }
    case PairRule::x8s8_avx2_k_blocks:
    case PairRule::x8s8_avx512_k_blocks:
      if (b != DType::i8) return exact;
      if (a == DType::u8) return {acc};
      if (a != DType::i8 || (pairs == PairRule::x8s8_avx2_k_blocks && zero_points)) return exact;
      return {acc, true};
  }
  return {acc};
}

void shift_signed_activations(std::span<std::int32_t> a, std::vector<std::int64_t>& a_zero_points) {
  for (std::int32_t& v : a) v += 128;
  for (std::int64_t& z : a_zero_points) z += 128;
}

std::string_view name(PairRule r) { return table_name(r); }

std::vector<std::int64_t> pair_block_starts(PairRule r, std::int64_t depth) {
  std::vector<std::int64_t> starts{0};
  if (r == PairRule::u8s8_whole_k || r == PairRule::x8s8_shifted_whole_k) return starts;
  // gemm_info.cpp (int8, no VNNI): bk_traditional and bk per ISA; uk = 1.
  const bool avx2 = r == PairRule::x8s8_avx2_k_blocks;
  const std::int64_t bk_traditional = avx2 ? 256 : 384, bk = avx2 ? 384 : 768;
  // gemm_driver.cpp::get_k_padd (no packed operand): k <= bk_traditional -> one block;
  // k < 2 * bk -> rnd_up((k + 1) / 2, uk); else bk. The blocks then tile K from 0.
  if (depth <= bk_traditional) return starts;
  const std::int64_t block = depth < 2 * bk ? (depth + 1) / 2 : bk;
  for (std::int64_t k = block; k < depth; k += block) starts.push_back(k);
  return starts;
}

std::string_view name(ConvDepthOrder o) { return table_name(o); }

bool IntGemmProblem::any_zero_point() const {
  auto nonzero = [](std::int64_t z) { return z != 0; };
  return std::any_of(a_zero_points.begin(), a_zero_points.end(), nonzero) ||
         std::any_of(b_zero_points.begin(), b_zero_points.end(), nonzero);
}

std::int64_t IntGemmProblem::segment_length(std::int64_t s) const {
  const auto i = static_cast<std::size_t>(s);
  const std::int64_t end = i + 1 < segment_starts.size() ? segment_starts[i + 1] : depth;
  return end - segment_starts[i];
}

BigInt IntGemmAccumulators::exact(std::int64_t r, std::int64_t n, std::int64_t s) const {
  const auto it = exact_where_different.find((r * cols + n) * segments + s);
  return it == exact_where_different.end() ? BigInt(at(r, n, s)) : it->second;
}

bool IntGemmAccumulators::overflowed(std::int64_t r, std::int64_t n) const {
  if (exact_where_different.empty()) return false;
  for (std::int64_t s = 0; s < segments; ++s)
    if (exact_where_different.count((r * cols + n) * segments + s)) return true;
  return false;
}

namespace {

constexpr std::int64_t kInt32Lo = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Hi = std::numeric_limits<std::int32_t>::max();

bool fits_int32(std::int64_t v) { return v >= kInt32Lo && v <= kInt32Hi; }

// Two's-complement wrap to 64 bits: the unsigned sum is exact modulo 2^64 (C++20 defines the
// conversion back to signed as modular).
std::int64_t wrapping_add_int64(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

void check_problem(const IntGemmProblem& p) {
  const auto R = static_cast<std::size_t>(p.rows), N = static_cast<std::size_t>(p.cols),
             K = static_cast<std::size_t>(p.depth), S = static_cast<std::size_t>(p.segments());
  if (p.rows < 0 || p.cols < 0 || p.depth < 0) throw InputError("accumulate_gemm: negative dimensions");
  if (!p.bytes_only() && (p.a.size() != R * K || p.bt.size() != N * K))
    throw InputError("accumulate_gemm: operand sizes " + std::to_string(p.a.size()) + " and " +
                     std::to_string(p.bt.size()) + " do not match R*K = " + std::to_string(R * K) +
                     " and N*K = " + std::to_string(N * K));
  if (p.segment_starts.empty() || p.segment_starts[0] != 0)
    throw InputError("accumulate_gemm: the first segment must start at k = 0");
  for (std::size_t s = 1; s < S; ++s)
    if (p.segment_starts[s] <= p.segment_starts[s - 1] || p.segment_starts[s] >= p.depth)
      throw InputError("accumulate_gemm: segment starts must increase strictly inside [0, K)");
  if (p.a_zero_points.size() != R * S || p.b_zero_points.size() != S * N)
    throw InputError("accumulate_gemm: expected R*S and S*N zero points");
}

// The multiplied operands: raw values, or values minus their segment's zero point, in T.
template <class T>
struct Operands {
  std::vector<T> a, bt;
};

std::int64_t a_operand(const IntGemmProblem& p, std::int64_t r, std::int64_t k, std::int64_t s, bool subtract) {
  const std::int64_t v = p.a[static_cast<std::size_t>(r * p.depth + k)];
  return subtract ? v - p.a_zero_points[static_cast<std::size_t>(r * p.segments() + s)] : v;
}

std::int64_t b_operand(const IntGemmProblem& p, std::int64_t n, std::int64_t k, std::int64_t s, bool subtract) {
  const std::int64_t v = p.bt[static_cast<std::size_t>(n * p.depth + k)];
  return subtract ? v - p.b_zero_points[static_cast<std::size_t>(s * p.cols + n)] : v;
}

// Visits every multiplied operand of A (by row) or B (by column) with its segment.
template <class F>
void for_each_operand(const IntGemmProblem& p, bool of_a, bool subtract, F&& f) {
  const std::int64_t lines = of_a ? p.rows : p.cols;
  for (std::int64_t i = 0; i < lines; ++i)
    for (std::int64_t s = 0; s < p.segments(); ++s) {
      const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], k1 = k0 + p.segment_length(s);
      for (std::int64_t k = k0; k < k1; ++k)
        f(i, k, s, of_a ? a_operand(p, i, k, s, subtract) : b_operand(p, i, k, s, subtract));
    }
}

// An operand's raw values' range and the multiplied operands' (raw minus the line's zero point in
// each segment when `subtract`, else the raw range again), in one pass: per line and segment the
// raw min and max (int_gemm::minmax, vectorized); lines split across the threads, whose ranges are
// merged (min and max do not depend on the order).
struct OperandRanges {
  IntRange raw, multiplied;
};

// min and max of n values of S (n >= 1), written so the compiler vectorizes it.
template <class S>
void byte_minmax(const S* x, std::int64_t n, std::int32_t& lo, std::int32_t& hi) {
  S l = std::numeric_limits<S>::max(), h = std::numeric_limits<S>::min();  // in S: 16 lanes a vector
  for (std::int64_t i = 0; i < n; ++i) {
    const S v = x[i];
    l = v < l ? v : l;
    h = v > h ? v : h;
  }
  lo = l;
  hi = h;
}

// operand_ranges for the lines [i0, i1) of an operand given as bytes (IntGemmProblem::a_bytes,
// b_bytes): `f(line, segment, lo, hi)` for each line and nonempty segment. B as [K, N] keeps a
// running min and max per column along the rows of K (contiguous, vectorized).
template <class S, class F>
void byte_line_ranges(const IntGemmProblem& p, bool of_a, std::int64_t i0, std::int64_t i1, F&& f) {
  const std::int64_t lines = of_a ? p.rows : p.cols, K = p.depth;
  const S* x = static_cast<const S*>(of_a ? p.a_bytes.data : p.b_bytes.data);
  for (std::int64_t s = 0; s < p.segments(); ++s) {
    const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], L = p.segment_length(s);
    if (L == 0) continue;
    if (of_a || !p.b_k_by_n) {
      for (std::int64_t i = i0; i < i1; ++i) {
        std::int32_t lo, hi;
        byte_minmax(x + i * K + k0, L, lo, hi);
        f(i, s, lo, hi);
      }
      continue;
    }
    std::vector<S> lo(static_cast<std::size_t>(i1 - i0), std::numeric_limits<S>::max()),
        hi(static_cast<std::size_t>(i1 - i0), std::numeric_limits<S>::min());
    S* __restrict l = lo.data();
    S* __restrict h = hi.data();
    for (std::int64_t k = k0; k < k0 + L; ++k) {
      const S* __restrict row = x + k * lines + i0;
      for (std::int64_t n = 0; n < i1 - i0; ++n) {
        const S v = row[n];
        l[n] = v < l[n] ? v : l[n];
        h[n] = v > h[n] ? v : h[n];
      }
    }
    for (std::int64_t n = i0; n < i1; ++n)
      f(n, s, lo[static_cast<std::size_t>(n - i0)], hi[static_cast<std::size_t>(n - i0)]);
  }
}

OperandRanges operand_ranges(const IntGemmProblem& p, bool of_a, bool subtract) {
  const std::int64_t lines = of_a ? p.rows : p.cols, K = p.depth, S = p.segments();
  const bool bytes = p.bytes_only();  // then one pass over the bytes themselves, 4 times less than int32
  const std::int32_t* values = bytes ? nullptr : of_a ? p.a.data() : p.bt.data();
  constexpr IntRange kNone{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  OperandRanges r{kNone, kNone};
  std::mutex merge;
  parallel_ranges(
      lines, std::max<std::int64_t>(1, (std::int64_t{1} << (bytes ? 18 : 20)) / std::max<std::int64_t>(1, K)),
      [&](std::int64_t i0, std::int64_t i1) {
        OperandRanges part{kNone, kNone};
        const auto add = [&](std::int64_t i, std::int64_t s, std::int32_t lo, std::int32_t hi) {
          const std::int64_t z = !subtract ? 0
                                 : of_a    ? p.a_zero_points[static_cast<std::size_t>(i * S + s)]
                                           : p.b_zero_points[static_cast<std::size_t>(s * p.cols + i)];
          part.raw.lo = std::min<std::int64_t>(part.raw.lo, lo);
          part.raw.hi = std::max<std::int64_t>(part.raw.hi, hi);
          part.multiplied.lo = std::min(part.multiplied.lo, lo - z);
          part.multiplied.hi = std::max(part.multiplied.hi, hi - z);
        };
        if (bytes && (of_a ? p.a_bytes : p.b_bytes).is_signed) {
          byte_line_ranges<std::int8_t>(p, of_a, i0, i1, add);
        } else if (bytes) {
          byte_line_ranges<std::uint8_t>(p, of_a, i0, i1, add);
        } else {
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t s = 0; s < S; ++s) {
              const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], L = p.segment_length(s);
              if (L == 0) continue;
              std::int32_t lo, hi;
              int_gemm::minmax(values + i * K + k0, L, lo, hi);
              add(i, s, lo, hi);
            }
        }
        const std::lock_guard<std::mutex> lock(merge);
        for (auto [into, from] : {std::pair{&r.raw, &part.raw}, std::pair{&r.multiplied, &part.multiplied}}) {
          into->lo = std::min(into->lo, from->lo);
          into->hi = std::max(into->hi, from->hi);
        }
      });
  for (IntRange* x : {&r.raw, &r.multiplied})
    if (x->lo > x->hi) *x = {0, 0};  // no operands (K = 0 or no rows)
  return r;
}

template <class T>
Operands<T> narrow_operands(const IntGemmProblem& p, bool subtract) {
  Operands<T> o;
  o.a.resize(p.a.size());
  o.bt.resize(p.bt.size());
  for_each_operand(p, true, subtract, [&](std::int64_t r, std::int64_t k, std::int64_t, std::int64_t v) {
    o.a[static_cast<std::size_t>(r * p.depth + k)] = static_cast<T>(v);
  });
  for_each_operand(p, false, subtract, [&](std::int64_t n, std::int64_t k, std::int64_t, std::int64_t v) {
    o.bt[static_cast<std::size_t>(n * p.depth + k)] = static_cast<T>(v);
  });
  return o;
}

// The product type that holds a*b exactly for operands of type T.
template <class T>
using ProductOf = std::conditional_t<sizeof(T) <= 2, std::int32_t, std::int64_t>;

// Four dot products sharing one row of A: the vectorizer turns each into a widening multiply-add.
template <class T, class Acc>
void dot_1x4(const T* __restrict a, const T* __restrict b0, const T* __restrict b1, const T* __restrict b2,
             const T* __restrict b3, std::int64_t len, Acc out[4]) {
  using P = ProductOf<T>;
  Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (std::int64_t k = 0; k < len; ++k) {
    const P x = a[k];
    s0 += static_cast<Acc>(x * static_cast<P>(b0[k]));
    s1 += static_cast<Acc>(x * static_cast<P>(b1[k]));
    s2 += static_cast<Acc>(x * static_cast<P>(b2[k]));
    s3 += static_cast<Acc>(x * static_cast<P>(b3[k]));
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

template <class T, class Acc>
Acc dot_1x1(const T* __restrict a, const T* __restrict b, std::int64_t len) {
  using P = ProductOf<T>;
  Acc s = 0;
  for (std::int64_t k = 0; k < len; ++k) s += static_cast<Acc>(static_cast<P>(a[k]) * static_cast<P>(b[k]));
  return s;
}

// Exact sums of every (row, column, segment) into out[(r*N + n)*S + s]. The caller has proven that
// Acc holds every partial sum. Rows are split across the oracle's threads (each writes its own
// rows); within a thread columns are tiled so one tile of B^T (~128 KiB) stays in L2 while its rows
// of A stream past it.
template <class T, class Acc>
void exact_sums_rows(const IntGemmProblem& p, const Operands<T>& o, std::int64_t r_begin, std::int64_t r_end,
                     AccumulatorValues& out);

template <class T, class Acc>
void exact_sums(const IntGemmProblem& p, const Operands<T>& o, AccumulatorValues& out) {
  const std::int64_t R = p.rows, N = p.cols, K = p.depth;
  const std::int64_t row_work = std::max<std::int64_t>(1, N * K);
  parallel_ranges(R, std::max<std::int64_t>(1, (std::int64_t{1} << 21) / row_work),
                  [&](std::int64_t r0, std::int64_t r1) { exact_sums_rows<T, Acc>(p, o, r0, r1, out); });
}

template <class T, class Acc>
void exact_sums_rows(const IntGemmProblem& p, const Operands<T>& o, std::int64_t r_begin, std::int64_t r_end,
                     AccumulatorValues& out) {
  const std::int64_t N = p.cols, K = p.depth, S = p.segments();
  const std::int64_t tile = std::max<std::int64_t>(
      4, (std::int64_t{128} * 1024) / std::max<std::int64_t>(1, K * static_cast<std::int64_t>(sizeof(T))) / 4 * 4);
  for (std::int64_t n0 = 0; n0 < N; n0 += tile) {
    const std::int64_t n1 = std::min(N, n0 + tile);
    for (std::int64_t r = r_begin; r < r_end; ++r) {
      const T* ar = o.a.data() + r * K;
      std::int64_t n = n0;
      for (; n + 4 <= n1; n += 4) {
        const T* b = o.bt.data() + n * K;
        for (std::int64_t s = 0; s < S; ++s) {
          const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], len = p.segment_length(s);
          Acc d[4];
          dot_1x4<T, Acc>(ar + k0, b + k0, b + K + k0, b + 2 * K + k0, b + 3 * K + k0, len, d);
          for (int j = 0; j < 4; ++j) out[static_cast<std::size_t>((r * N + n + j) * S + s)] = d[j];
        }
      }
      for (; n < n1; ++n) {
        const T* b = o.bt.data() + n * K;
        for (std::int64_t s = 0; s < S; ++s) {
          const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], len = p.segment_length(s);
          out[static_cast<std::size_t>((r * N + n) * S + s)] = dot_1x1<T, Acc>(ar + k0, b + k0, len);
        }
      }
    }
  }
}

template <class T>
void exact_sums_in(const IntGemmProblem& p, bool subtract, bool int32_loop, AccumulatorValues& out) {
  const Operands<T> o = narrow_operands<T>(p, subtract);
  if (int32_loop)
    exact_sums<T, std::int32_t>(p, o, out);
  else
    exact_sums<T, std::int64_t>(p, o, out);
}

bool fits_int16(IntRange r) { return r.lo >= -32768 && r.hi <= 32767; }

// Per (line, segment) Σ|x| and max|x| of one operand: the element-wise bound on partial sums.
struct AbsStats {
  std::vector<std::int64_t> sum, max;  // [line][segment]
};

AbsStats abs_stats(const IntGemmProblem& p, bool of_a, bool subtract) {
  const std::int64_t lines = of_a ? p.rows : p.cols, S = p.segments();
  AbsStats st{std::vector<std::int64_t>(static_cast<std::size_t>(lines * S), 0),
              std::vector<std::int64_t>(static_cast<std::size_t>(lines * S), 0)};
  for_each_operand(p, of_a, subtract, [&](std::int64_t i, std::int64_t, std::int64_t s, std::int64_t v) {
    const auto j = static_cast<std::size_t>(i * S + s);
    const std::int64_t m = v < 0 ? -v : v;
    st.sum[j] += m;
    st.max[j] = std::max(st.max[j], m);
  });
  return st;
}

constexpr std::int64_t kAccInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kAccInt32Max = std::numeric_limits<std::int32_t>::max();

BigInt int128_to_big(__int128 v) {
  if (v >= std::numeric_limits<std::int64_t>::min() && v <= std::numeric_limits<std::int64_t>::max())
    return BigInt(static_cast<std::int64_t>(v));
  const bool negative = v < 0;
  const auto m = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  BigInt r = (BigInt(static_cast<std::uint64_t>(m >> 64)) << 64) + BigInt(static_cast<std::uint64_t>(m));
  return negative ? BigInt(-r) : r;
}

template <class S>
void widen_bytes(const void* bytes, std::vector<std::int32_t>& v, std::size_t n) {
  const S* x = static_cast<const S*>(bytes);
  v.resize(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = x[i];
}

// The problem with int32 operands made from its bytes (B transposed to [N, K]), which a and bt hold.
IntGemmProblem with_int32_operands(const IntGemmProblem& p, std::vector<std::int32_t>& a,
                                   std::vector<std::int32_t>& bt) {
  const auto R = static_cast<std::size_t>(p.rows), N = static_cast<std::size_t>(p.cols),
             K = static_cast<std::size_t>(p.depth);
  p.a_bytes.is_signed ? widen_bytes<std::int8_t>(p.a_bytes.data, a, R * K)
                      : widen_bytes<std::uint8_t>(p.a_bytes.data, a, R * K);
  std::vector<std::int32_t> b;
  p.b_bytes.is_signed ? widen_bytes<std::int8_t>(p.b_bytes.data, b, N * K)
                      : widen_bytes<std::uint8_t>(p.b_bytes.data, b, N * K);
  if (p.b_k_by_n) {
    bt.resize(N * K);
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t n = 0; n < N; ++n) bt[n * K + k] = b[k * N + n];
  } else {
    bt = std::move(b);
  }
  IntGemmProblem q = p;
  q.a = a;
  q.bt = bt;
  q.a_bytes = {};
  q.b_bytes = {};
  return q;
}

// -zb·Σa - za·Σb + L·za·zb for one (row, column, segment): what `compensate` adds to the raw sum.
std::int64_t zero_point_correction(const IntGemmProblem& p, const std::vector<std::int64_t>& a_sums,
                                   const std::vector<std::int64_t>& b_sums, std::int64_t r, std::int64_t n,
                                   std::int64_t s) {
  const std::int64_t S = p.segments();
  const __int128 za = p.a_zero_points[static_cast<std::size_t>(r * S + s)];
  const __int128 zb = p.b_zero_points[static_cast<std::size_t>(s * p.cols + n)];
  const __int128 c = -zb * a_sums[static_cast<std::size_t>(r * S + s)] -
                     za * b_sums[static_cast<std::size_t>(n * S + s)] +
                     static_cast<__int128>(p.segment_length(s)) * za * zb;
  return static_cast<std::int64_t>(c);  // |c| <= 3 * K * 2^32 for 16-bit operands
}

std::vector<std::int64_t> raw_sums(const IntGemmProblem& p, bool of_a) {
  std::vector<std::int64_t> sums(static_cast<std::size_t>((of_a ? p.rows : p.cols) * p.segments()), 0);
  for_each_operand(p, of_a, false, [&](std::int64_t i, std::int64_t, std::int64_t s, std::int64_t v) {
    sums[static_cast<std::size_t>(i * p.segments() + s)] += v;
  });
  return sums;
}

}  // namespace

std::int64_t add_in_accumulator(Accumulation acc, std::int64_t value, std::int64_t term) {
  switch (acc) {
    case Accumulation::exact: {
      const __int128 v = static_cast<__int128>(value) + term;
      if (v < std::numeric_limits<std::int64_t>::min() || v > std::numeric_limits<std::int64_t>::max())
        throw InputError("add_in_accumulator: the exact sum leaves int64");
      return static_cast<std::int64_t>(v);
    }
    case Accumulation::int64:
      return wrapping_add_int64(value, term);
    case Accumulation::int32_wrap:
    case Accumulation::int16_pair_saturate: {  // vpaddd wraps: the low 32 bits, two's complement
      const __int128 v = static_cast<__int128>(value) + term;
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
    }
    case Accumulation::int32_saturate: {
      const __int128 v = static_cast<__int128>(value) + term;
      return static_cast<std::int64_t>(std::clamp<__int128>(v, kInt32Lo, kInt32Hi));
    }
  }
  return value;
}

namespace {

void require_pair_operands(const IntGemmProblem& p, Accumulation acc, bool subtract) {
  if (acc == Accumulation::int16_pair_saturate && subtract && p.any_zero_point())
    throw InputError(
        "accumulate_gemm: int16_pair_saturate (vpmaddubsw) multiplies the raw u8 x s8 bytes; with "
        "nonzero zero points use ZeroPointCorrection::compensate");
}

// accumulation_bound over the multiplied operands' actual ranges and the longest segment, for the
// policy's accumulator and for the two loops. Throws for int16 pairs outside u8 x s8.
AccumulationProof prove(const IntGemmProblem& p, Accumulation acc, const OperandRanges& a, const OperandRanges& b) {
  AccumulationProof proof;
  proof.a_range = a.multiplied;
  proof.b_range = b.multiplied;
  for (std::int64_t s = 0; s < p.segments(); ++s)
    proof.longest_segment = std::max(proof.longest_segment, p.segment_length(s));
  const std::int64_t L = proof.longest_segment;
  proof.policy_exact = accumulation_bound(acc, L, proof.a_range, proof.b_range).exact;
  proof.int32_loop = accumulation_bound(Accumulation::int32_wrap, L, proof.a_range, proof.b_range).exact;
  proof.int64_loop =
      !proof.int32_loop && accumulation_bound(Accumulation::int64, L, proof.a_range, proof.b_range).exact;
  return proof;
}

// Whether the loop's exact sum is provably what the policy's accumulator holds for one element.
class LoopCoverage {
 public:
  LoopCoverage(const IntGemmProblem& p, Accumulation acc, bool subtract, const AccumulationProof& proof)
      : acc_(acc), S_(p.segments()), loop_(proof.int32_loop || proof.int64_loop), all_(proof.policy_exact) {
    if (loop_ && !all_ && acc == Accumulation::int32_saturate) {
      a_abs_ = abs_stats(p, true, subtract);
      b_abs_ = abs_stats(p, false, subtract);
    }
  }
  bool loop() const { return loop_; }
  bool covers(std::int64_t r, std::int64_t n, std::int64_t s, std::int64_t sum) const {
    if (!loop_) return false;
    if (all_) return true;
    switch (acc_) {
      case Accumulation::exact:
      case Accumulation::int64:
        return true;  // the int64 loop is exact, and so is this accumulator
      case Accumulation::int32_wrap:
        return fits_int32(sum);             // a wrap would move the result by 2^32
      case Accumulation::int32_saturate: {  // |partial sums| <= Σ|a_k||b_k| <= min(Σ|a|·max|b|, max|a|·Σ|b|)
        const auto i = static_cast<std::size_t>(r * S_ + s), j = static_cast<std::size_t>(n * S_ + s);
        const __int128 bound = std::min(static_cast<__int128>(a_abs_.sum[i]) * b_abs_.max[j],
                                        static_cast<__int128>(a_abs_.max[i]) * b_abs_.sum[j]);
        return bound <= kInt32Hi;
      }
      case Accumulation::int16_pair_saturate:
        return false;
    }
    return false;
  }

 private:
  Accumulation acc_;
  std::int64_t S_;
  bool loop_, all_;
  AbsStats a_abs_, b_abs_;
};

// One (row, column, segment): the accumulator's value and, where different, the exact sum.
struct ElementSum {
  std::int64_t value = 0;
  std::optional<BigInt> exact;  // set only when it differs from value
};

// One piece of an element's dot product, read in place (the operands minus za and zb): its exact sum
// and what `acc` holds after it, in machine integers. The operands as int32 and their products in
// int64, as accumulate_dot takes them; fewer than 2^64 products fit __int128. The pair loop needs
// the u8 x s8 bytes prove() has checked.
struct PieceSum {
  __int128 exact = 0;
  __int128 value = 0;
};

PieceSum piece_sum(const std::int32_t* a, const std::int32_t* b, std::int64_t len, std::int64_t za, std::int64_t zb,
                   Accumulation acc, bool int64_exact) {
  PieceSum r;
  if (int64_exact) {  // the caller's bound: every partial sum fits int64, so the loop vectorizes
    std::int64_t sum = 0;
    for (std::int64_t k = 0; k < len; ++k) sum += std::int64_t{static_cast<std::int32_t>(a[k] - za)} * (b[k] - zb);
    r.exact = sum;
  } else {
    for (std::int64_t k = 0; k < len; ++k)
      r.exact += std::int64_t{static_cast<std::int32_t>(a[k] - za)} * static_cast<std::int32_t>(b[k] - zb);
  }
  switch (acc) {
    case Accumulation::exact:
      r.value = r.exact;
      break;
    case Accumulation::int32_wrap:  // modular: wrapping each add equals wrapping the exact sum
      r.value = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.exact));
      break;
    case Accumulation::int64:
      r.value = static_cast<std::int64_t>(static_cast<std::uint64_t>(r.exact));
      break;
    case Accumulation::int32_saturate: {
      std::int64_t v = 0;
      for (std::int64_t k = 0; k < len; ++k)
        v = std::clamp(v + std::int64_t{static_cast<std::int32_t>(a[k] - za)} * static_cast<std::int32_t>(b[k] - zb),
                       kAccInt32Min, kAccInt32Max);
      r.value = v;
      break;
    }
    case Accumulation::int16_pair_saturate: {  // raw bytes (require_pair_operands): za = zb = 0
      std::int64_t lanes = 0;                  // at most 2^31 lanes of at most 2^15 each
      const std::int64_t even = len & ~std::int64_t{1};
      for (std::int64_t k = 0; k < even; k += 2) lanes += std::clamp(a[k] * b[k] + a[k + 1] * b[k + 1], -32768, 32767);
      if (even < len) lanes += std::clamp(a[even] * b[even], -32768, 32767);   // zero padding
      r.value = static_cast<std::int32_t>(static_cast<std::uint32_t>(lanes));  // vpaddd wraps
      break;
    }
  }
  return r;
}

ElementSum element_sum(const IntGemmProblem& p, Accumulation acc, bool subtract, const LoopCoverage& coverage,
                       const std::vector<std::int64_t>& block_starts, std::int64_t r, std::int64_t n, std::int64_t s,
                       std::int64_t loop_sum, AccumulationProof& proof) {
  if (coverage.covers(r, n, s, loop_sum)) return {loop_sum, std::nullopt};
  ++proof.arbitrary_precision_dots;
  const std::int64_t S = p.segments(), k0 = p.segment_starts[static_cast<std::size_t>(s)], len = p.segment_length(s);
  const std::int32_t* a = p.a.data() + r * p.depth + k0;
  const std::int32_t* b = p.bt.data() + n * p.depth + k0;
  const std::int64_t za = subtract ? p.a_zero_points[static_cast<std::size_t>(r * S + s)] : 0;
  const std::int64_t zb = subtract ? p.b_zero_points[static_cast<std::size_t>(s * p.cols + n)] : 0;
  // Every product's magnitude times the length below 2^62: the exact sum fits int64 throughout.
  const auto mag = [](IntRange x) { return std::max(x.lo < 0 ? -x.lo : x.lo, x.hi < 0 ? -x.hi : x.hi); };
  const __int128 bound =
      static_cast<__int128>(mag(proof.a_range)) * mag(proof.b_range) * std::max<std::int64_t>(1, len);
  const bool int64_exact = bound < (static_cast<__int128>(1) << 62);
  // Each pair block is its own vpmaddubsw run; the blocks' int32 sums add with vpaddd (wrapping).
  std::int64_t value = 0;
  __int128 exact = 0;
  std::int64_t b0 = 0;
  bool first = true;
  const auto piece = [&](std::int64_t b1) {
    const PieceSum d = piece_sum(a + b0, b + b0, b1 - b0, za, zb, acc, int64_exact);
    if (d.value < std::numeric_limits<std::int64_t>::min() || d.value > std::numeric_limits<std::int64_t>::max())
      throw InputError("accumulate_gemm: accumulator " + int128_to_big(d.value).str() + " does not fit int64");
    const auto v = static_cast<std::int64_t>(d.value);
    value = first ? v : add_in_accumulator(acc, value, v);
    exact += d.exact;
    first = false;
    b0 = b1;
  };
  for (const std::int64_t start : block_starts)
    if (start > k0 && start < k0 + len) piece(start - k0);
  piece(len);
  ElementSum e{value, std::nullopt};
  if (exact != value) e.exact = int128_to_big(exact);  // a piece saturated or their sum wrapped
  return e;
}

// compensate: the correction added the accumulator's way; the exact sum gets it exactly.
void apply_correction(ElementSum& e, Accumulation acc, std::int64_t c) {
  const std::int64_t raw = e.value;
  e.value = add_in_accumulator(acc, raw, c);
  if (!e.exact && static_cast<__int128>(raw) + c == e.value) return;  // nothing overflowed
  BigInt exact = e.exact ? *e.exact + c : BigInt(raw) + c;
  if (exact != e.value)
    e.exact = std::move(exact);
  else
    e.exact.reset();
}

}  // namespace

IntGemmAccumulators accumulate_gemm(const IntGemmProblem& p, Accumulation acc, ZeroPointCorrection zero_points,
                                    PairRule pairs, const SumRowsReady* ready) {
  check_problem(p);
  const bool subtract = zero_points == ZeroPointCorrection::subtract_first;
  require_pair_operands(p, acc, subtract);
  const std::int64_t R = p.rows, N = p.cols, S = p.segments();
  IntGemmAccumulators out;
  out.rows = R;
  out.cols = N;
  out.segments = S;
  const OperandRanges a_ranges = operand_ranges(p, true, subtract), b_ranges = operand_ranges(p, false, subtract);
  out.proof = prove(p, acc, a_ranges, b_ranges);
  if (p.bytes_only() && !(out.proof.policy_exact && subtract && (out.proof.int32_loop || out.proof.int64_loop))) {
    // Some element may need a path that reads int32 operands: make them from the bytes.
    std::vector<std::int32_t> a32, bt32;
    return accumulate_gemm(with_int32_operands(p, a32, bt32), acc, zero_points, pairs, ready);
  }
  const LoopCoverage coverage(p, acc, subtract, out.proof);
  // Each loop below writes every sum, so only the path without one needs zeros first.
  if (coverage.loop())
    out.value.resize(static_cast<std::size_t>(R * N * S));
  else
    out.value.assign(static_cast<std::size_t>(R * N * S), 0);

  // 1. The exact sums of the multiplied operands (raw or zero-point-free), in the cheapest proven loop.
  if (coverage.loop()) {
    // Byte operands (u8, s8, u4, s4, raw or minus zero points) take the packed kernel; wider ones
    // the plain loops below.
    const int_gemm::ByteOffsets bytes = int_gemm::byte_offsets(a_ranges.raw, b_ranges.raw);
    if (bytes.ok) {
      // The kernel's rows are final when nothing follows it (step 2 below returns at once).
      const bool final_rows = ready && out.proof.policy_exact && subtract;
      const int_gemm::RowsDone done = [&](std::int64_t r0, std::int64_t r1) { (*ready)(out.value.data(), r0, r1); };
      int_gemm::exact_sums(p, subtract, bytes, int_gemm::chosen(), out.value, final_rows ? &done : nullptr);
      out.rows_reported = final_rows;
    } else {
      const bool narrow = fits_int16(out.proof.a_range) && fits_int16(out.proof.b_range);
      if (narrow)
        exact_sums_in<std::int16_t>(p, subtract, out.proof.int32_loop, out.value);
      else
        exact_sums_in<std::int32_t>(p, subtract, out.proof.int32_loop, out.value);
    }
  }
  if (out.proof.policy_exact && subtract) return out;  // every sum is the accumulator's value

  // 2. Each element: the loop's sum where a proof covers it, else accumulate_dot; then compensation.
  const std::vector<std::int64_t> block_starts =
      acc == Accumulation::int16_pair_saturate ? pair_block_starts(pairs, p.depth) : std::vector<std::int64_t>{0};
  std::vector<std::int64_t> a_sums, b_sums;
  if (!subtract) {
    a_sums = raw_sums(p, true);
    b_sums = raw_sums(p, false);
  }
  // Rows split across the threads, each with its own count of dots and overflows, merged after.
  std::mutex merge;
  parallel_ranges(R, std::max<std::int64_t>(1, (std::int64_t{1} << 18) / std::max<std::int64_t>(1, N * p.depth)),
                  [&](std::int64_t r0, std::int64_t r1) {
                    AccumulationProof proof = out.proof;
                    proof.arbitrary_precision_dots = 0;
                    std::unordered_map<std::int64_t, BigInt> exact;
                    for (std::int64_t r = r0; r < r1; ++r)
                      for (std::int64_t n = 0; n < N; ++n)
                        for (std::int64_t s = 0; s < S; ++s) {
                          const std::int64_t key = (r * N + n) * S + s;
                          std::int64_t& slot = out.value[static_cast<std::size_t>(key)];
                          ElementSum e = element_sum(p, acc, subtract, coverage, block_starts, r, n, s, slot, proof);
                          if (!subtract) apply_correction(e, acc, zero_point_correction(p, a_sums, b_sums, r, n, s));
                          slot = e.value;
                          if (e.exact) exact.emplace(key, std::move(*e.exact));
                        }
                    const std::lock_guard<std::mutex> hold(merge);
                    out.proof.arbitrary_precision_dots += proof.arbitrary_precision_dots;
                    out.exact_where_different.merge(exact);
                  });
  return out;
}

namespace {

// The exact sum of one (row, column, segment), raw or zero-point-free, in int64: the caller has
// proven that int64 holds every partial sum (AccumulationProof::int32_loop or int64_loop).
std::int64_t loop_sum(const IntGemmProblem& p, std::int64_t r, std::int64_t n, std::int64_t s, bool subtract) {
  const std::int64_t S = p.segments(), k0 = p.segment_starts[static_cast<std::size_t>(s)], L = p.segment_length(s);
  const std::int32_t* __restrict a = p.a.data() + r * p.depth + k0;
  const std::int32_t* __restrict b = p.bt.data() + n * p.depth + k0;
  const std::int64_t za = subtract ? p.a_zero_points[static_cast<std::size_t>(r * S + s)] : 0;
  const std::int64_t zb = subtract ? p.b_zero_points[static_cast<std::size_t>(s * p.cols + n)] : 0;
  std::int64_t sum = 0;
  for (std::int64_t k = 0; k < L; ++k) sum += (a[k] - za) * (b[k] - zb);
  return sum;
}

}  // namespace

namespace {

// The same problem restricted to some rows of A (sorted, distinct): row j of the result is row
// rows[j]. Every accumulator depends only on its own row and column, so those rows' accumulators are
// the whole problem's. `a` receives the rows' values, which the result views.
IntGemmProblem select_rows(const IntGemmProblem& p, const std::vector<std::int64_t>& rows,
                           std::vector<std::int32_t>& a) {
  IntGemmProblem q;
  q.rows = static_cast<std::int64_t>(rows.size());
  q.cols = p.cols;
  q.depth = p.depth;
  q.bt = p.bt;
  q.segment_starts = p.segment_starts;
  q.b_zero_points = p.b_zero_points;
  const auto K = static_cast<std::size_t>(p.depth), S = static_cast<std::size_t>(p.segments());
  a.resize(rows.size() * K);
  q.a_zero_points.resize(rows.size() * S);
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const auto r = static_cast<std::size_t>(rows[j]);
    std::copy_n(p.a.begin() + static_cast<std::ptrdiff_t>(r * K), K, a.begin() + static_cast<std::ptrdiff_t>(j * K));
    std::copy_n(p.a_zero_points.begin() + static_cast<std::ptrdiff_t>(r * S), S,
                q.a_zero_points.begin() + static_cast<std::ptrdiff_t>(j * S));
  }
  q.a = a;
  return q;
}

// The elements by their rows: accumulate_gemm on the rows that hold them, then gathered.
IntGemmAccumulators elements_by_rows(const IntGemmProblem& p, const std::vector<std::int64_t>& distinct,
                                     std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                                     Accumulation acc, ZeroPointCorrection zero_points, PairRule pairs) {
  std::vector<std::int32_t> a;
  const IntGemmAccumulators whole = accumulate_gemm(select_rows(p, distinct, a), acc, zero_points, pairs);
  const std::int64_t S = p.segments();
  IntGemmAccumulators out;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.cols = 1;
  out.segments = S;
  out.proof = whole.proof;
  out.value.resize(rows.size() * static_cast<std::size_t>(S));
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const auto r =
        static_cast<std::int64_t>(std::lower_bound(distinct.begin(), distinct.end(), rows[j]) - distinct.begin());
    for (std::int64_t s = 0; s < S; ++s) {
      const auto k = static_cast<std::int64_t>(j) * S + s;
      out.value[static_cast<std::size_t>(k)] = whole.at(r, cols[j], s);
      if (const auto it = whole.exact_where_different.find((r * whole.cols + cols[j]) * S + s);
          it != whole.exact_where_different.end())
        out.exact_where_different.emplace(k, it->second);
    }
  }
  return out;
}

}  // namespace

IntGemmAccumulators accumulate_elements(const IntGemmProblem& p, std::span<const std::int64_t> rows,
                                        std::span<const std::int64_t> cols, Accumulation acc,
                                        ZeroPointCorrection zero_points, PairRule pairs, OperandFacts* facts) {
  check_problem(p);
  if (p.bytes_only()) throw InputError("accumulate_elements: needs the int32 operands");
  if (rows.size() != cols.size()) throw InputError("accumulate_elements: one row and one column per element");
  for (std::size_t j = 0; j < rows.size(); ++j)
    if (rows[j] < 0 || rows[j] >= p.rows || cols[j] < 0 || cols[j] >= p.cols)
      throw InputError("accumulate_elements: element (" + std::to_string(rows[j]) + ", " + std::to_string(cols[j]) +
                       ") is outside the problem");
  // By rows where the elements cover a sixteenth of their rows or more and the accumulator does not
  // saturate (a saturating one decides each element by itself either way).
  std::vector<std::int64_t> distinct(rows.begin(), rows.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const bool saturating = acc == Accumulation::int32_saturate || acc == Accumulation::int16_pair_saturate;
  if (!saturating && static_cast<std::int64_t>(rows.size()) * 16 >= static_cast<std::int64_t>(distinct.size()) * p.cols)
    return elements_by_rows(p, distinct, rows, cols, acc, zero_points, pairs);
  const bool subtract = zero_points == ZeroPointCorrection::subtract_first;
  require_pair_operands(p, acc, subtract);
  const auto E = static_cast<std::int64_t>(rows.size());
  const std::int64_t S = p.segments();
  IntGemmAccumulators out;
  out.rows = E;
  out.cols = 1;
  out.segments = S;
  // The proof, the coverage and the compensation's sums over the whole operands, as accumulate_gemm
  // takes them (linear in the operands, not in the products), so each element is decided exactly as
  // there.
  // (`facts` keeps them between calls.)
  std::optional<OperandFacts::Ranges> own;
  std::optional<OperandFacts::Ranges>& known = facts ? facts->ranges[subtract ? 1 : 0] : own;
  if (!known) {
    const OperandRanges a = operand_ranges(p, true, subtract), b = operand_ranges(p, false, subtract);
    known = OperandFacts::Ranges{a.raw, a.multiplied, b.raw, b.multiplied};
  }
  out.proof = prove(p, acc, {known->a_raw, known->a_multiplied}, {known->b_raw, known->b_multiplied});
  const LoopCoverage coverage(p, acc, subtract, out.proof);
  const std::vector<std::int64_t> block_starts =
      acc == Accumulation::int16_pair_saturate ? pair_block_starts(pairs, p.depth) : std::vector<std::int64_t>{0};
  std::vector<std::int64_t> own_a_sums, own_b_sums;
  if (!subtract && facts && !facts->raw_sums) facts->raw_sums.emplace(raw_sums(p, true), raw_sums(p, false));
  if (!subtract && !facts) {
    own_a_sums = raw_sums(p, true);
    own_b_sums = raw_sums(p, false);
  }
  const std::vector<std::int64_t>& a_sums = facts && facts->raw_sums ? facts->raw_sums->first : own_a_sums;
  const std::vector<std::int64_t>& b_sums = facts && facts->raw_sums ? facts->raw_sums->second : own_b_sums;
  out.value.resize(static_cast<std::size_t>(E * S));
  std::mutex merge;
  parallel_ranges(E, std::max<std::int64_t>(1, (std::int64_t{1} << 18) / std::max<std::int64_t>(1, p.depth)),
                  [&](std::int64_t j0, std::int64_t j1) {
                    AccumulationProof proof = out.proof;  // this range's count of arbitrary-precision dots
                    proof.arbitrary_precision_dots = 0;
                    std::unordered_map<std::int64_t, BigInt> exact;
                    for (std::int64_t j = j0; j < j1; ++j) {
                      const std::int64_t r = rows[static_cast<std::size_t>(j)], n = cols[static_cast<std::size_t>(j)];
                      for (std::int64_t s = 0; s < S; ++s) {
                        const std::int64_t sum = coverage.loop() ? loop_sum(p, r, n, s, subtract) : 0;
                        ElementSum e = element_sum(p, acc, subtract, coverage, block_starts, r, n, s, sum, proof);
                        if (!subtract) apply_correction(e, acc, zero_point_correction(p, a_sums, b_sums, r, n, s));
                        out.value[static_cast<std::size_t>(j * S + s)] = e.value;
                        if (e.exact) exact.emplace(j * S + s, std::move(*e.exact));
                      }
                    }
                    const std::lock_guard<std::mutex> hold(merge);
                    out.proof.arbitrary_precision_dots += proof.arbitrary_precision_dots;
                    out.exact_where_different.merge(exact);
                  });
  return out;
}

// ---- One dot product under an accumulator -----------------------------------------------------

namespace {

void require_byte_ranges(std::span<const std::int32_t> a, std::span<const std::int32_t> b) {
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] < 0 || a[k] > 255)
      throw InputError("accumulate_dot: int16_pair_saturate (vpmaddubsw) takes unsigned bytes in a[], got a[" +
                       std::to_string(k) + "] = " + std::to_string(a[k]));
    if (b[k] < -128 || b[k] > 127)
      throw InputError("accumulate_dot: int16_pair_saturate (vpmaddubsw) takes signed bytes in b[], got b[" +
                       std::to_string(k) + "] = " + std::to_string(b[k]));
  }
}

// The low 32 bits as a two's-complement int32 (the conversion to unsigned is modular).
BigInt wrap_to_int32(__int128 v) { return BigInt(static_cast<std::int32_t>(static_cast<std::uint32_t>(v))); }

// Intel SDM VPMADDUBSW: SaturateToSignedWord(a[2j]*b[2j] + a[2j+1]*b[2j+1]) per int16 lane.
std::int64_t saturate_int16(std::int64_t v) { return std::clamp<std::int64_t>(v, -32768, 32767); }

}  // namespace

DotProduct accumulate_dot(std::span<const std::int32_t> a, std::span<const std::int32_t> b, Accumulation acc) {
  if (a.size() != b.size())
    throw InputError("accumulate_dot: operand lengths differ (" + std::to_string(a.size()) + " and " +
                     std::to_string(b.size()) + ")");
  DotProduct d;
  // Each product of two int32 fits int64 and fewer than 2^64 of them fit __int128: the exact sum in
  // machine integers, converted once.
  __int128 exact = 0;
  for (std::size_t k = 0; k < a.size(); ++k) exact += std::int64_t{a[k]} * b[k];
  d.exact = int128_to_big(exact);
  switch (acc) {
    case Accumulation::exact:
      d.value = d.exact;
      break;
    case Accumulation::int32_wrap:  // modular: wrapping each add equals wrapping the exact sum
      d.value = wrap_to_int32(exact);
      break;
    case Accumulation::int64:  // modular too
      d.value = BigInt(static_cast<std::int64_t>(static_cast<std::uint64_t>(exact)));
      break;
    case Accumulation::int32_saturate: {
      std::int64_t s = 0;
      for (std::size_t k = 0; k < a.size(); ++k)
        s = std::clamp(s + std::int64_t{a[k]} * b[k], kAccInt32Min, kAccInt32Max);
      d.value = s;
      break;
    }
    case Accumulation::int16_pair_saturate: {
      require_byte_ranges(a, b);
      std::int64_t lanes = 0;  // at most 2^31 lanes of at most 2^15 each
      for (std::size_t k = 0; k < a.size(); k += 2) {
        const std::int64_t second = k + 1 < a.size() ? std::int64_t{a[k + 1]} * b[k + 1] : 0;  // zero padding
        lanes += saturate_int16(std::int64_t{a[k]} * b[k] + second);
      }
      d.value = wrap_to_int32(lanes);  // vpaddd wraps
      break;
    }
  }
  return d;
}

AccumulationBound accumulation_bound(Accumulation acc, std::int64_t k, IntRange a, IntRange b) {
  if (k < 0) throw InputError("accumulation_bound: K must be >= 0, got " + std::to_string(k));
  if (a.lo > a.hi || b.lo > b.hi) throw InputError("accumulation_bound: an empty operand range");
  const BigInt corners[] = {BigInt(a.lo) * b.lo, BigInt(a.lo) * b.hi, BigInt(a.hi) * b.lo, BigInt(a.hi) * b.hi};
  const BigInt pmin = *std::min_element(std::begin(corners), std::end(corners));
  const BigInt pmax = *std::max_element(std::begin(corners), std::end(corners));
  AccumulationBound r;
  r.lo = pmin * k;
  r.hi = pmax * k;
  const BigInt partial_lo = r.lo < 0 ? r.lo : BigInt(0);
  const BigInt partial_hi = r.hi > 0 ? r.hi : BigInt(0);
  auto fits = [&](const BigInt& lo, const BigInt& hi) { return partial_lo >= lo && partial_hi <= hi; };
  const BigInt i32_lo(kAccInt32Min), i32_hi(kAccInt32Max);
  switch (acc) {
    case Accumulation::exact:
      r.exact = true;
      break;
    case Accumulation::int32_wrap:
    case Accumulation::int32_saturate:
      r.exact = fits(i32_lo, i32_hi);
      break;
    case Accumulation::int64:
      r.exact =
          fits(BigInt(std::numeric_limits<std::int64_t>::min()), BigInt(std::numeric_limits<std::int64_t>::max()));
      break;
    case Accumulation::int16_pair_saturate: {
      if (a.lo < 0 || a.hi > 255 || b.lo < -128 || b.hi > 127)
        throw InputError("accumulation_bound: int16_pair_saturate takes u8 a and s8 b");
      const int per_pair = k >= 2 ? 2 : static_cast<int>(k);
      const bool pairs_fit = pmin * per_pair >= -32768 && pmax * per_pair <= 32767;
      r.exact = pairs_fit && fits(i32_lo, i32_hi);
      break;
    }
  }
  return r;
}

bool int32_accumulation_is_exact(std::int64_t k, IntRange a_range, IntRange b_range) {
  return accumulation_bound(Accumulation::int32_saturate, k, a_range, b_range).exact;
}

}  // namespace qc
