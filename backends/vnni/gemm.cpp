// The blocking driver (GotoBLAS/BLIS loop order) and gemm().
//
//   for each M block of mc rows                      the A block (mc x kc bytes) lives in L2
//     for each K block (equal blocks of at most kc)
//       A rows: read in place, or packed row-major (gathered, +128 shift, zero K tail, row sums)
//       for each panel of nr columns                  weight slice (kc x nr bytes) lives in L1
//         for each group of mr rows                   the register tile: mr x nr int32
//           micro-kernel; on the last K block, the epilogue writes the output
//
// A is packed row-major rather than interleaved into [g][mr][4] micro-panels: the kernel
// broadcasts one 4-byte word per row and group either way (a stride in a register is free in the
// address), and row-major packing is a plain copy -- or nothing at all: u8 rows with K % 4 == 0
// and no weight zero points are read in place, as oneDNN's brgemm reads its source. For the 3x3
// conv benchmark the interleaving transpose cost ~17% of the time.
//
// Partial sums between K blocks go to an int32 buffer [mc, panels·nr]. Weights are packed once
// (pack_weights). Groups of mr rows are split across the worker threads (QCONFORM_THREADS).
#include "backends/vnni/driver.hpp"
#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace qc::vnni {
namespace detail {
namespace {

Store store_of(OutputKind k) {
  switch (k) {
    case OutputKind::int32:
      return Store::int32;
    case OutputKind::f32:
      return Store::f32;
    case OutputKind::u8:
      return Store::u8;
    case OutputKind::s8:
      return Store::s8;
  }
  return Store::int32;
}

std::size_t element_size(OutputKind k) { return k == OutputKind::int32 || k == OutputKind::f32 ? 4 : 1; }

// Row `row`'s K-range [k0, k0 + klen) into dst[0, kcp): each byte xor `flip` (0x80: s8 -> u8 by
// +128), zero bytes past klen (the weights there are zero too), and the row's shifted byte sum
// added to *row_sum (when given). A gathering source writes straight into dst.
void pack_row(const RowSource& src, std::int64_t row, std::int64_t k0, std::int64_t klen, std::int64_t kcp,
              std::uint8_t flip, std::uint8_t* dst, std::int32_t* row_sum) {
  const std::uint8_t* s = src.fetch(src.context, row, k0, klen, dst);
  if (s != dst || flip != 0)
    for (std::int64_t i = 0; i < klen; ++i) dst[i] = static_cast<std::uint8_t>(s[i] ^ flip);
  std::memset(dst + klen, 0, static_cast<std::size_t>(kcp - klen));
  if (row_sum) {
    std::uint32_t sum = 0;
    for (std::int64_t i = 0; i < klen; ++i) sum += dst[i];
    *row_sum = static_cast<std::int32_t>(static_cast<std::uint32_t>(*row_sum) + sum);
  }
}

}  // namespace

void check_runnable(const PackedWeights& w) {
  if (const auto missing = missing_feature(w.isa))
    throw InputError("vnni: weights packed for " + std::string(name(w.isa)) + ", but this CPU lacks " + *missing);
  if (w.nr != kernels_for(w.isa).nr || w.panel_data.size() == 0)
    throw InputError("vnni: the packed weights are not a pack_weights result for " + std::string(name(w.isa)));
}

void run_gemm(const PackedWeights& w, std::int64_t m, const RowSource& src, void* out, std::int64_t ldo) {
  if (m <= 0) return;
  const KernelSet& ks = kernels_for(w.isa);
  const QuantSpec& q = w.params.quant;
  const std::int64_t K = w.params.k, N = w.params.n, nr = ks.nr, mr = ks.mr;
  const std::int64_t kg_total = w.kgroups;
  // K blocks of equal size (at most kc_groups): K = 576 is two blocks of 288, not 512 + 64.
  const std::int64_t k_blocks = (kg_total + ks.kc_groups - 1) / ks.kc_groups;
  const std::int64_t kcg = (kg_total + k_blocks - 1) / k_blocks;
  const std::int64_t mc_max = std::min(ks.mc, (m + mr - 1) / mr * mr);
  const bool k_blocked = kg_total > kcg;
  const std::uint8_t flip = q.a_type == ActivationType::s8 ? 0x80 : 0x00;
  const Store store = store_of(q.output.kind);
  const std::size_t esize = element_size(q.output.kind);

  float lo = 0, hi = 0;
  if (store == Store::u8 || store == Store::s8) {
    std::int64_t rlo = store == Store::u8 ? 0 : -128, rhi = store == Store::u8 ? 255 : 127;
    if (q.output.min) rlo = std::max<std::int64_t>(rlo, *q.output.min);
    if (q.output.max) rhi = std::min<std::int64_t>(rhi, *q.output.max);
    lo = static_cast<float>(rlo - q.output.zero_point);  // small integers: exact in f32
    hi = static_cast<float>(rhi - q.output.zero_point);
  }

  // In place: every K block of every row can be read as it is (only the last block can have a tail).
  const bool in_place = src.rows != nullptr && flip == 0 && K % 4 == 0 && !w.has_w_zp;
  const std::int64_t ld_partial = w.panels * nr;
  auto* out_bytes = static_cast<char*>(out);

  // Rows [r_begin, r_end) with their own packing, partial-sum and row-sum buffers: the row groups
  // of mr rows are split across the worker threads (qconform/parallel.hpp), each writing its own
  // output rows.
  const auto run_rows = [&](std::int64_t r_begin, std::int64_t r_end) {
    std::vector<std::uint8_t> a_pack(in_place ? 0 : static_cast<std::size_t>(mc_max * kcg * 4));
    std::vector<std::int32_t> partial(k_blocked ? static_cast<std::size_t>(mc_max * ld_partial) : 0);
    std::vector<std::int32_t> row_sum(w.has_w_zp ? static_cast<std::size_t>(mc_max) : 0);
    std::uint8_t* a_buf = a_pack.data();
    for (std::int64_t i0 = r_begin; i0 < r_end; i0 += mc_max) {
      const std::int64_t mc = std::min(mc_max, r_end - i0);
      std::fill(row_sum.begin(), row_sum.end(), 0);
      for (std::int64_t g0 = 0; g0 < kg_total; g0 += kcg) {
        const std::int64_t gn = std::min(kcg, kg_total - g0);
        const std::int64_t k0 = 4 * g0;
        const std::int64_t klen = std::min(K, 4 * (g0 + gn)) - k0;
        // A rows for the tiles: in place, or packed row-major [mc][4·gn] (shifted, zero-padded, summed).
        const std::int64_t kcp = 4 * gn;
        const std::uint8_t* a_rows = in_place ? src.rows + i0 * src.row_stride + k0 : a_buf;
        const std::int64_t a_stride = in_place ? src.row_stride : kcp;
        if (!in_place)
          for (std::int64_t r = 0; r < mc; ++r)
            pack_row(src, i0 + r, k0, klen, kcp, flip, a_buf + r * kcp,
                     row_sum.empty() ? nullptr : &row_sum[static_cast<std::size_t>(r)]);
        const bool first = g0 == 0, final = g0 + gn == kg_total;
        for (std::int64_t p = 0; p < w.panels; ++p) {
          TileArgs t;
          t.b = w.panel_data.data() + (p * kg_total + g0) * nr * 4;
          t.kgroups = gn;
          t.ld_partial = ld_partial;
          t.load_partial = !first;
          t.final = final;
          t.n_valid = static_cast<int>(std::min(nr, N - p * nr));
          t.col_term = w.col_term.data() + p * nr;
          t.w_zp = w.w_zp.data() + p * nr;
          t.scale = w.scale.data() + p * nr;
          t.bias_f = w.bias_f.empty() ? nullptr : w.bias_f.data() + p * nr;
          t.lo = lo;
          t.hi = hi;
          t.out_zp = q.output.zero_point;
          t.store = store;
          t.ld_out = ldo;
          for (std::int64_t ir = 0; ir < mc; ir += mr) {
            const int rows = static_cast<int>(std::min(mr, mc - ir));
            t.a = a_rows + ir * a_stride;
            t.a_stride = a_stride;
            t.partial = k_blocked ? partial.data() + ir * ld_partial + p * nr : nullptr;
            t.row_sum = row_sum.empty() ? nullptr : row_sum.data() + ir;
            t.out = out_bytes + static_cast<std::size_t>((i0 + ir) * ldo + p * nr) * esize;
            ks.tiles[rows - 1](t);
          }
        }
      }
    }
  };
  // At least 2^22 multiply-adds a thread, so a small GEMM stays on the calling thread.
  const std::int64_t groups = (m + mr - 1) / mr;
  parallel_ranges(groups, std::max<std::int64_t>(1, (std::int64_t{1} << 22) / std::max<std::int64_t>(1, mr * N * K)),
                  [&](std::int64_t g0, std::int64_t g1) { run_rows(g0 * mr, std::min(m, g1 * mr)); });
}

}  // namespace detail

namespace {

struct MatrixRows {
  const std::uint8_t* a;
  std::int64_t lda;
};

const std::uint8_t* fetch_matrix_row(const void* context, std::int64_t row, std::int64_t k0, std::int64_t,
                                     std::uint8_t*) {
  const auto* m = static_cast<const MatrixRows*>(context);
  return m->a + row * m->lda + k0;
}

template <class T>
constexpr bool is_one_of_outputs = std::is_same_v<T, std::int32_t> || std::is_same_v<T, float> ||
                                   std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int8_t>;

}  // namespace

namespace detail {
template <class A, class Out>
void check_types(const PackedWeights& w, const char* where) {
  static_assert(std::is_same_v<A, std::uint8_t> || std::is_same_v<A, std::int8_t>);
  static_assert(is_one_of_outputs<Out>);
  const QuantSpec& q = w.params.quant;
  const ActivationType at = std::is_same_v<A, std::uint8_t> ? ActivationType::u8 : ActivationType::s8;
  if (at != q.a_type)
    throw InputError(std::string("vnni ") + where + ": activations passed as " + std::string(name(at)) +
                     " but packed for " + std::string(name(q.a_type)));
  const OutputKind ok = std::is_same_v<Out, std::int32_t>   ? OutputKind::int32
                        : std::is_same_v<Out, float>        ? OutputKind::f32
                        : std::is_same_v<Out, std::uint8_t> ? OutputKind::u8
                                                            : OutputKind::s8;
  if (ok != q.output.kind)
    throw InputError(std::string("vnni ") + where + ": output passed as " + std::string(name(ok)) + " but packed for " +
                     std::string(name(q.output.kind)));
}
template void check_types<std::uint8_t, std::int32_t>(const PackedWeights&, const char*);
template void check_types<std::uint8_t, float>(const PackedWeights&, const char*);
template void check_types<std::uint8_t, std::uint8_t>(const PackedWeights&, const char*);
template void check_types<std::uint8_t, std::int8_t>(const PackedWeights&, const char*);
template void check_types<std::int8_t, std::int32_t>(const PackedWeights&, const char*);
template void check_types<std::int8_t, float>(const PackedWeights&, const char*);
template void check_types<std::int8_t, std::uint8_t>(const PackedWeights&, const char*);
template void check_types<std::int8_t, std::int8_t>(const PackedWeights&, const char*);
}  // namespace detail

template <class A, class Out>
void gemm(const PackedWeights& w, std::int64_t m, const A* a, std::int64_t lda, Out* out, std::int64_t ldo) {
  detail::check_types<A, Out>(w, "gemm");
  detail::check_runnable(w);
  if (m < 0) throw InputError("vnni gemm: M = " + std::to_string(m) + " is negative");
  if (lda < w.params.k)
    throw InputError("vnni gemm: lda " + std::to_string(lda) + " < K " + std::to_string(w.params.k));
  if (ldo < w.params.n)
    throw InputError("vnni gemm: ldo " + std::to_string(ldo) + " < N " + std::to_string(w.params.n));
  if (m == 0) return;
  if (!a || !out) throw InputError("vnni gemm: null activation or output pointer");
  const MatrixRows rows{reinterpret_cast<const std::uint8_t*>(a), lda};
  detail::run_gemm(w, m, detail::RowSource{&rows, &fetch_matrix_row, rows.a, lda}, out, ldo);
}

#define QC_VNNI_GEMM(A, O) \
  template void gemm<A, O>(const PackedWeights&, std::int64_t, const A*, std::int64_t, O*, std::int64_t);
QC_VNNI_GEMM(std::uint8_t, std::int32_t)
QC_VNNI_GEMM(std::uint8_t, float)
QC_VNNI_GEMM(std::uint8_t, std::uint8_t)
QC_VNNI_GEMM(std::uint8_t, std::int8_t)
QC_VNNI_GEMM(std::int8_t, std::int32_t)
QC_VNNI_GEMM(std::int8_t, float)
QC_VNNI_GEMM(std::int8_t, std::uint8_t)
QC_VNNI_GEMM(std::int8_t, std::int8_t)
#undef QC_VNNI_GEMM

}  // namespace qc::vnni
