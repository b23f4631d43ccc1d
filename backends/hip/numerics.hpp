// The element-level numerics of the hip backend: every quantize, dequantize and requantize
// element, the GEMM/conv epilogue, the rounding helpers and the int4 nibbles. Each function is
// __host__ __device__: the kernels (kernels.hip) call them on the GPU and the host unit tests
// (tests/hip/numerics_test.cpp) call the very same code on the CPU against the oracle, so the
// numerics of every variant are verified without a GPU.
//
// One definition, two executions. Each IEEE operation is a separate call that rounds once:
//   device  __fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn, __frcp_rn, __fmaf_rn (CUDA Math API
//           "intrinsic" functions: IEEE round-to-nearest-even, and never merged into an FMA by the
//           compiler), f32 -> f16 by __float2half_rn;
//   host    the plain operator in a translation unit built with -ffp-contract=off (the
//           qconform_strict_fp target), std::fma, and an exact software f32 -> f16 rounding.
// Both are correctly rounded IEEE binary32 operations, so they give the same bits; the host
// tests show that each composition equals the oracle's policy. Translation units that include
// this header on the host must be compiled without FMA contraction and without fast-math.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIP__)
#define QC_HD __host__ __device__ inline
#else
#define QC_HD inline
#endif

// The device pass of nvcc (NVIDIA) or hipcc (AMD).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define QC_DEVICE_PASS 1
#endif

// Full unrolling of small fixed loops, so that register arrays stay in registers on the GPU (the
// host compilers do not know the pragma).
#if defined(QC_DEVICE_PASS)
#define QC_UNROLL _Pragma("unroll")
#else
#define QC_UNROLL
#endif

#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#include <cuda_fp16.h>
#elif defined(__HIP__)
#include <hip/hip_fp16.h>
#endif

#include <cmath>

namespace qc::gpu {

// ---- The numerics recipe of one backend variant -----------------------------------------------

// Quantize: how x and the scale s (and the zero point zp) meet before the final rounding.
enum class QuantizeForm : std::uint8_t {
  divide,      // round(x / s) + zp, zp added in integers (ORT CUDA RoundStd: __float2int_rn(v / scale) + zp)
  reciprocal,  // round(x * (1/s)) + zp, 1/s rounded first (PyTorch and FBGEMM style)
  affine,      // round(x * (1/s) + zp), zp added in float (PyTorch CUDA fake_quantize_slice_cuda)
};

// Dequantize: (q - zp) * s with the subtraction in integers, or q * s - zp * s.
enum class DequantizeForm : std::uint8_t {
  subtract_then_multiply,  // float(q - zp) * s (ORT CUDA DequantizeLinearKernel)
  affine,                  // q * s - zp * s (TFLite ScaleWithNewZeroPoint)
};

// The float -> integer rounding of quantize and requantize. (Kernels that call rintf need no
// third value: the CUDA Math API documents rintf, like __float2int_rn, as round half to even.)
enum class Rounding : std::uint8_t {
  float2int_rn,  // __float2int_rn: ties to even
  roundf,        // (int)roundf(v): ties away from zero
};

struct Recipe {
  QuantizeForm quantize = QuantizeForm::divide;
  DequantizeForm dequantize = DequantizeForm::subtract_then_multiply;
  // The affine forms' multiply-add as one fused operation (one rounding), which is what nvcc's
  // default --fmad=true makes of x * inv + zp; false: a multiply and an add, each rounded.
  bool fma = false;
  // binary16 arithmetic where the scale is an f16 value (ORT CUDA's half kernels, MIGraphX's GPU
  // lowering in the scale's type); otherwise every scale is widened to f32 (exactly) first.
  bool half_arithmetic = false;
  Rounding rounding = Rounding::float2int_rn;
};

// ---- IEEE binary32 operations, one rounding each ---------------------------------------------

QC_HD float mul_rn(float a, float b) {
#if defined(QC_DEVICE_PASS)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
QC_HD float add_rn(float a, float b) {
#if defined(QC_DEVICE_PASS)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
QC_HD float sub_rn(float a, float b) {
#if defined(QC_DEVICE_PASS)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
QC_HD float div_rn(float a, float b) {
#if defined(QC_DEVICE_PASS)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
// 1/s correctly rounded (__frcp_rn is the IEEE reciprocal, not the approximate rcp).
QC_HD float rcp_rn(float s) {
#if defined(QC_DEVICE_PASS)
  return __frcp_rn(s);
#else
  return 1.0f / s;
#endif
}
QC_HD float fma_rn(float a, float b, float c) {
#if defined(QC_DEVICE_PASS)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
// Integers to f32, ties to even (cvt.rn.f32.s32 / s64; the host conversion in the default mode).
QC_HD float to_float(std::int64_t v) { return static_cast<float>(v); }

// ---- binary16 -----------------------------------------------------------------------------------

// x rounded to the nearest binary16 value (ties to even, overflow to infinity), as an f32.
QC_HD float round_to_f16(float x) {
#if defined(QC_DEVICE_PASS)
  return __half2float(__float2half_rn(x));
#else
  // Exact software rounding: a binary16 value is a multiple of its quantum q = 2^(e - 10) (2^-24
  // below the normal range 2^-14), so rint(|x| / q) * q rounds |x| to nearest even on that grid;
  // the scaling by powers of two is exact.
  if (x != x) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(INFINITY, x);  // 65504 + half a step rounds to infinity
  if (a == 0.0f) return x;
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): the binade's quantum is 2^(e - 1 - 10)
  const int quantum_exp = e - 11 < -24 ? -24 : e - 11;
  const float r = std::ldexp(std::rint(std::ldexp(a, -quantum_exp)), quantum_exp);
  return std::copysign(r, x);
#endif
}

// The binary16 bit pattern of x rounded to nearest even.
QC_HD std::uint16_t f16_bits(float x) {
#if defined(QC_DEVICE_PASS)
  return __half_as_ushort(__float2half_rn(x));
#else
  const float v = round_to_f16(x);
  const std::uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
  if (v != v) return static_cast<std::uint16_t>(0x7E00u | sign);
  const float a = std::fabs(v);
  if (a == INFINITY) return static_cast<std::uint16_t>(0x7C00u | sign);
  if (a < 0x1p-14f) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::ldexp(a, 24)));
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): biased exponent e - 1 + 15
  const auto fraction = static_cast<std::uint16_t>(std::ldexp(m, 11) - 1024.0f);
  return static_cast<std::uint16_t>(sign | ((e + 14) << 10) | fraction);
#endif
}

// ---- Rounding to integers -----------------------------------------------------------------------

// The integer nearest to v under `r`, as the kernels define it on every platform: NaN gives 0 and
// values outside int32 saturate. (The CUDA Math API leaves out-of-range __float2int_rn undefined,
// so the kernels never rely on it: the range is settled first. NaN -> 0 is also what the
// hardware conversions do: PTX cvt.rni.s32.f32, AMD v_cvt_i32_f32.)
QC_HD std::int32_t round_to_int32(float v, Rounding r) {
  if (v != v) return 0;
  if (v >= 2147483648.0f) return 2147483647;
  if (v < -2147483648.0f) return -2147483647 - 1;
  // |v| < 2^31 here, and a float that large is already an integer, so the casts are in range.
  switch (r) {
    case Rounding::float2int_rn:
#if defined(__CUDA_ARCH__)
      return __float2int_rn(v);
#else
      return static_cast<std::int32_t>(rintf(v));  // the default rounding mode: ties to even
#endif
    case Rounding::roundf:
      return static_cast<std::int32_t>(roundf(v));
  }
  return 0;
}

QC_HD std::int64_t clamp64(std::int64_t v, std::int64_t lo, std::int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// ---- Parameter indexing (per tensor, per axis, blocked) ---------------------------------------

// Which scale and zero point the element at flat index i of a row-major tensor uses: the same map
// as qc::ParamIndexer (oracles/qparams.hpp). dim = 0: per tensor; else the axis has length dim
// and `inner` elements follow each of its steps; block > 0: blocked along the axis, nblocks =
// ceil(dim / block) (the last block may be short).
struct ParamLayout {
  std::int64_t dim = 0, inner = 1, block = 0, nblocks = 0;
};
QC_HD std::int64_t param_index(std::int64_t i, const ParamLayout& p) {
  if (p.dim == 0) return 0;
  const std::int64_t c = (i / p.inner) % p.dim;
  if (p.block == 0) return c;
  const std::int64_t outer = i / (p.inner * p.dim);
  return (outer * p.nblocks + c / p.block) * p.inner + i % p.inner;
}

// ---- Quantize -----------------------------------------------------------------------------------

// One quantized element. x: the input (f32, or an f16/bf16 value widened exactly); s: the scale
// (an f32 value, or an f16 value when `half_scale`); zp: the zero point; [lo, hi]: the output
// format's range. The result is clamped in integers after the rounding (and after adding zp for
// the divide and reciprocal forms).
QC_HD std::int32_t quantize_element(float x, float s, std::int32_t zp, std::int32_t lo, std::int32_t hi,
                                    const Recipe& r, bool half_scale) {
  float t = 0.0f;
  bool zp_added = false;
  if (r.half_arithmetic && half_scale) {
    // __hdiv(x_h, s_h): x converted to binary16, the quotient rounded to binary16. An f32 division
    // of two binary16 values rounded to binary16 is the correctly rounded binary16 quotient (f32
    // carries 24 >= 2 * 11 + 2 bits, so the double rounding is innocuous: Figueroa, "When is
    // double rounding innocuous?", SIGNUM 1995).
    t = round_to_f16(div_rn(round_to_f16(x), s));
  } else {
    switch (r.quantize) {
      case QuantizeForm::divide:
        t = div_rn(x, s);
        break;
      case QuantizeForm::reciprocal:
        t = mul_rn(x, rcp_rn(s));
        break;
      case QuantizeForm::affine: {
        const float inv = rcp_rn(s);
        const float z = to_float(zp);  // exact: |zp| < 2^24
        t = r.fma ? fma_rn(x, inv, z) : add_rn(mul_rn(x, inv), z);
        zp_added = true;
        break;
      }
    }
  }
  std::int64_t q = round_to_int32(t, r.rounding);
  if (!zp_added) q += zp;
  return static_cast<std::int32_t>(clamp64(q, lo, hi));
}

// ---- Dequantize ---------------------------------------------------------------------------------

// One dequantized element as an f32 value (the caller stores it as f32, or rounds it to f16; a
// binary16 result is already an f16 value, so that rounding is exact). q and zp: any integer
// format's values (|q|, |zp| < 2^32).
QC_HD float dequantize_element(std::int64_t q, float s, std::int64_t zp, const Recipe& r, bool half_scale) {
  if (r.half_arithmetic && half_scale) {
    // __int2half_rn(q - zp) * s_h. (float)(q - zp) is exact below 2^24, and from 65520 up both
    // conversions give infinity, so rounding through f32 equals the direct conversion; the product
    // of two binary16 values is exact in f32 (22 bits), so it is rounded once, to binary16.
    return round_to_f16(mul_rn(round_to_f16(to_float(q - zp)), s));
  }
  switch (r.dequantize) {
    case DequantizeForm::subtract_then_multiply:
      return mul_rn(to_float(q - zp), s);
    case DequantizeForm::affine: {
      const float zs = mul_rn(to_float(zp), s);
      const float qf = to_float(q);
      return r.fma ? fma_rn(qf, s, -zs) : sub_rn(mul_rn(qf, s), zs);
    }
  }
  return 0.0f;
}

// ---- Requantize and the GEMM/conv epilogue --------------------------------------------------

// The requantize multiplier formed left to right in f32: (s_in * s_w) / s_out (ORT
// ComputeOutputScale; XNNPACK init_requantization_scale).
QC_HD float requantize_multiplier(float s_in, float s_w, float s_out) { return div_rn(mul_rn(s_in, s_w), s_out); }

// round(clamp(float(acc) * m, lo - zp, hi - zp)) + zp: the f32 product, clamped in float before
// the rounding (so it never leaves the int32 range), the zero point added in integers.
QC_HD std::int32_t requantize_element(std::int32_t acc, float m, std::int32_t zp, std::int32_t lo, std::int32_t hi,
                                      Rounding rounding) {
  float v = mul_rn(to_float(acc), m);
  const float flo = to_float(std::int64_t{lo} - zp), fhi = to_float(std::int64_t{hi} - zp);  // exact
  v = v < flo ? flo : v > fhi ? fhi : v;
  return static_cast<std::int32_t>(clamp64(std::int64_t{round_to_int32(v, rounding)} + zp, lo, hi));
}

// A dequantized accumulator: float(acc) * fl(s_a * s_w), plus an f32 bias when there is one, each
// operation rounded (the oracle's dequantized output stage in f32).
QC_HD float dequantize_accumulator(std::int32_t acc, float s_a, float s_w, bool has_bias, float bias) {
  const float v = mul_rn(to_float(acc), mul_rn(s_a, s_w));
  return has_bias ? add_rn(v, bias) : v;
}

// acc + b with an int32 accumulator's wrapping addition (two's complement, modulo 2^32).
QC_HD std::int32_t wrapping_add(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
QC_HD std::int32_t wrapping_mul(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

// The zero-point compensation of an int8 GEMM whose operands were stored shifted to s8 (u8 values
// minus 128, with their zero points minus 128): from raw = Σ a'b', row sum Σa', column sum Σb',
//   Σ (a' - za')(b' - zb') = raw - zb'·Σa' - za'·Σb' + K·za'·zb'   (mod 2^32),
// which equals Σ (a - za)(b - zb) mod 2^32 (the shift cancels in each difference): what an int32
// accumulator that wraps holds, however the sum is ordered.
QC_HD std::int32_t compensate(std::int32_t raw, std::int32_t row_sum, std::int32_t col_sum, std::int32_t za,
                              std::int32_t zb, std::int32_t k) {
  std::int32_t v = wrapping_add(raw, -wrapping_mul(zb, row_sum));
  v = wrapping_add(v, -wrapping_mul(za, col_sum));
  return wrapping_add(v, wrapping_mul(wrapping_mul(k, za), zb));
}

// ---- int4 ---------------------------------------------------------------------------------------

// Logical element i of a tensor viewed as [outer, L, inner] with int4 values packed in pairs along
// L (flat packing is L = size, inner = 1): the packed tensor is [outer, ceil(L/2), inner], and
// pair index a/2 holds a = 2k in one nibble and 2k + 1 in the other (qc::pack_int4).
struct NibbleSource {
  std::int64_t byte = 0;
  bool high = false;  // the high nibble
};
QC_HD NibbleSource int4_source(std::int64_t i, std::int64_t length, std::int64_t inner, bool low_first) {
  const std::int64_t in = i % inner, a = (i / inner) % length, outer = i / (inner * length);
  const std::int64_t pairs = (length + 1) / 2;
  return {(outer * pairs + a / 2) * inner + in, ((a % 2) == 1) == low_first};
}
// A nibble as a value: sign-extended (i4, [-8, 7]) or not (u4, [0, 15]).
QC_HD std::int32_t int4_value(std::uint8_t byte, bool high, bool is_signed) {
  const std::int32_t n = high ? (byte >> 4) & 0xF : byte & 0xF;
  return is_signed && n >= 8 ? n - 16 : n;
}
// The byte that holds `first` (element 2k) and `second` (element 2k + 1): each value's low 4 bits.
QC_HD std::uint8_t int4_pack(std::int32_t first, std::int32_t second, bool low_first) {
  const std::uint32_t a = static_cast<std::uint32_t>(first) & 0xFu, b = static_cast<std::uint32_t>(second) & 0xFu;
  return static_cast<std::uint8_t>(low_first ? (b << 4) | a : (a << 4) | b);
}

// Packed byte b of n values viewed as [outer, length, inner] (the inverse of int4_source): byte
// b = (outer * pairs + pair) * inner + in holds elements a = 2 * pair and 2 * pair + 1 of the
// slice (outer, in), the second a zero nibble past an odd length's end.
QC_HD std::uint8_t int4_packed_byte(const std::int32_t* values, std::int64_t b, std::int64_t length, std::int64_t inner,
                                    bool low_first) {
  const std::int64_t pairs = (length + 1) / 2;
  const std::int64_t in = b % inner, pair = (b / inner) % pairs, outer = b / (inner * pairs);
  const std::int64_t first = (outer * length + 2 * pair) * inner + in;
  const bool has_second = 2 * pair + 1 < length;
  return int4_pack(values[first], has_second ? values[first + inner] : 0, low_first);
}

}  // namespace qc::gpu
