// The projection of a spec onto the GEMM and convolution policies (harness/evaluate.cpp), where a
// preset gives convolutions their own accumulator.
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

}  // namespace
}  // namespace qc
