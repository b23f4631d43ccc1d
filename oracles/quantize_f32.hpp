// The quantize fast path's vector kernel: f32 input, f32 arithmetic, outputs of at most 16 bits,
// saturating (the common case: ONNX, ORT, TFLite, XNNPACK). Built once per x86 ISA
// (quantize_f32_avx2.cpp, quantize_f32_avx512.cpp; generic code elsewhere) and chosen at run time,
// because the oracle itself is built for baseline x86-64 and SSE2 alone leaves 4 lanes and no
// packed rounding. Every variant computes the same values: the kernel uses only IEEE operations that
// are exact or correctly rounded in any vector width (no contraction, no reassociation), and the
// property test compares each variant the machine has with the generic one.
#pragma once

#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "qconform/rounding_mode.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace qc::quantize_f32 {

// Fixed for one run of elements sharing a scale and zero point.
struct Params {
  float s = 1;
  std::int32_t zp = 0;
  float lo_f = 0, hi_f = 0;  // t is clamped to [lo_f, hi_f] (the policy's clamp under float_before)
  bool float_before = false;
  std::int32_t lo = 0, hi = 0;  // the output range
  float min_normal = 0;         // nonzero inputs below it are subnormal: flagged for the slow path
  RoundingMode mode = RoundingMode::rne;
  QuantizeOrder order = QuantizeOrder::div_then_add_int;  // one of the first four orders
};

enum class Out : std::uint8_t { s8, u8, s16, u16 };

// Quantizes x[0, n) into q (elements of `out`) and, unless null, labels. Every element the kernel
// cannot settle (NaN, infinities, subnormal inputs, an overflowing quotient) gets base + i appended
// to `slow`, and its q and label are left for the slow path to overwrite.
using Kernel = void (*)(const Params& p, Out out, const float* x, std::int64_t n, void* q, Label* labels,
                        std::int64_t base, std::vector<std::int64_t>& slow);

struct Variant {
  const char* isa;  // "generic", "avx2", "avx512"
  Kernel kernel;
};

// The variants this machine can run, generic first; the last is the fastest.
std::span<const Variant> variants();

// The kernel quantize uses: the fastest variant, unless QCONFORM_ORACLE_ISA names another one
// (for checking a result on the path an older machine takes). Read once per process.
Kernel kernel();
// The variant of that name, or the fastest for null or ""; InputError for a name this machine lacks.
Kernel kernel_named(const char* isa);

// One entry point per build of quantize_f32_kernel.hpp.
void run_generic(const Params&, Out, const float*, std::int64_t, void*, Label*, std::int64_t,
                 std::vector<std::int64_t>&);
void run_avx2(const Params&, Out, const float*, std::int64_t, void*, Label*, std::int64_t, std::vector<std::int64_t>&);
void run_avx512(const Params&, Out, const float*, std::int64_t, void*, Label*, std::int64_t,
                std::vector<std::int64_t>&);

}  // namespace qc::quantize_f32
