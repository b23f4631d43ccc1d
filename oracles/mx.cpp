#include "oracles/mx.hpp"

#include "oracles/ieee.hpp"
#include "oracles/rounding.hpp"
#include "qconform/dtype.hpp"
#include "qconform/error.hpp"
#include "qconform/qparams.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace qc {
namespace {

constexpr int kE8M0Min = -127, kE8M0Max = 127;
constexpr std::uint64_t kE8M0Nan = 0xFF;

// OCP MX v1.0 table 1 (and 5.3.3 for INT8: two's complement with an implied scale of 2^-6).
const MxElement kE4M3{8, 3, -6, 8, 448.0, false};
const MxElement kE5M2{8, 2, -14, 15, 57344.0, false};
const MxElement kE3M2{6, 2, -2, 4, 28.0, false};
const MxElement kE2M3{6, 3, 0, 2, 7.5, false};
const MxElement kE2M1{4, 1, 0, 2, 6.0, false};
const MxElement kInt8{8, 6, 0, 0, 127.0 / 64.0, true};

bool is_power_of_two(const Rational& a) { return a == pow2(floor_log2(a)); }

int ceil_log2(const Rational& a) { return floor_log2(a) + (is_power_of_two(a) ? 0 : 1); }

// The indexer from a flat element index to its block's flat index in the scales.
ParamIndexer block_indexer(const MxBlocking& b, const Shape& x) {
  QuantParams p;
  p.axis = b.axis;
  p.block_size = b.block_size;
  return ParamIndexer(p, x);
}

ExactFloat exact_of_double(double v) {
  if (std::isnan(v)) return ExactFloat::nan();
  if (std::isinf(v)) return ExactFloat::inf(v < 0);
  return ExactFloat::finite(Rational(v), std::signbit(v));
}

// The element code of r (a value of the element grid, sign from `negative` for zero).
std::uint64_t element_code(const Rational& r, bool negative, const MxElement& e) {
  if (e.is_int) {
    const BigInt k = numerator(r * pow2(6));
    return static_cast<std::uint64_t>(k.convert_to<std::int64_t>()) & 0xFF;
  }
  const std::uint64_t sign = negative ? std::uint64_t{1} << (e.bits - 1) : 0;
  if (r == 0) return sign;
  const Rational a = abs(r);
  const int ex = floor_log2(a);
  if (ex < e.emin) return sign | numerator(a * pow2(e.mbits - e.emin)).convert_to<std::uint64_t>();
  const std::uint64_t m = numerator(a * pow2(e.mbits - ex)).convert_to<std::uint64_t>();
  const auto field = static_cast<std::uint64_t>(ex - e.emin + 1);
  return sign | (field << e.mbits) | (m - (std::uint64_t{1} << e.mbits));
}

}  // namespace

ExactFloat mx_element_value(std::uint64_t code, MxFormat f) {
  const MxElement& e = mx_element(f);
  if (code >> e.bits != 0)
    throw InputError("mx_dequantize: element code " + std::to_string(code) + " has more than " +
                     std::to_string(e.bits) + " bits");
  if (f == MxFormat::mxfp8_e4m3) return decode_float(DType::f8e4m3fn, code);
  if (f == MxFormat::mxfp8_e5m2) return decode_float(DType::f8e5m2, code);
  if (e.is_int) {
    const auto k = static_cast<std::int8_t>(static_cast<std::uint8_t>(code));
    return ExactFloat::finite(Rational(k) * pow2(-6), k < 0);
  }
  const bool neg = (code >> (e.bits - 1)) != 0;
  const std::uint64_t field = (code >> e.mbits) & ((std::uint64_t{1} << (e.bits - 1 - e.mbits)) - 1);
  const std::uint64_t frac = code & ((std::uint64_t{1} << e.mbits) - 1);
  Rational v = field == 0 ? Rational(BigInt(frac)) * pow2(e.emin - e.mbits)
                          : Rational(BigInt(frac + (std::uint64_t{1} << e.mbits))) *
                                pow2(static_cast<int>(field) - 1 + e.emin - e.mbits);
  if (neg) v = -v;
  return ExactFloat::finite(v, neg);
}

ExactFloat mx_block_scale(std::uint64_t code, const MxBlocking& b) {
  if (b.format == MxFormat::nvfp4)
    return Arith::exact().mul(decode_float(DType::f8e4m3fn, code), ExactFloat::finite(Rational(*b.global_scale)));
  return code == kE8M0Nan ? ExactFloat::nan() : ExactFloat::finite(pow2(static_cast<int>(code) + kE8M0Min));
}

namespace {

// Where v lies against the element grid before the rounding: the label of an element.
Label element_label(const Rational& v, const MxElement& e) {
  if (abs(v) > Rational(e.max)) return Label::saturated;
  if (v == 0) return Label::clear;
  const int q = e.is_int ? -6 : std::max(floor_log2(v), e.emin) - e.mbits;
  const Rational scaled = abs(v) * pow2(-q);
  Fraction where{};
  const BigInt fl = floor_with_fraction(scaled, where);
  if (where == Fraction::half) return Label::tie;
  if (where == Fraction::zero) return Label::clear;
  if (abs(scaled - Rational(fl) - Rational(1, 2)) <= Rational(kNearTieDistance)) return Label::near_tie;
  return Label::clear;
}

Rational f32_round(const Rational& v) { return round_to_format(DType::f32, v).value; }

}  // namespace

const MxElement& mx_element(MxFormat f) {
  switch (f) {
    case MxFormat::mxfp8_e4m3:
      return kE4M3;
    case MxFormat::mxfp8_e5m2:
      return kE5M2;
    case MxFormat::mxfp6_e3m2:
      return kE3M2;
    case MxFormat::mxfp6_e2m3:
      return kE2M3;
    case MxFormat::mxfp4:
    case MxFormat::nvfp4:
      return kE2M1;
    case MxFormat::mxint8:
      return kInt8;
  }
  return kE4M3;
}

int mx_axis(const MxBlocking& b, const Shape& x, const std::string& where) {
  const auto rank = static_cast<std::int64_t>(x.size());
  const int a = resolve_axis(b.axis, rank);
  if (rank == 0 || a < 0 || a >= rank)
    throw InputError(where + ": field 'axis': " + std::to_string(b.axis) + " is out of range for rank " +
                     std::to_string(rank));
  if (b.block_size <= 0)
    throw InputError(where + ": field 'block_size': must be positive, got " + std::to_string(b.block_size));
  mx_check_global_scale(b.global_scale, b.format, where + ": field 'global_scale'");
  return a;
}

void mx_check_global_scale(const std::optional<double>& global_scale, MxFormat f, const std::string& field) {
  if (!global_scale) return;
  if (f != MxFormat::nvfp4) throw InputError(field + ": only NVFP4 has a per-tensor scale");
  const double g = *global_scale;
  if (!(g > 0) || !std::isfinite(g) || static_cast<double>(static_cast<float>(g)) != g)
    throw InputError(field + ": must be a positive finite f32 value, got " + std::to_string(g));
}

Shape mx_scale_shape(const MxBlocking& b, const Shape& x) {
  Shape s = x;
  const auto a = static_cast<std::size_t>(mx_axis(b, x, "mx"));
  s[a] = (x[a] + b.block_size - 1) / b.block_size;
  return s;
}

std::optional<int> mx_shared_exponent(const ExactFloat& amax, MxFormat f, MxScaleRule rule) {
  if (!amax.is_finite()) return std::nullopt;
  const MxElement& e = mx_element(f);
  const Rational a = abs(amax.value);
  if (a == 0) return kE8M0Min;  // torchao: the f32 exponent field 0 gives -127 - emax, clamped to -127
  int x = 0;
  switch (rule) {
    // OCP MX v1.0 6.3: shared_exp = floor(log2(max_i |V_i|)) - emax_elem (torchao
    // mx_tensor.py::to_mx ScaleCalculationMode.FLOOR; microxcaling mx/mx_ops.py::_shared_exponents).
    case MxScaleRule::floor:
      x = floor_log2(a) - e.emax;
      break;
    // torchao mx_tensor.py::to_mx ScaleCalculationMode.CEIL: one more when amax's f32 mantissa is nonzero.
    case MxScaleRule::ceil:
      x = ceil_log2(a) - e.emax;
      break;
    // torchao mx_tensor.py::to_mx ScaleCalculationMode.EVEN: amax's f32 bits + 2^(22 - mbits), then its
    // exponent: amax rounded half up to mbits + 1 significant bits, then floor.
    case MxScaleRule::even: {
      const int fl = floor_log2(a);
      const bool carries = a * pow2(-fl) >= Rational(2) - pow2(-(e.mbits + 1));
      x = fl + (carries ? 1 : 0) - e.emax;
      break;
    }
    // cuBLAS block quantization (docs.nvidia.com/cuda/cublas "1D block quantization") as torchao
    // mx_tensor.py::_to_mx_rceil writes it: descale = amax * (1 / max_elem) in f32, then E8M0 rounded
    // up (cvt.rp.ue8m0x2.f32; _f32_to_e8m0_rceil).
    case MxScaleRule::rceil: {
      const Rational descale = f32_round(a * f32_round(Rational(1) / Rational(e.max)));
      if (descale == 0) return kE8M0Min;
      x = ceil_log2(descale);
      break;
    }
  }
  if (x > kE8M0Max) return std::nullopt;
  return std::max(x, kE8M0Min);
}

Rational mx_round_element(const Rational& v, MxFormat f, RoundingMode m) {
  const MxElement& e = mx_element(f);
  if (v == 0) return 0;
  const int q = e.is_int ? -6 : std::max(floor_log2(v), e.emin) - e.mbits;  // the grid step at |v|
  const Rational r = Rational(round_to_integer(v * pow2(-q), m)) * pow2(q);
  const Rational maxv(e.max);
  if (r > maxv) return maxv;
  if (r < -maxv) return -maxv;
  return r;
}

namespace {

// ---- The definition, element by element ------------------------------------------------------
//
// mx_quantize's definition evaluates each step on exact rationals (the block's largest magnitude as
// an ExactFloat, mx_shared_exponent, mx_round_element, element_code, element_label, f32 steps through
// Arith); the fast path below hands an element or an NVFP4 block to these same functions whenever its
// arguments do not hold, and OraclePath::slow takes them for every element.

void mx_check_quantize(const MxQuantizeOp& op) {
  const DType xt = op.x.dtype();
  if (xt != DType::f32 && xt != DType::f16 && xt != DType::bf16)
    throw InputError("mx_quantize: field 'input.dtype': needs f32, f16 or bf16 values, got " + std::string(name(xt)));
  if (op.element_rounding != RoundingMode::rne && op.element_rounding != RoundingMode::rna)
    throw InputError("mx_quantize: field 'rounding': rne (OCP) or rna (microxcaling), got " +
                     std::string(name(op.element_rounding)));
  if (op.blocking.format == MxFormat::mxint8 && op.scale_rule != MxScaleRule::floor)
    throw InputError("mx_quantize: field 'scale_rule': MXINT8 takes the OCP rule (floor) only");
  (void)mx_axis(op.blocking, op.x.shape(), "mx_quantize");
}

MxQuantizeResult mx_empty_result(const MxQuantizeOp& op, const Shape& sshape) {
  return MxQuantizeResult{Tensor(DType::f32, op.x.shape()), Tensor(DType::u8, op.x.shape()), Tensor(DType::u8, sshape),
                          std::nullopt, std::vector<Label>(static_cast<std::size_t>(op.x.size()), Label::clear)};
}

// An element whose block or quotient is NaN or infinite: NaN, code 0, special.
void mx_set_special(MxQuantizeResult& res, std::int64_t i) {
  res.y.set_double(i, std::nan(""));
  res.elements.set_bits(i, 0);
  res.labels[static_cast<std::size_t>(i)] = Label::special;
}

// Element i (value xd) of an MX block with shared exponent s (nullopt: the NaN scale).
void mx_element_exact(MxQuantizeResult& res, std::int64_t i, double xd, const std::optional<int>& s,
                      const MxQuantizeOp& op, const MxElement& e) {
  if (!s) {  // the NaN scale: every value of the block is NaN
    mx_set_special(res, i);
    return;
  }
  const ExactFloat v = exact_of_double(xd);
  const Rational scaled = v.value * pow2(-*s);
  const Rational p = mx_round_element(scaled, op.blocking.format, op.element_rounding);
  res.elements.set_bits(i, element_code(p, v.negative, e));
  const ExactFloat y = round_to_format(DType::f32, p * pow2(*s));
  res.y.set_bits(i, encode_float(DType::f32, y.is_finite() && y.value == 0 ? ExactFloat::finite(0, v.negative) : y));
  res.labels[static_cast<std::size_t>(i)] = element_label(scaled, e);
}

// NVFP4's per-tensor scale g: the given one, or torchao nvfp4_tensor.py::per_tensor_amax_to_scale:
// amax.to(float32) / (F8E4M3_MAX * F4_E2M1_MAX), in f32.
ExactFloat nvfp4_global_scale(const MxBlocking& b, const ExactFloat& tensor_amax) {
  if (b.global_scale) return ExactFloat::finite(Rational(*b.global_scale));
  return Arith::in(DType::f32).div(tensor_amax, ExactFloat::finite(448 * 6));
}

struct Nvfp4BlockExact {
  std::uint64_t code = 0;  // the E4M3 scale code
  ExactFloat s8, total;    // its value, and g * s8 in f32
};

// An NVFP4 block's scale from its largest magnitude, each step in f32 as torchao's _nvfp4_quantize.
Nvfp4BlockExact nvfp4_block_exact(const ExactFloat& amax, const ExactFloat& g) {
  const Arith f32 = Arith::in(DType::f32);
  const ExactFloat blk = f32.div(amax, ExactFloat::finite(6));  // block_scale
  ExactFloat s = f32.div(blk, g);                               // scaled_block_scales
  // torch.clamp(s, min=E4M3_EPS = 2^-6, max=448) keeps NaN; then .to(float8_e4m3fn), ties to even.
  if (s.is_inf() || (s.is_finite() && s.value > 448)) s = ExactFloat::finite(448);
  if (s.is_finite() && s.value < pow2(-6)) s = ExactFloat::finite(pow2(-6));
  Nvfp4BlockExact r;
  r.code = encode_float(DType::f8e4m3fn, s, RoundingMode::rne, Overflow::saturate);
  r.s8 = decode_float(DType::f8e4m3fn, r.code);
  r.total = f32.mul(g, r.s8);
  return r;
}

// Element i (value xd) of an NVFP4 block: d = x / (g * s8) in f32, clamped to +-6 and rounded to E2M1;
// the value p * s8 * g rounded once into f32.
void nvfp4_element_exact(MxQuantizeResult& res, std::int64_t i, double xd, const ExactFloat& s8,
                         const ExactFloat& total, const ExactFloat& g, RoundingMode m, const MxElement& e) {
  const ExactFloat v = exact_of_double(xd);
  const ExactFloat d = Arith::in(DType::f32).div(v, total);
  if (!d.is_finite() || !s8.is_finite() || !g.is_finite()) {
    mx_set_special(res, i);
    return;
  }
  const Rational p = mx_round_element(d.value, MxFormat::nvfp4, m);  // clamp to +-6, then e2m1
  res.elements.set_bits(i, element_code(p, d.negative, e));
  const ExactFloat y = round_to_format(DType::f32, p * s8.value * g.value);
  res.y.set_bits(i, encode_float(DType::f32, y.is_finite() && y.value == 0 ? ExactFloat::finite(0, d.negative) : y));
  res.labels[static_cast<std::size_t>(i)] = element_label(d.value, e);
}

MxQuantizeResult mx_quantize_definition(const MxQuantizeOp& op) {
  const Tensor& x = op.x;
  const MxBlocking& b = op.blocking;
  const MxElement& e = mx_element(b.format);
  const Shape sshape = mx_scale_shape(b, x.shape());
  MxQuantizeResult res = mx_empty_result(op, sshape);
  const ParamIndexer block_of = block_indexer(b, x.shape());
  // Each block's largest magnitude (NaN or inf when it holds one).
  const std::int64_t nblocks = numel(sshape);
  std::vector<ExactFloat> amax(static_cast<std::size_t>(nblocks), ExactFloat::finite(0));
  ExactFloat tensor_amax = ExactFloat::finite(0);
  const auto fold = [](ExactFloat& into, const ExactFloat& v) {
    if (into.is_nan()) return;
    if (v.is_nan() || v.is_inf()) {
      into = v.is_nan() ? ExactFloat::nan() : ExactFloat::inf(false);
      return;
    }
    if (!into.is_inf() && abs(v.value) > into.value) into = ExactFloat::finite(abs(v.value));
  };
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const ExactFloat v = exact_of_double(x.get_double(i));
    fold(amax[static_cast<std::size_t>(block_of(i))], v);
    fold(tensor_amax, v);
  }
  res.slow_elements = x.size();
  if (b.format != MxFormat::nvfp4) {
    std::vector<std::optional<int>> shared(static_cast<std::size_t>(nblocks));
    for (std::int64_t k = 0; k < nblocks; ++k) {
      shared[static_cast<std::size_t>(k)] =
          mx_shared_exponent(amax[static_cast<std::size_t>(k)], b.format, op.scale_rule);
      const auto& s = shared[static_cast<std::size_t>(k)];
      res.scales.set_bits(k, s ? static_cast<std::uint64_t>(*s - kE8M0Min) : kE8M0Nan);
    }
    for (std::int64_t i = 0; i < x.size(); ++i)
      mx_element_exact(res, i, x.get_double(i), shared[static_cast<std::size_t>(block_of(i))], op, e);
    return res;
  }
  // NVFP4, each step in f32 as torchao's _nvfp4_quantize writes it.
  const ExactFloat g = nvfp4_global_scale(b, tensor_amax);
  if (g.is_finite()) res.global_scale = g.value.convert_to<double>();
  std::vector<Nvfp4BlockExact> blocks(static_cast<std::size_t>(nblocks));
  for (std::int64_t k = 0; k < nblocks; ++k) {
    blocks[static_cast<std::size_t>(k)] = nvfp4_block_exact(amax[static_cast<std::size_t>(k)], g);
    res.scales.set_bits(k, blocks[static_cast<std::size_t>(k)].code);
  }
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const Nvfp4BlockExact& blk = blocks[static_cast<std::size_t>(block_of(i))];
    nvfp4_element_exact(res, i, x.get_double(i), blk.s8, blk.total, g, op.element_rounding, e);
  }
  return res;
}

// ---- The fast path ---------------------------------------------------------------------------
//
// mx_quantize_fast gives the definition's codes, values and labels from hardware doubles (issue #19;
// the technique of fp8.cpp's fast path). The inputs are f32, f16 or bf16 values: at most 24
// significant bits, magnitudes in [2^-149, 2^128), each exactly a double.
//
// MX: every step is exact in double, so no element needs the definition.
// - The block's largest magnitude amax is a double, and each scale rule's decision is a comparison of
//   doubles: floor is ilogb(amax); ceil adds one unless amax is a power of two; even compares
//   amax * 2^-floor (exact) with 2 - 2^-(mbits + 1); rceil's f32(amax * f32(1 / max)) multiplies two
//   24-bit values (exact in double, then rounded once into f32 by the hardware's conversion), and
//   f32(1 / max) is the definition's, taken once per call.
// - V / X = V * 2^-e (|e| <= 127) is a double (exponent within [-276, 255]); the grid step q at it,
//   V / X * 2^-q, its rounding to an integer (floor and a comparison of the exact fraction with 1/2:
//   ties to even, or away), the clamp at the format's largest magnitude (a double) and the code's
//   fields are exact operations on doubles.
// - The label's fraction k - floor(k) is exact, and so is its distance from 1/2 wherever that is
//   within the near-tie band (Sterbenz: k - floor(k) in [1/4, 1]).
// - P * X has at most 8 significant bits and an exponent within [-145, 144]: a double, rounded once
//   into f32 by double_to_float_bits (ties to even, IEEE overflow to inf, the definition's round_to_format).
// NVFP4: x / (g * s8), amax / 6 and amax_block / g are f32 divisions of f32 values. Their quotient
// t = n / d in double, with the sign of its residual fma(-t, d, n) (exact: Boldo and Daumas, ARITH 2003,
// as nothing underflows for operands in [2^-149, 2^128]), pins n / d between two doubles; rounding it
// into f32 changes only at f32 midpoints, which are doubles, so t rounds as n / d does unless t is a
// midpoint, when the next double toward n / d does (mx_f32_quotient). g * s8 (24 and 4 bits) and
// p * s8 * g (2, 4 and 24 bits) are exact in double before their one f32 rounding. The clamps and the
// E4M3 conversion of an f32 value are comparisons and one rounding of a double. Where g is not a
// positive finite value, or a block's s8 is NaN, every element is special (x / (g * s8) is NaN or
// infinite) and only the block scale codes come from the definition's steps; the definition also
// computes the scale of a block holding NaN or inf, or whose g * s8 overflows or underflows in f32, and
// only the elements of a block whose g * s8 is not a positive finite f32 value go to the definition.

constexpr double kMxFastMin = 0x1p-900, kMxFastMax = 0x1p900;

int mx_sign_of(double v) { return (v > 0) - (v < 0); }

// Whether |a| (a normal double) is a midpoint of format l's grid at a's binade.
bool mx_on_midpoint(double a, const FloatLayout& l) {
  const double k = std::ldexp(a, l.mant_bits - std::max(std::ilogb(a), 1 - l.bias));
  return k - std::floor(k) == 0.5;
}

// n / d (doubles of at most 53 bits, d > 0, n finite) rounded once into f32 as a double, or NaN where
// the quotient leaves [2^-900, 2^900] (the caller's definition then decides).
double mx_f32_quotient(double n, double d) {
  if (n == 0) return n / d;  // a signed zero
  const double t = n / d;
  if (!(std::fabs(t) >= kMxFastMin && std::fabs(t) <= kMxFastMax)) return std::nan("");
  const int sticky = mx_sign_of(std::fma(-t, d, n));
  double u = t;
  if (sticky != 0 && mx_on_midpoint(std::fabs(t), info(DType::f32).fl))
    u = std::nextafter(t,
                       sticky > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  return round_into(DType::f32, u);
}

// The shared exponent for a finite amax >= 0 (nullopt: the NaN scale); r32 = f32(1 / max) for rceil.
std::optional<int> mx_shared_exponent_fast(double amax, const MxElement& e, MxScaleRule rule, double r32) {
  if (amax == 0) return kE8M0Min;
  const int fl = std::ilogb(amax);
  int x = 0;
  switch (rule) {
    case MxScaleRule::floor:
      x = fl - e.emax;
      break;
    case MxScaleRule::ceil:
      x = fl + (amax == std::ldexp(1.0, fl) ? 0 : 1) - e.emax;
      break;
    case MxScaleRule::even:
      x = fl + (std::ldexp(amax, -fl) >= 2.0 - std::ldexp(1.0, -(e.mbits + 1)) ? 1 : 0) - e.emax;
      break;
    case MxScaleRule::rceil: {
      const double descale = round_into(DType::f32, amax * r32);  // exact product, one rounding
      if (descale == 0) return kE8M0Min;
      const int dl = std::ilogb(descale);
      x = dl + (descale == std::ldexp(1.0, dl) ? 0 : 1);
      break;
    }
  }
  if (x > kE8M0Max) return std::nullopt;
  return std::max(x, kE8M0Min);
}

// v (a double) rounded to e's grid (ties to even or away) and clamped to +-max; mx_round_element.
double mx_round_fast(double v, const MxElement& e, RoundingMode m) {
  if (v == 0) return 0;
  const int q = e.is_int ? -6 : std::max(std::ilogb(v), e.emin) - e.mbits;
  const double k = std::ldexp(v, -q);
  const double fl = std::floor(k), frac = k - fl;  // both exact
  double r = fl;
  if (frac > 0.5)
    r = fl + 1;
  else if (frac == 0.5)
    r = m == RoundingMode::rna ? (k > 0 ? fl + 1 : fl) : (std::fmod(fl, 2.0) == 0 ? fl : fl + 1);
  const double p = std::ldexp(r, q);
  return std::clamp(p, -e.max, e.max);
}

// element_code for p on e's grid (the sign from `negative` for zero).
std::uint64_t mx_code_fast(double p, bool negative, const MxElement& e) {
  if (e.is_int) return static_cast<std::uint64_t>(static_cast<std::int64_t>(p * 64)) & 0xFF;
  const std::uint64_t sign = negative ? std::uint64_t{1} << (e.bits - 1) : 0;
  if (p == 0) return sign;
  const double a = std::fabs(p);
  const int ex = std::ilogb(a);
  if (ex < e.emin) return sign | static_cast<std::uint64_t>(std::ldexp(a, e.mbits - e.emin));
  const auto m = static_cast<std::uint64_t>(std::ldexp(a, e.mbits - ex));
  const auto field = static_cast<std::uint64_t>(ex - e.emin + 1);
  return sign | (field << e.mbits) | (m - (std::uint64_t{1} << e.mbits));
}

// element_label for a double v.
Label mx_label_fast(double v, const MxElement& e) {
  const double a = std::fabs(v);
  if (a > e.max) return Label::saturated;
  if (a == 0) return Label::clear;
  const int q = e.is_int ? -6 : std::max(std::ilogb(a), e.emin) - e.mbits;
  const double k = std::ldexp(a, -q);
  const double frac = k - std::floor(k);
  if (frac == 0.5) return Label::tie;
  if (frac == 0) return Label::clear;
  return std::fabs(frac - 0.5) <= kNearTieDistance ? Label::near_tie : Label::clear;
}

// Element i's code, value (p * scale, with x's sign for zero) and label from its double quotient v.
void mx_set_element_fast(MxQuantizeResult& res, std::int64_t i, double v, bool negative, double scale,
                         const MxElement& e, RoundingMode m) {
  const double p = mx_round_fast(v, e, m);
  res.elements.set_bits(i, mx_code_fast(p, negative, e));
  const double y = p == 0 ? (negative ? -0.0 : 0.0) : p * scale;  // exact (see above)
  res.y.set_bits(i, double_to_float_bits(DType::f32, y));
  res.labels[static_cast<std::size_t>(i)] = mx_label_fast(v, e);
}

// The largest magnitude as the definition folds it: NaN once any value is NaN, else inf once any is
// infinite, else the largest |v|.
void mx_fold_fast(double& into, double v) {
  if (std::isnan(into)) return;
  if (std::isnan(v)) {
    into = v;
  } else if (std::isinf(v)) {
    into = std::numeric_limits<double>::infinity();
  } else if (!std::isinf(into)) {
    into = std::max(into, std::fabs(v));
  }
}

// The value of an ExactFloat that is exactly a double.
double mx_double_of(const ExactFloat& v) {
  if (v.is_nan()) return std::nan("");
  if (v.is_inf())
    return v.negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  const double d = v.value.convert_to<double>();
  return d == 0 && v.negative ? -0.0 : d;
}

MxQuantizeResult mx_quantize_fast(const MxQuantizeOp& op) {
  const Tensor& x = op.x;
  const MxBlocking& b = op.blocking;
  const MxElement& e = mx_element(b.format);
  const Shape sshape = mx_scale_shape(b, x.shape());
  MxQuantizeResult res = mx_empty_result(op, sshape);
  const ParamIndexer block_of = block_indexer(b, x.shape());
  const std::int64_t nblocks = numel(sshape);
  std::vector<double> xs(static_cast<std::size_t>(x.size()));
  std::vector<std::int64_t> blk(static_cast<std::size_t>(x.size()));
  std::vector<double> amax(static_cast<std::size_t>(nblocks), 0.0);
  double tensor_amax = 0;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    xs[u] = x.get_double(i);
    blk[u] = block_of(i);
    mx_fold_fast(amax[static_cast<std::size_t>(blk[u])], xs[u]);
    mx_fold_fast(tensor_amax, xs[u]);
  }
  if (b.format != MxFormat::nvfp4) {
    const double r32 = f32_round(Rational(1) / Rational(e.max)).convert_to<double>();
    std::vector<std::optional<int>> shared(static_cast<std::size_t>(nblocks));
    for (std::int64_t k = 0; k < nblocks; ++k) {
      const double a = amax[static_cast<std::size_t>(k)];
      auto& s = shared[static_cast<std::size_t>(k)];
      s = std::isfinite(a) ? mx_shared_exponent_fast(a, e, op.scale_rule, r32) : std::nullopt;
      res.scales.set_bits(k, s ? static_cast<std::uint64_t>(*s - kE8M0Min) : kE8M0Nan);
    }
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      const auto& s = shared[static_cast<std::size_t>(blk[u])];
      if (!s) {
        mx_set_special(res, i);
        continue;
      }
      // The NaN scale is the only way to a non-finite value, so xs[u] is finite here.
      mx_set_element_fast(res, i, std::ldexp(xs[u], -*s), std::signbit(xs[u]), std::ldexp(1.0, *s), e,
                          op.element_rounding);
    }
    return res;
  }
  // NVFP4.
  const ExactFloat g = nvfp4_global_scale(b, exact_of_double(tensor_amax));
  if (g.is_finite()) res.global_scale = g.value.convert_to<double>();
  const double gd = g.is_finite() ? g.value.convert_to<double>() : 0.0;  // an f32 value
  const bool g_fast = gd > 0;
  // Without a finite positive g, g * s8 is 0 or NaN (or g NaN): every element is special.
  struct Block {
    bool fast = false;     // total is finite and positive: the elements are decided here
    bool special = false;  // s8 is NaN: every element is
    double s8 = 0, total = 0;
  };
  std::vector<Block> blocks(static_cast<std::size_t>(nblocks));
  for (std::int64_t k = 0; k < nblocks; ++k) {
    Block& bk = blocks[static_cast<std::size_t>(k)];
    const double a = amax[static_cast<std::size_t>(k)];
    if (g_fast && std::isfinite(a)) {
      const double bs = mx_f32_quotient(a, 6.0);                 // block_scale
      double s = std::isnan(bs) ? bs : mx_f32_quotient(bs, gd);  // scaled_block_scales (inf past f32)
      if (!std::isnan(s)) {
        s = std::clamp(s, 0x1p-6, 448.0);
        const std::uint64_t code = double_to_float_bits(DType::f8e4m3fn, s);  // in range: no overflow
        const double s8 = float_bits_to_double(DType::f8e4m3fn, code);
        const double total = round_into(DType::f32, gd * s8);  // exact product, one rounding
        if (std::isfinite(total) && total > 0) {
          bk = {true, false, s8, total};
          res.scales.set_bits(k, code);
          continue;
        }
      }
    }
    // The definition's steps (a block holding NaN or inf, or g * s8 out of f32's range); its s8 and
    // g * s8 are f32 values, NaN or inf: doubles.
    const Nvfp4BlockExact ex = nvfp4_block_exact(exact_of_double(a), g);
    res.scales.set_bits(k, ex.code);
    bk.s8 = mx_double_of(ex.s8);
    bk.total = mx_double_of(ex.total);
    bk.fast = std::isfinite(bk.total) && bk.total > 0;
    bk.special = std::isnan(bk.s8);
  }
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    const Block& bk = blocks[static_cast<std::size_t>(blk[u])];
    const double v = xs[u];
    if (!g_fast || bk.special) {  // x / (g * s8) is NaN or +-inf, or g is not finite
      mx_set_special(res, i);
      continue;
    }
    if (bk.fast) {
      if (!std::isfinite(v)) {  // NaN / t and inf / t are not finite: special
        mx_set_special(res, i);
        continue;
      }
      const double d = mx_f32_quotient(v, bk.total);
      if (!std::isnan(d)) {
        if (std::isinf(d)) {
          mx_set_special(res, i);
        } else {
          mx_set_element_fast(res, i, d, std::signbit(d), bk.s8 * gd, e, op.element_rounding);
        }
        continue;
      }
    }
    ++res.slow_elements;
    nvfp4_element_exact(res, i, v, exact_of_double(bk.s8), exact_of_double(bk.total), g, op.element_rounding, e);
  }
  return res;
}

}  // namespace

MxQuantizeResult mx_quantize(const MxQuantizeOp& op, OraclePath path) {
  mx_check_quantize(op);
  return path == OraclePath::slow ? mx_quantize_definition(op) : mx_quantize_fast(op);
}

namespace {

void mx_check_dequantize(const MxDequantizeOp& op) {
  const MxBlocking& b = op.blocking;
  (void)mx_axis(b, op.elements.shape(), "mx_dequantize");
  if (op.elements.dtype() != DType::u8)
    throw InputError("mx_dequantize: field 'input.dtype': element codes are u8, got " +
                     std::string(name(op.elements.dtype())));
  if (op.scales.dtype() != DType::u8)
    throw InputError("mx_dequantize: field 'scales.dtype': scale codes are u8, got " +
                     std::string(name(op.scales.dtype())));
  const Shape want = mx_scale_shape(b, op.elements.shape());
  if (op.scales.shape() != want)
    throw InputError("mx_dequantize: field 'scales.shape': expected " + shape_str(want) + " (one per block), got " +
                     shape_str(op.scales.shape()));
  if (b.format == MxFormat::nvfp4 && !b.global_scale)
    throw InputError("mx_dequantize: field 'global_scale': NVFP4 needs its per-tensor scale");
}

}  // namespace

// The fast path: the codes' values as doubles (tables of the definition's mx_element_value and
// mx_block_scale, each exactly a double: at most 8 and 28 significant bits), their product exact in
// double (at most 36 bits, exponent within [-300, 300]) and rounded once into f32; a NaN factor gives
// the definition's NaN pattern. A code wider than the format goes to the definition, which throws.
Tensor mx_dequantize(const MxDequantizeOp& op, OraclePath path) {
  mx_check_dequantize(op);
  const MxBlocking& b = op.blocking;
  const ParamIndexer block_of = block_indexer(b, op.elements.shape());
  Tensor y(DType::f32, op.elements.shape());
  const auto definition = [&](std::int64_t i) {
    const ExactFloat p = mx_element_value(op.elements.bits(i), b.format);
    const ExactFloat scale = mx_block_scale(op.scales.bits(block_of(i)), b);
    // The value the codes stand for, rounded once into f32.
    y.set_bits(i, encode_float(DType::f32, Arith::exact().mul(p, scale)));
  };
  if (path == OraclePath::slow) {
    for (std::int64_t i = 0; i < op.elements.size(); ++i) definition(i);
    return y;
  }
  const MxElement& e = mx_element(b.format);
  const std::uint64_t ncodes = std::uint64_t{1} << e.bits;
  std::vector<double> elem(ncodes), scale(256);
  for (std::uint64_t c = 0; c < ncodes; ++c) elem[c] = mx_double_of(mx_element_value(c, b.format));
  for (std::uint64_t c = 0; c < 256; ++c) scale[c] = mx_double_of(mx_block_scale(c, b));
  const std::uint64_t nan_bits = encode_float(DType::f32, ExactFloat::nan());
  for (std::int64_t i = 0; i < op.elements.size(); ++i) {
    const std::uint64_t c = op.elements.bits(i);
    if (c >= ncodes) {
      definition(i);
      continue;
    }
    const double v = elem[c] * scale[op.scales.bits(block_of(i))];
    y.set_bits(i, std::isnan(v) ? nan_bits : double_to_float_bits(DType::f32, v));
  }
  return y;
}

}  // namespace qc
