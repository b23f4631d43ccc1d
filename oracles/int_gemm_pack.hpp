// The integer GEMM's packing and min/max loops (int_gemm.hpp), included by one source file per ISA
// (int_gemm.cpp, int_gemm_avx2.cpp, int_gemm_avx512.cpp), each compiled with its own target flags so
// the compiler vectorizes them for that ISA. Everything here has internal linkage (an unnamed
// namespace), so the builds never meet at link time; the names are the oracle's alone (unity builds).
#pragma once

#include "oracles/int_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace qc::int_gemm {
namespace {

// Packed k `kp` of lane l goes to dst[(kp / G) * W * G + l * G + kp % G].
template <class E, int G>
void int_gemm_pack_panel(const PackJob& j) {
  E* dst = static_cast<E*>(j.dst);
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
