// qgemm with a batched B (numpy.matmul / ONNX MatMul broadcasting of the batch dimensions):
// hand-derived vectors. Each expected value is derived in the comment above it from the inputs.
#include "oracles/qgemm.hpp"
#include "qconform/error.hpp"
#include "qlinear_test_util.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace qgemm_batched_test {

// Named one by one: a using-directive would meet other test files' helpers of the same names (unity build).
using test::float_out;
using test::float_values;
using test::floats;
using test::int32_out;
using test::int_values;
using test::ints;
using test::per_axis;
using test::per_tensor;

// A [2, 1, 1, 2] (i8, zero point 0, scale 1): A_0 = [1, 2], A_1 = [3, -1].
// B [3, 2, 2] (i8, k_by_n, zero point 0, scale 1):
//   B_0 = [[1, 0], [0, 1]], B_1 = [[2, 1], [1, 0]], B_2 = [[0, -1], [1, 1]].
// The batch dimensions [2, 1] and [3] broadcast to [2, 3]: output batch (i, j) is A_i x B_j.
QGemmOp broadcast_both() {
  QGemmOp op;
  op.a.values = ints(DType::i8, {2, 1, 1, 2}, {1, 2, 3, -1});
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::i8, {3, 2, 2}, {1, 0, 0, 1, 2, 1, 1, 0, 0, -1, 1, 1});
  op.b.params = per_tensor(1.0);
  op.output = int32_out();
  return op;
}

TEST(QGemmBatched, ShapeBroadcastsBothOperands) {
  // Output batches in row-major order over [2, 3]: (0,0) (0,1) (0,2) (1,0) (1,1) (1,2), so A's batch
  // index is i = [0, 0, 0, 1, 1, 1] and B's is j = [0, 1, 2, 0, 1, 2].
  const BatchedGemmShape d = batched_gemm_shape({2, 1, 1, 2}, {3, 2, 2}, WeightLayout::k_by_n);
  EXPECT_EQ(d.out_shape, (Shape{2, 3, 1, 2}));
  EXPECT_EQ(d.batch, (Shape{2, 3}));
  EXPECT_EQ(d.batches, 6);
  EXPECT_EQ(d.m, 1);
  EXPECT_EQ(d.rows, 6);
  EXPECT_EQ(d.a_batch, (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(d.b_batch, (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(d.batched_b);
}

TEST(QGemmBatched, TwoByTwoBatchAgainstOneB) {
  // A [2, 2, 1, 2] against B [1, 2, 2]: B's batch of 1 broadcasts to every A batch; A batch b is
  // [b + 1, -b] (b = 0..3: [1, 0], [2, -1], [3, -2], [4, -3]); B = [[1, 2], [3, 4]].
  // Row [x, y] times B = [x + 3y, 2x + 4y]:
  //   [1, 0] -> [1, 2];  [2, -1] -> [-1, 0];  [3, -2] -> [-3, -2];  [4, -3] -> [-5, -4].
  QGemmOp op;
  op.a.values = ints(DType::i8, {2, 2, 1, 2}, {1, 0, 2, -1, 3, -2, 4, -3});
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::i8, {1, 2, 2}, {1, 2, 3, 4});
  op.b.params = per_tensor(1.0);
  op.output = int32_out();
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{2, 2, 1, 2}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{1, 2, -1, 0, -3, -2, -5, -4}));
}

TEST(QGemmBatched, BothBatchesBroadcastInt32) {
  //   A_0 B_0 = [1, 2]
  //   A_0 B_1 = [1*2 + 2*1, 1*1 + 2*0] = [4, 1]
  //   A_0 B_2 = [1*0 + 2*1, 1*(-1) + 2*1] = [2, 1]
  //   A_1 B_0 = [3, -1]
  //   A_1 B_1 = [3*2 - 1*1, 3*1 - 0] = [5, 3]
  //   A_1 B_2 = [0 - 1, -3 - 1] = [-1, -4]
  const QGemmResult r = qgemm(broadcast_both(), QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{2, 3, 1, 2}));
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{1, 2, 4, 1, 2, 1, 3, -1, 5, 3, -1, -4}));
  EXPECT_TRUE(r.proof.policy_exact);
}

TEST(QGemmBatched, SelectedElementsAndTerms) {
  // Element 11 is batch (1, 2), row 0, column 1: A_1 = [3, -1] (flat 2, 3) times column 1 of B_2
  // ([-1, 1], flat 8 + 0*2 + 1 = 9 and 8 + 1*2 + 1 = 11) = -3 - 1 = -4; element 0 is A_0 B_0 [0] = 1.
  const QGemmOp op = broadcast_both();
  const std::vector<std::int64_t> only{11, 0};
  const QGemmResult r = qgemm(op, QGemmPolicy{}, &only);
  EXPECT_EQ(int_values(r.y), (std::vector<std::int64_t>{-4, 1}));
  const DotTerms t = qgemm_terms(op, QGemmPolicy{}, 11);
  EXPECT_EQ(t.a, (std::vector<std::int64_t>{3, -1}));
  EXPECT_EQ(t.a_source, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.b, (std::vector<std::int64_t>{-1, 1}));
  EXPECT_EQ(t.b_source, (std::vector<std::int64_t>{9, 11}));
  EXPECT_EQ(t.bias_channel, 1);
}

TEST(QGemmBatched, PerColumnParamsOnTheLastAxisDequantized) {
  // A (f32, 2-D [2, 2], broadcast to B's batch of 2) = [[1.0, 0.5], [2.0, 1.5]], static u8 s_a = 0.5,
  // za = 0: q = [[2, 1], [4, 3]].
  // B [2, 2, 2] (i8) per column (axis -1): s_b = [0.5, 0.25], zb = [1, 0].
  //   B_0 = [[3, 1], [1, 2]] -> B_0 - zb = [[2, 1], [0, 2]]
  //   B_1 = [[1, 0], [-1, 4]] -> B_1 - zb = [[0, 0], [-2, 4]]
  // Accumulators: batch 0: [2*2 + 1*0, 2*1 + 1*2] = [4, 4], [4*2 + 3*0, 4*1 + 3*2] = [8, 10];
  //               batch 1: [0 - 2, 0 + 4] = [-2, 4], [0 - 6, 0 + 12] = [-6, 12].
  // Dequantized: column 0 times s_a * s_b[0] = 0.25, column 1 times 0.125 (exact in f32):
  //   batch 0: [1, 0.5, 2, 1.25]; batch 1: [-0.5, 0.5, -1.5, 1.5].
  QGemmOp op;
  op.a.values = floats(DType::f32, {2, 2}, {1.0, 0.5, 2.0, 1.5});
  op.a.format = DType::u8;
  op.a.params = per_tensor(0.5, 0);
  op.b.values = ints(DType::i8, {2, 2, 2}, {3, 1, 1, 2, 1, 0, -1, 4});
  op.b.params = per_axis(-1, {0.5, 0.25}, {1, 0});
  op.output = float_out(DType::f32);
  const QGemmResult r = qgemm(op, QGemmPolicy{});
  EXPECT_EQ(r.y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(float_values(r.y), (std::vector<double>{1, 0.5, 2, 1.25, -0.5, 0.5, -1.5, 1.5}));
}

TEST(QGemmBatched, NByKLayout) {
  // B [2, 2(N), 2(K)] n_by_k: B_0^T = [[1, 2], [3, 4]] as [N, K] is [[1, 3], [2, 4]] as [K, N].
  // A [2, 1, 2] = [[1, 1]], [[1, -1]]: A_0 B_0 = [1 + 2, 3 + 4] = [3, 7];
  // B_1 [N, K] = [[0, 1], [1, 0]]: A_1 B_1 = [1*0 + (-1)*1, 1*1 + 0] = [-1, 1].
  QGemmOp op;
  op.a.values = ints(DType::i8, {2, 1, 2}, {1, 1, 1, -1});
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::i8, {2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  op.b.params = per_tensor(1.0);
  op.b_layout = WeightLayout::n_by_k;
  op.output = int32_out();
  EXPECT_EQ(int_values(qgemm(op, QGemmPolicy{}).y), (std::vector<std::int64_t>{3, 7, -1, 1}));
}

TEST(QGemmBatched, BatchesThatDoNotBroadcastAreAnInputError) {
  // [2] against [3]: neither is 1.
  try {
    (void)batched_gemm_shape({2, 1, 2}, {3, 2, 2}, WeightLayout::k_by_n);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)batched_gemm_shape({2, 1, 3}, {2, 2, 2}, WeightLayout::k_by_n), InputError);  // K 3 vs 2
  // gemm_shape, which 2-D consumers use, still rejects a batched B.
  EXPECT_THROW((void)gemm_shape({2, 1, 2}, {2, 2, 2}, WeightLayout::k_by_n), InputError);
}

}  // namespace qgemm_batched_test
}  // namespace qc
