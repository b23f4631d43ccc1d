// ElementEvaluator and evaluate_beside, the shortcuts cause attribution and the claim take for a
// qgemm or qconv2d (integer sums shared between specs, elements summed one dot product each),
// checked against the slow way round: the whole op evaluated under each spec, then gathered.
#include "harness/causes.hpp"
#include "harness/evaluate.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <random>

namespace qc {
namespace {

Tensor filled(DType t, Shape s, std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  Tensor x(t, std::move(s));
  for (std::int64_t i = 0; i < x.size(); ++i)
    x.set_int(i, lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1)));
  return x;
}

// u8 x s8 at full range (int16 pairs saturate), per-channel weights, an int32 bias, requantized to
// i8 with ties: the output stages of the candidates part on many elements.
QGemmOp gemm(std::mt19937_64& rng) {
  QGemmOp op;
  op.a.values = filled(DType::u8, {24, 64}, rng, 0, 255);
  op.a.params.scales = {0.5};
  op.a.params.zero_points = {128};
  op.b.values = filled(DType::i8, {64, 20}, rng, -128, 127);
  for (int n = 0; n < 20; ++n) op.b.params.scales.push_back(n % 2 ? 0.0009765625 : 0.00048828125);
  op.b.params.axis = 1;
  op.bias = filled(DType::i32, {20}, rng, -3000, 3000);
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = 0.25;
  op.output.zero_point = 3;
  return op;
}

QConv2dOp conv(std::mt19937_64& rng) {
  QConv2dOp op;
  op.input.values = filled(DType::u8, {2, 8, 6, 6}, rng, 0, 255);
  op.input.params.scales = {0.5};
  op.input.params.zero_points = {128};
  op.weight.values = filled(DType::i8, {6, 8, 3, 3}, rng, -128, 127);
  for (int n = 0; n < 6; ++n) op.weight.params.scales.push_back(n % 2 ? 0.0078125 : 0.00390625);
  op.weight.params.axis = 0;
  op.geometry.pad_top = op.geometry.pad_left = op.geometry.pad_bottom = op.geometry.pad_right = 1;
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = 0.25;
  op.output.zero_point = -2;
  return op;
}

// Every single change of onnx and every preset, on a few elements and on a third of them (each
// path: one dot product per element, and rows through the packed kernel), with one evaluator for
// all of them, as attribute_causes uses it. Returns how many element values it compared.
int expect_evaluator_matches_whole(const OpRequest& op) {
  const Spec onnx = *find_preset("onnx");
  const Reference ref = evaluate(op, onnx);
  std::vector<Spec> specs{onnx};
  for (const Variation& v : single_changes(onnx, op)) specs.push_back(v.spec);
  for (const Spec& p : presets()) specs.push_back(p);
  const std::int64_t E = ref.expected.size();
  std::vector<std::int64_t> few, third;
  for (std::int64_t e = 5; e < E; e += 41) few.push_back(e);
  for (std::int64_t e = 0; e < E; e += 3) third.push_back(e);
  ElementEvaluator evaluator(op);
  evaluator.know(onnx, ref);
  int compared = 0;
  for (const Spec& s : specs) {
    std::optional<Reference> whole;
    try {
      whole = evaluate(op, s);
    } catch (const InputError&) {
      for (const auto* idx : {&few, &third}) EXPECT_THROW(evaluator(s, *idx), InputError) << s.name;
      continue;
    }
    for (const auto* idx : {&few, &third}) {
      const std::optional<Tensor> part = evaluator(s, *idx);
      EXPECT_TRUE(part.has_value()) << s.name;
      if (!part) continue;
      for (std::size_t j = 0; j < idx->size(); ++j)
        EXPECT_EQ(part->bits(static_cast<std::int64_t>(j)), whole->expected.bits((*idx)[j]))
            << s.name << ", element " << (*idx)[j];
      compared += static_cast<int>(idx->size());
    }
    // The whole op under s, finished from onnx's sums where they are the same sums.
    const Reference beside = evaluate_beside(op, s, onnx, ref);
    for (std::int64_t e = 0; e < E; ++e) {
      EXPECT_EQ(beside.expected.bits(e), whole->expected.bits(e)) << s.name << ", element " << e;
      EXPECT_EQ(beside.labels[static_cast<std::size_t>(e)], whole->labels[static_cast<std::size_t>(e)]) << s.name;
      EXPECT_EQ(beside.specified[static_cast<std::size_t>(e)], whole->specified[static_cast<std::size_t>(e)]);
    }
  }
  return compared;
}

TEST(ElementEvaluator, GemmElementsUnderEveryCandidateAreTheWholeOpsElements) {
  std::mt19937_64 rng(7);
  EXPECT_GT(expect_evaluator_matches_whole(gemm(rng)), 5000);
}

TEST(ElementEvaluator, ConvElementsUnderEveryCandidateAreTheWholeOpsElements) {
  std::mt19937_64 rng(8);
  EXPECT_GT(expect_evaluator_matches_whole(conv(rng)), 5000);
}

}  // namespace
}  // namespace qc
