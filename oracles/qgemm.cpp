#include "oracles/qgemm.hpp"

#include "qconform/parallel.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace qc {

namespace {

// The block length of a parameter along dimension `dim` of `shape`: its block size when blocked
// along dim, 1 when per axis along dim, 0 when it does not vary along dim.
std::int64_t block_along(const QuantParams& p, const Shape& shape, int dim) {
  if (p.granularity() == Granularity::per_tensor) return 0;
  if (resolve_axis(*p.axis, static_cast<int>(shape.size())) != dim) return 0;
  return p.block_size > 0 ? p.block_size : 1;
}

}  // namespace

std::vector<std::int64_t> k_segment_starts(const QuantParams& a, const Shape& a_shape, const QuantParams& b,
                                           const Shape& b_shape, int b_k_axis) {
  const std::int64_t K = a_shape.back();
  std::set<std::int64_t> starts{0};
  for (const std::int64_t block :
       {block_along(a, a_shape, static_cast<int>(a_shape.size()) - 1), block_along(b, b_shape, b_k_axis)})
    if (block > 0)
      for (std::int64_t k = block; k < K; k += block) starts.insert(k);
  return {starts.begin(), starts.end()};
}

namespace {

// An operand's values as int32, written whole by the loops below: no zeros first (4 MiB each at
// 1024 x 1024).
using Int32Values = std::vector<std::int32_t, UninitializedAllocator<std::int32_t>>;

template <class T>
void widen(const T* x, Int32Values& v) {
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(x[i]);
}

Int32Values int32_values(const Tensor& t) {
  Int32Values v(static_cast<std::size_t>(t.size()));
  switch (t.dtype()) {  // the operand formats, on their own types (i4/u4 are held a value a byte)
    case DType::i8:
    case DType::i4:
      widen(t.data<std::int8_t>(), v);
      break;
    case DType::u8:
    case DType::u4:
      widen(t.data<std::uint8_t>(), v);
      break;
    case DType::i16:
      widen(t.data<std::int16_t>(), v);
      break;
    case DType::u16:
      widen(t.data<std::uint16_t>(), v);
      break;
    default:
      for (std::int64_t i = 0; i < t.size(); ++i)
        v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t.get_int(i));
  }
  return v;
}

// The int32 transpose of a [K, N] matrix of T, in 16 x 16 tiles: a tile's rows are widened into a
// local buffer (contiguous reads the compiler vectorizes), then written out by columns from L1,
// about three times faster than striding N values per element. Columns split across threads.
template <class T>
void transpose_widen(const T* b, std::int64_t K, std::int64_t N, std::int32_t* t) {
  constexpr std::int64_t kTile = 16;
  parallel_ranges((N + kTile - 1) / kTile, 16, [&](std::int64_t nt0, std::int64_t nt1) {
    alignas(64) std::int32_t tile[kTile][kTile];
    for (std::int64_t n0 = nt0 * kTile; n0 < std::min(N, nt1 * kTile); n0 += kTile)
      for (std::int64_t k0 = 0; k0 < K; k0 += kTile) {
        const std::int64_t n1 = std::min(N, n0 + kTile), k1 = std::min(K, k0 + kTile);
        if (n1 - n0 < kTile || k1 - k0 < kTile) {  // an edge tile, element by element
          for (std::int64_t n = n0; n < n1; ++n)
            for (std::int64_t k = k0; k < k1; ++k) t[n * K + k] = static_cast<std::int32_t>(b[k * N + n]);
          continue;
        }
        for (std::int64_t i = 0; i < kTile; ++i)
          for (std::int64_t j = 0; j < kTile; ++j) tile[i][j] = static_cast<std::int32_t>(b[(k0 + i) * N + n0 + j]);
        for (std::int64_t j = 0; j < kTile; ++j)
          for (std::int64_t i = 0; i < kTile; ++i) t[(n0 + j) * K + k0 + i] = tile[i][j];
      }
  });
}

// The operand formats held one value a byte (i4 and u4 too), which the packed kernel reads as they are.
bool one_byte(DType t) { return t == DType::i8 || t == DType::u8 || t == DType::i4 || t == DType::u4; }

// B as [N, K] rows: contiguous dot products.
Int32Values transposed_b(const Tensor& b, const GemmShape& d) {
  if (d.b_k_axis == 1) return int32_values(b);
  Int32Values t(static_cast<std::size_t>(b.size()));  // transpose_widen writes every element
  switch (b.dtype()) {
    case DType::i8:
    case DType::i4:
      transpose_widen(b.data<std::int8_t>(), d.depth, d.cols, t.data());
      break;
    case DType::u8:
    case DType::u4:
      transpose_widen(b.data<std::uint8_t>(), d.depth, d.cols, t.data());
      break;
    case DType::i16:
      transpose_widen(b.data<std::int16_t>(), d.depth, d.cols, t.data());
      break;
    case DType::u16:
      transpose_widen(b.data<std::uint16_t>(), d.depth, d.cols, t.data());
      break;
    default: {
      const Int32Values v = int32_values(b);
      transpose_widen(v.data(), d.depth, d.cols, t.data());
    }
  }
  return t;
}

std::int64_t b_flat(const GemmShape& d, std::int64_t k, std::int64_t n) {
  return d.b_k_axis == 0 ? k * d.cols + n : n * d.depth + k;
}

// The accumulators of output elements `only` alone (any order), as ScaledAccumulators of shape
// [only.size()] with one index table entry per element (accumulate_elements).
ScaledAccumulators selected_accumulators(const IntGemmProblem& p, const GemmShape& d,
                                         const std::vector<std::int64_t>& only, const std::vector<std::int64_t>& a_idx,
                                         const std::vector<std::int64_t>& b_idx, Accumulation accumulation, bool shift,
                                         const QGemmPolicy& policy, OperandFacts* facts) {
  IntGemmProblem q = p;
  std::vector<std::int32_t> shifted;
  if (shift) {  // a copy: p's operands may be shared with other policies (GemmOperandCache)
    shifted.assign(p.a.begin(), p.a.end());
    shift_signed_activations(shifted, q.a_zero_points);
    q.a = shifted;
  }
  std::vector<std::int64_t> e_rows(only.size()), e_cols(only.size());
  for (std::size_t j = 0; j < only.size(); ++j) {
    e_rows[j] = only[j] / d.cols;
    e_cols[j] = only[j] % d.cols;
  }
  const IntGemmAccumulators acc = accumulate_elements(q, e_rows, e_cols, accumulation, policy.zero_points,
                                                      policy.pair_rule, shift ? nullptr : facts);  // facts: of p
  const std::int64_t S = p.segments();
  ScaledAccumulators sa;
  sa.shape = {static_cast<std::int64_t>(only.size())};
  sa.channels = d.cols;
  sa.segments = S;
  sa.proof = acc.proof;
  const auto ES = only.size() * static_cast<std::size_t>(S);
  sa.value.resize(ES);
  sa.a_index.resize(ES);  // one "row" of one column per selected element
  sa.b_index.resize(ES);
  sa.channel.resize(only.size());
  for (std::size_t j = 0; j < only.size(); ++j) {
    const std::int64_t r = e_rows[j], n = e_cols[j];
    sa.channel[j] = static_cast<std::int32_t>(n);
    for (std::int64_t s = 0; s < S; ++s) {
      const std::size_t k = j * static_cast<std::size_t>(S) + static_cast<std::size_t>(s);
      sa.value[k] = acc.at(static_cast<std::int64_t>(j), 0, s);
      if (const auto it = acc.exact_where_different.find(static_cast<std::int64_t>(k));
          it != acc.exact_where_different.end())
        sa.exact_where_different.emplace(static_cast<std::int64_t>(k), it->second);
      sa.a_index[k] = static_cast<std::int32_t>(a_idx[static_cast<std::size_t>(r * S + s)]);
      sa.b_index[k] = static_cast<std::int32_t>(b_idx[static_cast<std::size_t>(s * d.cols + n)]);
    }
  }
  return sa;
}

// A batched B (batched_gemm_shape): one integer GEMM per output batch, each on its batch of A and
// its matrix of B, with parameters indexed over the whole operands; the accumulators in output order.
ScaledAccumulators batched_accumulators(const OperandView& qa, const OperandView& qb, const BatchedGemmShape& d,
                                        const QGemmPolicy& policy) {
  const int b_k_axis = static_cast<int>(qb.q.shape().size()) - 2 + d.b_k_axis;
  const std::vector<std::int64_t> starts = k_segment_starts(qa.params, qa.q.shape(), qb.params, qb.q.shape(), b_k_axis);
  const auto S = static_cast<std::int64_t>(starts.size());
  const std::int64_t M = d.m, K = d.depth, N = d.cols, KN = K * N;
  const Int32Values a_all = int32_values(qa.q), b_all = int32_values(qb.q);
  const ParamIndexer a_param(qa.params, qa.q.shape());
  const ParamIndexer b_param(qb.params, qb.q.shape());

  // One problem per output batch; zero points first, as whether any is nonzero decides the pairing.
  struct Batch {
    std::vector<std::int32_t> a, bt;
    std::vector<std::int64_t> a_idx, b_idx, za, zb;
  };
  std::vector<Batch> batches(static_cast<std::size_t>(d.batches));
  bool any_zero_point = false;
  for (std::int64_t i = 0; i < d.batches; ++i) {
    Batch& b = batches[static_cast<std::size_t>(i)];
    const std::int64_t a0 = d.a_batch[static_cast<std::size_t>(i)] * M * K;
    const std::int64_t b0 = d.b_batch[static_cast<std::size_t>(i)] * KN;
    b.a.assign(a_all.begin() + a0, a_all.begin() + a0 + M * K);
    b.bt.resize(static_cast<std::size_t>(KN));
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t n = 0; n < N; ++n)
        b.bt[static_cast<std::size_t>(n * K + k)] = b_all[static_cast<std::size_t>(b0 + b_flat(d, k, n))];
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t s = 0; s < S; ++s) {
        b.a_idx.push_back(a_param(a0 + r * K + starts[static_cast<std::size_t>(s)]));
        b.za.push_back(qa.params.zero_point(b.a_idx.back()));
        any_zero_point = any_zero_point || b.za.back() != 0;
      }
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t n = 0; n < N; ++n) {
        b.b_idx.push_back(b_param(b0 + b_flat(d, starts[static_cast<std::size_t>(s)], n)));
        b.zb.push_back(qb.params.zero_point(b.b_idx.back()));
        any_zero_point = any_zero_point || b.zb.back() != 0;
      }
  }
  const auto [accumulation, shift] =
      paired_accumulation(policy.accumulation, policy.pair_rule, qa.q.dtype(), qb.q.dtype(), any_zero_point);

  ScaledAccumulators sa;
  sa.shape = d.out_shape;
  sa.channels = N;
  sa.segments = S;
  sa.cols = N;
  sa.rows_per_b = std::max<std::int64_t>(M, 1);  // one table of B's indices per output batch
  sa.value.resize(static_cast<std::size_t>(d.rows * N * S));
  for (std::int64_t i = 0; i < d.batches; ++i) {
    Batch& b = batches[static_cast<std::size_t>(i)];
    if (shift) shift_signed_activations(b.a, b.za);
    IntGemmProblem p;
    p.rows = M;
    p.cols = N;
    p.depth = K;
    p.a = b.a;
    p.bt = b.bt;
    p.segment_starts = starts;
    p.a_zero_points = b.za;
    p.b_zero_points = b.zb;
    const IntGemmAccumulators acc = accumulate_gemm(p, accumulation, policy.zero_points, policy.pair_rule);
    merge_proof(sa.proof, acc.proof, i == 0);
    const std::int64_t e0 = i * M * N;  // the batch's first output element
    for (const auto& [key, exact] : acc.exact_where_different) sa.exact_where_different.emplace(e0 * S + key, exact);
    std::copy(acc.value.begin(), acc.value.end(), sa.value.begin() + e0 * S);  // [M][N][S], in output order
    for (const std::int64_t i : b.a_idx) sa.a_index.push_back(static_cast<std::int32_t>(i));
    for (const std::int64_t i : b.b_idx) sa.b_index.push_back(static_cast<std::int32_t>(i));
  }
  return sa;
}

}  // namespace

namespace {

// A qgemm's operands under a policy and, for a 2-D B, its integer problem: the K segments, each
// row's and column's parameter indices and zero points, and the accumulator the policy means for
// these operand types. The problem's operands are left to the caller (bytes or int32 copies).
struct GemmSetup {
  QuantizedOperand qa_storage, qb_storage;  // integer operands are read where they are
  OperandView qa, qb;
  BatchedGemmShape d;
  IntGemmProblem p;
  std::vector<std::int64_t> a_idx, b_idx;
  Accumulation accumulation = Accumulation::int32_wrap;
  bool shift = false;

  GemmSetup(const QGemmOp& op, const QGemmPolicy& policy)
      : qa(activation_view(op.a, policy.quantize, qa_storage)),
        qb(weights_view(op.b, policy.quantize, qb_storage)),
        d(batched_gemm_shape(op.a.values.shape(), qb.q.shape(), op.b_layout)) {
    if (d.batched_b) return;
    p.rows = d.rows;
    p.cols = d.cols;
    p.depth = d.depth;
    p.segment_starts = k_segment_starts(qa.params, qa.q.shape(), qb.params, qb.q.shape(), d.b_k_axis);
    const std::int64_t S = p.segments();
    // Parameter indices: constant over each segment, so read at the segment's first k.
    const ParamIndexer a_param(qa.params, qa.q.shape());
    const ParamIndexer b_param(qb.params, qb.q.shape());
    a_idx.resize(static_cast<std::size_t>(d.rows * S));
    b_idx.resize(static_cast<std::size_t>(S * d.cols));
    p.a_zero_points.resize(a_idx.size());
    p.b_zero_points.resize(b_idx.size());
    for (std::int64_t r = 0; r < d.rows; ++r)
      for (std::int64_t s = 0; s < S; ++s) {
        const auto j = static_cast<std::size_t>(r * S + s);
        a_idx[j] = a_param(r * d.depth + p.segment_starts[static_cast<std::size_t>(s)]);
        p.a_zero_points[j] = qa.params.zero_point(a_idx[j]);
      }
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t n = 0; n < d.cols; ++n) {
        const auto j = static_cast<std::size_t>(s * d.cols + n);
        b_idx[j] = b_param(b_flat(d, p.segment_starts[static_cast<std::size_t>(s)], n));
        p.b_zero_points[j] = qb.params.zero_point(b_idx[j]);
      }
    const PairedAccumulation paired =
        paired_accumulation(policy.accumulation, policy.pair_rule, qa.q.dtype(), qb.q.dtype(), p.any_zero_point());
    accumulation = paired.accumulation;
    shift = paired.shift_signed_activations;
  }
  GemmSetup(const GemmSetup&) = delete;
  GemmSetup& operator=(const GemmSetup&) = delete;
};

}  // namespace

LinearAccumulators qgemm_accumulators(const QGemmOp& op, const QGemmPolicy& policy,
                                      const std::vector<std::int64_t>& only, GemmOperandCache* operands) {
  GemmSetup g(op, policy);
  if (g.d.batched_b)
    return {select_accumulators(batched_accumulators(g.qa, g.qb, g.d, policy), only), g.qa.params, g.qb.params};
  // Float operands are quantized under the policy's quantize stage, so differ between policies.
  const bool integer = !is_float(op.a.values.dtype()) && !is_float(op.b.values.dtype());
  GemmOperandCache local;
  GemmOperandCache& c = operands && integer ? *operands : local;
  if (!c.ready) {
    c.a = int32_values(g.qa.q);
    c.bt = transposed_b(g.qb.q, g.d);
    c.ready = true;
  }
  g.p.a = c.a;
  g.p.bt = c.bt;
  return {selected_accumulators(g.p, g.d, only, g.a_idx, g.b_idx, g.accumulation, g.shift, policy,
                                operands && integer ? &c.facts : nullptr),
          g.qa.params, g.qb.params};
}

QGemmResult qgemm(const QGemmOp& op, const QGemmPolicy& policy, const std::vector<std::int64_t>* only) {
  if (only) return finish_output(qgemm_accumulators(op, policy, *only), op.bias, op.output, policy);
  GemmSetup g(op, policy);
  const OperandView& qa = g.qa;
  const OperandView& qb = g.qb;
  if (g.d.batched_b)
    return finish_output(batched_accumulators(qa, qb, g.d, policy), qa.params, qb.params, op.bias, op.output, policy);
  IntGemmProblem& p = g.p;
  // Byte operands go to the packed kernel as they are (IntGemmProblem::a_bytes): no int32 copy of A,
  // no transposed int32 copy of B. Shifted activations take int32 copies.
  Int32Values a, bt;
  if (!g.shift && one_byte(qa.q.dtype()) && one_byte(qb.q.dtype()) && qa.q.size() > 0 && qb.q.size() > 0) {
    p.a_bytes = {qa.q.bytes().data(), info(qa.q.dtype()).is_signed};
    p.b_bytes = {qb.q.bytes().data(), info(qb.q.dtype()).is_signed};
    p.b_k_by_n = g.d.b_k_axis == 0;
  } else {
    a = int32_values(qa.q);
    bt = transposed_b(qb.q, g.d);
    p.a = a;
    p.bt = bt;
  }
  if (g.shift) {
    shift_signed_activations(a, p.a_zero_points);  // in place: p.a still views a
  }
  ScaledAccumulators sa;
  sa.shape = g.d.out_shape;
  sa.channels = g.d.cols;
  sa.segments = p.segments();
  sa.cols = g.d.cols;  // A's indices per row, B's per column: one table of each
  sa.rows_per_b = std::max<std::int64_t>(g.d.rows, 1);
  sa.a_index.assign(g.a_idx.begin(), g.a_idx.end());
  sa.b_index.assign(g.b_idx.begin(), g.b_idx.end());
  // The sums inside the output stage: a requantized output takes each group of rows in cache.
  return finish_output_by_rows(std::move(sa), qa.params, qb.params, op.bias, op.output, policy,
                               [&](const SumRowsReady* ready) {
                                 return accumulate_gemm(p, g.accumulation, policy.zero_points, policy.pair_rule, ready);
                               });
}

DotTerms qgemm_terms(const QGemmOp& op, const QGemmPolicy& policy, std::int64_t e) {
  const QuantizedOperand qa = quantize_activation(op.a, policy.quantize);
  const QuantizedOperand qb = quantize_weights(op.b, policy.quantize);
  const BatchedGemmShape d = batched_gemm_shape(op.a.values.shape(), qb.q.shape(), op.b_layout);
  if (e < 0 || e >= d.rows * d.cols)
    throw InputError("qgemm: element " + std::to_string(e) + " is outside the output " + shape_str(d.out_shape));
  // Output row r reads A's row a_row(r) and B's matrix b_matrix(r) (both r for a 2-D B).
  const std::int64_t r = d.a_row(e / d.cols), n = e % d.cols, b0 = d.b_matrix(e / d.cols) * d.depth * d.cols;
  const ParamIndexer a_param(qa.params, qa.q.shape());
  const ParamIndexer b_param(qb.params, qb.q.shape());
  DotTerms t;
  t.segment_starts = k_segment_starts(qa.params, qa.q.shape(), qb.params, qb.q.shape(),
                                      static_cast<int>(qb.q.shape().size()) - 2 + d.b_k_axis);
  t.bias_channel = n;
  for (const std::int64_t k : t.segment_starts) {
    t.a_scale.push_back(qa.params.scales[static_cast<std::size_t>(a_param(r * d.depth + k))]);
    t.b_scale.push_back(qb.params.scales[static_cast<std::size_t>(b_param(b0 + b_flat(d, k, n)))]);
  }
  for (std::int64_t k = 0; k < d.depth; ++k) {
    const std::int64_t ai = r * d.depth + k, bi = b0 + b_flat(d, k, n);
    t.a.push_back(qa.q.get_int(ai));
    t.za.push_back(qa.params.zero_point(a_param(ai)));
    t.a_source.push_back(ai);
    t.b.push_back(qb.q.get_int(bi));
    t.zb.push_back(qb.params.zero_point(b_param(bi)));
    t.b_source.push_back(bi);
  }
  return t;
}

}  // namespace qc
