// The projection of a spec onto the GEMM and convolution policies (harness/evaluate.cpp), where a
// preset gives convolutions their own accumulator; and a Reference outliving the op it came from.
#include "harness/evaluate.hpp"

#include "cases/case.hpp"
#include "oracles/presets.hpp"
#include "tests/oracle/qlinear_test_util.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace {

using namespace test;

// K = 2 with both products 255 * 127: exact 64770, one vpmaddubsw pair 32767.
QGemmOp saturating_pair_gemm() {
  QGemmOp op;
  op.a.values = ints(DType::u8, {1, 2}, {255, 255});
  op.a.params = per_tensor(1.0);
  op.b.values = ints(DType::i8, {2, 1}, {127, 127});
  op.b.params = per_tensor(1.0);
  op.output = int32_out();
  return op;
}

QConv2dOp saturating_pair_conv() {  // 1x1 over C = 2: the same dot product
  QConv2dOp op;
  op.input.values = ints(DType::u8, {1, 2, 1, 1}, {255, 255});
  op.input.params = per_tensor(1.0);
  op.weight.values = ints(DType::i8, {1, 2, 1, 1}, {127, 127});
  op.weight.params = per_tensor(1.0);
  op.output = int32_out();
  return op;
}

TEST(Evaluate, OneDnnWithoutVnniPairsItsMatmulButNotItsConvolution) {
  // oneDNN 2.6 without VNNI: matmul runs gemm_s8u8s32 (vpmaddubsw pairs), a convolution with plain
  // weights ref_int8 (exact).
  for (const char* name : {"onednn@2.6-x86-avx2", "onednn@2.6-x86-avx512-core"}) {
    const Spec s = *find_preset(name);
    const QGemmPolicy g = qgemm_policy(s, DType::u8, LinearOp::gemm), c = qgemm_policy(s, DType::u8, LinearOp::conv);
    EXPECT_EQ(g.accumulation, Accumulation::int16_pair_saturate) << name;
    EXPECT_EQ(c.accumulation, Accumulation::int32_wrap) << name;
    EXPECT_EQ(qgemm(saturating_pair_gemm(), g).y.get_int(0), 32767) << name;
    EXPECT_EQ(qconv2d(saturating_pair_conv(), c).y.get_int(0), 64770) << name;
  }
  // ort-cpu@x86-vpmaddubsw pairs both (MLAS runs QLinearConv as a GEMM).
  const Spec ort = *find_preset("ort-cpu@x86-vpmaddubsw");
  EXPECT_EQ(qconv2d(saturating_pair_conv(), qgemm_policy(ort, DType::u8, LinearOp::conv)).y.get_int(0), 32767);
}

TEST(Evaluate, AnAccumulationOverrideAppliesToConvolutionsToo) {
  const Spec s = parse_spec(R"({"preset": "onednn@2.6-x86-avx2", "accumulation": "int32_saturate"})", "spec");
  EXPECT_FALSE(s.conv_accumulation.has_value());
  EXPECT_EQ(qgemm_policy(s, DType::u8, LinearOp::conv).accumulation, Accumulation::int32_saturate);
  EXPECT_EQ(s.pair_rule, PairRule::x8s8_avx2_k_blocks);
}

// A Reference's describe reads the op's inputs: it must own them, since the reference outlives a
// temporary op (the runner keeps references of cases it built on the fly). The op is destroyed and
// its memory reused by another op with other values before describe is called.
TEST(Evaluate, AReferenceDescribesElementsAfterItsOpIsGone) {
  const Spec onnx = *find_preset("onnx");
  Reference q, dq, rq;
  {
    QuantizeOp op;
    op.x = Tensor(DType::f32, {2});
    op.x.set_double(0, 2.5);
    op.x.set_double(1, -1.25);
    op.params = per_tensor(0.5);
    op.out = DType::i8;
    q = evaluate(OpRequest(op), onnx);
    DequantizeOp d;
    d.q = ints(DType::i8, {2}, {7, -3});
    d.params = per_tensor(0.5);
    d.out = DType::f32;
    dq = evaluate(OpRequest(d), onnx);
    RequantizeOp r;
    r.acc = ints(DType::i32, {2}, {10, -6});
    r.params.input_scale = 0.5;
    r.params.weight_scales = {0.5};
    r.params.output_scale = 1.0;
    r.out = DType::i8;
    rq = evaluate(OpRequest(r), onnx);
  }
  for (int k = 0; k < 8; ++k) {  // reuse the freed memory with other values
    QuantizeOp other;
    other.x = Tensor(DType::f32, {2});
    other.x.set_double(0, 1000.0 + k);
    other.x.set_double(1, 1000.0 + k);
    other.params = per_tensor(4.0);
    (void)evaluate(OpRequest(other), onnx);
  }
  ElementDiff e;
  q.describe(1, e);  // x = -1.25, s = 0.5: x / s = -2.5 before rounding
  EXPECT_EQ(e.input.substr(0, 5), "-1.25");
  EXPECT_EQ(e.exact.substr(0, 4), "-2.5");
  dq.describe(0, e);  // (7 - 0) * 0.5 = 3.5
  EXPECT_EQ(e.input, "7");
  EXPECT_EQ(e.exact.substr(0, 3), "3.5");
  rq.describe(1, e);  // -6 * 0.5 * 0.5 / 1 = -1.5
  EXPECT_EQ(e.input, "-6");
  EXPECT_EQ(e.exact.substr(0, 4), "-1.5");
}

}  // namespace
}  // namespace qc
