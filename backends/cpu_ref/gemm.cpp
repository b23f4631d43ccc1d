// cpu-ref's quantized GEMM: quantize A, unpack or quantize B, subtract the zero points, one
// Eigen integer product per K block, then the output stage (linear.hpp).
//
// Shapes: A [batch..., M, K] (every leading dimension folds into the rows), B [K, N] (k_by_n) or
// [N, K] (n_by_k), output [batch..., M, N], bias [N]. A batched B [batch..., K, N]: the batch
// dimensions of A and B broadcast as numpy.matmul's do (ONNX MatMul), and each output batch is
// the 2-D GEMM of its A batch and its B matrix (Batches below, written here on its own).
//
// Blocked parameters. A parameter blocked along K (ONNX block_size, the last block possibly
// short) or per axis along K gives each run of K with constant parameters its own integer sum
// and its own scales: K splits wherever A's or B's parameter index changes along K, and
//     y = Σ_blocks s_a · s_b · Σ_{k in block} (a_k - za)(b_k - zb).
// That is ONNX's blocked DequantizeLinear of both operands followed by an exact MatMul.
//
// The integer product. ONNX lets the accumulator wrap in 32 bits, and the onnx preset's
// accumulator is an int32 that wraps. With zero-point-free operands |a - za| <= A and
// |b - zb| <= B over a block of length L, every partial sum of the dot product is at most
// L·A·B in magnitude, in whatever order Eigen adds:
//   L·A·B <= 2^31 - 1  the int32 product is exact (no wrap can happen, and no signed overflow);
//   otherwise          the product runs in int64, exact while L·A·B < 2^63 (8- and 16-bit
//                      operands give A, B <= 65535, so any L < 2^31), and the int32 accumulator is
//                      that sum mod 2^32: wrapping addition is addition mod 2^32, whatever the order.
#include "backends/cpu_ref/linear.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace qc::cpu_ref {
namespace {

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct GemmSizes {
  std::int64_t rows = 0, depth = 0, cols = 0;
  bool b_n_by_k = false;
  // Flat index of B(k, n) in B's own layout.
  std::int64_t b_index(std::int64_t k, std::int64_t n) const { return b_n_by_k ? n * depth + k : k * cols + n; }
};

GemmSizes sizes(const Shape& a, const Shape& b, WeightLayout layout) {
  if (a.size() < 2 || b.size() < 2)
    throw std::invalid_argument("cpu-ref qgemm: A is [batch..., M, K] and B [batch..., K, N]");
  GemmSizes d;
  d.depth = a.back();
  d.b_n_by_k = layout == WeightLayout::n_by_k;
  d.cols = d.b_n_by_k ? b[b.size() - 2] : b.back();
  if ((d.b_n_by_k ? b.back() : b[b.size() - 2]) != d.depth)
    throw std::invalid_argument("cpu-ref qgemm: A and B disagree on K");
  d.rows = b.size() == 2 ? numel(a) / d.depth : a[a.size() - 2];  // a batched B: rows of one batch
  return d;
}

// The output batches of a batched B: for each, the A batch and the B matrix it multiplies (flat
// over each operand's batch dimensions). numpy.matmul: batch dimensions aligned from the right,
// each pair equal or one of them 1 (broadcast).
struct Batches {
  Shape shape;                           // the output's batch dimensions
  std::vector<std::int64_t> of_a, of_b;  // per output batch
};
Batches batches(const Shape& a, const Shape& b) {
  Batches out;
  const auto ra = static_cast<std::int64_t>(a.size()) - 2, rb = static_cast<std::int64_t>(b.size()) - 2;
  const std::int64_t rank = std::max(ra, rb);
  auto extent = [&](const Shape& s, std::int64_t r, std::int64_t i) {
    return i < rank - r ? 1 : s[static_cast<std::size_t>(i - (rank - r))];
  };
  for (std::int64_t i = 0; i < rank; ++i) {
    const std::int64_t x = extent(a, ra, i), y = extent(b, rb, i);
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument("cpu-ref qgemm: the batch dimensions of A and B do not broadcast");
    out.shape.push_back(std::max(x, y));
  }
  // Walk the output batches in row-major order with one counter per dimension.
  std::vector<std::int64_t> c(static_cast<std::size_t>(rank), 0);
  for (std::int64_t n = numel(out.shape); n > 0; --n) {
    std::int64_t ia = 0, ib = 0;
    for (std::int64_t i = 0; i < rank; ++i) {
      const std::int64_t xa = extent(a, ra, i), xb = extent(b, rb, i), ci = c[static_cast<std::size_t>(i)];
      ia = ia * xa + (xa == 1 ? 0 : ci);
      ib = ib * xb + (xb == 1 ? 0 : ci);
    }
    out.of_a.push_back(ia);
    out.of_b.push_back(ib);
    for (std::int64_t i = rank - 1; i >= 0; --i) {
      if (++c[static_cast<std::size_t>(i)] < out.shape[static_cast<std::size_t>(i)]) break;
      c[static_cast<std::size_t>(i)] = 0;
    }
  }
  return out;
}

// The starts of the K blocks: every k where A's parameter index (along row 0) or B's (along
// column 0) differs from the one at k - 1. Blocks and per-K axes are the same for every row and
// column, so one row and one column show them all.
std::vector<std::int64_t> block_starts(const QuantParams& a, const Shape& a_shape, const QuantParams& b,
                                       const Shape& b_shape, const GemmSizes& d) {
  const ParamIndexer ai(a, a_shape), bi(b, b_shape);
  std::vector<std::int64_t> starts{0};
  for (std::int64_t k = 1; k < d.depth; ++k)
    if (ai(k) != ai(k - 1) || bi(d.b_index(k, 0)) != bi(d.b_index(k - 1, 0))) starts.push_back(k);
  return starts;
}

// The activation's parameters and the shape they index, without quantizing (for supports()).
struct ActivationLayout {
  QuantParams params;
  Shape shape;
};
ActivationLayout activation_layout(const ActivationOperand& a) {
  if (a.quantization == ActivationQuantization::static_params || is_int(a.values.dtype()))
    return {a.params, a.values.shape()};
  QuantParams p;  // dynamic: per tensor or per row, constant along K
  p.scales = {1.0};
  return {p, a.values.shape()};
}

std::int64_t max_abs(const Matrix<std::int32_t>& m) { return m.size() == 0 ? 0 : m.cwiseAbs().maxCoeff(); }

}  // namespace

Availability supports_qgemm(const QGemmOp& op, const Numerics& n) {
  if (const Availability a = check_activation(op.a); !a.available) return a;
  if (const Availability b = check_weights(op.b); !b.available) return b;
  const Shape b_shape = op.b.packing ? op.b.shape : op.b.values.shape();
  GemmSizes d;
  try {
    d = sizes(op.a.values.shape(), b_shape, op.b_layout);
    if (b_shape.size() > 2) (void)batches(op.a.values.shape(), b_shape);
  } catch (const std::invalid_argument& e) {
    return {false, e.what()};
  }
  const ActivationLayout al = activation_layout(op.a);
  const auto blocks = static_cast<std::int64_t>(block_starts(al.params, al.shape, op.b.params, b_shape, d).size());
  const DType scale_dtype = op.a.quantization == ActivationQuantization::static_params || is_int(op.a.values.dtype())
                                ? op.a.params.scale_dtype
                                : DType::f32;
  return check_output(op.output, op.bias, blocks, scale_dtype, op.b.params.scale_dtype, n);
}

Tensor run_qgemm(const QGemmOp& op, const Numerics& n) {
  const IntOperand a = activation_integers(op.a, n);  // shape [rows, K] for a dynamic per-row activation
  const IntOperand b = weight_integers(op.b, n);
  const Shape& a_shape = op.a.values.shape();
  const GemmSizes d = sizes(a_shape, b.shape, op.b_layout);
  const std::int64_t M = d.rows, K = d.depth, N = d.cols;
  const Batches bs = b.shape.size() == 2 ? Batches{{}, {0}, {0}} : batches(a_shape, b.shape);
  const auto T = static_cast<std::int64_t>(bs.of_a.size());
  const ParamIndexer ai(a.params, a.shape), bi(b.params, b.shape);

  // The K blocks are the same for every batch (block_starts reads the first row and column).
  const std::vector<std::int64_t> starts = block_starts(a.params, a.shape, b.params, b.shape, d);
  const auto S = static_cast<std::int64_t>(starts.size());
  Accumulators acc;
  acc.shape = b.shape.size() == 2 ? Shape(a_shape.begin(), a_shape.end() - 1) : bs.shape;
  if (b.shape.size() > 2) acc.shape.push_back(M);
  acc.shape.push_back(N);
  acc.segments = S;
  acc.acc.resize(static_cast<std::size_t>(T * M * N * S));
  acc.scale_a.resize(acc.acc.size());
  acc.scale_b.resize(acc.acc.size());
  acc.channel.resize(static_cast<std::size_t>(T * M * N));
  for (std::int64_t t = 0; t < T; ++t) {
    // This batch's A rows, B matrix and first output element.
    const std::int64_t a0 = bs.of_a[static_cast<std::size_t>(t)] * M * K;
    const std::int64_t b0 = bs.of_b[static_cast<std::size_t>(t)] * K * N, e0 = t * M * N;
    // Zero-point-free operands: A as M x K, B as K x N.
    Matrix<std::int32_t> A(M, K), B(K, N);
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t k = 0; k < K; ++k) {
        const std::int64_t i = a0 + r * K + k;
        A(r, k) = a.q[static_cast<std::size_t>(i)] - static_cast<std::int32_t>(a.params.zero_point(ai(i)));
      }
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t c = 0; c < N; ++c) {
        const std::int64_t i = b0 + d.b_index(k, c);
        B(k, c) = b.q[static_cast<std::size_t>(i)] - static_cast<std::int32_t>(b.params.zero_point(bi(i)));
      }
    for (std::int64_t s = 0; s < S; ++s) {
      const std::int64_t k0 = starts[static_cast<std::size_t>(s)];
      const std::int64_t L = (s + 1 < S ? starts[static_cast<std::size_t>(s + 1)] : K) - k0;
      const Matrix<std::int32_t> As = A.middleCols(k0, L), Bs = B.middleRows(k0, L);
      const __int128 bound = static_cast<__int128>(L) * max_abs(As) * max_abs(Bs);
      if (bound >= (static_cast<__int128>(1) << 63))
        throw std::invalid_argument("cpu-ref qgemm: a K block of " + std::to_string(L) + " overflows even int64");
      Matrix<std::int32_t> C(M, N);
      if (bound <= std::numeric_limits<std::int32_t>::max()) {
        C.noalias() = As * Bs;  // exact: no partial sum leaves int32
      } else {
        const Matrix<std::int64_t> C64 = As.cast<std::int64_t>() * Bs.cast<std::int64_t>();  // exact
        C = C64.unaryExpr([](std::int64_t v) { return wrap_int32(v); });  // the int32 accumulator's wrap
      }
      for (std::int64_t r = 0; r < M; ++r)
        for (std::int64_t c = 0; c < N; ++c) {
          const auto j = static_cast<std::size_t>((e0 + r * N + c) * S + s);
          acc.acc[j] = C(r, c);
          acc.scale_a[j] = a.params.scales[static_cast<std::size_t>(ai(a0 + r * K + k0))];
          acc.scale_b[j] = b.params.scales[static_cast<std::size_t>(bi(b0 + d.b_index(k0, c)))];
          acc.channel[static_cast<std::size_t>(e0 + r * N + c)] = c;
        }
    }
  }
  return output_stage(acc, op.bias, op.output, a.params.scale_dtype, n);
}

}  // namespace qc::cpu_ref
