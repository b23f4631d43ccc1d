#include "oracles/qlinear.hpp"

#include "qconform/parallel.hpp"

#include "oracles/dequantize.hpp"
#include "oracles/ieee.hpp"
#include "oracles/qlinear_fast.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize_detail.hpp"
#include "oracles/requantize_rows.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

namespace qc {

std::string_view name(FusedActivation a) { return table_name(a); }

Rational exact_element(const Tensor& t, std::int64_t i) {
  if (is_int(t.dtype())) return Rational(t.get_int(i));
  const double v = t.get_double(i);  // every supported float format is exact in double
  if (!std::isfinite(v))
    throw InputError("element " + std::to_string(i) + " of a " + std::string(name(t.dtype())) +
                     " tensor is not finite (" + std::to_string(v) + ")");
  return Rational(v);
}

// ---- Operands --------------------------------------------------------------------------------

namespace {

void require_operand_format(DType t, const std::string& where) {
  switch (t) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i4:
    case DType::u4:
      return;
    default:
      throw InputError(where + ": quantized operands are i8, u8, i16, u16, i4 or u4, got " + std::string(name(t)));
  }
}

Tensor reshaped(const Tensor& t, Shape shape) {
  Tensor r(t.dtype(), std::move(shape));
  std::memcpy(r.bytes().data(), t.bytes().data(), t.bytes().size());
  return r;
}

// [rows, K]: every dimension but the last folded into rows.
Shape rows_by_depth(const Shape& s) {
  const std::int64_t k = s.back();
  return {k == 0 ? 0 : numel(s) / k, k};
}

Tensor quantized_values(const Tensor& x, const QuantParams& p, DType format, const QuantizePolicy& policy,
                        const std::string& where) {
  QuantizeResult r = quantize(x, p, format, policy, OraclePath::fast, false);
  for (std::int64_t i = 0; i < x.size(); ++i)
    if (!r.specified[static_cast<std::size_t>(i)])
      throw InputError(where + ": element " + std::to_string(i) +
                       " is NaN and the quantize policy leaves its integer unspecified (set QuantizePolicy::nan)");
  return std::move(r.q);
}

}  // namespace

QuantizedOperand quantize_activation(const ActivationOperand& a, const QuantizePolicy& policy) {
  const Tensor& x = a.values;
  const std::string where = "activation";
  if (x.rank() < 1) throw InputError(where + ": needs rank >= 1, got a scalar");
  if (is_int(x.dtype())) {
    require_operand_format(x.dtype(), where);
    if (a.quantization != ActivationQuantization::static_params)
      throw InputError(where + ": integer values are already quantized; dynamic quantization needs float values");
    validate(a.params, x.shape(), x.dtype(), where);
    return {x, a.params};
  }
  require_operand_format(a.format, where);
  switch (a.quantization) {
    case ActivationQuantization::static_params:
      validate(a.params, x.shape(), a.format, where);
      return {quantized_values(x, a.params, a.format, policy, where), a.params};
    case ActivationQuantization::dynamic_per_tensor: {
      const DynamicQParams d = choose_dynamic_qparams(x, a.format, a.rule);
      return {quantized_values(x, d.params, a.format, policy, where), d.params};
    }
    case ActivationQuantization::dynamic_per_row: {
      const Tensor rows = reshaped(x, rows_by_depth(x.shape()));
      const DynamicQParams d = choose_dynamic_qparams(rows, a.format, a.rule, 0);
      return {quantized_values(rows, d.params, a.format, policy, where), d.params};
    }
  }
  throw InputError(where + ": unknown quantization");
}

QuantizedOperand quantize_weights(const QWeights& w, const QuantizePolicy& policy) {
  const std::string where = "weights";
  if (w.packing) {
    if (w.format != DType::i4 && w.format != DType::u4)
      throw InputError(where + ": packed weights hold i4 or u4 nibbles, format is " + std::string(name(w.format)));
    Tensor q = unpack_int4(w.values, w.format, w.shape, *w.packing);
    validate(w.params, q.shape(), q.dtype(), where);
    return {std::move(q), w.params};
  }
  if (is_int(w.values.dtype())) {
    require_operand_format(w.values.dtype(), where);
    validate(w.params, w.values.shape(), w.values.dtype(), where);
    return {w.values, w.params};
  }
  require_operand_format(w.format, where);
  validate(w.params, w.values.shape(), w.format, where);
  return {quantized_values(w.values, w.params, w.format, policy, where), w.params};
}

OperandView activation_view(const ActivationOperand& a, const QuantizePolicy& policy, QuantizedOperand& storage) {
  const Tensor& x = a.values;
  if (x.rank() >= 1 && is_int(x.dtype()) && a.quantization == ActivationQuantization::static_params) {
    require_operand_format(x.dtype(), "activation");  // quantize_activation's checks, in its order
    validate(a.params, x.shape(), x.dtype(), "activation");
    return {x, a.params};
  }
  storage = quantize_activation(a, policy);
  return {storage.q, storage.params};
}

OperandView weights_view(const QWeights& w, const QuantizePolicy& policy, QuantizedOperand& storage) {
  if (!w.packing && is_int(w.values.dtype())) {
    require_operand_format(w.values.dtype(), "weights");  // quantize_weights' checks, in its order
    validate(w.params, w.values.shape(), w.values.dtype(), "weights");
    return {w.values, w.params};
  }
  storage = quantize_weights(w, policy);
  return {storage.q, storage.params};
}

std::vector<Rational> dequantized_values(const QuantizedOperand& x, std::optional<DType> format,
                                         const DequantizePolicy& policy) {
  std::vector<Rational> v;
  v.reserve(static_cast<std::size_t>(x.q.size()));
  if (format) {
    if (!is_float(*format))
      throw InputError("dequantized_values: " + std::string(name(*format)) + " is not a float format");
    const DequantizeResult dq = dequantize(x.q, x.params, *format, policy, OraclePath::fast, false);
    for (std::int64_t i = 0; i < x.q.size(); ++i) v.push_back(exact_element(dq.y, i));
    return v;
  }
  const ParamIndexer param(x.params, x.q.shape());
  for (std::int64_t i = 0; i < x.q.size(); ++i) {
    const std::int64_t pi = param(i);
    v.push_back(Rational(x.q.get_int(i) - x.params.zero_point(pi)) *
                Rational(x.params.scales[static_cast<std::size_t>(pi)]));
  }
  return v;
}

void merge_proof(AccumulationProof& into, const AccumulationProof& p, bool first) {
  if (first) {
    into = p;
    return;
  }
  into.a_range = {std::min(into.a_range.lo, p.a_range.lo), std::max(into.a_range.hi, p.a_range.hi)};
  into.b_range = {std::min(into.b_range.lo, p.b_range.lo), std::max(into.b_range.hi, p.b_range.hi)};
  into.longest_segment = std::max(into.longest_segment, p.longest_segment);
  into.policy_exact = into.policy_exact && p.policy_exact;
  into.int32_loop = into.int32_loop && p.int32_loop;
  into.int64_loop = !into.int32_loop && (into.int64_loop || p.int64_loop);
  into.arbitrary_precision_dots += p.arbitrary_precision_dots;
}

// ---- Fused activation ------------------------------------------------------------------------

IntRange fused_activation_range(FusedActivation a, float scale, std::int64_t zero_point, DType out) {
  if (!is_int(out)) throw InputError("fused_activation_range: output format must be an integer format");
  if (!(scale > 0) || !std::isfinite(scale)) throw InputError("fused_activation_range: scale must be positive");
  const Arith f32 = Arith::in(DType::f32);
  auto quantize_value = [&](double f) {  // zp + (int)std::round(f / scale), the division in f32
    const ExactFloat q = f32.div(ExactFloat::finite(Rational(f)), ExactFloat::finite(Rational(double{scale})));
    return zero_point + round_to_integer(q.value, RoundingMode::rna).convert_to<std::int64_t>();
  };
  const std::int64_t qmin = int_min(out), qmax = int_max(out);
  switch (a) {
    case FusedActivation::none:
      return {qmin, qmax};
    case FusedActivation::relu:
      return {std::max(qmin, quantize_value(0.0)), qmax};
    case FusedActivation::relu6:
      return {std::max(qmin, quantize_value(0.0)), std::min(qmax, quantize_value(6.0))};
    case FusedActivation::relu_n1_to_1:
      return {std::max(qmin, quantize_value(-1.0)), std::min(qmax, quantize_value(1.0))};
  }
  return {qmin, qmax};
}

// ---- Labels ----------------------------------------------------------------------------------

Label float_grid_label(const Rational& v, DType out) {
  if (v == 0) return Label::clear;
  const ExactFloat lo = round_to_format(out, v, RoundingMode::floor, Overflow::saturate);
  const ExactFloat hi = round_to_format(out, v, RoundingMode::ceil, Overflow::saturate);
  if (lo.value == hi.value) return Label::clear;  // representable (or beyond the largest finite value)
  const Rational distance = abs(v - (lo.value + hi.value) / 2) / (hi.value - lo.value);
  if (distance == 0) return Label::tie;
  if (distance <= Rational(kNearTieDistance)) return Label::near_tie;
  return Label::clear;
}

Label float_grid_label(double t, int sticky, DType out) {
  if (t == 0) return Label::clear;
  const FloatLayout& l = info(out).fl;
  const double a = std::fabs(t);
  const int away = t < 0 ? -sticky : sticky;  // the sign of |v| - |t|
  // |v| >= the largest finite value: the rational form's floor and ceiling (saturating) meet there.
  // |t| == max with v below it is next to a grid point, which is clear as well.
  if (a >= std::ldexp(static_cast<double>(max_significand(l)), max_exponent(l) - l.mant_bits)) return Label::clear;
  // k = |t| in units of the output's step at |t|'s binade (subnormals share the smallest normal
  // binade's step); exact, a power-of-two scaling of a normal double to another one. |v| has the same
  // step as |t| unless t is a power of two, which is a grid point (handled first below).
  const double k = std::ldexp(a, l.mant_bits - std::max(std::ilogb(a), 1 - l.bias));
  const double fl = std::floor(k);
  // On the grid: v is t, or within a double of it, so half a step from any midpoint.
  if (k == fl) return Label::clear;
  // d = k - fl - 1/2 is exact where it matters (|d| <= 1/4, Sterbenz); elsewhere it is far from the band.
  const double d = (k - fl) - 0.5;
  if (d == 0) return sticky == 0 ? Label::tie : Label::near_tie;
  const double ad = std::fabs(d);
  if (ad != kNearTieDistance) return ad < kNearTieDistance ? Label::near_tie : Label::clear;
  // On the band's edge (which counts as near): v is outside only when it lies beyond t, away from the midpoint.
  return (d > 0 ? away : -away) > 0 ? Label::clear : Label::near_tie;
}

// ---- Output stage ----------------------------------------------------------------------------

struct QLinearResult::State {
  std::int64_t segments = 1;
  ScaledAccumulators acc;  // the accumulators and the parameter indices (its shape is the output's)
  std::vector<Rational> a_scales, b_scales;
  std::vector<double> a_scale_values, b_scale_values;  // the same scales as doubles (exact)
  QuantParams a_params, b_params;                      // as finish_output was given them
  std::vector<std::int64_t> int_bias;                  // per channel; empty: none
  std::vector<Rational> float_bias;                    // per channel; empty: none
  DType scale_dtype = DType::f32;                      // the operands' scale format
  OutputStage out;

  BigInt exact_accumulator(std::int64_t e, std::int64_t s) const {
    const std::int64_t key = e * segments + s;
    const auto it = acc.exact_where_different.find(key);
    return it == acc.exact_where_different.end() ? BigInt(acc.value[static_cast<std::size_t>(key)]) : it->second;
  }
  bool overflowed(std::int64_t e) const {
    if (acc.exact_where_different.empty()) return false;
    for (std::int64_t s = 0; s < segments; ++s)
      if (acc.exact_where_different.count(e * segments + s)) return true;
    return false;
  }
  Rational scale_product(std::int64_t e, std::int64_t s) const {
    return a_scales[static_cast<std::size_t>(acc.a_at(e, s))] * b_scales[static_cast<std::size_t>(acc.b_at(e, s))];
  }
  double a_scale_value(std::int64_t e, std::int64_t s) const {
    return a_scale_values[static_cast<std::size_t>(acc.a_at(e, s))];
  }
  double b_scale_value(std::int64_t e, std::int64_t s) const {
    return b_scale_values[static_cast<std::size_t>(acc.b_at(e, s))];
  }
  std::int64_t channel_of(std::int64_t e) const { return acc.channel_at(e); }
  std::int64_t bias_of(std::int64_t e) const {
    return int_bias.empty() ? 0 : int_bias[static_cast<std::size_t>(channel_of(e))];
  }
  // The accumulator the output stage sees: with an int32 bias (one segment) added the accumulator's way.
  std::int64_t policy_accumulator(std::int64_t e, std::int64_t s, Accumulation mode) const {
    const std::int64_t v = acc.value[static_cast<std::size_t>(e * segments + s)];
    return int_bias.empty() ? v : add_in_accumulator(mode, v, bias_of(e));
  }
  // ... and its exact value.
  BigInt exact_total(std::int64_t e, std::int64_t s) const { return exact_accumulator(e, s) + bias_of(e); }
  // v = Σ_s acc_s * s_a * s_b (+ float bias) for accumulators acc_of(s) that already hold any int32 bias.
  template <class AccOf>
  Rational real_value(std::int64_t e, AccOf acc_of) const {
    Rational v = 0;
    for (std::int64_t s = 0; s < segments; ++s) v += Rational(acc_of(s)) * scale_product(e, s);
    if (!float_bias.empty()) v += float_bias[static_cast<std::size_t>(channel_of(e))];
    return v;
  }
};

Rational QLinearResult::exact_value(std::int64_t i) const {
  const State& st = *state;
  auto exact_acc = [&](std::int64_t s) { return st.exact_total(i, s); };
  switch (st.out.kind) {
    case OutputKind::int32:
      return Rational(st.exact_total(i, 0));
    case OutputKind::dequantized:
      return st.real_value(i, exact_acc);
    case OutputKind::requantized:
      return st.real_value(i, exact_acc) / Rational(st.out.scale) + st.out.zero_point;
  }
  return 0;
}

std::int64_t QLinearResult::accumulator(std::int64_t i, std::int64_t s) const {
  return state->acc.value[static_cast<std::size_t>(i * state->segments + s)];
}
BigInt QLinearResult::exact_accumulator(std::int64_t i, std::int64_t s) const { return state->exact_accumulator(i, s); }
std::int64_t QLinearResult::segments() const { return state->segments; }
std::int64_t QLinearResult::int_bias(std::int64_t i) const { return state->bias_of(i); }
Rational QLinearResult::scale_product(std::int64_t i, std::int64_t s) const { return state->scale_product(i, s); }

RequantizeElement requantize_real(const Rational& v_over_scale, double scale, DType scale_dtype,
                                  std::int64_t zero_point, DType out, const RequantizePolicy& p, bool trace) {
  if (p.scheme != RequantizeScheme::ideal)
    throw InputError("requantize_real: a real value is requantized by the ideal scheme only, got " +
                     std::string(name(p.scheme)));
  RequantizeMultiplier m;  // eval_ideal reads only the exact multiplier
  m.scales = {1.0, 1.0, scale, scale_dtype};
  m.exact = v_over_scale;
  return requantize_element(1, m, zero_point, out, p, trace);
}

namespace {

// `values`: also the accumulator values' count (finish_output_by_rows checks it once they exist).
void check_accumulators(const ScaledAccumulators& acc, const QuantParams& a, const QuantParams& b, bool values = true) {
  const std::int64_t E = numel(acc.shape), S = acc.segments;
  if (E == 0 && S >= 1 && (acc.value.empty() || !values)) return;  // no element reads an index
  const bool rows_ok = acc.cols >= 1 && acc.rows_per_b >= 1 && E % acc.cols == 0;
  const std::int64_t rows = rows_ok ? E / acc.cols : 0,
                     b_tables = rows_ok ? (rows + acc.rows_per_b - 1) / acc.rows_per_b : 0;
  if (S < 1 || !rows_ok || (values && acc.value.size() != static_cast<std::size_t>(E * S)) ||
      acc.a_index.size() != static_cast<std::size_t>(rows * S) ||
      acc.b_index.size() != static_cast<std::size_t>(b_tables * S * acc.cols) ||
      (!acc.channel.empty() && acc.channel.size() != static_cast<std::size_t>(E)))
    throw InputError("finish_output: accumulator arrays do not match shape " + shape_str(acc.shape));
  if (acc.channel.empty() && acc.cols != acc.channels && E > 0)
    throw InputError("finish_output: the columns are not the output channels");
  for (const std::int32_t c : acc.channel)
    if (c < 0 || c >= acc.channels) throw InputError("finish_output: a channel index is out of range");
  const auto in_range = [](const std::vector<std::int32_t>& index, std::size_t n) {
    return std::all_of(index.begin(), index.end(),
                       [n](std::int32_t i) { return i >= 0 && static_cast<std::size_t>(i) < n; });
  };
  if (!in_range(acc.a_index, a.scales.size()) || !in_range(acc.b_index, b.scales.size()))
    throw InputError("finish_output: a parameter index is out of range");
}

std::vector<Rational> exact_scales(const QuantParams& p) {
  std::vector<Rational> s;
  s.reserve(p.scales.size());
  for (const double v : p.scales) s.emplace_back(v);
  return s;
}

void attach_bias(QLinearResult::State& st, std::int64_t channels, const std::optional<Tensor>& bias,
                 const OutputStage& out) {
  if (!bias) return;
  if (bias->rank() != 1 || bias->size() != channels)
    throw InputError("bias: expected a 1-D tensor with one value per output channel (" + std::to_string(channels) +
                     "), got shape " + shape_str(bias->shape()));
  if (bias->dtype() == DType::i32) {
    if (st.segments != 1)
      throw InputError(
          "bias: an int32 bias has the scale s_a*s_b of one accumulator; with blocked quantization "
          "(several K segments) give a float bias");
    for (std::int64_t c = 0; c < bias->size(); ++c) st.int_bias.push_back(bias->get_int(c));
  } else if (is_float(bias->dtype())) {
    if (out.kind == OutputKind::int32) throw InputError("bias: a float bias cannot be added to an int32 output");
    for (std::int64_t c = 0; c < bias->size(); ++c) st.float_bias.push_back(exact_element(*bias, c));
  } else {
    throw InputError("bias: expected i32 or a float format, got " + std::string(name(bias->dtype())));
  }
}

void int32_output(const QLinearResult::State& st, const QGemmPolicy& policy, QLinearResult& r) {
  if (st.out.format != DType::i32) throw InputError("output: an int32 output has format i32");
  if (st.segments != 1)
    throw InputError(
        "output: blocked quantization (several K segments, each with its own scale) has no single "
        "integer accumulator; request a dequantized or requantized output");
  for (std::int64_t e = 0; e < r.y.size(); ++e) {
    const std::int64_t v = st.policy_accumulator(e, 0, policy.accumulation);
    const bool fits = v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max();
    r.y.set_int(e, fits ? v : int_convert(DType::i32, BigInt(v), IntOverflow::wrap));
    r.labels[static_cast<std::size_t>(e)] = (!fits || st.exact_total(e, 0) != v) ? Label::saturated : Label::clear;
  }
}

// ---- Fast paths ------------------------------------------------------------------------------
// Each decides only elements it proves to be `clear` (far from every rounding boundary, inside the
// output range: no tie rule, near tie or clamp matters) or, for requantization, plainly saturated
// (every rounding lands beyond the range and the clamp picks its bound); every other
// element goes to the slow path (requantize_element, float_grid_label, Arith), which owns the rules
// and the labels. qgemm_test checks both paths agree element for element.

// |v| < 2^bits.
int bit_length(unsigned __int128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64), lo = static_cast<std::uint64_t>(v);
  if (hi) return 128 - __builtin_clzll(hi);
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

unsigned __int128 to_uint128(const BigInt& v) {  // 0 <= v < 2^128
  const BigInt mask = (BigInt(1) << 64) - 1;
  return (static_cast<unsigned __int128>((v >> 64).convert_to<std::uint64_t>()) << 64) |
         (v & mask).convert_to<std::uint64_t>();
}

// The ideal multiplier m = num / den as 128-bit integers, when small enough for acc * num and the
// near-tie test (|2r - den| * 2^9) to stay inside int128.
struct IdealFraction {
  bool usable = false;
  __int128 num = 0, den = 1;
  int num_bits = 0;
  int den_shift = -1;  // den = 2^den_shift, or -1: then floor division is a shift (most scales are dyadic)
};

IdealFraction ideal_fraction(const Rational& m) {
  IdealFraction f;
  const BigInt n = numerator(m), d = denominator(m);
  if (n < 0 || msb(BigInt(n + 1)) >= 100 || msb(d) >= 110) return f;
  f.usable = true;
  f.num = static_cast<__int128>(to_uint128(n));
  f.den = static_cast<__int128>(to_uint128(d));
  f.num_bits = bit_length(static_cast<unsigned __int128>(f.num));
  if ((f.den & (f.den - 1)) == 0) f.den_shift = bit_length(static_cast<unsigned __int128>(f.den)) - 1;
  return f;
}

// The requantize output range: the format's range with narrow range and the clip, as
// requantize.cpp's output_range.
IntRange requantize_range(DType out, const RequantizePolicy& p) {
  IntRange r{int_min(out, p.narrow_range), int_max(out)};
  if (p.clip) r = {std::max(r.lo, p.clip->first), std::min(r.hi, p.clip->second)};
  return r;
}

struct FastElement {
  std::int64_t q = 0;
  Label label = Label::clear;
};

// RequantizeScheme::ideal for an element whose rounding provably stays in range or saturates:
// x = acc * num / den with floor q0 and remainder r.
//   saturated  q0 + zp >= hi + 1 (so x + zp >= hi + 1/2) or q0 + zp <= lo - 2 (x + zp < lo - 1/2),
//              and the clamp saturates (not Clamp::wrap): q is the range bound;
//   in range   lo <= q0 + zp <= hi - 1: q is q0 or q0 + 1 by the rounding rule (a tie is 2r = den),
//              inside the range, and the label is ideal_label's: tie, near tie (|2r - den| * 512 <=
//              den, i.e. |frac(x) - 1/2| <= kNearTieDistance) or clear.
// nullopt otherwise (the slow path decides).
// Where acc * num / den lies (floor q0, remainder 0 <= r < den), decided in T (int64 where every
// quantity fits it, else int128): saturated, clear, or nullopt.
template <class T>
std::optional<FastElement> ideal_decide(T q0, T r, T den, std::int64_t zp, IntRange range, const RequantizePolicy& p) {
  if (p.clamp != Clamp::wrap) {
    if (q0 + zp >= range.hi + 1) return FastElement{range.hi, Label::saturated};
    if (q0 + zp <= range.lo - 2) return FastElement{range.lo, Label::saturated};
  }
  if (q0 + zp < range.lo || q0 + zp > range.hi - 1) return std::nullopt;
  const T twice = 2 * r - den;
  // |twice| * 2^9 <= den exactly: for integers, a * 512 <= d iff a <= floor(d / 512).
  const Label label = twice == 0                                  ? Label::tie
                      : (twice < 0 ? -twice : twice) <= den / 512 ? Label::near_tie
                                                                  : Label::clear;
  const bool zp_before = p.zero_point == ZeroPointAdd::float_before_rounding;
  const T t_floor = zp_before ? q0 + zp : q0;  // floor of the value that is rounded (x + zp has x's fraction)
  const bool up = rounds_up(p.rounding, r == 0, twice == 0, twice > 0, (t_floor & 1) != 0, t_floor < 0);
  return FastElement{static_cast<std::int64_t>(t_floor + (up ? 1 : 0) + (zp_before ? 0 : zp)), label};
}

std::optional<FastElement> ideal_requantize_fast(std::int64_t acc, const IdealFraction& f, std::int64_t zp,
                                                 IntRange range, const RequantizePolicy& p) {
  static_assert(kNearTieDistance == 1.0 / 1024.0, "the near-tie test is |2r - den| * 2^9 <= den");
  if (!f.usable) return std::nullopt;
  const unsigned __int128 mag = acc < 0 ? static_cast<unsigned __int128>(-static_cast<__int128>(acc)) : acc;
  const int bits = bit_length(mag) + f.num_bits;
  if (bits > 125) return std::nullopt;
  // The common case in int64: |N| < 2^61 and den = 2^k <= 2^60, so every sum below fits (the output
  // range and zero point are at most 32-bit).
  if (bits <= 61 && f.den_shift >= 0 && f.den_shift <= 60) {
    const std::int64_t N = acc * static_cast<std::int64_t>(f.num), den = std::int64_t{1} << f.den_shift;
    return ideal_decide<std::int64_t>(N >> f.den_shift, N & (den - 1), den, zp, range, p);
  }
  const __int128 N = static_cast<__int128>(acc) * f.num;
  __int128 q0, r;
  if (f.den_shift >= 0) {  // floor and remainder of a division by 2^k: an arithmetic shift and a mask
    q0 = N >> f.den_shift;
    r = N & (f.den - 1);
  } else {
    constexpr __int128 kInt64Max = std::numeric_limits<std::int64_t>::max();
    if (N > -kInt64Max && N < kInt64Max && f.den < kInt64Max) {  // 64-bit division: the 128-bit one is slow
      const auto n64 = static_cast<std::int64_t>(N), d64 = static_cast<std::int64_t>(f.den);
      q0 = n64 / d64;
      r = n64 % d64;
    } else {
      q0 = N / f.den;
      r = N % f.den;
    }
    if (r < 0) {
      q0 -= 1;
      r += f.den;
    }
  }
  return ideal_decide<__int128>(q0, r, f.den, zp, range, p);
}

// acc * P as a double-double when acc and the scale product P = sa * sb are exact in double.
struct DoubleDouble {
  double hi = 0, lo = 0;
};
std::optional<DoubleDouble> exact_product(std::int64_t acc, double sa, double sb) {
  const double P = sa * sb;
  if (std::fma(sa, sb, -P) != 0 || acc > (std::int64_t{1} << 53) || acc < -(std::int64_t{1} << 53)) return std::nullopt;
  const double a = static_cast<double>(acc);
  const double hi = a * P;
  return DoubleDouble{hi, std::fma(a, P, -hi)};
}

// One segment, no float bias, compute in f32 or f64: the hardware evaluates the policy's recipe
// float(acc) * (sa * sb) with one RNE rounding per operation (-ffp-contract=off), as Arith would.
std::optional<std::uint64_t> hardware_dequantize(std::int64_t acc, double sa, double sb, const std::string& compute,
                                                 DType out) {
  double y;
  if (compute == "f32") {
    const float p = static_cast<float>(sa) * static_cast<float>(sb);
    y = static_cast<double>(static_cast<float>(acc) * p);
  } else if (compute == "f64") {
    if (acc > (std::int64_t{1} << 53) || acc < -(std::int64_t{1} << 53)) return std::nullopt;
    y = static_cast<double>(acc) * (sa * sb);
  } else {
    return std::nullopt;
  }
  return double_to_float_bits(out, y);
}

// The dequantized output's float recipe, one definition for the output stage and its trace:
// float(acc_s) * (float(s_a) * float(s_b)) per segment, summed in segment order, + float(bias),
// every conversion and operation rounded in A. With `trace`, each operation is a step.
template <class AccOf>
ExactFloat dequantized_sum(const QLinearResult::State& st, std::int64_t e, const Arith& A, AccOf acc_of,
                           std::vector<TraceStep>* trace = nullptr) {
  const auto step = [&](std::string what, std::string formula, const Rational& exact, const ExactFloat& rounded) {
    if (trace) trace->push_back({std::move(what), std::move(formula), ExactFloat::finite(exact), rounded, ""});
    return rounded;
  };
  const std::string in = " in " + A.name();
  ExactFloat sum;
  for (std::int64_t s = 0; s < st.segments; ++s) {
    const Rational& sa = st.a_scales[static_cast<std::size_t>(st.acc.a_at(e, s))];
    const Rational& sb = st.b_scales[static_cast<std::size_t>(st.acc.b_at(e, s))];
    const std::string seg = st.segments > 1 ? " (segment " + std::to_string(s) + ")" : "";
    const Rational acc(acc_of(s));
    const ExactFloat fa = step("float(acc)" + in + seg, to_decimal(acc), acc, A.convert(ExactFloat::finite(acc)));
    const ExactFloat fsa = A.convert(ExactFloat::finite(sa)), fsb = A.convert(ExactFloat::finite(sb));
    const ExactFloat p = step("s_a * s_b" + in + seg, to_decimal(fsa.value) + " * " + to_decimal(fsb.value),
                              fsa.value * fsb.value, A.mul(fsa, fsb));
    const ExactFloat term = step("acc * (s_a * s_b)" + in + seg, "", fa.value * p.value, A.mul(fa, p));
    sum = s == 0 ? term : step("+ the sum so far" + in, "", sum.value + term.value, A.add(sum, term));
  }
  if (!st.float_bias.empty()) {
    const ExactFloat b = A.convert(ExactFloat::finite(st.float_bias[static_cast<std::size_t>(st.channel_of(e))]));
    sum = step("+ float bias" + in, to_decimal(b.value), sum.value + b.value, A.add(sum, b));
  }
  return sum;
}

void dequantized_output(const QLinearResult::State& st, const QGemmPolicy& policy, DType scale_dtype,
                        QLinearResult& r) {
  const DType out = st.out.format;
  if (!is_float(out))
    throw InputError("output: a dequantized output needs a float format, got " + std::string(name(out)));
  const Arith A = resolve_compute(policy.dequantize.compute, DType::i32, scale_dtype);
  const std::string compute = A.name();
  const bool fast = st.segments == 1 && st.float_bias.empty();
  // Several segments or a float bias: the recipe and the exact value in doubles with an error bound.
  const qlinear_fast::DequantizeFast several(compute, out, st.float_bias);
  std::vector<std::int64_t> accs(static_cast<std::size_t>(st.segments));
  std::vector<double> sas(accs.size()), sbs(accs.size());
  for (std::int64_t e = 0; e < r.y.size(); ++e) {
    auto acc_of = [&](std::int64_t s) { return st.policy_accumulator(e, s, policy.accumulation); };
    const bool overflowed = st.overflowed(e);
    if (!fast && !overflowed) {
      for (std::int64_t s = 0; s < st.segments; ++s) {
        const auto k = static_cast<std::size_t>(s);
        accs[k] = acc_of(s);
        sas[k] = st.a_scale_value(e, s);
        sbs[k] = st.b_scale_value(e, s);
      }
      if (const auto bits = several.element(accs.data(), sas.data(), sbs.data(), st.segments, st.channel_of(e))) {
        r.y.set_bits(e, *bits);
        r.labels[static_cast<std::size_t>(e)] = Label::clear;
        continue;
      }
    }
    if (!fast) ++r.slow_elements;
    if (fast && !overflowed) {
      const double sa = st.a_scale_value(e, 0), sb = st.b_scale_value(e, 0);
      const std::int64_t acc = acc_of(0);
      const std::optional<DoubleDouble> v = exact_product(acc, sa, sb);
      const std::optional<std::uint64_t> nearest =
          v ? qlinear_fast::clear_with_bound(v->hi, v->lo, 0, out) : std::nullopt;
      const std::optional<std::uint64_t> computed =
          compute == "exact" ? nearest : hardware_dequantize(acc, sa, sb, compute, out);
      if (nearest && computed) {
        r.y.set_bits(e, *computed);
        r.labels[static_cast<std::size_t>(e)] =
            std::isfinite(float_bits_to_double(out, *computed)) ? Label::clear : Label::saturated;
        continue;
      }
    }
    r.y.set_bits(e, encode_float(out, dequantized_sum(st, e, A, acc_of), RoundingMode::rne, Overflow::ieee));
    const bool finite = decode_float(out, r.y.bits(e)).is_finite();
    r.labels[static_cast<std::size_t>(e)] =
        (overflowed || !finite) ? Label::saturated : float_grid_label(st.real_value(e, acc_of), out);
  }
}

RequantizePolicy with_fused_clamp(RequantizePolicy p, const std::optional<IntRange>& clamp) {
  if (!clamp) return p;
  if (p.clip)
    p.clip = std::make_pair(std::max(p.clip->first, clamp->lo), std::min(p.clip->second, clamp->hi));
  else
    p.clip = std::make_pair(clamp->lo, clamp->hi);
  return p;
}

struct ChannelMultiplier {
  RequantizeMultiplier m;
  IdealFraction ideal;
};

// The multipliers one thread has formed, by key (index of A's scale) * nb + (index of B's scale):
// a table where the keys are few, else a map.
class MultiplierCache {
 public:
  explicit MultiplierCache(std::int64_t keys) {
    if (keys <= (std::int64_t{1} << 16)) dense_.assign(static_cast<std::size_t>(keys), nullptr);
  }
  template <class Make>
  const ChannelMultiplier& get(std::int64_t key, Make make) {
    if (!dense_.empty()) {  // 8-byte slots: the table stays in cache (a multiplier is ~256 bytes)
      const ChannelMultiplier*& slot = dense_[static_cast<std::size_t>(key)];
      if (!slot) slot = &made_.emplace_back(make());
      return *slot;
    }
    auto it = sparse_.find(key);
    if (it == sparse_.end()) it = sparse_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::vector<const ChannelMultiplier*> dense_;
  std::deque<ChannelMultiplier> made_;  // stable addresses for dense_
  std::unordered_map<std::int64_t, ChannelMultiplier> sparse_;
};

// Tensor::set_int without its out-of-line call per element, for the integer outputs.
inline void store_int(Tensor& t, std::int64_t i, std::int64_t v) {
  switch (t.dtype()) {
    case DType::i8:
      t.data<std::int8_t>()[i] = static_cast<std::int8_t>(v);
      return;
    case DType::u8:
      t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v);
      return;
    default:
      t.set_int(i, v);
  }
}

// ---- The ideal scheme by rows (requantize_rows.hpp) ----------------------------------------------

// A scale prepare_multiplier accepts (requantize.cpp check_scale): positive, finite, exact in the
// scale format.
bool multiplier_accepts_scale(double s, DType dtype) {
  return s > 0 && std::isfinite(s) && is_float(dtype) &&
         float_bits_to_double(dtype, double_to_float_bits(dtype, s)) == s;
}

// The row kernel takes outputs laid out as rows by columns (a GEMM's; not selected elements or a
// convolution's tables per element), a saturating clamp, an output of at most 32 bits, and scales
// every element's definition accepts (so no definition would throw).
bool ideal_rows_apply(const QLinearResult::State& st, const RequantizePolicy& p, DType scale_dtype) {
  if (p.clamp == Clamp::wrap || st.acc.cols < 8 || !st.acc.channel.empty()) return false;
  switch (st.out.format) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
      break;
    default:
      return false;
  }
  const auto accepted = [&](double s) { return multiplier_accepts_scale(s, scale_dtype); };
  return accepted(st.out.scale) && std::all_of(st.a_scale_values.begin(), st.a_scale_values.end(), accepted) &&
         std::all_of(st.b_scale_values.begin(), st.b_scale_values.end(), accepted);
}

requantize_rows::Out row_format(DType t) {
  switch (t) {
    case DType::i8:
      return requantize_rows::Out::s8;
    case DType::u8:
      return requantize_rows::Out::u8;
    case DType::i16:
      return requantize_rows::Out::s16;
    case DType::u16:
      return requantize_rows::Out::u16;
    default:
      return requantize_rows::Out::s32;  // ideal_rows_apply admits i32 as the only other format
  }
}

// RequantizeScheme::ideal over rows of a GEMM's output: per row, the column factors s_b / s_out
// (once per B table) and the row factor s_a, the row kernel, and `element` (the definition) for
// each element it flags. An overflowed accumulation is labelled saturated, as the definition's
// caller labels it; its value is the held accumulator's either way.
template <class Element>
class IdealRows {
 public:
  // `used`: whether rows() will run (the row kernel applies), so the shared tables are worth making.
  IdealRows(const QLinearResult::State& st, const QGemmPolicy& policy, const RequantizePolicy& p, IntRange range,
            QLinearResult& r, Element element, bool used)
      : st_(st), policy_(policy), r_(r), element_(element), kernel_(requantize_rows::kernel()) {
    params_.zp = static_cast<double>(st.out.zero_point);
    params_.zp_before = p.zero_point == ZeroPointAdd::float_before_rounding;
    params_.lo = static_cast<double>(range.lo);
    params_.hi = static_cast<double>(range.hi);
    params_.mode = p.rounding;
    const std::int64_t C = st.acc.cols;
    if (used && r.y.size() > 0 && st.acc.rows_per_b >= r.y.size() / C) {  // one B table: its factors once
      column_factor_.resize(static_cast<std::size_t>(C));
      for (std::int64_t c = 0; c < C; ++c) column_factor_[static_cast<std::size_t>(c)] = column_factor(c);
    }
  }

  // Rows [r0, r1), their accumulators (one segment) at values + row * cols.
  void rows(const std::int64_t* values, std::int64_t r0, std::int64_t r1) const {
    const ScaledAccumulators& acc = st_.acc;
    const std::int64_t C = acc.cols;
    const std::int64_t keys = static_cast<std::int64_t>(st_.a_scales.size() * st_.b_scales.size());
    const requantize_rows::Out format = row_format(r_.y.dtype());
    std::byte* y = r_.y.bytes().data();
    std::vector<double> table_factor(column_factor_.empty() ? static_cast<std::size_t>(C) : 0);  // per B table
    const double* cf = column_factor_.empty() ? table_factor.data() : column_factor_.data();
    std::vector<std::int64_t> biased(st_.int_bias.empty() ? 0 : static_cast<std::size_t>(C));
    std::vector<std::int64_t> q(static_cast<std::size_t>(C)),
        code(static_cast<std::size_t>(C));       // the kernel's scratch
    std::optional<MultiplierCache> multipliers;  // for the flagged elements' definitions
    std::int64_t table = -1;
    for (std::int64_t row = r0; row < r1; ++row) {
      const std::int64_t e0 = row * C;
      if (column_factor_.empty() && row / acc.rows_per_b != table) {
        table = row / acc.rows_per_b;
        for (std::int64_t c = 0; c < C; ++c) table_factor[static_cast<std::size_t>(c)] = column_factor(e0 + c);
      }
      requantize_rows::Params row_params = params_;
      row_params.row_factor = factor(st_.a_scale_value(e0, 0));
      const std::int64_t* a = values + e0;
      if (!biased.empty()) {
        for (std::int64_t c = 0; c < C; ++c)
          biased[static_cast<std::size_t>(c)] =
              add_in_accumulator(policy_.accumulation, a[c], st_.int_bias[static_cast<std::size_t>(c)]);
        a = biased.data();
      }
      const std::int64_t flagged =
          kernel_(row_params, a, cf,
                  {C, format, y + e0 * info(r_.y.dtype()).storage_bytes, r_.labels.data() + e0, q.data(), code.data()});
      if (flagged < 0) {  // an accumulator beyond 2^51 (int64 sums): the row by definition
        if (!multipliers) multipliers.emplace(keys);
        for (std::int64_t c = 0; c < C; ++c) element_(e0 + c, *multipliers, values);
        continue;
      }
      if (flagged == 0) continue;
      if (!multipliers) multipliers.emplace(keys);
      for (std::int64_t c = 0; c < C; ++c)
        if (code[static_cast<std::size_t>(c)] & requantize_rows::kFlagged) element_(e0 + c, *multipliers, values);
    }
  }

  // Every row of st.acc, split across the oracle's threads.
  void all_rows() const {
    const std::int64_t C = st_.acc.cols, rows = r_.y.size() / C;
    parallel_ranges(rows, std::max<std::int64_t>(1, 8192 / C),
                    [&](std::int64_t r0, std::int64_t r1) { this->rows(st_.acc.value.data(), r0, r1); });
    for (const auto& entry : st_.acc.exact_where_different)
      r_.labels[static_cast<std::size_t>(entry.first / st_.segments)] = Label::saturated;
  }

 private:
  static double factor(double f) {
    return requantize_rows::usable_factor(f) ? f : std::numeric_limits<double>::quiet_NaN();  // NaN: flagged
  }
  // s_b / s_out of output element e's column.
  double column_factor(std::int64_t e) const { return factor(st_.b_scale_value(e, 0) / st_.out.scale); }

  const QLinearResult::State& st_;
  const QGemmPolicy& policy_;
  QLinearResult& r_;
  Element element_;
  requantize_rows::Kernel kernel_;
  requantize_rows::Params params_;
  std::vector<double> column_factor_;  // with one B table, its factors for every row
};

// The integer stage run inside the output stage (finish_output_by_rows): it fills st.acc and may
// hand rows over while they are in cache.
using SumsStage = std::function<IntGemmAccumulators(const SumRowsReady*)>;

void install_sums(QLinearResult::State& st, IntGemmAccumulators acc, QLinearResult& r) {
  st.acc.value = std::move(acc.value);
  st.acc.exact_where_different = std::move(acc.exact_where_different);
  st.acc.proof = acc.proof;
  r.proof = acc.proof;
}

// The requantized output's own checks (InputError), before it reads any accumulator; its policy
// with the fused clamp.
RequantizePolicy requantize_checks(const QLinearResult::State& st, const QGemmPolicy& policy, const QLinearResult& r) {
  const OutputStage& out = st.out;
  if (!is_int(out.format)) throw InputError("output: a requantized output needs an integer format");
  const RequantizePolicy p = with_fused_clamp(policy.requantize, out.clamp);
  const bool one_accumulator = st.segments == 1 && st.float_bias.empty();
  if (!one_accumulator && p.scheme != RequantizeScheme::ideal)
    throw InputError("output: requantize scheme " + std::string(name(p.scheme)) +
                     " takes one accumulator and one multiplier; blocked quantization or a float bias is only "
                     "defined for the ideal scheme (round(v / s_out) + zp exactly)");
  // A clip that leaves no value is the definition's error at every element: raised here once, before
  // any fast path decides an element without looking at it.
  if (r.y.size() > 0) (void)requantize_detail::output_range(out.format, p);
  return p;
}

// With `sums`, the integer stage runs here, after the checks, and when the row kernel applies it
// requantizes each group of rows as the sums hand it over (in cache, on the thread that summed it).
void requantized_output(QLinearResult::State& st, const QGemmPolicy& policy, DType scale_dtype, QLinearResult& r,
                        const SumsStage* sums = nullptr) {
  const OutputStage& out = st.out;
  const RequantizePolicy p = requantize_checks(st, policy, r);
  const bool one_accumulator = st.segments == 1 && st.float_bias.empty();
  const IntRange range = requantize_range(out.format, p);
  const bool ideal = p.scheme == RequantizeScheme::ideal;
  const std::int64_t na = static_cast<std::int64_t>(st.a_scales.size()),
                     nb = static_cast<std::int64_t>(st.b_scales.size());
  const Rational s_out(out.scale);
  // One element by its definition (ideal_requantize_fast first, for the ideal scheme), its
  // accumulators at values[e * S + s]. Each thread keeps its own multipliers, formed when one of its
  // elements first needs a (scale of A, scale of B) pair.
  const auto element = [&](std::int64_t e, MultiplierCache& multipliers, const std::int64_t* values) {
    const bool overflowed = st.overflowed(e);
    // A RequantizeElement holds a rational (heap memory): only the elements the fast path leaves make one.
    auto store = [&](const RequantizeElement& q) {
      r.y.set_int(e, q.q);
      r.labels[static_cast<std::size_t>(e)] = overflowed ? Label::saturated : q.label;
    };
    if (one_accumulator) {
      const std::int32_t ai = st.acc.a_at(e, 0), bi = st.acc.b_at(e, 0);
      const ChannelMultiplier& cm = multipliers.get(std::int64_t{ai} * nb + bi, [&] {
        const RequantizeScales scales{st.a_scale_values[static_cast<std::size_t>(ai)],
                                      st.b_scale_values[static_cast<std::size_t>(bi)], out.scale, scale_dtype};
        ChannelMultiplier made{prepare_multiplier(scales, p), {}};
        if (ideal) made.ideal = ideal_fraction(made.m.exact);
        return made;
      });
      const std::int64_t held = values[e];  // one segment
      const std::int64_t acc =
          st.int_bias.empty() ? held : add_in_accumulator(policy.accumulation, held, st.bias_of(e));
      if (ideal && !overflowed) {
        if (const auto fast = ideal_requantize_fast(acc, cm.ideal, out.zero_point, range, p)) {
          store_int(r.y, e, fast->q);
          r.labels[static_cast<std::size_t>(e)] = fast->label;
          return;
        }
      }
      store(requantize_element(acc, cm.m, out.zero_point, out.format, p));
    } else {
      const Rational v =
          st.real_value(e, [&](std::int64_t s) { return st.policy_accumulator(e, s, policy.accumulation); });
      store(requantize_real(v / s_out, out.scale, scale_dtype, out.zero_point, out.format, p));
    }
  };
  const bool by_rows = ideal && one_accumulator && ideal_rows_apply(st, p, scale_dtype);
  const IdealRows rows(st, policy, p, range, r, element, by_rows);
  if (sums) {
    const SumRowsReady ready = [&](const std::int64_t* values, std::int64_t r0, std::int64_t r1) {
      rows.rows(values, r0, r1);
    };
    IntGemmAccumulators done = (*sums)(by_rows ? &ready : nullptr);
    const bool requantized = done.rows_reported;  // every row already went through `rows`
    install_sums(st, std::move(done), r);
    if (st.acc.value.size() != static_cast<std::size_t>(r.y.size() * st.segments))
      throw InputError("finish_output: accumulator arrays do not match shape " + shape_str(st.acc.shape));
    if (requantized) return;  // and nothing overflowed: the rows_reported contract
  }
  if (by_rows) {
    rows.all_rows();
    return;
  }
  if (!ideal && one_accumulator) {  // the requantize op's fast channels, one per (A scale, B scale) pair
    const qlinear_fast::RequantizeStage stage{&st.acc,      &st.a_scale_values,  &st.b_scale_values,
                                              &st.int_bias, policy.accumulation, out.scale,
                                              scale_dtype,  out.zero_point,      &p};
    r.slow_elements =
        qlinear_fast::requantize_by_pairs(stage, r.y, r.labels, [&](const std::vector<std::int64_t>& slow) {
          if (slow.empty()) return;
          MultiplierCache multipliers(na * nb);
          for (const std::int64_t e : slow) element(e, multipliers, st.acc.value.data());
        });
    return;
  }
  parallel_ranges(r.y.size(), 4096, [&](std::int64_t e0, std::int64_t e1) {
    MultiplierCache multipliers(na * nb);
    for (std::int64_t e = e0; e < e1; ++e) element(e, multipliers, st.acc.value.data());
  });
}

// What finish_output checks and builds before its stage; the accumulator values are not read.
std::shared_ptr<QLinearResult::State> output_state(ScaledAccumulators acc, const QuantParams& a, const QuantParams& b,
                                                   const std::optional<Tensor>& bias, const OutputStage& out,
                                                   QLinearResult& r) {
  auto st = std::make_shared<QLinearResult::State>();
  st->segments = acc.segments;
  st->acc = std::move(acc);
  st->a_scales = exact_scales(a);
  st->b_scales = exact_scales(b);
  st->a_params = a;
  st->b_params = b;
  st->a_scale_values = a.scales;
  st->b_scale_values = b.scales;
  st->scale_dtype = a.scale_dtype;
  st->out = out;
  attach_bias(*st, st->acc.channels, bias, out);
  if (out.kind == OutputKind::requantized &&
      (out.zero_point < int_min(out.format) || out.zero_point > int_max(out.format)))
    throw InputError("output: zero point " + std::to_string(out.zero_point) + " is outside " +
                     std::string(name(out.format)));
  r.y = Tensor(out.format, st->acc.shape);
  r.labels.assign(static_cast<std::size_t>(r.y.size()), Label::clear);
  r.proof = st->acc.proof;
  return st;
}

void output_stage(QLinearResult::State& st, const QGemmPolicy& policy, DType scale_dtype, QLinearResult& r) {
  switch (st.out.kind) {
    case OutputKind::int32:
      int32_output(st, policy, r);
      break;
    case OutputKind::dequantized:
      dequantized_output(st, policy, scale_dtype, r);
      break;
    case OutputKind::requantized:
      requantized_output(st, policy, scale_dtype, r);
      break;
  }
}

}  // namespace

QLinearResult finish_output(ScaledAccumulators acc, const QuantParams& a, const QuantParams& b,
                            const std::optional<Tensor>& bias, const OutputStage& out, const QGemmPolicy& policy) {
  check_accumulators(acc, a, b);
  QLinearResult r;
  auto st = output_state(std::move(acc), a, b, bias, out, r);
  output_stage(*st, policy, a.scale_dtype, r);
  r.state = std::move(st);
  return r;
}

QLinearResult finish_output_by_rows(ScaledAccumulators acc, const QuantParams& a, const QuantParams& b,
                                    const std::optional<Tensor>& bias, const OutputStage& out,
                                    const QGemmPolicy& policy, const SumsStage& sums) {
  // Only a requantized output works by rows. Any check that fails runs the plain order (the sums,
  // then finish_output), so that an input both stages reject reports the integer stage's error first.
  bool checked = false;
  QLinearResult r;
  std::shared_ptr<QLinearResult::State> st;
  if (out.kind == OutputKind::requantized) {
    try {
      check_accumulators(acc, a, b, false);
      st = output_state(acc, a, b, bias, out, r);
      (void)requantize_checks(*st, policy, r);
      checked = true;
    } catch (const InputError&) {
    }
  }
  if (!checked) {
    IntGemmAccumulators sums_done = sums(nullptr);
    acc.value = std::move(sums_done.value);
    acc.exact_where_different = std::move(sums_done.exact_where_different);
    acc.proof = sums_done.proof;
    return finish_output(std::move(acc), a, b, bias, out, policy);
  }
  requantized_output(*st, policy, a.scale_dtype, r, &sums);
  r.state = std::move(st);
  return r;
}

LinearAccumulators QLinearResult::accumulators() const { return {state->acc, state->a_params, state->b_params}; }

LinearAccumulators QLinearResult::accumulators_at(const std::vector<std::int64_t>& only) const {
  return {select_accumulators(state->acc, only), state->a_params, state->b_params};
}

ScaledAccumulators select_accumulators(const ScaledAccumulators& all, const std::vector<std::int64_t>& only) {
  ScaledAccumulators sa;
  sa.shape = {static_cast<std::int64_t>(only.size())};
  sa.channels = all.channels;
  sa.segments = all.segments;
  sa.proof = all.proof;
  const auto S = static_cast<std::size_t>(all.segments);
  const std::int64_t E = numel(all.shape);
  sa.value.resize(only.size() * S);
  sa.a_index.resize(only.size() * S);
  sa.b_index.resize(only.size() * S);
  sa.channel.resize(only.size());
  for (std::size_t j = 0; j < only.size(); ++j) {
    const std::int64_t e = only[j];
    if (e < 0 || e >= E)
      throw InputError("select_accumulators: element " + std::to_string(e) + " is outside the output " +
                       shape_str(all.shape));
    sa.channel[j] = static_cast<std::int32_t>(all.channel_at(e));
    for (std::size_t s = 0; s < S; ++s) {
      const std::size_t k = j * S + s;
      sa.value[k] = all.value[static_cast<std::size_t>(e) * S + s];
      sa.a_index[k] = all.a_at(e, static_cast<std::int64_t>(s));
      sa.b_index[k] = all.b_at(e, static_cast<std::int64_t>(s));
    }
  }
  if (!all.exact_where_different.empty())
    for (std::size_t j = 0; j < only.size(); ++j)
      for (std::size_t s = 0; s < S; ++s)
        if (const auto it =
                all.exact_where_different.find(only[j] * static_cast<std::int64_t>(S) + static_cast<std::int64_t>(s));
            it != all.exact_where_different.end())
          sa.exact_where_different.emplace(static_cast<std::int64_t>(j * S + s), it->second);
  return sa;
}

std::vector<TraceStep> QLinearResult::trace(std::int64_t i, const QGemmPolicy& policy) const {
  const State& st = *state;
  std::vector<TraceStep> steps;
  const auto integer = [](const BigInt& v) { return ExactFloat::finite(Rational(v)); };
  const std::string acc_name(name(policy.accumulation));
  for (std::int64_t s = 0; s < st.segments; ++s) {
    const std::int64_t held = st.acc.value[static_cast<std::size_t>(i * st.segments + s)];
    const BigInt exact = st.exact_accumulator(i, s);
    steps.push_back({"accumulate sum of (a - za) * (b - zb)" +
                         (st.segments > 1 ? " over segment " + std::to_string(s) : std::string()) + " in " + acc_name,
                     "", integer(exact), integer(BigInt(held)),
                     exact == held ? "" : "the accumulator overflows: " + acc_name + " holds " + std::to_string(held)});
  }
  if (!st.int_bias.empty()) {
    const std::int64_t held = st.policy_accumulator(i, 0, policy.accumulation);
    steps.push_back({"+ int32 bias of channel " + std::to_string(st.channel_of(i)) + " in " + acc_name,
                     std::to_string(st.acc.value[static_cast<std::size_t>(i)]) + " + " + std::to_string(st.bias_of(i)),
                     integer(BigInt(st.acc.value[static_cast<std::size_t>(i)]) + st.bias_of(i)), integer(BigInt(held)),
                     ""});
  }
  const auto acc_of = [&](std::int64_t s) { return st.policy_accumulator(i, s, policy.accumulation); };
  switch (st.out.kind) {
    case OutputKind::int32: {
      const std::int64_t v = acc_of(0);
      steps.push_back({"to i32", std::to_string(v), integer(BigInt(v)), integer(BigInt(y.get_int(i))), ""});
      break;
    }
    case OutputKind::dequantized: {
      const Arith A = resolve_compute(policy.dequantize.compute, DType::i32, st.scale_dtype);
      const ExactFloat sum = dequantized_sum(st, i, A, acc_of, &steps);
      steps.push_back({"cast to " + std::string(name(st.out.format)) + " (ties to even)", "", sum,
                       decode_float(st.out.format, y.bits(i)), ""});
      break;
    }
    case OutputKind::requantized: {
      const RequantizePolicy p = with_fused_clamp(policy.requantize, st.out.clamp);
      RequantizeElement q;
      if (st.segments == 1 && st.float_bias.empty()) {
        const RequantizeScales scales{st.a_scale_value(i, 0), st.b_scale_value(i, 0), st.out.scale, st.scale_dtype};
        q = requantize_element(acc_of(0), prepare_multiplier(scales, p, true), st.out.zero_point, st.out.format, p,
                               true);
      } else {
        const Rational v = st.real_value(i, acc_of);
        steps.push_back(
            {"v = sum of s_a * s_b * acc" + std::string(st.float_bias.empty() ? "" : " + float bias") + ", exactly", "",
             ExactFloat::finite(v), ExactFloat::finite(v), ""});
        q = requantize_real(v / Rational(st.out.scale), st.out.scale, st.scale_dtype, st.out.zero_point, st.out.format,
                            p, true);
      }
      steps.insert(steps.end(), q.steps.begin(), q.steps.end());
      break;
    }
  }
  return steps;
}

}  // namespace qc
