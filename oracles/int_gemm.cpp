// The packed integer GEMM's driver: packing, blocking, threads, the exact offset and zero-point
// correction, the portable tile kernel and the choice among the builds (int_gemm.hpp).
#include "oracles/int_gemm.hpp"

#include "oracles/int_gemm_pack.hpp"

#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace qc::int_gemm {

const char* name(Isa isa) {
#if !QCONFORM_ORACLE_X86
  isa = Isa::generic;  // the x86 kernels are not built here
#endif
  switch (isa) {
    case Isa::generic:
      return "generic";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512_vnni:
      return "avx512_vnni";
  }
  return "?";
}

std::span<const Isa> available() {
  static const std::vector<Isa> v = [] {
    std::vector<Isa> r{Isa::generic};
#if QCONFORM_ORACLE_X86
    // __builtin_cpu_supports also checks that the OS saves the vector registers (XCR0).
    if (__builtin_cpu_supports("avx2")) r.push_back(Isa::avx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
      r.push_back(Isa::avx512_vnni);
#endif
    return r;
  }();
  return v;
}

Isa chosen_for(const char* isa) {
  const std::span<const Isa> v = available();
  if (isa == nullptr || *isa == '\0') return v.back();
  const std::string_view n(isa);
  auto has = [&](Isa i) { return std::find(v.begin(), v.end(), i) != v.end(); };
  if (n == "generic") return Isa::generic;
  if (n == "avx2" && has(Isa::avx2)) return Isa::avx2;
    // The quantize kernel's avx512 level needs no VNNI; the GEMM then takes its AVX2 kernel.
#if QCONFORM_ORACLE_X86
  if (n == "avx512" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return has(Isa::avx512_vnni) ? Isa::avx512_vnni : Isa::avx2;
#endif
  std::string names;
  for (const Isa i : v) names += std::string(names.empty() ? "" : ", ") + name(i);
  throw InputError("QCONFORM_ORACLE_ISA=" + std::string(isa) + ": the integer GEMM runs " + names +
                   " on this machine (levels: generic, avx2, avx512)");
}

Isa chosen() {
  static const Isa i = chosen_for(std::getenv("QCONFORM_ORACLE_ISA"));
  return i;
}

ByteOffsets byte_offsets(IntRange a, IntRange b) {
  ByteOffsets o;
  if (a.hi - a.lo > 255 || b.hi - b.lo > 255) return o;
  // The common formats keep a fixed offset (u8 and s8 A: 0 and 128; s8 and u8 B: 0 and -128) so
  // that u8 x s8 needs no correction at all; any other span of 256 values is moved from its low end.
  o.ca = a.lo >= 0 && a.hi <= 255 ? 0 : a.lo >= -128 && a.hi <= 127 ? 128 : static_cast<std::int32_t>(-a.lo);
  o.cb = b.lo >= -128 && b.hi <= 127 ? 0 : b.lo >= 0 && b.hi <= 255 ? -128 : static_cast<std::int32_t>(-128 - b.lo);
  o.ok = true;
  return o;
}

ByteOffsets byte_offsets(const IntGemmProblem& p) {
  if (p.a.empty() || p.bt.empty()) return {};
  auto range = [](std::span<const std::int32_t> v) {
    std::int32_t l, h;
    minmax(v.data(), static_cast<std::int64_t>(v.size()), l, h);
    return IntRange{l, h};
  };
  return byte_offsets(range(p.a), range(p.bt));
}

// Named, not anonymous: the oracle is a unity build (docs/development.md "Build time").
namespace detail {

std::vector<Piece> pieces_of(const IntGemmProblem& p, std::int64_t& packed_total) {
  std::vector<Piece> v;
  packed_total = 0;
  for (std::int64_t s = 0; s < p.segments(); ++s) {
    const std::int64_t k0 = p.segment_starts[static_cast<std::size_t>(s)], k1 = k0 + p.segment_length(s);
    for (std::int64_t k = k0; k < k1; k += kPieceK) {
      Piece c;
      c.k0 = k;
      c.len = std::min(kPieceK, k1 - k);
      c.packed = packed_total;
      c.packed_len = (c.len + 3) / 4 * 4;
      c.segment = s;
      c.first = k == k0;
      packed_total += c.packed_len;
      v.push_back(c);
    }
  }
  return v;
}

// 64-byte aligned, zero-filled storage for the packed operands.
class Packed {
 public:
  // Not zeroed here: each thread zeroes the panels it packs (pack_panel), in parallel.
  explicit Packed(std::size_t bytes)
      : data_(static_cast<std::byte*>(::operator new[](bytes + 64, std::align_val_t(64)))), bytes_(bytes) {}
  ~Packed() { ::operator delete[](data_, std::align_val_t(64)); }
  Packed(const Packed&) = delete;
  Packed& operator=(const Packed&) = delete;
  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  std::byte* data_;
  std::size_t bytes_;
};

// The portable kernel: bytes in groups of 4 like the VNNI layout, a 4 x 16 tile of int32 sums.
constexpr int kGenericMr = 4, kGenericNr = 16;

void tile_generic(const void* av, const void* bv, std::int64_t kp, std::int64_t* c, std::int64_t rs, std::int64_t cs,
                  int rows, int cols, bool store) {
  const auto* a = static_cast<const std::uint8_t*>(av);
  const auto* b = static_cast<const std::int8_t*>(bv);
  std::int32_t acc[kGenericMr][kGenericNr] = {};
  for (std::int64_t g = 0; g < kp / 4; ++g) {
    const std::uint8_t* ag = a + g * kGenericMr * 4;
    const std::int8_t* bg = b + g * kGenericNr * 4;
    for (int i = 0; i < kGenericMr; ++i)
      for (int j = 0; j < kGenericNr; ++j) {
        std::int32_t s = 0;
        for (int t = 0; t < 4; ++t) s += std::int32_t{ag[i * 4 + t]} * std::int32_t{bg[j * 4 + t]};
        acc[i][j] += s;
      }
  }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) c[i * rs + j * cs] = (store ? 0 : c[i * rs + j * cs]) + acc[i][j];
}

// The exact removal of the offsets and zero points: Σ (a'-Ca)(b'-Cb) = Σ a'b' - Cb·Σa' - Ca·W with
// W = Σb' - L·Cb per column and segment, in wrapping 64-bit arithmetic: exact modulo 2^64, so
// exact, because the caller proved that the result fits int64. The oracle is built for baseline
// x86-64, which has no packed 64-bit multiply, so the products are formed per row only where they
// change: Cb·Σa' is one number per row when Cb is one per segment (a per-tensor zero point), and
// Ca·W one vector per value of Ca (the same for every row under a per-tensor zero point); what is
// left per element is subtractions, run by the kernel's build (KernelShape::subtract) so that they
// take its vector width.
class Correction {
 public:
  Correction(const IntGemmProblem& p, bool subtract, ByteOffsets off, const std::vector<std::int64_t>& col_sums,
             SubtractFn subtract_fn)
      : p_(p), subtract_(subtract), off_(off), S_(p.segments()), N_(p.cols), subtract_fn_(subtract_fn) {
    using U = std::uint64_t;
    const auto NS = static_cast<std::size_t>(N_ * S_);
    cb_.resize(NS);
    w_.resize(NS);
    cb_const_.assign(static_cast<std::size_t>(S_), 1);
    for (std::int64_t s = 0; s < S_; ++s) {
      const U L = static_cast<U>(p.segment_length(s));
      for (std::int64_t n = 0; n < N_; ++n) {  // [s][n]: contiguous per segment
        const U cb = static_cast<U>(off.cb) +
                     (subtract ? static_cast<U>(p.b_zero_points[static_cast<std::size_t>(s * N_ + n)]) : U{0});
        const auto i = static_cast<std::size_t>(s * N_ + n);
        cb_[i] = cb;
        w_[i] = static_cast<U>(col_sums[static_cast<std::size_t>(n * S_ + s)]) - L * cb;
        if (cb != cb_[static_cast<std::size_t>(s * N_)]) cb_const_[static_cast<std::size_t>(s)] = 0;
      }
    }
  }

  // Rows [r_begin, r_end) of out, each row's Σa' per segment in row_sums.
  void rows(const std::vector<std::int64_t>& row_sums, std::int64_t r_begin, std::int64_t r_end,
            AccumulatorValues& out) const {
    using U = std::uint64_t;
    const auto N = static_cast<std::size_t>(N_);
    std::vector<U> caw(static_cast<std::size_t>(N_ * S_));  // Ca·W of the segment's last Ca
    std::vector<U> last_ca(static_cast<std::size_t>(S_));
    std::vector<char> have(static_cast<std::size_t>(S_), 0);
    for (std::int64_t r = r_begin; r < r_end; ++r)
      for (std::int64_t s = 0; s < S_; ++s) {
        const auto rs = static_cast<std::size_t>(r * S_ + s), s0 = static_cast<std::size_t>(s) * N;
        const U ca = static_cast<U>(off_.ca) + (subtract_ ? static_cast<U>(p_.a_zero_points[rs]) : U{0});
        const U sum_a = static_cast<U>(row_sums[rs]);
        U* cw = caw.data() + s0;
        if (!have[static_cast<std::size_t>(s)] || last_ca[static_cast<std::size_t>(s)] != ca) {
          for (std::size_t n = 0; n < N; ++n) cw[n] = ca * w_[s0 + n];
          last_ca[static_cast<std::size_t>(s)] = ca;
          have[static_cast<std::size_t>(s)] = 1;
        }
        auto* v = reinterpret_cast<U*>(out.data()) + r * N_ * S_ + s;
        const auto S = static_cast<std::size_t>(S_);
        if (cb_const_[static_cast<std::size_t>(s)]) {
          subtract_fn_(v, S_, cw, cb_[s0] * sum_a, N_);  // vectorized for the kernel's ISA
        } else {
          const U* cb = cb_.data() + s0;
          for (std::size_t n = 0; n < N; ++n) v[n * S] = v[n * S] - cb[n] * sum_a - cw[n];
        }
      }
  }

 private:
  const IntGemmProblem& p_;
  bool subtract_;
  ByteOffsets off_;
  std::int64_t S_, N_;
  SubtractFn subtract_fn_;
  std::vector<std::uint64_t> cb_, w_;  // [s][n]: Cb and W
  std::vector<char> cb_const_;         // per segment: one Cb for every column
};

template <class EA, class EB>
void run(const IntGemmProblem& p, bool subtract, ByteOffsets off, const KernelShape& ks, AccumulatorValues& out,
         const RowsDone* done) {
  const std::int64_t R = p.rows, N = p.cols, K = p.depth, S = p.segments();
  const int mr = ks.mr, nr = ks.nr;
  std::int64_t Kp = 0;
  const std::vector<Piece> pieces = pieces_of(p, Kp);
  const std::int64_t panels_m = (R + mr - 1) / mr, panels_n = (N + nr - 1) / nr;
  const Packed a_packed(static_cast<std::size_t>(panels_m * Kp * mr) * sizeof(EA));
  const Packed b_packed(static_cast<std::size_t>(panels_n * Kp * nr) * sizeof(EB));
  auto* A = reinterpret_cast<EA*>(a_packed.data());
  auto* B = reinterpret_cast<EB*>(b_packed.data());
  const bool correct = off.ca != 0 || off.cb != 0 || (subtract && p.any_zero_point());
  const bool bytes = p.bytes_only();  // pack from the caller's bytes (IntGemmProblem::a_bytes)
  std::vector<std::int64_t> row_sums(correct ? static_cast<std::size_t>(R * S) : 0),
      col_sums(correct ? static_cast<std::size_t>(N * S) : 0);

  // B's panels, split across the threads.
  const std::int64_t panel_work = std::max<std::int64_t>(1, nr * K);
  parallel_ranges(
      panels_n, std::max<std::int64_t>(1, (std::int64_t{1} << 18) / panel_work),
      [&](std::int64_t np0, std::int64_t np1) {
        for (std::int64_t np = np0; np < np1; ++np) {
          const std::int64_t n0 = np * nr, lines = std::min<std::int64_t>(nr, N - n0);
          // From the caller's bytes: B's rows [N, K], or its columns of [K, N].
          const bool columns = bytes && p.b_k_by_n;
          ks.pack_b(
              {.src = bytes ? nullptr : p.bt.data() + n0 * K,
               .bytes = bytes ? static_cast<const std::uint8_t*>(p.b_bytes.data) + (columns ? n0 : n0 * K) : nullptr,
               .bytes_signed = bytes && p.b_bytes.is_signed,
               .line_stride = columns ? 1 : K,
               .k_stride = columns ? N : 1,
               .K = K,
               .lines = lines,
               .W = nr,
               .offset = off.cb,
               .pieces = pieces.data(),
               .piece_count = pieces.size(),
               .packed_k = Kp,
               .dst = B + np * Kp * nr,
               .sums = correct ? col_sums.data() + n0 * S : nullptr,
               .S = S});
        }
      });

  std::optional<Correction> correction;
  if (correct) correction.emplace(p, subtract, off, col_sums, ks.subtract);

  // Rows of panels across the threads, and within one thread in groups whose int64 results (about
  // 512 KiB) stay in L2: per group, blocks of B's panels (about 256 KiB, kept in L2) are swept by
  // each A panel (kept in L1) piece by piece; then the group's rows are corrected and handed to
  // `done` while they are still in cache. A segment's first piece stores into `out`, the rest add:
  // `out` needs no zeros beforehand.
  const std::int64_t block_n =
      std::max<std::int64_t>(1, (std::int64_t{256} * 1024) / (nr * kPieceK * static_cast<std::int64_t>(sizeof(EB))));
  const std::int64_t group = std::max<std::int64_t>(
      1, (std::int64_t{512} * 1024) / (mr * N * S * static_cast<std::int64_t>(sizeof(std::int64_t))));
  const std::int64_t row_work = std::max<std::int64_t>(1, mr * N * K);
  auto rows = [&](std::int64_t mp0, std::int64_t mp1) {
    for (std::int64_t g0 = mp0; g0 < mp1; g0 += group) {
      const std::int64_t g1 = std::min(mp1, g0 + group);
      const std::int64_t r_begin = g0 * mr, r_end = std::min(R, g1 * mr);
      for (std::int64_t mp = g0; mp < g1; ++mp) {
        const std::int64_t r0 = mp * mr;
        ks.pack_a({.src = bytes ? nullptr : p.a.data() + r0 * K,
                   .bytes = bytes ? static_cast<const std::uint8_t*>(p.a_bytes.data) + r0 * K : nullptr,
                   .bytes_signed = bytes && p.a_bytes.is_signed,
                   .line_stride = K,
                   .k_stride = 1,
                   .K = K,
                   .lines = std::min<std::int64_t>(mr, R - r0),
                   .W = mr,
                   .offset = off.ca,
                   .pieces = pieces.data(),
                   .piece_count = pieces.size(),
                   .packed_k = Kp,
                   .dst = A + mp * Kp * mr,
                   .sums = correct ? row_sums.data() + r0 * S : nullptr,
                   .S = S});
      }
      for (std::int64_t nb = 0; nb < panels_n; nb += block_n) {
        const std::int64_t nb_end = std::min(panels_n, nb + block_n);
        for (const Piece& c : pieces)
          for (std::int64_t mp = g0; mp < g1; ++mp) {
            const std::int64_t r0 = mp * mr;
            const int rows_here = static_cast<int>(std::min<std::int64_t>(mr, R - r0));
            const EA* a = A + mp * Kp * mr + c.packed * mr;
            for (std::int64_t np = nb; np < nb_end; ++np) {
              const std::int64_t n0 = np * nr;
              const int cols = static_cast<int>(std::min<std::int64_t>(nr, N - n0));
              ks.kernel(a, B + np * Kp * nr + c.packed * nr, c.packed_len, out.data() + (r0 * N + n0) * S + c.segment,
                        N * S, S, rows_here, cols, c.first);
            }
          }
      }
      if (correction) correction->rows(row_sums, r_begin, r_end, out);
      if (done) (*done)(r_begin, r_end);
    }
  };
  parallel_ranges(panels_m, std::max<std::int64_t>(1, (std::int64_t{1} << 21) / row_work), rows);
}

}  // namespace detail

KernelShape kernel_generic() {
  return {detail::kGenericMr,
          detail::kGenericNr,
          4,
          false,
          &detail::tile_generic,
          &int_gemm_pack_panel<std::uint8_t, 4, false>,
          &int_gemm_pack_panel<std::int8_t, 4, true>,
          &int_gemm_minmax,
          &int_gemm_subtract};
}

namespace detail {
KernelShape shape_of(Isa isa) {
#if QCONFORM_ORACLE_X86
  if (isa == Isa::avx2) return kernel_avx2();
  if (isa == Isa::avx512_vnni) return kernel_avx512_vnni();
#endif
  (void)isa;
  return kernel_generic();
}
}  // namespace detail

void minmax(const std::int32_t* v, std::int64_t n, std::int32_t& lo, std::int32_t& hi) {
  static const MinMaxFn f = detail::shape_of(chosen()).minmax;
  f(v, n, lo, hi);
}

#if !QCONFORM_ORACLE_X86
KernelShape kernel_avx2() { return kernel_generic(); }
KernelShape kernel_avx512_vnni() { return kernel_generic(); }
#endif

void exact_sums(const IntGemmProblem& p, bool subtract, ByteOffsets offsets, Isa isa, AccumulatorValues& out,
                const RowsDone* done) {
  if (!offsets.ok) throw InputError("int_gemm::exact_sums: the operands do not fit bytes after an offset");
  const auto size = static_cast<std::size_t>(p.rows * p.cols * p.segments());
  if (p.rows == 0 || p.cols == 0 || p.depth == 0) {
    out.assign(size, 0);  // empty sums: no tile writes them
    if (done && p.rows > 0) (*done)(0, p.rows);
    return;
  }
  out.resize(size);  // uninitialized: the tiles write every element (a segment's first piece stores)
#if !QCONFORM_ORACLE_X86
  isa = Isa::generic;  // the x86 kernels are not built here
#endif
  switch (isa) {
    case Isa::generic:
      return detail::run<std::uint8_t, std::int8_t>(p, subtract, offsets, kernel_generic(), out, done);
    case Isa::avx2:
      return detail::run<std::int16_t, std::int16_t>(p, subtract, offsets, kernel_avx2(), out, done);
    case Isa::avx512_vnni:
      return detail::run<std::uint8_t, std::int8_t>(p, subtract, offsets, kernel_avx512_vnni(), out, done);
  }
}

}  // namespace qc::int_gemm
