// Weight-only (hybrid) GEMM as a plain reference writes it: dequantize each weight to f32,
// w = float(q - zp) * scale, then y[m][n] = sum over k in increasing order of a[m][k] * w[k][n]
// in f32, plus the bias, stored in the output format. The summation order is the reference's
// own; the harness judges it with the TOSA dot-product bound, not bit for bit.
#include "backends/cpu_ref/formats.hpp"
#include "backends/cpu_ref/linear.hpp"

namespace qc::cpu_ref {

Availability supports_weight_only(const WeightOnlyGemmOp& op) {
  if (!op.b.packing && !is_int(op.b.values.dtype())) return {false, "cpu-ref takes weight-only weights as integers"};
  if (op.out != DType::f32 && op.out != DType::f16 && op.out != DType::bf16)
    return {false, "cpu-ref weight-only output is f32, f16 or bf16"};
  return {};
}

Tensor run_weight_only(const WeightOnlyGemmOp& op) {
  const Tensor q = op.b.packing ? unpack_nibbles(op.b.values, op.b.format, op.b.shape, *op.b.packing) : op.b.values;
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t K = op.a.shape().back();
  const Shape& bs = logical_shape(op.b);  // QWeights::shape is set only for packed weights
  const std::int64_t N = k_by_n ? bs[1] : bs[0];
  const std::int64_t M = op.a.size() / K;
  const ParamIndexer index(op.b.params, bs);
  std::vector<float> w(static_cast<std::size_t>(K * N));  // [k][n]
  for (std::int64_t k = 0; k < K; ++k) {
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t i = k_by_n ? k * N + n : n * K + k;
      const std::int64_t p = index(i);
      w[static_cast<std::size_t>(k * N + n)] = static_cast<float>(q.get_int(i) - op.b.params.zero_point(p)) *
                                               static_cast<float>(op.b.params.scales[static_cast<std::size_t>(p)]);
    }
  }
  Shape ys(op.a.shape().begin(), op.a.shape().end() - 1);
  ys.push_back(N);
  Tensor y(op.out, ys);
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (std::int64_t k = 0; k < K; ++k)
        acc += static_cast<float>(op.a.get_double(m * K + k)) * w[static_cast<std::size_t>(k * N + n)];
      if (op.bias) acc += static_cast<float>(op.bias->get_double(n));
      y.set_bits(m * N + n, to_format_bits(op.out, acc));
    }
  }
  return y;
}

}  // namespace qc::cpu_ref
