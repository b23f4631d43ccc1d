// The ideal requantize scheme (RequantizeScheme::ideal: round(acc * s_a*s_b/s_out) + zp exactly,
// under any rounding mode and zero-point placement, saturating) over a row of a GEMM's accumulators
// in double arithmetic, with the element label of requantize.hpp. It decides an element only where
// a proven error bound puts the exact value strictly inside one rounding decision; every other
// element is flagged for the exact path (qlinear.cpp's per-element evaluation, which owns the
// rules). Built once per x86 ISA (requantize_rows_avx2.cpp, requantize_rows_avx512.cpp; generic
// code elsewhere) and chosen at run time like the quantize kernel (quantize_f32.hpp): every build
// computes the same values, with IEEE operations that are correctly rounded in any vector width.
#pragma once

#include "oracles/labels.hpp"
#include "qconform/rounding_mode.hpp"

#include <cstdint>
#include <span>

namespace qc::requantize_rows {

// Fixed for one row. The multiplier of element i is row_factor * column_factor[i] as the kernel
// rounds it: row_factor = s_a (a double, exact) and column_factor[i] = s_b / s_out rounded to
// double; each must lie in [2^-500, 2^500] (usable_factor), or be NaN, which flags the element.
struct Params {
  double row_factor = 1;
  double zp = 0;           // the output zero point
  bool zp_before = false;  // ZeroPointAdd::float_before_rounding: zp enters the rounded value
  double lo = 0, hi = 0;   // the output range (the policy's clamp: saturating, not wrapping)
  RoundingMode mode = RoundingMode::rne;
};

// Whether a row or column factor keeps the kernel's products inside its error bound.
constexpr bool usable_factor(double f) { return f >= 0x1p-500 && f <= 0x1p500; }

enum class Out : std::uint8_t { s8, u8, s16, u16, s32 };

// Where one row goes: n outputs of format `out` at y, their labels, and two scratch arrays of n.
struct Row {
  std::int64_t n = 0;
  Out out = Out::s8;
  void* y = nullptr;
  Label* labels = nullptr;
  std::int64_t* q = nullptr;     // scratch: the integers
  std::int64_t* code = nullptr;  // scratch: label | kFlagged, per element (read by the caller)
};
inline constexpr std::int64_t kFlagged = 4;

// Requantizes acc[0, n) into y (clamped to [lo, hi]) and labels (clear, near_tie or saturated as
// requantize.hpp defines them against the exact value); code[i] has kFlagged where the kernel
// cannot decide (y and the label are then unspecified). Returns how many it flagged, or -1 (nothing
// written) when some |acc| >= 2^51, beyond a double's exact integers with room for the kernel's
// conversion. The arithmetic runs in 64-bit lanes (bytes in the same loop would make the
// vectorizer take 64 elements at a time, more than the registers hold); narrowing loops follow.
using Kernel = std::int64_t (*)(const Params& p, const std::int64_t* acc, const double* column_factor, Row row);

struct Variant {
  const char* isa;  // "generic", "avx2", "avx512"
  Kernel kernel;
};

// The variants this machine can run, generic first; the last is the fastest.
std::span<const Variant> variants();
// The variant qgemm uses: the fastest, unless QCONFORM_ORACLE_ISA names another one. Read once.
Kernel kernel();

// One entry point per build of requantize_rows_kernel.hpp.
std::int64_t run_generic(const Params&, const std::int64_t*, const double*, Row);
std::int64_t run_avx2(const Params&, const std::int64_t*, const double*, Row);
std::int64_t run_avx512(const Params&, const std::int64_t*, const double*, Row);

}  // namespace qc::requantize_rows
