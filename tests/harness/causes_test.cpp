// Cause attribution on per-axis element-wise ops, which it evaluates on the mismatching elements
// alone (each with its own channel's parameters): the counts and per-channel splits must be those
// derived here by hand for a kernel that rounds ties away from zero.
#include "harness/causes.hpp"
#include "harness/evaluate.hpp"
#include "oracles/presets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace qc {
namespace {

const CauseCount* find_cause(const BackendResult& r, const std::string& cause) {
  const auto it = std::find_if(r.causes.begin(), r.causes.end(), [&](const CauseCount& c) { return c.cause == cause; });
  return it == r.causes.end() ? nullptr : &*it;
}

std::vector<std::int64_t> mismatches(const Tensor& a, const Tensor& b) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (a.get_int(i) != b.get_int(i)) v.push_back(i);
  return v;
}

// x [2, 4] per axis 0, scales [1, 0.5], zero points [0, 3]:
//   channel 0: x / 1   = 0.5, 1.5, 2.5, 3.5 -> ties to even 0, 2, 2, 4; ties away 1, 2, 3, 4
//   channel 1: x / 0.5 = 0.5, 1.5, 2.5, 0.2 -> ties to even 0, 2, 2, 0; ties away 1, 2, 3, 0 (+3 both)
// so ties away differs at flat indices 0, 2 (channel 0) and 4, 6 (channel 1).
TEST(Causes, PerAxisQuantizeIsAttributedPerChannel) {
  QuantizeOp op;
  op.x = Tensor(DType::f32, {2, 4});
  const double xs[] = {0.5, 1.5, 2.5, 3.5, 0.25, 0.75, 1.25, 0.1};
  for (std::int64_t i = 0; i < 8; ++i) op.x.set_double(i, static_cast<float>(xs[i]));
  op.params.scales = {1.0, 0.5};
  op.params.zero_points = {0, 3};
  op.params.axis = 0;
  op.out = DType::i8;
  const Spec spec = *find_preset("onnx");
  const Reference ref = evaluate(op, spec);
  Tensor actual(DType::i8, {2, 4});
  const std::int64_t away[] = {1, 2, 3, 4, 4, 5, 6, 3};
  for (std::int64_t i = 0; i < 8; ++i) actual.set_int(i, away[i]);
  const auto diff = mismatches(ref.expected, actual);
  ASSERT_EQ(diff, (std::vector<std::int64_t>{0, 2, 4, 6}));
  BackendResult r;
  attribute_causes(op, spec, ref, actual, diff, r, {});
  const CauseCount* c = find_cause(r, "quantize.rounding=rna");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->count, 4);
  EXPECT_EQ(c->per_channel, (std::map<std::int64_t, std::int64_t>{{0, 2}, {1, 2}}));
  EXPECT_EQ(r.unexplained, 0);
}

// acc [3, 2] with the channel on axis 1: weight scales [0.5, 0.25], output zero points [1, -1],
// input scale 1, output scale 1: acc * ws = 2.5, 0.75 | -1.5, 1.25 | 4.5, -0.25.
//   ties to even: 2, 1 | -2, 1 | 4, 0     ties away: 3, 1 | -2, 1 | 5, 0
// so ties away differs at flat indices 0 and 4, both channel 0 (+1: 3 vs 4, 5 vs 6).
TEST(Causes, PerChannelRequantizeIsAttributedPerChannel) {
  RequantizeOp op;
  op.acc = Tensor(DType::i32, {3, 2});
  const std::int64_t acc[] = {5, 3, -3, 5, 9, -1};
  for (std::int64_t i = 0; i < 6; ++i) op.acc.set_int(i, acc[i]);
  op.params.input_scale = 1.0;
  op.params.weight_scales = {0.5, 0.25};
  op.params.axis = 1;
  op.params.output_scale = 1.0;
  op.params.output_zero_points = {1, -1};
  op.out = DType::i8;
  const Spec spec = *find_preset("onnx");
  const Reference ref = evaluate(op, spec);
  Tensor actual(DType::i8, {3, 2});
  const std::int64_t away[] = {4, 0, -1, 0, 6, -1};
  for (std::int64_t i = 0; i < 6; ++i) actual.set_int(i, away[i]);
  const auto diff = mismatches(ref.expected, actual);
  ASSERT_EQ(diff, (std::vector<std::int64_t>{0, 4})) << "the spec's outputs are not the hand-derived ties to even";
  BackendResult r;
  attribute_causes(op, spec, ref, actual, diff, r, {});
  ASSERT_FALSE(r.causes.empty());
  bool found = false;
  for (const CauseCount& c : r.causes)
    if (c.cause.find("rna") != std::string::npos) {
      found = true;
      EXPECT_EQ(c.count, 2) << c.cause;
      EXPECT_EQ(c.per_channel, (std::map<std::int64_t, std::int64_t>{{0, 2}})) << c.cause;
    }
  EXPECT_TRUE(found) << "no ties-away cause; first is " << r.causes.front().cause;
}

}  // namespace
}  // namespace qc
