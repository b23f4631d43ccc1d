// The lowering of the shipped models (models/model_plan.hpp): cases/models/digits_cnn_qdq.onnx and
// digits_cnn_qop.onnx (written by cases/models/make_digits.py). The expected steps come from the
// models' node lists (read with onnx.load; listed in the comments) and from the rules model_plan.hpp
// states: a DequantizeLinear of a constant is folded, a MatMul's constant bias Add joins it, every
// other node is one step in graph order, and each DQ -> Conv|MatMul (+ bias) [-> Relu] -> Q gets a
// fused reading after its Q. And a cross-check of the two encodings of the same network: the oracle's
// chain through each (the QDQ model read fused, the QOperator model as its graph) gives the same
// uint8 tensors after each max-pool.
#include "models/model_plan.hpp"
#include "models/model_run.hpp"
#include "oracles/presets.hpp"
#include "qconform/npy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace qc::onnx {
namespace {

const std::string kModels = std::string(QCONFORM_SOURCE_DIR) + "/cases/models/";
const std::string kQdq = kModels + "digits_cnn_qdq.onnx";
const std::string kQop = kModels + "digits_cnn_qop.onnx";

Plan plan_of(const std::string& path) { return plan_model(read_model(path), path, *find_preset("onnx")); }

using K = Step::Kind;
struct Want {
  std::string name;
  K kind;
  std::string op_type;
};

void expect_steps(const Plan& p, const std::vector<Want>& want) {
  ASSERT_EQ(p.steps.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p.steps[i].name, want[i].name) << "step " << i;
    EXPECT_EQ(p.steps[i].kind, want[i].kind) << "step " << i << " " << want[i].name;
    EXPECT_EQ(p.steps[i].op_type, want[i].op_type) << "step " << i << " " << want[i].name;
  }
}

const Step& step(const Plan& p, const std::string& name) {
  for (const Step& s : p.steps)
    if (s.name == name) return s;
  throw std::runtime_error("no step " + name);
}

// The QDQ model's 29 nodes (index name op): 0 image_QuantizeLinear, 1 image_DequantizeLinear,
// 2 conv1_weight_DequantizeLinear*, 3 conv1_bias_DequantizeLinear*, 4 conv1_Conv, 5 relu1_Relu,
// 6 relu1_output_QuantizeLinear, 7 relu1_output_DequantizeLinear, 8 pool1_MaxPool,
// 9 pool1_output_QuantizeLinear, 10 pool1_output_DequantizeLinear, 11 conv2_weight_DequantizeLinear*,
// 12 conv2_bias_DequantizeLinear*, 13 conv2_Conv, 14 relu2_Relu, 15 relu2_output_QuantizeLinear,
// 16 relu2_output_DequantizeLinear, 17 pool2_MaxPool, 18 pool2_output_QuantizeLinear,
// 19 pool2_output_DequantizeLinear, 20 flatten_Reshape, 21 flatten_output_QuantizeLinear,
// 22 flatten_output_DequantizeLinear, 23 fc_weight_DequantizeLinear*, 24 fc_MatMul,
// 25 fc_bias_DequantizeLinear*, 26 fc_Add (fc_MatMul's bias), 27 logits_QuantizeLinear,
// 28 logits_DequantizeLinear. (*: a DequantizeLinear of an initializer, folded: six of them.)
// So 29 - 6 folded - 1 joined Add = 22 node steps, plus 3 fused readings.
TEST(ModelPlanQdq, Steps) {
  const Plan p = plan_of(kQdq);
  EXPECT_EQ(p.where, kQdq);
  EXPECT_EQ(p.format, "QDQ");
  EXPECT_TRUE(p.has_fused_readings());
  EXPECT_EQ(p.model.graph.nodes.size(), 29u);
  const std::string Q = "QuantizeLinear", DQ = "DequantizeLinear";
  expect_steps(p, {
                      {"image_QuantizeLinear", K::op, Q},
                      {"image_DequantizeLinear", K::op, DQ},
                      {"conv1_Conv", K::op, "Conv"},
                      {"relu1_Relu", K::float_op, "Relu"},
                      {"relu1_output_QuantizeLinear", K::op, Q},
                      {"conv1_Conv.fused", K::fused, "fused Conv"},
                      {"relu1_output_DequantizeLinear", K::op, DQ},
                      {"pool1_MaxPool", K::float_op, "MaxPool"},
                      {"pool1_output_QuantizeLinear", K::op, Q},
                      {"pool1_output_DequantizeLinear", K::op, DQ},
                      {"conv2_Conv", K::op, "Conv"},
                      {"relu2_Relu", K::float_op, "Relu"},
                      {"relu2_output_QuantizeLinear", K::op, Q},
                      {"conv2_Conv.fused", K::fused, "fused Conv"},
                      {"relu2_output_DequantizeLinear", K::op, DQ},
                      {"pool2_MaxPool", K::float_op, "MaxPool"},
                      {"pool2_output_QuantizeLinear", K::op, Q},
                      {"pool2_output_DequantizeLinear", K::op, DQ},
                      {"flatten_Reshape", K::float_op, "Reshape"},
                      {"flatten_output_QuantizeLinear", K::op, Q},
                      {"flatten_output_DequantizeLinear", K::op, DQ},
                      {"fc_MatMul", K::op, "MatMul"},
                      {"logits_QuantizeLinear", K::op, Q},
                      {"fc_MatMul.fused", K::fused, "fused MatMul"},
                      {"logits_DequantizeLinear", K::op, DQ},
                  });
  // No step for a folded DQ or the joined Add; their values are constants.
  for (const char* folded :
       {"conv1_weight_DequantizeLinear", "conv1_bias_DequantizeLinear", "conv2_weight_DequantizeLinear",
        "conv2_bias_DequantizeLinear", "fc_weight_DequantizeLinear", "fc_bias_DequantizeLinear", "fc_Add"})
    EXPECT_TRUE(std::none_of(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.name == folded; }))
        << folded;
  for (const char* c : {"conv1_weight_DequantizeLinear_Output", "conv1_bias_DequantizeLinear_Output",
                        "conv2_weight_DequantizeLinear_Output", "conv2_bias_DequantizeLinear_Output",
                        "fc_weight_DequantizeLinear_Output", "fc_bias_DequantizeLinear_Output"}) {
    ASSERT_EQ(p.constants.count(c), 1u) << c;
    ASSERT_TRUE(p.constants.at(c).numbers) << c;
    EXPECT_EQ(p.constants.at(c).numbers->dtype(), DType::f32) << c;  // the scales' type
  }
  EXPECT_EQ(p.constants.at("conv1_weight_DequantizeLinear_Output").shape, (Shape{8, 1, 3, 3}));
  EXPECT_EQ(p.constants.at("fc_weight_DequantizeLinear_Output").shape, (Shape{64, 10}));
  EXPECT_EQ(p.constants.count("flatten_shape"), 1u);  // an initializer
  EXPECT_EQ(p.constants.count("image"), 0u);          // the graph input is not a constant

  // What steps read (non-constant values only) and write.
  const Step& conv1 = step(p, "conv1_Conv");
  EXPECT_EQ(conv1.reads, (std::vector<std::string>{"image_DequantizeLinear_Output"}));
  EXPECT_EQ(conv1.writes, "conv1_output");
  EXPECT_EQ(conv1.node, 4);
  const Step& fc = step(p, "fc_MatMul");
  EXPECT_EQ(fc.reads, (std::vector<std::string>{"flatten_output_DequantizeLinear_Output"}));
  EXPECT_EQ(fc.writes, "logits_QuantizeLinear_Input");  // fc_Add's output: the bias joined the MatMul
  const Step& reshape = step(p, "flatten_Reshape");
  EXPECT_EQ(reshape.reads, (std::vector<std::string>{"pool2_output_DequantizeLinear_Output"}));  // not flatten_shape
  EXPECT_EQ(reshape.node, 20);
}

TEST(ModelPlanQdq, FusedReadings) {
  const Plan p = plan_of(kQdq);
  // DQ(image) -> Conv(+ folded weights and bias) -> Relu -> Q: one qconv2d with a Relu clamp, at the Q node (6).
  const Step& c1 = step(p, "conv1_Conv.fused");
  EXPECT_EQ(c1.covers, (std::vector<std::string>{"image_DequantizeLinear", "conv1_Conv", "relu1_Relu",
                                                 "relu1_output_QuantizeLinear"}));
  EXPECT_EQ(c1.reads, (std::vector<std::string>{"image_QuantizeLinear_Output"}));  // the integers before the DQ
  EXPECT_EQ(c1.writes, "relu1_output_QuantizeLinear_Output");
  EXPECT_EQ(c1.node, 6);
  const Step& c2 = step(p, "conv2_Conv.fused");
  EXPECT_EQ(c2.covers, (std::vector<std::string>{"pool1_output_DequantizeLinear", "conv2_Conv", "relu2_Relu",
                                                 "relu2_output_QuantizeLinear"}));
  EXPECT_EQ(c2.reads, (std::vector<std::string>{"pool1_output_QuantizeLinear_Output"}));
  EXPECT_EQ(c2.writes, "relu2_output_QuantizeLinear_Output");
  EXPECT_EQ(c2.node, 15);
  // DQ -> MatMul -> Add(bias) -> Q: one qgemm, no Relu; the Add is not a step (it joined the MatMul).
  const Step& fc = step(p, "fc_MatMul.fused");
  EXPECT_EQ(fc.covers,
            (std::vector<std::string>{"flatten_output_DequantizeLinear", "fc_MatMul", "logits_QuantizeLinear"}));
  EXPECT_EQ(fc.reads, (std::vector<std::string>{"flatten_output_QuantizeLinear_Output"}));
  EXPECT_EQ(fc.writes, "logits_QuantizeLinear_Output");
  EXPECT_EQ(fc.node, 27);
  // The op each makes: a qconv2d / qgemm with a requantized uint8 output.
  Env env = p.constants;
  Value img;
  img.elem_type = static_cast<int>(ElemType::u8);
  img.shape = {1, 1, 8, 8};
  img.numbers = Tensor(DType::u8, img.shape);
  env["image_QuantizeLinear_Output"] = img;
  const MadeOp m1 = c1.make(env);
  EXPECT_TRUE(std::holds_alternative<QConv2dOp>(m1.op));
  EXPECT_EQ(m1.shape, (Shape{1, 8, 8, 8}));  // 3x3, pads 1, stride 1
  EXPECT_EQ(m1.elem_type, static_cast<int>(ElemType::u8));
}

// The QOperator model's 9 nodes, each a step: 0 image_QuantizeLinear, 1 conv1_QLinearConv,
// 2 pool1_MaxPool, 3 conv2_QLinearConv, 4 pool2_MaxPool, 5 flatten_Reshape, 6 fc_QLinearMatMul,
// 7 fc_QLinearAdd (com.microsoft), 8 logits_DequantizeLinear.
TEST(ModelPlanQop, Steps) {
  const Plan p = plan_of(kQop);
  EXPECT_EQ(p.format, "QOperator");
  EXPECT_FALSE(p.has_fused_readings());
  EXPECT_EQ(p.model.opset("com.microsoft"), 1);
  EXPECT_EQ(p.model.opset(), 13);
  expect_steps(p, {
                      {"image_QuantizeLinear", K::op, "QuantizeLinear"},
                      {"conv1_QLinearConv", K::op, "QLinearConv"},
                      {"pool1_MaxPool", K::float_op, "MaxPool"},
                      {"conv2_QLinearConv", K::op, "QLinearConv"},
                      {"pool2_MaxPool", K::float_op, "MaxPool"},
                      {"flatten_Reshape", K::float_op, "Reshape"},
                      {"fc_QLinearMatMul", K::op, "QLinearMatMul"},
                      {"fc_QLinearAdd", K::op, "QLinearAdd"},
                      {"logits_DequantizeLinear", K::op, "DequantizeLinear"},
                  });
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    EXPECT_EQ(p.steps[i].node, static_cast<int>(i));
    EXPECT_TRUE(p.steps[i].covers.empty());
  }
  EXPECT_EQ(step(p, "conv1_QLinearConv").reads, (std::vector<std::string>{"image_quantized"}));
  EXPECT_EQ(step(p, "conv1_QLinearConv").writes, "relu1_output_quantized");
  EXPECT_EQ(step(p, "fc_QLinearAdd").reads, (std::vector<std::string>{"fc_matmul_output_quantized"}));
  EXPECT_EQ(step(p, "pool2_MaxPool").writes, "pool2_output_quantized");
}

// The same network in two encodings: the QDQ model read fused (each DQ -> Conv -> Relu -> Q a qconv2d
// with int32 accumulation and one requantize) and the QOperator model's QLinearConv nodes compute the
// same integers; the max-pools between them pick among them (the QDQ model's DQ -> MaxPool -> Q with
// the same scale and zero point on both sides gives the integers back). So the uint8 tensors after
// each max-pool are identical, element for element.
TEST(ModelPlanCrossCheck, QdqFusedAndQopGraphAgreeAfterTheMaxPools) {
  const Spec spec = *find_preset("onnx");
  const Plan qdq = plan_of(kQdq);
  const Plan qop = plan_of(kQop);
  const Tensor images = read_npy(kModels + "digits_test_images.npy");
  ASSERT_EQ(images.shape(), (Shape{360, 1, 8, 8}));
  ASSERT_EQ(images.dtype(), DType::f32);
  Value in;
  in.elem_type = static_cast<int>(ElemType::f32);
  in.shape = images.shape();
  in.numbers = images;
  Env qdq_in = qdq.constants, qop_in = qop.constants;
  qdq_in["image"] = in;
  qop_in["image"] = in;
  const Env a = oracle_chain(qdq, qdq_in, spec, Reading::fused);
  const Env b = oracle_chain(qop, qop_in, spec, Reading::graph);

  // The fused reading ran the fused steps, not the ones they cover.
  EXPECT_EQ(a.count("conv1_output"), 0u);
  EXPECT_EQ(a.count("relu1_output_QuantizeLinear_Output"), 1u);

  const std::pair<const char*, const char*> pairs[] = {
      {"image_QuantizeLinear_Output", "image_quantized"},
      {"relu1_output_QuantizeLinear_Output", "relu1_output_quantized"},
      {"pool1_output_QuantizeLinear_Output", "pool1_output_quantized"},
      {"relu2_output_QuantizeLinear_Output", "relu2_output_quantized"},
      {"pool2_output_QuantizeLinear_Output", "pool2_output_quantized"},
  };
  const Shape shapes[] = {{360, 1, 8, 8}, {360, 8, 8, 8}, {360, 8, 4, 4}, {360, 16, 4, 4}, {360, 16, 2, 2}};
  for (std::size_t k = 0; k < std::size(pairs); ++k) {
    const auto& [qdq_name, qop_name] = pairs[k];
    ASSERT_EQ(a.count(qdq_name), 1u) << qdq_name;
    ASSERT_EQ(b.count(qop_name), 1u) << qop_name;
    const Tensor& x = *a.at(qdq_name).numbers;
    const Tensor& y = *b.at(qop_name).numbers;
    EXPECT_EQ(x.dtype(), DType::u8) << qdq_name;
    EXPECT_EQ(y.dtype(), DType::u8) << qop_name;
    EXPECT_EQ(x.shape(), shapes[k]) << qdq_name;
    ASSERT_EQ(x.shape(), y.shape()) << qdq_name << " vs " << qop_name;
    std::int64_t differ = 0, first = -1, nonzero = 0;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      if (x.get_int(i) != y.get_int(i) && differ++ == 0) first = i;
      nonzero += x.get_int(i) != 0;
    }
    EXPECT_EQ(differ, 0) << qdq_name << " vs " << qop_name << ": " << differ << " of " << x.size()
                         << " elements differ, the first at " << first << " ("
                         << x.get_int(std::max<std::int64_t>(first, 0)) << " vs "
                         << y.get_int(std::max<std::int64_t>(first, 0)) << ")";
    EXPECT_GT(nonzero, x.size() / 10) << qdq_name << ": a comparison of mostly zeros proves little";
  }
}

}  // namespace
}  // namespace qc::onnx
