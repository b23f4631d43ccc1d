// `qconform explain` of a case's element (harness/explain.hpp): the steps it shows reproduce the
// backend's value, and the place where two derivations part is named at each rounding of a
// multi-step scheme. Expected values are derived by hand or by plain loops here.
#include "harness/explain.hpp"
#include "backends/registry.hpp"
#include "faulty_backend.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qc::explain_test {
namespace {

using testing::Fault;
using testing::FaultyBackend;

RequantizeOp one_accumulator(std::int64_t acc) {
  RequantizeOp op;
  op.acc = Tensor(DType::i32, {1});
  op.acc.set_int(0, acc);
  op.params.input_scale = 0.25;
  op.params.weight_scales = {0.5};
  op.params.output_scale = 0.5;
  op.out = DType::i8;
  return op;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Multiplier 1/4, acc 53: TOSA SINGLE_ROUND takes 53 * 2^30 / 2^32 = 13.25 -> 13 once; gemmlowp's
// SaturatingRoundingDoublingHighMul takes 53 * 2^30 / 2^31 = 26.5 -> 27 (ties up), then
// RoundingDivideByPOT 27 / 2 = 13.5 -> 14 (ties away). They share the multiplier's derivation.
TEST(Explain, NamesBothRoundingsOfADoubleRoundingScheme) {
  const OpRequest op = one_accumulator(53);
  const ElementDerivation single = derive_element(op, *find_preset("tosa-single"), 0);
  const ElementDerivation twice = derive_element(op, *find_preset("gemmlowp"), 0);
  EXPECT_EQ(single.result, "13");
  EXPECT_EQ(twice.result, "14");
  const std::string part = where_they_part(single, twice);
  EXPECT_TRUE(contains(part, "tosa-single rounds once")) << part;
  EXPECT_TRUE(contains(part, "gemmlowp rounds twice")) << part;
  EXPECT_TRUE(contains(part, "'SaturatingRoundingDoublingHighMul' 26.5 -> 27")) << part;
  EXPECT_TRUE(contains(part, "'RoundingDivideByPOT' 13.5 -> 14")) << part;
  EXPECT_TRUE(contains(part, "a double rounding")) << part;
  EXPECT_FALSE(contains(part, "part at step 1")) << part;  // the multiplier is the same: they agree there
}

TEST(Explain, TwoEqualDerivationsAgreeAtEveryStep) {
  const OpRequest op = one_accumulator(53);
  const ElementDerivation a = derive_element(op, *find_preset("gemmlowp"), 0);
  EXPECT_EQ(where_they_part(a, a), "the two derivations agree at every step");
}

// The value a step list ends with.
Rational last_value(const ElementDerivation& d) { return d.steps.back().rounded.value; }

// The planted TFLite kernel of planted_faults_test: the element with the first accumulator 4j + 1 > 0
// (the double rounding) is explained by a gemmlowp-style derivation that ends in the kernel's value.
TEST(Explain, AGemmElementIsReproducedFromItsSteps) {
  const Case c = testing::double_rounding_case();
  FaultyBackend b(Fault::gemmlowp_double);
  const Tensor kernel = b.run(c.op);
  const std::vector<std::int64_t> acc = testing::exact_accumulators(std::get<QGemmOp>(c.op));
  std::int64_t i = 0;
  while (i < static_cast<std::int64_t>(acc.size()) &&
         !(acc[static_cast<std::size_t>(i)] > 0 && acc[static_cast<std::size_t>(i)] % 4 == 1))
    ++i;
  ASSERT_LT(i, static_cast<std::int64_t>(acc.size()));
  const std::int64_t a = acc[static_cast<std::size_t>(i)];

  const ElementExplanation e = explain_element(c, i, &b);
  EXPECT_EQ(e.spec.result, std::to_string(testing::quarter_ties_to_even(a)));
  EXPECT_EQ(e.backend_value, std::to_string(kernel.get_int(i)));
  EXPECT_FALSE(e.matches_spec);
  ASSERT_TRUE(e.backend_policy);
  EXPECT_TRUE(e.reproduces_backend);
  EXPECT_EQ(e.backend_policy->result, e.backend_value);
  EXPECT_EQ(last_value(*e.backend_policy), Rational(kernel.get_int(i)));
  // The first step is the accumulator, exactly as the loops above sum it.
  EXPECT_EQ(e.backend_policy->steps.front().exact.value, Rational(a));
  EXPECT_EQ(e.spec.steps.front().exact.value, Rational(a));
  EXPECT_TRUE(contains(e.parting, "'SaturatingRoundingDoublingHighMul'")) << e.parting;
  EXPECT_TRUE(contains(e.parting, "'RoundingDivideByPOT'")) << e.parting;
  // The inputs list the dot product: 16 terms, the first row i / 5 of A.
  ASSERT_FALSE(e.inputs.empty());
  EXPECT_EQ(e.inputs.front(), "dot product of 16 terms (a - za) * (b - zb):");
  EXPECT_TRUE(contains(e.inputs[1], "A[" + std::to_string(i / 5) + ", 0] = ")) << e.inputs[1];
  const std::string text = to_text(e);
  EXPECT_TRUE(contains(text, "= the backend's value")) << text;
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j["backend"]["value"], e.backend_value);
  EXPECT_EQ(j["backend_policy"]["reproduces_backend"], true);
}

// A requantized convolution on the CPU reference claiming TFLite (gemmlowp requantize): u8 input
// [1, 2, 5, 5] (zero point 128), i8 weights [2, 2, 3, 3], padding 1 (the padded taps hold the zero
// point, real 0), multiplier 1/4. The accumulators come from plain loops here.
TEST(Explain, AConvolutionElementIsReproducedFromItsSteps) {
  QConv2dOp op;
  op.input.values = Tensor(DType::u8, {1, 2, 5, 5});
  op.weight.values = Tensor(DType::i8, {2, 2, 3, 3});
  for (std::int64_t i = 0; i < op.input.values.size(); ++i) op.input.values.set_int(i, 120 + (i * 7) % 17);
  for (std::int64_t i = 0; i < op.weight.values.size(); ++i) op.weight.values.set_int(i, (i * 5) % 9 - 4);
  op.input.params.scales = {0.25};
  op.input.params.zero_points = {128};
  op.weight.params.scales = {0.5};
  op.geometry.pad_top = op.geometry.pad_left = op.geometry.pad_bottom = op.geometry.pad_right = 1;
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = 0.5;
  Case c;
  c.suite = "explain";
  c.name = "conv";
  c.op = op;
  c.spec = *find_preset("onnx");

  // Output [1, 2, 5, 5]: acc(oc, oh, ow) = sum over ic, kh, kw of (x - 128) * w, padded taps 0.
  std::vector<std::int64_t> acc(50, 0);
  for (int oc = 0; oc < 2; ++oc)
    for (int oh = 0; oh < 5; ++oh)
      for (int ow = 0; ow < 5; ++ow)
        for (int ic = 0; ic < 2; ++ic)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int h = oh + kh - 1, w = ow + kw - 1;
              if (h < 0 || h >= 5 || w < 0 || w >= 5) continue;
              acc[static_cast<std::size_t>((oc * 5 + oh) * 5 + ow)] +=
                  (op.input.values.get_int((ic * 5 + h) * 5 + w) - 128) *
                  op.weight.values.get_int(((oc * 2 + ic) * 3 + kh) * 3 + kw);
            }
  std::int64_t i = 0;
  while (i < 50 && !(acc[static_cast<std::size_t>(i)] > 0 && acc[static_cast<std::size_t>(i)] % 4 == 1)) ++i;
  ASSERT_LT(i, 50);

  const std::unique_ptr<Backend> b = make_backend("cpu-ref:tflite-reference");
  const Tensor out = b->run(c.op);
  const ElementExplanation e = explain_element(c, i, b.get());
  EXPECT_EQ(e.spec.result, std::to_string(testing::quarter_ties_to_even(acc[static_cast<std::size_t>(i)])));
  EXPECT_EQ(e.backend_value, std::to_string(out.get_int(i)));
  ASSERT_TRUE(e.backend_policy);
  EXPECT_TRUE(e.reproduces_backend);
  EXPECT_EQ(last_value(*e.backend_policy), Rational(out.get_int(i)));
  EXPECT_EQ(e.backend_policy->steps.front().exact.value, Rational(acc[static_cast<std::size_t>(i)]));
  EXPECT_TRUE(contains(e.parting, "'RoundingDivideByPOT'")) << e.parting;
  EXPECT_EQ(e.inputs.front(), "dot product of 18 terms (a - za) * (b - zb):");
}

TEST(Explain, ElementIndexIsFlatOrCoordinates) {
  const Shape s{2, 8};
  EXPECT_EQ(parse_element_index("13", s, "--index"), 13);
  EXPECT_EQ(parse_element_index("1,5", s, "--index"), 13);
  EXPECT_THROW(parse_element_index("16", s, "--index"), InputError);
  EXPECT_THROW(parse_element_index("2,0", s, "--index"), InputError);
  EXPECT_THROW(parse_element_index("1,5,0", s, "--index"), InputError);
  EXPECT_THROW(parse_element_index("1,x", s, "--index"), InputError);
  EXPECT_THROW(parse_element_index("-1", s, "--index"), InputError);
  EXPECT_THROW(parse_element_index("", s, "--index"), InputError);
}

}  // namespace
}  // namespace qc::explain_test
