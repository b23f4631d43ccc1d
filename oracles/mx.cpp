#include "oracles/mx.hpp"

#include "oracles/ieee.hpp"
#include "oracles/rounding.hpp"
#include "qconform/error.hpp"
#include "qconform/qparams.hpp"

#include <cmath>
#include <string>

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

MxQuantizeResult mx_quantize(const MxQuantizeOp& op) {
  const Tensor& x = op.x;
  const MxBlocking& b = op.blocking;
  const DType xt = x.dtype();
  if (xt != DType::f32 && xt != DType::f16 && xt != DType::bf16)
    throw InputError("mx_quantize: field 'input.dtype': needs f32, f16 or bf16 values, got " + std::string(name(xt)));
  if (op.element_rounding != RoundingMode::rne && op.element_rounding != RoundingMode::rna)
    throw InputError("mx_quantize: field 'rounding': rne (OCP) or rna (microxcaling), got " +
                     std::string(name(op.element_rounding)));
  if (b.format == MxFormat::mxint8 && op.scale_rule != MxScaleRule::floor)
    throw InputError("mx_quantize: field 'scale_rule': MXINT8 takes the OCP rule (floor) only");
  const int axis = mx_axis(b, x.shape(), "mx_quantize");
  const MxElement& e = mx_element(b.format);
  const Shape sshape = mx_scale_shape(b, x.shape());
  MxQuantizeResult res{Tensor(DType::f32, x.shape()), Tensor(DType::u8, x.shape()), Tensor(DType::u8, sshape),
                       std::nullopt, std::vector<Label>(static_cast<std::size_t>(x.size()), Label::clear)};
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
  (void)axis;
  if (b.format != MxFormat::nvfp4) {
    std::vector<std::optional<int>> shared(static_cast<std::size_t>(nblocks));
    for (std::int64_t k = 0; k < nblocks; ++k) {
      shared[static_cast<std::size_t>(k)] =
          mx_shared_exponent(amax[static_cast<std::size_t>(k)], b.format, op.scale_rule);
      const auto& s = shared[static_cast<std::size_t>(k)];
      res.scales.set_bits(k, s ? static_cast<std::uint64_t>(*s - kE8M0Min) : kE8M0Nan);
    }
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const auto& s = shared[static_cast<std::size_t>(block_of(i))];
      const ExactFloat v = exact_of_double(x.get_double(i));
      if (!s) {  // the NaN scale: every value of the block is NaN
        res.y.set_double(i, std::nan(""));
        res.elements.set_bits(i, 0);
        res.labels[static_cast<std::size_t>(i)] = Label::special;
        continue;
      }
      const Rational scaled = v.value * pow2(-*s);
      const Rational p = mx_round_element(scaled, b.format, op.element_rounding);
      res.elements.set_bits(i, element_code(p, v.negative, e));
      const ExactFloat y = round_to_format(DType::f32, p * pow2(*s));
      res.y.set_bits(i,
                     encode_float(DType::f32, y.is_finite() && y.value == 0 ? ExactFloat::finite(0, v.negative) : y));
      res.labels[static_cast<std::size_t>(i)] = element_label(scaled, e);
    }
    return res;
  }
  // NVFP4, each step in f32 as torchao's _nvfp4_quantize writes it.
  const Arith f32 = Arith::in(DType::f32);
  ExactFloat g;
  if (b.global_scale) {
    g = ExactFloat::finite(Rational(*b.global_scale));
  } else {
    // torchao nvfp4_tensor.py::per_tensor_amax_to_scale: amax.to(float32) / (F8E4M3_MAX * F4_E2M1_MAX)
    g = f32.div(tensor_amax, ExactFloat::finite(448 * 6));
  }
  if (g.is_finite()) res.global_scale = g.value.convert_to<double>();
  std::vector<ExactFloat> s8(static_cast<std::size_t>(nblocks)), total(static_cast<std::size_t>(nblocks));
  for (std::int64_t k = 0; k < nblocks; ++k) {
    const ExactFloat blk = f32.div(amax[static_cast<std::size_t>(k)], ExactFloat::finite(6));  // block_scale
    ExactFloat s = f32.div(blk, g);                                                            // scaled_block_scales
    // torch.clamp(s, min=E4M3_EPS = 2^-6, max=448) keeps NaN; then .to(float8_e4m3fn), ties to even.
    if (s.is_inf() || (s.is_finite() && s.value > 448)) s = ExactFloat::finite(448);
    if (s.is_finite() && s.value < pow2(-6)) s = ExactFloat::finite(pow2(-6));
    const std::uint64_t code = encode_float(DType::f8e4m3fn, s, RoundingMode::rne, Overflow::saturate);
    res.scales.set_bits(k, code);
    s8[static_cast<std::size_t>(k)] = decode_float(DType::f8e4m3fn, code);
    total[static_cast<std::size_t>(k)] = f32.mul(g, s8[static_cast<std::size_t>(k)]);
  }
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const auto k = static_cast<std::size_t>(block_of(i));
    const ExactFloat v = exact_of_double(x.get_double(i));
    const ExactFloat d = f32.div(v, total[k]);
    if (!d.is_finite() || !s8[k].is_finite() || !g.is_finite()) {
      res.y.set_double(i, std::nan(""));
      res.elements.set_bits(i, 0);
      res.labels[static_cast<std::size_t>(i)] = Label::special;
      continue;
    }
    const Rational p = mx_round_element(d.value, b.format, op.element_rounding);  // clamp to +-6, then e2m1
    res.elements.set_bits(i, element_code(p, d.negative, e));
    const ExactFloat y = round_to_format(DType::f32, p * s8[k].value * g.value);
    res.y.set_bits(i, encode_float(DType::f32, y.is_finite() && y.value == 0 ? ExactFloat::finite(0, d.negative) : y));
    res.labels[static_cast<std::size_t>(i)] = element_label(d.value, e);
  }
  return res;
}

Tensor mx_dequantize(const MxDequantizeOp& op) {
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
  const ParamIndexer block_of = block_indexer(b, op.elements.shape());
  Tensor y(DType::f32, op.elements.shape());
  for (std::int64_t i = 0; i < op.elements.size(); ++i) {
    const ExactFloat p = mx_element_value(op.elements.bits(i), b.format);
    const ExactFloat scale = mx_block_scale(op.scales.bits(block_of(i)), b);
    // The value the codes stand for, rounded once into f32.
    y.set_bits(i, encode_float(DType::f32, Arith::exact().mul(p, scale)));
  }
  return y;
}

}  // namespace qc
