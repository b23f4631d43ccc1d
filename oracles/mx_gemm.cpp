#include "oracles/mx_gemm.hpp"

#include "oracles/ieee.hpp"
#include "oracles/qlinear.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace qc {
namespace mx_gemm_detail {
namespace {

using i128 = __int128;

BigInt big_of(i128 v) {
  const bool neg = v < 0;
  const auto u = static_cast<unsigned __int128>(neg ? -v : v);
  BigInt r = BigInt(static_cast<std::uint64_t>(u >> 64));
  r <<= 64;
  r += BigInt(static_cast<std::uint64_t>(u));
  return neg ? BigInt(-r) : r;
}

// B's element (k, n) in its own layout, flat.
std::int64_t b_element(const GemmShape& d, std::int64_t k, std::int64_t n) {
  return d.b_k_axis == 0 ? k * d.cols + n : n * d.depth + k;
}

// The smallest step of an element format: 2^(emin - mbits) (its smallest subnormal), MXINT8 2^-6.
int smallest_step_exponent(MxFormat f) {
  const MxElement& e = mx_element(f);
  return e.is_int ? -6 : e.emin - e.mbits;
}

void check_operand(const MxGemmOperand& o, const char* side) {
  const std::string at = std::string("mx_gemm: field '") + side;
  const DType t = o.values.dtype();
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    throw InputError(at + ".dtype': needs f32, f16 or bf16 values, got " + std::string(name(t)));
  mx_check_global_scale(o.global_scale, o.format, at + ".global_scale'");
}

// The operand's quantization (mx_quantize) and its values as steps and block scales.
MxGemmOperandValues operand_values(const MxGemmOp& op, MxGemmSide side) {
  const MxQuantizeOp q = mx_gemm_quantize_request(op, side);
  MxGemmOperandValues v;
  v.quantized = mx_quantize(q);
  v.unit = smallest_step_exponent(q.blocking.format);
  const auto n = static_cast<std::size_t>(q.x.size());
  v.steps.assign(n, 0);
  v.nan.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::int64_t>(i);
    if (std::isnan(v.quantized.y.get_double(k))) {
      v.nan[i] = true;
      continue;
    }
    const Rational s = mx_element_value(v.quantized.elements.bits(k), q.blocking.format).value * pow2(-v.unit);
    if (denominator(s) != 1) throw std::logic_error("mx_gemm: an element is not a multiple of its format's step");
    v.steps[i] = numerator(s).convert_to<std::int64_t>();
  }
  MxBlocking b = q.blocking;
  b.global_scale = v.quantized.global_scale;  // NVFP4: the one used (unset only when it is not finite: all NaN)
  v.scales.assign(static_cast<std::size_t>(v.quantized.scales.size()), Rational(0));
  if (b.format == MxFormat::nvfp4 && !b.global_scale) return v;
  for (std::int64_t k = 0; k < v.quantized.scales.size(); ++k) {
    const ExactFloat s = mx_block_scale(v.quantized.scales.bits(k), b);
    if (s.is_finite()) v.scales[static_cast<std::size_t>(k)] = s.value;
  }
  return v;
}

}  // namespace
}  // namespace mx_gemm_detail

MxGemmResult mx_gemm(const MxGemmOp& op) {
  using namespace mx_gemm_detail;
  if (op.out != DType::f32 && op.out != DType::f16 && op.out != DType::bf16)
    throw InputError("mx_gemm: field 'output_dtype': f32, f16 or bf16, got " + std::string(name(op.out)));
  check_operand(op.a, "a");
  check_operand(op.b, "b");
  if (op.block_size <= 0)
    throw InputError("mx_gemm: field 'block_size': must be positive, got " + std::to_string(op.block_size));
  if (op.element_rounding != RoundingMode::rne && op.element_rounding != RoundingMode::rna)
    throw InputError("mx_gemm: field 'rounding': rne (OCP) or rna (microxcaling), got " +
                     std::string(name(op.element_rounding)));
  if ((op.a.format == MxFormat::mxint8 || op.b.format == MxFormat::mxint8) && op.scale_rule != MxScaleRule::floor)
    throw InputError("mx_gemm: field 'scale_rule': MXINT8 takes the OCP rule (floor) only");
  MxGemmResult res;
  try {
    res.shape = gemm_shape(op.a.values.shape(), op.b.values.shape(), op.b_layout);
  } catch (const InputError& e) {
    throw InputError(std::string("mx_gemm: field 'b.shape': ") + e.what());
  }
  const GemmShape& d = res.shape;
  const std::int64_t K = d.depth, N = d.cols, bs = op.block_size, nb = (K + bs - 1) / bs;
  std::vector<Rational> bias;
  if (op.bias) {
    const Tensor& t = *op.bias;
    if (!is_float(t.dtype()))
      throw InputError("mx_gemm: field 'bias.dtype': a float format, got " + std::string(name(t.dtype())));
    if (t.rank() != 1 || t.size() != N)
      throw InputError("mx_gemm: field 'bias.shape': must be [N] = [" + std::to_string(N) + "], got " +
                       shape_str(t.shape()));
    for (std::int64_t n = 0; n < N; ++n) {
      if (!std::isfinite(t.get_double(n)))
        throw InputError("mx_gemm: field 'bias.data[" + std::to_string(n) + "]': must be finite");
      bias.push_back(exact_element(t, n));
      res.nonzero_bias = res.nonzero_bias || bias.back() != 0;
    }
  }
  res.a = operand_values(op, MxGemmSide::a);
  res.b = operand_values(op, MxGemmSide::b);
  res.kernel_size = K;
  res.block_size = bs;
  res.blocks = nb;
  const MxGemmOperandValues& B = res.b;
  std::vector<bool> row_nan(static_cast<std::size_t>(d.rows), false), col_nan(static_cast<std::size_t>(N), false);
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::int64_t k = 0; k < K; ++k)
      if (res.a.nan[static_cast<std::size_t>(r * K + k)]) row_nan[static_cast<std::size_t>(r)] = true;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      if (B.nan[static_cast<std::size_t>(b_element(d, k, n))]) col_nan[static_cast<std::size_t>(n)] = true;
  const std::int64_t T = d.rows * N;
  res.y = Tensor(op.out, d.out_shape);
  res.exact.assign(static_cast<std::size_t>(T), Rational(0));
  res.nan.assign(static_cast<std::size_t>(T), false);
  res.bound.assign(static_cast<std::size_t>(T), std::nan(""));
  res.labels.assign(static_cast<std::size_t>(T), Label::special);
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t e = r * N + n;
      const auto ei = static_cast<std::size_t>(e);
      if (row_nan[static_cast<std::size_t>(r)] || col_nan[static_cast<std::size_t>(n)]) {
        res.nan[ei] = true;
        res.y.set_bits(e, encode_float(op.out, ExactFloat::nan()));
        continue;
      }
      Rational v = 0, bound = 0;
      for (std::int64_t blk = 0; blk < nb; ++blk) {
        const MxBlockDot bd = mx_gemm_block_dot(res, r, n, blk);
        v += bd.dot;
        bound += bd.magnitude;
      }
      if (!bias.empty()) {
        v += bias[static_cast<std::size_t>(n)];
        bound += abs(bias[static_cast<std::size_t>(n)]);
      }
      res.y.set_bits(e, encode_float(op.out, ExactFloat::finite(v), RoundingMode::rne, Overflow::ieee));
      const bool finite = decode_float(op.out, res.y.bits(e)).is_finite();
      res.labels[ei] = finite ? float_grid_label(v, op.out) : Label::saturated;
      res.bound[ei] = round_to_format(DType::f64, bound).value.convert_to<double>();
      res.exact[ei] = std::move(v);
    }
  return res;
}

MxBlockDot mx_gemm_block_dot(const MxGemmResult& res, std::int64_t row, std::int64_t col, std::int64_t block) {
  using namespace mx_gemm_detail;
  const GemmShape& d = res.shape;
  const MxGemmOperandValues &A = res.a, &B = res.b;
  MxBlockDot bd;
  bd.k_begin = block * res.block_size;
  bd.k_end = std::min(d.depth, bd.k_begin + res.block_size);
  // The scale codes: A's blocks run along its last axis; B's along K in its layout.
  const std::int64_t a_block = row * res.blocks + block;
  const std::int64_t b_block = d.b_k_axis == 0 ? block * d.cols + col : col * res.blocks + block;
  bd.a_scale_code = A.quantized.scales.bits(a_block);
  bd.b_scale_code = B.quantized.scales.bits(b_block);
  // sum_i P_i(A) P_i(B) in units of 2^(u_A + u_B): each |product| < 2^64, exact in int128.
  i128 s = 0, m = 0;
  for (std::int64_t k = bd.k_begin; k < bd.k_end; ++k) {
    const i128 p = static_cast<i128>(A.steps[static_cast<std::size_t>(row * d.depth + k)]) *
                   B.steps[static_cast<std::size_t>(b_element(d, k, col))];
    s += p;
    m += p < 0 ? -p : p;
  }
  if (m == 0) return bd;  // a zero block pair (its scales may be anything finite)
  const Rational x =
      A.scales[static_cast<std::size_t>(a_block)] * B.scales[static_cast<std::size_t>(b_block)] * pow2(A.unit + B.unit);
  bd.dot = Rational(big_of(s)) * x;
  bd.magnitude = Rational(big_of(m)) * x;
  return bd;
}

}  // namespace qc
