// choose_qparams as a case op: (scale, zero point) from a profile under a named rule, evaluated by the
// oracle and by cpu-ref (written apart), and bound into a later case's requantized output with
// {"from": name}. Every expected pair is worked out by hand from the cited code in the comment above
// it (ONNX DynamicQuantizeLinear; Glow lib/Quantization/Base/Base.cpp::chooseQuantizationParams).
#include "backends/cpu_ref/cpu_ref.hpp"
#include "cases/case.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qc {
namespace choose_qparams_op_test {

ChooseQParamsOp make(std::vector<double> values, DType format, const std::string& rule,
                     std::optional<int> axis = std::nullopt, Shape shape = {}) {
  ChooseQParamsOp op;
  if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
  op.profile = Tensor(DType::f32, shape);
  for (std::size_t i = 0; i < values.size(); ++i) op.profile.set_double(static_cast<std::int64_t>(i), values[i]);
  op.format = format;
  op.rule = find_qparams_preset(rule).value();
  op.axis = axis;
  return op;
}

// The oracle's and cpu-ref's outputs, each as a list of doubles.
std::vector<double> both(const ChooseQParamsOp& op, std::vector<double>& cpu) {
  const Tensor y = evaluate(op, *find_preset("onnx")).expected;
  CpuRefBackend ref;
  EXPECT_TRUE(ref.supports(op).available) << ref.supports(op).reason;
  const Tensor c = ref.run(op);
  std::vector<double> out;
  cpu.clear();
  for (std::int64_t i = 0; i < y.size(); ++i) {
    out.push_back(y.get_double(i));
    cpu.push_back(c.get_double(i));
  }
  return out;
}

void expect_pairs(const ChooseQParamsOp& op, const std::vector<double>& expected) {
  std::vector<double> cpu;
  const std::vector<double> oracle = both(op, cpu);
  EXPECT_EQ(oracle, expected);
  EXPECT_EQ(cpu, expected);
}

TEST(ChooseQParamsOp, OnnxDynamicQuantizeLinear) {
  // u8, profile min -1, max 3: scale = (3 - (-1)) / 255 in f32; zp = round(0 - (-1) / scale) =
  // round(63.75...) = 64.
  expect_pairs(make({0.5, -1, 3, 2}, DType::u8, "onnx-dynamic-quantize-linear"),
               {static_cast<double>(4.0f / 255.0f), 64});
  // A range without 0 is extended to contain it: [2, 4] -> [0, 4], zp 0.
  expect_pairs(make({2, 4}, DType::u8, "onnx-dynamic-quantize-linear"), {static_cast<double>(4.0f / 255.0f), 0});
}

TEST(ChooseQParamsOp, GlowSchemasOnOneProfile) {
  // i8, profile [-1, 127].
  // Asymmetric: scale = 128 / 255 (double, stored as float); zp from min = -128 + 1 / scale = -126.0078..,
  // error 128 + 1.99 < from max's 127 + 253.0, so round(-126.0078) = -126.
  const std::vector<double> p{-1, 127, 5};
  expect_pairs(make(p, DType::i8, "glow-asymmetric"), {static_cast<double>(static_cast<float>(128.0 / 255.0)), -126});
  // Symmetric: rmin = -1 / -128 < rmax = 127 / 127 = 1, so min = 1 * -128; scale = 255 / 255 = 1 and
  // both zero points are 0.
  expect_pairs(make(p, DType::i8, "glow-symmetric"), {1, 0});
  // SymmetricWithUnsigned with a negative min is Symmetric.
  expect_pairs(make(p, DType::i8, "glow-symmetric-unsigned"), {1, 0});
  // Power of two on [-1, 100]: the symmetric scale (100 + 100 * 128 / 127) / 255 = 100 / 127 = 0.787..,
  // zp 0, then exp2(ceil(log2(0.787))) = 2^0 = 1.
  expect_pairs(make({-1, 100}, DType::i8, "glow-power2"), {1, 0});
  // SymmetricWithUnsigned with min >= 0 stays asymmetric: [0.5, 2] -> [0, 2], scale 2 / 255, zp from min
  // -128 (error 128 against 127 + 255).
  expect_pairs(make({0.5, 2}, DType::i8, "glow-symmetric-unsigned"),
               {static_cast<double>(static_cast<float>(2.0 / 255.0)), -128});
}

TEST(ChooseQParamsOp, OneRangePerIndexAlongTheAxis) {
  // [2, 2] profile, axis 0: row 0 = [-1, 3] and row 1 = [0, 2] under ONNX's u8 rule.
  const ChooseQParamsOp op = make({-1, 3, 0, 2}, DType::u8, "onnx-dynamic-quantize-linear", 0, {2, 2});
  EXPECT_EQ(op_output_shape(op), (Shape{2, 2}));
  expect_pairs(op, {static_cast<double>(4.0f / 255.0f), 64, static_cast<double>(2.0f / 255.0f), 0});
}

TEST(ChooseQParamsOp, CpuRefDeclinesTheRulesItDoesNotImplement) {
  CpuRefBackend ref;
  EXPECT_FALSE(ref.supports(make({-1, 1}, DType::u8, "tflite")).available);
  // Glow's symmetric schema needs a signed format (Base.cpp asserts qmin < 0).
  EXPECT_FALSE(ref.supports(make({-1, 1}, DType::u8, "glow-symmetric")).available);
}

// A case file: the parameters of a requantized GEMM output taken from a choose_qparams case.
constexpr const char* kLinkedSuite = R"({
  "suite": "linked_params",
  "cases": [
    {"name": "params", "op": "choose_qparams", "input": {"dtype": "f32", "shape": [2], "data": [-2.0, 6.0]},
     "rule": "glow-symmetric", "output_dtype": "i8"},
    {"name": "gemm", "op": "qgemm", "spec": "onnx",
     "a": {"dtype": "i8", "shape": [1, 2], "data": [10, 20], "scale": 0.5},
     "b": {"dtype": "i8", "shape": [2, 1], "data": [3, 1], "scale": 1.0},
     "output": {"kind": "requantized", "dtype": "i8", "params_from": "params"}}
  ]
})";

TEST(ChooseQParamsOp, AGemmsOutputTakesTheChosenParameters) {
  const Suite s = load_suite_text(kLinkedSuite, "linked.json");
  ASSERT_EQ(s.cases.size(), 2u);
  ASSERT_EQ(s.cases[1].links.size(), 1u);
  EXPECT_EQ(s.cases[1].links[0].field, "output.params");
  // glow-symmetric on [-2, 6], i8: rmin = -2 / -128 = 0.015625 < rmax = 6 / 127, so min = -6 * 128 / 127;
  // scale = (6 + 768 / 127) / 255 = 6 / 127 (rounded to float), zp 0. The GEMM: acc = 10 * 3 + 20 * 1 = 50,
  // real value 50 * 0.5 = 25, over 6 / 127 = 529.1.. -> saturates at 127.
  CpuRefBackend ref;
  std::vector<Backend*> backends{&ref};
  const RunReport r = run_cases({s}, backends, RunOptions{});
  ASSERT_EQ(r.cases.size(), 2u);
  for (const CaseResult& c : r.cases)
    EXPECT_EQ(c.backends.at(0).verdict, Verdict::pass) << c.id << c.backends[0].reason;
  // Bound by hand: the same pair set directly gives the same expected output.
  OpRequest op = s.cases[1].op;
  const double scale = static_cast<float>((6.0 + 6.0 * 128.0 / 127.0) / 255.0);
  Tensor pair(DType::f64, {2});
  pair.set_double(0, scale);
  bind_operand(op, "output.params", pair);
  EXPECT_EQ(std::get<QGemmOp>(op).output.scale, scale);
  EXPECT_EQ(evaluate(op, *find_preset("onnx")).expected.get_int(0), 127);
}

TEST(ChooseQParamsOp, ABoundPairMustBeAPositiveScaleAndAnIntegerZeroPoint) {
  OpRequest op = load_suite_text(kLinkedSuite, "linked.json").cases[1].op;
  Tensor pair(DType::f64, {2});
  EXPECT_THROW(bind_operand(op, "output.params", pair), InputError);  // scale 0
  pair.set_double(0, 0.5);
  pair.set_double(1, 0.5);
  EXPECT_THROW(bind_operand(op, "output.params", pair), InputError);  // zero point 0.5
  pair.set_double(1, 300);
  EXPECT_THROW(bind_operand(op, "output.params", pair), InputError);  // outside i8
}

}  // namespace choose_qparams_op_test
}  // namespace qc
