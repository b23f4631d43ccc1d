// The oracle's own packed, register-blocked integer GEMM: the exact sums of accumulate_gemm's step 1
// (int_accumulate.hpp) for operands that are bytes after an offset, which covers every u8, s8, u4
// and s4 operand, raw or minus a zero point. It is generation code: it shares nothing with the
// backends under test (backends/vnni), so a bug in one cannot hide the same bug in the other.
//
// Exactness, the whole contract:
//   * Each operand is moved into bytes by one constant per operand, a' = a + ca in [0, 255] and
//     b' = b + cb in [-128, 127], so every product |a'·b'| <= 255·128 = 32640.
//   * K is cut at every segment start and into pieces of at most kPieceK = 1024. A piece is summed
//     in int32 lanes (vpdpbusd: 4 products per lane per step; vpmaddwd: 2), so a lane holds at most
//     1024·32640 < 2^25 in magnitude: no int32 lane can wrap (the bound would allow 65792).
//   * Each piece's int32 tile is added into the int64 result, and the offsets and zero points are
//     removed exactly: Σ (a'-Ca)(b'-Cb) = Σ a'b' - Cb·Σa' - Ca·Σb' + L·Ca·Cb, with Ca = ca (+ za),
//     Cb = cb (+ zb), the sums Σa' and Σb' per row/column and segment taken in int64 while packing,
//     and the correction formed in int128. The caller has proven that the result fits int64.
// The models that need per-product behaviour (int32 saturation order, int16 pair saturation) are
// not computed here: accumulate_gemm hands those elements to accumulate_dot as before.
//
// Built once per ISA and chosen at run time: AVX-512 VNNI (vpdpbusd on u8 x s8 bytes), AVX2
// (vpmaddwd on operands widened to int16: exact, unlike vpmaddubsw whose pairs saturate), and
// portable C++. QCONFORM_ORACLE_ISA (generic, avx2, avx512), read once per process, caps the choice
// as it does for the quantize kernel (docs/numerics.md); avx512 without VNNI runs the AVX2 kernel.
#pragma once

#include "oracles/int_accumulate.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace qc::int_gemm {

enum class Isa : std::uint8_t { generic, avx2, avx512_vnni };
const char* name(Isa isa);

// Every kernel this machine can run, generic first.
std::span<const Isa> available();
// The kernel accumulate_gemm uses: the best available, capped by QCONFORM_ORACLE_ISA (read once).
Isa chosen();
// The best available kernel at or below the level `isa` names ("generic", "avx2", "avx512"); null
// or "" for the best. InputError for an unknown name or a level this machine lacks.
Isa chosen_for(const char* isa);

inline constexpr std::int64_t kPieceK = 1024;
// Every product of offset operands is at most 255·128 in magnitude; a piece's int32 lane sums at
// most kPieceK of them.
static_assert(kPieceK * 255 * 128 <= 2147483647, "a piece's int32 lanes must not wrap");

// The constants that move every raw operand into the kernel's bytes: ca with a + ca in [0, 255],
// cb with b + cb in [-128, 127]. Empty when some operand's raw values span more than 256 values.
struct ByteOffsets {
  bool ok = false;
  std::int32_t ca = 0, cb = 0;
};
ByteOffsets byte_offsets(const IntGemmProblem& p);
// The same from the raw operands' ranges (what accumulate_gemm has already found).
ByteOffsets byte_offsets(IntRange a_raw, IntRange b_raw);

// out[(r*N + n)*S + s] = the exact Σ over segment s of the multiplied operands (a - za)(b - zb) when
// `subtract`, else a·b. `offsets` from byte_offsets (ok). The caller proves the sums fit int64.
// Splits the rows across worker threads (qconform/parallel.hpp); the result does not depend on
// their number. `out` is resized to R*N*S and every element written (the first piece of each
// segment stores its tile, later ones add), so it needs no zeros beforehand.
// `done`, when given, is called once for every row range [r0, r1) as soon as those rows of `out`
// are final, on the worker thread that computed them (so concurrently for disjoint ranges), while
// they are still in its cache: an output stage can consume them there instead of in a second pass.
using RowsDone = std::function<void(std::int64_t r0, std::int64_t r1)>;
void exact_sums(const IntGemmProblem& p, bool subtract, ByteOffsets offsets, Isa isa, AccumulatorValues& out,
                const RowsDone* done = nullptr);

// min and max of v[0, n) (n >= 1) with the chosen build's vector instructions (the oracle itself is
// built for baseline x86-64, which has no packed 32-bit min/max).
void minmax(const std::int32_t* v, std::int64_t n, std::int32_t& lo, std::int32_t& hi);

// ---- Internal: what the per-ISA files implement ------------------------------------------------

// A run of K inside one segment, at most kPieceK long, and where it starts in the packed K (each
// piece padded to a multiple of 4 with zeros).
struct Piece {
  std::int64_t k0 = 0, len = 0, packed = 0, packed_len = 0, segment = 0;
  bool first = false;  // the segment's first piece: its tiles store, the later ones add
};

// One panel to pack (int_gemm_pack.hpp): `lines` lines of src (line i at src + i*K, raw values),
// or of `bytes` (line i's value k at bytes[i * line_stride + k * k_stride], u8 or s8), plus
// `offset`, into a panel of width W over packed_k values of K.
struct PackJob {
  const std::int32_t* src = nullptr;
  const void* bytes = nullptr;
  bool bytes_signed = false;
  std::int64_t line_stride = 0, k_stride = 1;
  std::int64_t K = 0, lines = 0;
  int W = 0;
  std::int32_t offset = 0;
  const Piece* pieces = nullptr;
  std::size_t piece_count = 0;
  std::int64_t packed_k = 0;
  void* dst = nullptr;
  std::int64_t* sums = nullptr;  // null, or sums[l * S + segment] += each line's offset values
  std::int64_t S = 1;
};
using PackFn = void (*)(const PackJob&);
using MinMaxFn = void (*)(const std::int32_t*, std::int64_t, std::int32_t&, std::int32_t&);
// v[i * stride] -= row_term + w[i] for i < n, wrapping (the offset correction's step per element).
using SubtractFn = void (*)(std::uint64_t* v, std::int64_t stride, const std::uint64_t* w, std::uint64_t row_term,
                            std::int64_t n);

// One MR x NR tile over one piece: c[i*rs + j*cs] += Σ_{k < kp} a[..]·b[..] for i < rows, j < cols
// (= instead of += when `store`). a: the packed A panel at the piece's start, b: the packed B panel
// at the piece's start; kp a multiple of 4.
using TileKernel = void (*)(const void* a, const void* b, std::int64_t kp, std::int64_t* c, std::int64_t rs,
                            std::int64_t cs, int rows, int cols, bool store);

struct KernelShape {
  int mr = 0, nr = 0;
  int group = 4;      // k values per lane in the packed layout: 4 bytes (vpdpbusd) or 2 int16 (vpmaddwd)
  bool wide = false;  // operands packed as int16 (else bytes)
  TileKernel kernel = nullptr;
  PackFn pack_a = nullptr, pack_b = nullptr;
  MinMaxFn minmax = nullptr;
  SubtractFn subtract = nullptr;
};
KernelShape kernel_generic();
KernelShape kernel_avx2();
KernelShape kernel_avx512_vnni();

}  // namespace qc::int_gemm
