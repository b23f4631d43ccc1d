// scalar micro-kernel: portable C++ with the vnni512 kernel's arithmetic -- the same packed
// operands, four u8 x s8 products per group summed exactly, int32 wrapping accumulation, and the
// same f32 epilogue one IEEE operation at a time (the library is built with -ffp-contract=off).
// It is the fallback where no x86 kernel runs, and what QCONFORM_VNNI_FORCE=scalar selects.
#include "backends/vnni/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qc::vnni::detail {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 16;

// Two's-complement int32 from the low 32 bits (vpaddd's wrap).
inline std::int32_t wrap32(std::uint32_t v) { return static_cast<std::int32_t>(v); }

template <int MR>
void tile(const TileArgs& t) {
  std::uint32_t acc[MR][kNr];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < kNr; ++j)
      acc[r][j] = t.load_partial ? static_cast<std::uint32_t>(t.partial[r * t.ld_partial + j]) : 0u;

  const std::uint8_t* a = t.a;
  const std::int8_t* b = t.b;
  for (std::int64_t g = 0; g < t.kgroups; ++g) {
    for (int r = 0; r < MR; ++r) {
      const std::uint8_t* x = a + r * t.a_stride;
      for (int j = 0; j < kNr; ++j) {
        const std::int8_t* w = b + 4 * j;
        // |sum| <= 4·255·128: exact in int32; the add to the accumulator wraps.
        const std::int32_t sum = x[0] * w[0] + x[1] * w[1] + x[2] * w[2] + x[3] * w[3];
        acc[r][j] += static_cast<std::uint32_t>(sum);
      }
    }
    a += 4;
    b += 4 * kNr;
  }

  if (!t.final) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < kNr; ++j) t.partial[r * t.ld_partial + j] = wrap32(acc[r][j]);
    return;
  }

  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < t.n_valid; ++j) {
      std::uint32_t u = acc[r][j] + static_cast<std::uint32_t>(t.col_term[j]);
      if (t.row_sum) u -= static_cast<std::uint32_t>(t.row_sum[r]) * static_cast<std::uint32_t>(t.w_zp[j]);
      const std::int32_t v = wrap32(u);
      switch (t.store) {
        case Store::int32:
          static_cast<std::int32_t*>(t.out)[r * t.ld_out + j] = v;
          break;
        case Store::f32: {
          float y = static_cast<float>(v) * t.scale[j];
          if (t.bias_f) y = y + t.bias_f[j];
          static_cast<float*>(t.out)[r * t.ld_out + j] = y;
          break;
        }
        case Store::u8:
        case Store::s8: {
          const float y = std::min(std::max(static_cast<float>(v) * t.scale[j], t.lo), t.hi);
          const std::int32_t q = static_cast<std::int32_t>(std::nearbyint(y)) + t.out_zp;    // RNE (default env)
          static_cast<std::int8_t*>(t.out)[r * t.ld_out + j] = static_cast<std::int8_t>(q);  // in range: exact bits
          break;
        }
      }
    }
  }
}

}  // namespace

const KernelSet& scalar_kernels() {
  static const KernelSet set{kMr, kNr, 128, 64, {&tile<1>, &tile<2>, &tile<3>, &tile<4>}};
  return set;
}

}  // namespace qc::vnni::detail
