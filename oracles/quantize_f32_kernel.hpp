// The body of the f32 quantize kernel (quantize_f32.hpp), included by one source file per ISA, each
// compiled with its own target flags. Everything here has internal linkage (an unnamed namespace),
// so the builds never meet at link time; the includer defines only its entry point:
//   void run_avx2(...) { run_kernel(...); }
#pragma once

#include "oracles/quantize_f32.hpp"
#include "oracles/rounding.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace qc::quantize_f32 {
namespace {

// The body is written without data-dependent branches (compare masks and selects) so the
// compiler vectorizes it; it computes exactly what quantize.cpp's fast_float_element<float>
// computes, for the elements it does not flag. t is clamped to [lo_f, hi_f] first, which is the
// policy's own clamp under float_before and otherwise +-2^30, a bound beyond which every output of
// at most 16 bits saturates anyway. It writes the outputs, the labels and a flag per element it
// cannot settle; returns how many it flagged.
//
// Instantiated per rounding mode and per division or reciprocal. Where the zero point goes is a
// run-time choice: the orders that add it in integers add 0.0f in float instead, which changes
// no value (only the sign of a zero t, which rounds to 0 either way). Outputs are stored as their
// low 8 or 16 bits (OutT unsigned): c lies in the output range, so the bits are the same for a
// signed output.
template <RoundingMode M, bool kRecip, bool kLabels, class OutT>
std::int32_t f32_kernel(const Params& p, const float* __restrict x, OutT* __restrict q, std::uint8_t* __restrict labels,
                        std::uint8_t* __restrict bad, std::int64_t n) {
  const bool int_add = p.order == QuantizeOrder::div_then_add_int || p.order == QuantizeOrder::recip_then_add_int;
  const float s = p.s, inv = 1.0f / p.s, zpf = int_add ? 0.0f : static_cast<float>(p.zp), lo_f = p.lo_f, hi_f = p.hi_f;
  const float min_normal = p.min_normal;
  const bool float_before = p.float_before;
  const std::int32_t off = int_add ? p.zp : 0, lo = p.lo, hi = p.hi;
  std::int32_t flagged = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float xv = x[i];
    const float ax = std::fabs(xv);
    float t = (kRecip ? xv * inv : xv / s) + zpf;
    const bool is_bad = ((ax < min_normal) & (ax != 0.0f)) | !(ax <= std::numeric_limits<float>::max()) |
                        !(std::fabs(t) <= std::numeric_limits<float>::max());
    const bool sat_f = float_before & ((t < lo_f) | (t > hi_f));
    // A NaN would pass the clamp and make the int cast undefined; its element is flagged in `bad`
    // and redone by the slow path, so any finite stand-in does (a select: the loop still vectorizes).
    t = t == t ? t : 0.0f;
    t = std::min(std::max(t, lo_f), hi_f);
    std::int32_t ti = static_cast<std::int32_t>(t);
    float fl = static_cast<float>(ti);
    const std::int32_t adjust = fl > t ? 1 : 0;
    ti -= adjust;
    fl -= static_cast<float>(adjust);
    // Classify t against m = floor(t) + 1/2 rather than forming t - floor(t), which is not
    // exact for small negative t; d = t - m is exact whenever |d| <= 1/4 (Sterbenz), and
    // otherwise far from both the tie and the near-tie band.
    const float d = t - (fl + 0.5f);
    const std::int32_t zero = t == fl, half = (d == 0.0f) & !zero, above = (d > 0.0f) & !zero;
    const std::int32_t up = rounds_up_bits<std::int32_t>(M, zero, half, above, ti & 1, ti < 0);
    const std::int32_t v = ti + up + off;
    const std::int32_t c = std::min(std::max(v, lo), hi);
    q[i] = static_cast<OutT>(c);
    bad[i] = is_bad ? 1 : 0;
    flagged += is_bad ? 1 : 0;
    if constexpr (kLabels) {
      // clear 0, near_tie 1, tie 2 (a tie is also near), saturated 3 (ORs over the others).
      static_assert(static_cast<int>(Label::near_tie) == 1 && static_cast<int>(Label::tie) == 2 &&
                    static_cast<int>(Label::saturated) == 3);
      const bool sat = sat_f | (c != v);
      const bool near = (std::fabs(d) <= static_cast<float>(kNearTieDistance)) & !zero;
      labels[i] = static_cast<std::uint8_t>((static_cast<unsigned>(near) + static_cast<unsigned>(half)) |
                                            (static_cast<unsigned>(sat) * 3u));
    }
  }
  return flagged;
}

template <class OutT>
using KernelFn = std::int32_t (*)(const Params&, const float*, OutT*, std::uint8_t*, std::uint8_t*, std::int64_t);

template <class OutT, RoundingMode M, bool kRecip>
KernelFn<OutT> pick_labels(bool with_labels) {
  return with_labels ? &f32_kernel<M, kRecip, true, OutT> : &f32_kernel<M, kRecip, false, OutT>;
}

template <class OutT, RoundingMode M>
KernelFn<OutT> pick_order(QuantizeOrder o, bool with_labels) {
  switch (o) {
    case QuantizeOrder::div_then_add_int:
    case QuantizeOrder::div_add_float:
      return pick_labels<OutT, M, false>(with_labels);
    case QuantizeOrder::recip_then_add_int:
    case QuantizeOrder::recip_add_float:
      return pick_labels<OutT, M, true>(with_labels);
    case QuantizeOrder::fma_recip:
    case QuantizeOrder::round_then_add_float:
    case QuantizeOrder::recip_round_then_add_float:
      break;  // not taken: quantize.cpp keeps these orders on the scalar path
  }
  return nullptr;
}

template <class OutT>
KernelFn<OutT> pick(RoundingMode m, QuantizeOrder o, bool with_labels) {
  switch (m) {
    case RoundingMode::rne:
      return pick_order<OutT, RoundingMode::rne>(o, with_labels);
    case RoundingMode::rna:
      return pick_order<OutT, RoundingMode::rna>(o, with_labels);
    case RoundingMode::rhu:
      return pick_order<OutT, RoundingMode::rhu>(o, with_labels);
    case RoundingMode::rhd:
      return pick_order<OutT, RoundingMode::rhd>(o, with_labels);
    case RoundingMode::rtz:
      return pick_order<OutT, RoundingMode::rtz>(o, with_labels);
    case RoundingMode::floor:
      return pick_order<OutT, RoundingMode::floor>(o, with_labels);
    case RoundingMode::ceil:
      return pick_order<OutT, RoundingMode::ceil>(o, with_labels);
  }
  return nullptr;
}

template <class OutT>
void run_typed(const Params& p, const float* x, std::int64_t n, OutT* q, Label* labels, std::int64_t base,
               std::vector<std::int64_t>& slow) {
  // The flags go to a small reused buffer (it stays in L1), scanned only when the kernel flagged any.
  constexpr std::int64_t kChunk = 4096;
  alignas(64) std::uint8_t bad[kChunk];
  const KernelFn<OutT> k = pick<OutT>(p.mode, p.order, labels != nullptr);
  auto* label_bytes = reinterpret_cast<std::uint8_t*>(labels);
  for (std::int64_t cb = 0; cb < n; cb += kChunk) {
    const std::int64_t m = std::min(kChunk, n - cb);
    const std::int32_t flagged = k(p, x + cb, q + cb, labels ? label_bytes + cb : nullptr, bad, m);
    if (flagged == 0) continue;
    for (std::int64_t i = 0; i < m; ++i)
      if (bad[i]) slow.push_back(base + cb + i);
  }
}

void run_kernel(const Params& p, Out out, const float* x, std::int64_t n, void* q, Label* labels, std::int64_t base,
                std::vector<std::int64_t>& slow) {
  static_assert(sizeof(Label) == 1);
  if (out == Out::s8 || out == Out::u8)
    run_typed(p, x, n, static_cast<std::uint8_t*>(q), labels, base, slow);
  else
    run_typed(p, x, n, static_cast<std::uint16_t*>(q), labels, base, slow);
}

}  // namespace
}  // namespace qc::quantize_f32
