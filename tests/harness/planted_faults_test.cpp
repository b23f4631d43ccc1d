// Planted faults (tests/harness/faulty_backend.hpp): each one must be located, counted, attributed
// to the right cause and named by infer. The expected counts and positions are derived here by
// hand or by plain float arithmetic, never from the harness.
#include "faulty_backend.hpp"

#include "cases/generators.hpp"
#include "harness/baseline.hpp"
#include "harness/causes.hpp"
#include "harness/infer.hpp"
#include "harness/runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace qc {
namespace {

using testing::Fault;
using testing::FaultyBackend;

Spec spec_nan_to_zero_point() {
  // onnx leaves NaN open; this spec pins it to the zero point so a NaN fault is a mismatch.
  Spec s = *find_preset("onnx");
  s.quantize.nan = NanRule::to_zero_point;
  s.name = "onnx+nan_to_zero_point";
  return s;
}

Case quantize_case(const std::string& name, const std::vector<float>& xs, double scale, DType out = DType::i8) {
  QuantizeOp op;
  op.x = Tensor(DType::f32, {static_cast<std::int64_t>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i) op.x.set_double(static_cast<std::int64_t>(i), xs[i]);
  op.params.scales = {scale};
  op.params.zero_points = {0};
  op.out = out;
  Case c;
  c.suite = "planted";
  c.name = name;
  c.op = op;
  c.spec = spec_nan_to_zero_point();
  return c;
}

BackendResult run_on(const Case& c, Backend& b, const RunOptions& opt = {}) {
  Suite s{"planted", "", "", {c}, {}};
  const RunReport r = run_cases({s}, {&b}, opt);
  return r.cases.at(0).backends.at(0);
}

std::set<std::string> finding(const InferReport& r, const std::string& op, const std::string& dim) {
  for (const InferFinding& f : r.findings)
    if (f.op == op && f.dimension == dim) return {f.values.begin(), f.values.end()};
  ADD_FAILURE() << "no finding " << op << "." << dim;
  return {};
}

// Every worst element of a result carries `cause`, and the cause explains every mismatch.
void expect_cause(const BackendResult& r, const std::string& cause) {
  ASSERT_FALSE(r.causes.empty());
  const auto it = std::find_if(r.causes.begin(), r.causes.end(), [&](const CauseCount& c) { return c.cause == cause; });
  ASSERT_NE(it, r.causes.end()) << "cause " << cause << " not found; first is " << r.causes.front().cause;
  EXPECT_EQ(it->count, r.metrics.mismatches());
  EXPECT_EQ(r.unexplained, 0);
  for (const ElementDiff& d : r.metrics.worst)
    EXPECT_NE(std::find(d.causes.begin(), d.causes.end(), cause), d.causes.end()) << "element " << d.index;
}

// x = k + 1/2 for k = -8..7 (index k + 8) with scale 1: ties to even and ties away differ where
// the even neighbour is the one toward zero: +0.5, +2.5, +4.5, +6.5 (indices 8, 10, 12, 14) and
// -0.5, -2.5, -4.5, -6.5 (indices 7, 5, 3, 1); -7.5 goes to -8 both ways.
TEST(PlantedFaults, TiesAwayIsLocatedCountedAndAttributed) {
  std::vector<float> xs;
  for (int k = -8; k <= 7; ++k) xs.push_back(static_cast<float>(k) + 0.5f);
  FaultyBackend b(Fault::ties_away);
  RunOptions opt;
  opt.max_worst = 100;
  const BackendResult r = run_on(quantize_case("ties", xs, 1.0), b, opt);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.metrics.mismatches(), 8);
  std::set<std::int64_t> where;
  for (const ElementDiff& d : r.metrics.worst) where.insert(d.index);
  EXPECT_EQ(where, (std::set<std::int64_t>{1, 3, 5, 7, 8, 10, 12, 14}));
  EXPECT_EQ(r.metrics.label_mismatch[static_cast<std::size_t>(Label::tie)], 8);
  expect_cause(r, "quantize.rounding=rna");
  const InferReport inf = infer(b);
  EXPECT_EQ(finding(inf, "quantize", "rounding"), std::set<std::string>{std::string(describe(RoundingMode::rna))});
}

// Random values around many ties for a scale with no exact reciprocal; the count of elements
// where the fault differs is computed with plain f32 arithmetic.
std::vector<float> around_ties(float s, std::size_t n) {
  SplitMix64 rng(7);
  std::vector<float> xs;
  for (std::size_t i = 0; i < n; ++i) {
    const double k = std::floor(rng.uniform01() * 200) - 100;
    const double off = (rng.uniform01() - 0.5) / 32;
    xs.push_back(static_cast<float>((k + 0.5 + off) * static_cast<double>(s)));
  }
  return xs;
}

// The f32 values nearest to the ties (k + 1/2) * s for k in [-120, 120) and 3 ulp below to 3 above.
std::vector<float> ulps_around_ties(float s) {
  std::vector<float> xs;
  for (int k = -120; k < 120; ++k) {
    float t = static_cast<float>((k + 0.5) * static_cast<double>(s));
    for (int u = 0; u < 3; ++u) t = std::nextafter(t, -INFINITY);
    for (int u = 0; u < 7; ++u, t = std::nextafter(t, INFINITY)) xs.push_back(t);
  }
  return xs;
}

TEST(PlantedFaults, ReciprocalMultiplyIsAttributedToTheOrder) {
  // The f32 values nearest to the ties (k + 1/2) * s and 1 to 3 ulp either side: where x / s and
  // x * (1 / s) round to different f32, the tie rule or the boundary decides differently.
  const float s = 0.1f;
  const std::vector<float> xs = ulps_around_ties(s);
  std::int64_t expected = 0;
  for (float x : xs) {
    const float a = std::clamp(std::nearbyint(x / s), -128.0f, 127.0f);
    const float b = std::clamp(std::nearbyint(x * (1.0f / s)), -128.0f, 127.0f);
    expected += a != b;
  }
  ASSERT_GT(expected, 0);  // the data must exercise the fault
  FaultyBackend b(Fault::reciprocal);
  const BackendResult r = run_on(quantize_case("recip", xs, s), b);
  EXPECT_EQ(r.metrics.mismatches(), expected);
  expect_cause(r, "quantize.order=recip_then_add_int");
  const InferReport inf = infer(b);
  const auto orders = finding(inf, "quantize", "order");
  EXPECT_TRUE(orders.count(std::string(formula(QuantizeOrder::recip_then_add_int))));
  EXPECT_FALSE(orders.count(std::string(formula(QuantizeOrder::div_then_add_int))));
}

// A kernel with two hazards: x * (1 / s) and std::round. On the f32 values nearest the ties
// (k + 1/2) * 0.1 and their neighbours, the reciprocal moves some quotients across a rounding
// boundary or onto a tie and ties away rounds the ties differently, so neither single change
// reproduces every mismatch (counted here with plain f32 arithmetic); the pair does, breaks no
// sampled match, and heads the causes with its evidence.
TEST(PlantedFaults, TwoHazardsInOneKernelAreNamedTogether) {
  const float s = 0.1f;
  const std::vector<float> xs = ulps_around_ties(s);
  std::int64_t expected = 0, by_recip = 0, by_away = 0;
  for (float x : xs) {
    const auto q = [](float t) { return std::clamp(t, -128.0f, 127.0f); };
    const float spec = q(std::nearbyint(x / s)), kernel = q(std::round(x * (1.0f / s)));
    expected += spec != kernel;
    by_recip += spec != kernel && q(std::nearbyint(x * (1.0f / s))) == kernel;
    by_away += spec != kernel && q(std::round(x / s)) == kernel;
  }
  ASSERT_GT(by_recip, 0);
  ASSERT_GT(by_away, 0);
  ASSERT_LT(by_recip, expected);  // each hazard alone explains only part
  ASSERT_LT(by_away, expected);
  FaultyBackend b(Fault::recip_ties_away);
  const BackendResult r = run_on(quantize_case("two-hazards", xs, s), b);
  EXPECT_EQ(r.metrics.mismatches(), expected);
  ASSERT_FALSE(r.causes.empty());
  const CauseCount& best = r.causes.front();
  EXPECT_EQ(best.cause, "quantize.order=recip_then_add_int + quantize.rounding=rna");
  EXPECT_EQ(best.kind, "pair");
  EXPECT_EQ(best.count, expected);
  EXPECT_GT(best.matches_sampled, 0);
  EXPECT_EQ(best.matches_broken, 0);
  EXPECT_EQ(r.unexplained, 0);
  EXPECT_NE(r.reason.find("reproduced by quantize.order=recip_then_add_int + quantize.rounding=rna (" +
                          std::to_string(expected) + "/" + std::to_string(expected) + "; breaks 0 of"),
            std::string::npos)
      << r.reason;
  // The singles are there too, each with the part it reproduces.
  for (const auto& [cause, count] :
       {std::pair<std::string, std::int64_t>{"quantize.order=recip_then_add_int", by_recip},
        {"quantize.rounding=rna", by_away}}) {
    const auto it =
        std::find_if(r.causes.begin(), r.causes.end(), [&](const CauseCount& c) { return c.cause == cause; });
    ASSERT_NE(it, r.causes.end()) << cause;
    EXPECT_EQ(it->count, count) << cause;
  }
}

// A kernel that is another preset entirely is named as that preset, ahead of the single change
// that reproduces the same mismatches only where it breaks no match either: here TFLite's reference
// quantize (std::round of x / s) is exactly ties away, so the single change, simpler, comes first
// and the preset follows with the same count.
TEST(PlantedFaults, AnotherPresetIsNamedAsAPreset) {
  std::vector<float> xs;
  for (int k = -8; k <= 7; ++k) xs.push_back(static_cast<float>(k) + 0.5f);
  FaultyBackend b(Fault::ties_away);
  const BackendResult r = run_on(quantize_case("ties", xs, 1.0), b);
  ASSERT_FALSE(r.causes.empty());
  EXPECT_EQ(r.causes.front().cause, "quantize.rounding=rna");
  const auto preset = std::find_if(r.causes.begin(), r.causes.end(),
                                   [](const CauseCount& c) { return c.cause == "preset tflite-reference"; });
  ASSERT_NE(preset, r.causes.end());
  EXPECT_EQ(preset->kind, "preset");
  EXPECT_EQ(preset->count, 8);
}

// A kernel that claims XNNPACK's x86 rule for NaN (qmax, preset xnnpack-fp32@2022.02-x86) but gives
// the zero point. ONNX leaves NaN open, so against the spec nothing differs; judged against its
// claim the NaN element is the one mismatch (s = 1 keeps the preset's x * (1 / s) equal to x / s on
// the rest), and it is explained against the claim: the claim with NaN -> zero point reproduces it.
TEST(PlantedFaults, AClaimBrokenWhereTheSpecIsOpenIsExplainedAgainstTheClaim) {
  Case c = quantize_case("nan", {0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN(), 2.0f, -3.25f}, 1.0);
  c.spec = *find_preset("onnx");
  c.expect["*"].kind = Expectation::Kind::claim;
  FaultyBackend b(Fault::none, "nan-kernel", 0, "xnnpack-fp32@2022.02-x86");
  const BackendResult r = run_on(c, b);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.claim_mismatches, 1);
  EXPECT_EQ(r.metrics.mismatches(), 0);
  ASSERT_FALSE(r.causes.empty()) << r.reason;
  EXPECT_EQ(r.causes.front().cause, "quantize.nan=zero_point");
  EXPECT_EQ(r.causes.front().count, 1);
  EXPECT_EQ(r.causes.front().description.rfind("against its claim xnnpack-fp32@2022.02-x86: ", 0), 0u);
  EXPECT_EQ(r.unexplained, 0);
  EXPECT_NE(r.reason.find("reproduced by quantize.nan=zero_point (1/1"), std::string::npos) << r.reason;
}

TEST(PlantedFaults, F16IntermediateIsAttributedToTheComputeFormat) {
  const float s = 0.25f;  // exact in f16, so only x and the quotient are rounded
  const std::vector<float> xs = around_ties(s, 4000);
  std::int64_t expected = 0;
  for (float x : xs) {
    const float a = std::clamp(std::nearbyint(x / s), -128.0f, 127.0f);
    // x to f16 (11 significant bits), then the quotient by a power of two (exact), then rounding
    const float h = static_cast<float>(static_cast<_Float16>(x)) / s;
    expected += a != std::clamp(std::nearbyint(h), -128.0f, 127.0f);
  }
  ASSERT_GT(expected, 0);
  FaultyBackend b(Fault::f16);
  const BackendResult r = run_on(quantize_case("f16", xs, s), b);
  EXPECT_EQ(r.metrics.mismatches(), expected);
  expect_cause(r, "quantize.compute=f16");
  const auto computes = finding(infer(b), "quantize", "compute");
  EXPECT_TRUE(computes.count("f16"));
  EXPECT_FALSE(computes.count("f32"));
}

// Out-of-range values: 200 wraps to 200 - 256 = -56, -300 to -300 + 256 = -44; the spec saturates
// to 127 and -128. Four of the eight values are outside [-128, 127]: 200, -300, 128, -129.
TEST(PlantedFaults, WrapIsAttributedToTheClamp) {
  const std::vector<float> xs = {1, 200, -300, 127, -128, 128, 5, -129};
  FaultyBackend b(Fault::wrap);
  RunOptions opt;
  opt.max_worst = 10;
  const BackendResult r = run_on(quantize_case("wrap", xs, 1.0), b, opt);
  EXPECT_EQ(r.metrics.mismatches(), 4);  // 200, -300, 128, -129
  EXPECT_EQ(r.metrics.label_mismatch[static_cast<std::size_t>(Label::saturated)], 4);
  expect_cause(r, "quantize.clamp=wrap");
  EXPECT_EQ(finding(infer(b), "quantize", "clamp"), std::set<std::string>{"wrap"});
}

TEST(PlantedFaults, NanToQmaxIsAttributedToTheNanRule) {
  const std::vector<float> xs = {1, NAN, 2, -NAN, 3};
  FaultyBackend b(Fault::nan_to_qmax);
  const BackendResult r = run_on(quantize_case("nan", xs, 1.0), b);
  EXPECT_EQ(r.metrics.mismatches(), 2);
  EXPECT_EQ(r.metrics.label_mismatch[static_cast<std::size_t>(Label::special)], 2);
  expect_cause(r, "quantize.nan=qmax");
  EXPECT_EQ(finding(infer(b), "quantize", "nan"), std::set<std::string>{"qmax"});
}

// u8 x s8 with pairs of 255 * 127 * 2 = 64770 > 32767: every column whose B pairs are (127, 127)
// saturates. A is [2, 4] of 255 and 1; B [4, 3] columns: (127,127,127,127) saturates twice in
// row 0 (sum 2 * 32767 = 65534 instead of 129540), (1,1,1,1) never, (-128,-128,0,0) once
// (255*-128*2 = -65280 -> -32768).
TEST(PlantedFaults, Int16PairSaturationIsAttributedToTheAccumulation) {
  QGemmOp op;
  op.a.values = Tensor(DType::u8, {2, 4});
  const std::int64_t a[] = {255, 255, 255, 255, 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) op.a.values.set_int(i, a[i]);
  op.a.params.scales = {1.0};
  op.b.values = Tensor(DType::i8, {4, 3});
  const std::int64_t bv[] = {127, 1, -128, 127, 1, -128, 127, 1, 0, 127, 1, 0};
  for (int i = 0; i < 12; ++i) op.b.values.set_int(i, bv[i]);
  op.b.params.scales = {1.0};
  op.output.kind = OutputKind::int32;
  op.output.format = DType::i32;
  Case c;
  c.suite = "planted";
  c.name = "pairs";
  c.op = op;
  c.spec = *find_preset("onnx");
  FaultyBackend b(Fault::int16_pairs);
  RunOptions opt;
  opt.max_worst = 10;
  const BackendResult r = run_on(c, b, opt);
  EXPECT_EQ(r.metrics.mismatches(), 2);  // row 0, columns 0 and 2; row 1 stays small
  std::set<std::int64_t> where;
  for (const ElementDiff& d : r.metrics.worst) where.insert(d.index);
  EXPECT_EQ(where, (std::set<std::int64_t>{0, 2}));
  expect_cause(r, "accumulation=int16_pair_saturate");
  const CauseCount& cc = r.causes.front();
  EXPECT_EQ(cc.per_channel, (std::map<std::int64_t, std::int64_t>{{0, 1}, {2, 1}}));
  EXPECT_EQ(finding(infer(b), "qgemm", "accumulation"), std::set<std::string>{"int16_pair_saturate"});
}

// The headline of a gemmlowp double-rounding kernel's causes: the scheme (or a preset built on it),
// reproducing all `expected` mismatches and breaking no sampled match, nothing unexplained.
void expect_double_rounding_headline(const BackendResult& res, std::int64_t expected) {
  EXPECT_EQ(res.metrics.mismatches(), expected);
  ASSERT_FALSE(res.causes.empty());
  const CauseCount& head = res.causes.front();
  // TOSA's DOUBLE_ROUND is gemmlowp's arithmetic, so either scheme, or a preset built on them, is right.
  const std::set<std::string> right = {"requantize.scheme=gemmlowp_double", "requantize.scheme=tosa_double",
                                       "preset gemmlowp", "preset tflite-reference", "preset tosa-double"};
  EXPECT_TRUE(right.count(head.cause)) << "headline: " << head.cause;
  EXPECT_EQ(head.count, expected);
  EXPECT_EQ(head.matches_broken, 0);
  EXPECT_GT(head.matches_sampled, 0);
  EXPECT_EQ(res.unexplained, 0);
}

// TFLite's requantize (gemmlowp's two roundings) against the exact spec, multiplier 1/4: with
// acc = 4j + r, the kernel computes SRDHM = round(acc / 2) (ties up), then RoundingDivideByPOT by 1
// (ties away). It differs from round(acc / 4) ties to even at r = 1, acc > 0 (j + 1/4 -> 2j + 1/2
// -> 2j + 1 -> j + 1/2 -> j + 1: the double rounding), and at the ties r = 2 where ties away and to
// even part (positive j even, negative j odd). No single rounding mode does both (ceil misses the
// negative ties, ties away misses the double roundings), so the headline must be the scheme.
TEST(PlantedFaults, GemmlowpDoubleRoundingIsNamedAsTheScheme) {
  const Case c = testing::double_rounding_case();
  FaultyBackend b(Fault::gemmlowp_double);
  const QGemmOp& op = std::get<QGemmOp>(c.op);
  const Tensor kernel = b.run(c.op);
  const std::vector<std::int64_t> acc = testing::exact_accumulators(op);
  std::int64_t expected = 0, double_roundings = 0, negative_ties = 0;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    if (kernel.get_int(static_cast<std::int64_t>(i)) == testing::quarter_ties_to_even(acc[i])) continue;
    ++expected;
    const std::int64_t r = ((acc[i] % 4) + 4) % 4;
    double_roundings += r == 1 && acc[i] > 0;
    negative_ties += r == 2 && acc[i] < 0;
  }
  ASSERT_GT(double_roundings, 0);  // the data has both kinds, or the test proves less than it says
  ASSERT_GT(negative_ties, 0);
  const BackendResult res = run_on(c, b);
  expect_double_rounding_headline(res, expected);
  for (const CauseCount& cc : res.causes)
    if (cc.kind == "single" && cc.cause.find("rounding=") != std::string::npos) {
      EXPECT_LT(cc.count, expected) << cc.cause;
    }
}

// The same kernel on a 160 x 160 output, whose mismatches (derived by hand as above) are past the
// screen: the candidates are counted on a sample, the headline on every mismatch, exactly.
TEST(PlantedFaults, GemmlowpDoubleRoundingPastTheScreenKeepsAnExactHeadline) {
  const Case c = testing::double_rounding_case(160, 160);
  FaultyBackend b(Fault::gemmlowp_double);
  const Tensor kernel = b.run(c.op);
  const std::vector<std::int64_t> acc = testing::exact_accumulators(std::get<QGemmOp>(c.op));
  std::int64_t expected = 0;
  for (std::size_t i = 0; i < acc.size(); ++i)
    expected += kernel.get_int(static_cast<std::int64_t>(i)) != testing::quarter_ties_to_even(acc[i]);
  ASSERT_GT(expected, static_cast<std::int64_t>(kCauseScreenLinear));
  const BackendResult res = run_on(c, b);
  expect_double_rounding_headline(res, expected);
  ASSERT_FALSE(res.causes.empty());
  EXPECT_EQ(res.causes.front().mismatches_sampled, 0);
  EXPECT_EQ(res.unexplained_sampled, 0);
  for (const CauseCount& cc : res.causes)
    if (cc.kind == "single" && cc.cause.find("rounding=") != std::string::npos) {
      EXPECT_GE(cc.mismatches_sampled, static_cast<std::int64_t>(kCauseScreenLinear)) << cc.cause;
      EXPECT_LT(cc.count, cc.mismatches_sampled) << cc.cause;
    }
}

// The same kernel through infer: its requantized GEMM output is a double-rounding scheme, never the
// exact one (the probes' multiplier 1/4 puts accumulators 4j + 1 where the two part).
TEST(PlantedFaults, InferNamesTheOutputStagesScheme) {
  FaultyBackend b(Fault::gemmlowp_double);
  const InferReport inf = infer(b);
  const std::set<std::string> schemes = finding(inf, "qgemm", "requantize.scheme");
  EXPECT_TRUE(schemes.count("gemmlowp_double")) << inf.summary;
  EXPECT_FALSE(schemes.count("ideal"));
  EXPECT_FALSE(schemes.count("float_multiplier"));
}

// A kernel right everywhere but at element 0 of each call (16 quantize probe calls: i8 and u8, four
// scales, two zero points; element 0 is -139.5 s, which saturates, and the nudge moves it off the
// bound): infer still names ties to even, with 16 elements unexplained and those listed.
TEST(PlantedFaults, InferReportsTheBestPolicyWithItsOutliers) {
  FaultyBackend b(Fault::nudged, "", 1);
  const InferReport inf = infer(b);
  EXPECT_EQ(finding(inf, "quantize", "rounding"), std::set<std::string>{std::string(describe(RoundingMode::rne))});
  for (const InferFinding& f : inf.findings)
    if (f.op == "quantize" && f.dimension == "rounding") {
      EXPECT_EQ(f.unexplained, 16);
      EXPECT_GT(f.probes, 16 * 50);  // within the allowance of 1 in 50
    }
  ASSERT_FALSE(inf.outliers.empty());
  EXPECT_NE(inf.outliers.front().find("quantize x "), std::string::npos) << inf.outliers.front();
  EXPECT_NE(inf.summary.find("except 16 of"), std::string::npos) << inf.summary;
}

TEST(PlantedFaults, TheCorrectBackendIsNamedLikeOnnx) {
  FaultyBackend b(Fault::none);
  const InferReport inf = infer(b);
  EXPECT_EQ(finding(inf, "quantize", "rounding"), std::set<std::string>{std::string(describe(RoundingMode::rne))});
  EXPECT_NE(std::find(inf.presets.begin(), inf.presets.end(), "onnx"), inf.presets.end());
  EXPECT_EQ(finding(inf, "quantize", "nan"), std::set<std::string>{"zero_point"});
}

// ---- The gate --------------------------------------------------------------------------------

std::vector<float> ties_data() {
  std::vector<float> xs;
  for (int k = -8; k <= 7; ++k) xs.push_back(static_cast<float>(k) + 0.5f);
  return xs;
}

TEST(Gate, PassesOnAnUnchangedKnownMismatchAndFailsOnOneMoreOrLess) {
  const Case c = quantize_case("ties", ties_data(), 1.0);
  Suite s{"planted", "", "", {c}, {}};
  FaultyBackend known(Fault::ties_away);
  const RunReport first = run_cases({s}, {&known}, {});
  ASSERT_EQ(first.cases[0].backends[0].verdict, Verdict::fail);
  const Baseline base = baseline_from(first);
  ASSERT_EQ(base.entries.size(), 1u);

  RunOptions opt;
  opt.baseline = &base;
  const RunReport same = run_cases({s}, {&known}, opt);
  EXPECT_EQ(same.cases[0].backends[0].verdict, Verdict::xfail);
  EXPECT_EQ(exit_code(same), 0);

  FaultyBackend more(Fault::extra_mismatch, known.name()), fewer(Fault::fewer_mismatch, known.name()),
      fixed(Fault::none, known.name());
  const RunReport r_more = run_cases({s}, {&more}, opt);
  EXPECT_EQ(r_more.cases[0].backends[0].verdict, Verdict::fail);
  EXPECT_EQ(r_more.cases[0].backends[0].metrics.mismatches(), 9);
  EXPECT_EQ(exit_code(r_more), 1);
  const RunReport r_fewer = run_cases({s}, {&fewer}, opt);
  EXPECT_EQ(r_fewer.cases[0].backends[0].verdict, Verdict::fail);
  EXPECT_EQ(r_fewer.cases[0].backends[0].metrics.mismatches(), 7);
  const RunReport r_fixed = run_cases({s}, {&fixed}, opt);
  EXPECT_EQ(r_fixed.cases[0].backends[0].verdict, Verdict::xpass);
  EXPECT_EQ(exit_code(r_fixed), 1);
}

// x = -7.5 (element 0 of the ties) quantizes to -8 under onnx; a kernel off by one there gives -7.
// The same element off by 100 (92), or off by one the other way (-9), is a change the gate sees; a
// team that accepts any distance there says so with ignore_magnitude, and a baseline written before
// distances were fingerprinted (two parts) is matched by its elements.
TEST(Gate, ADistanceThatGrowsOrChangesSideIsAChange) {
  const Case c = quantize_case("ties", ties_data(), 1.0);
  Suite s{"planted", "", "", {c}, {}};
  FaultyBackend known(Fault::nudged, "kernel", 1);
  const RunReport first = run_cases({s}, {&known}, {});
  ASSERT_EQ(first.cases[0].backends[0].verdict, Verdict::fail);
  ASSERT_EQ(first.cases[0].backends[0].metrics.mismatches(), 1);
  Baseline base = baseline_from(first);
  RunOptions opt;
  opt.baseline = &base;
  EXPECT_EQ(run_cases({s}, {&known}, opt).cases[0].backends[0].verdict, Verdict::xfail);

  FaultyBackend farther(Fault::nudged, "kernel", 100), other_side(Fault::nudged, "kernel", -1);
  const RunReport r_farther = run_cases({s}, {&farther}, opt);
  EXPECT_EQ(r_farther.cases[0].backends[0].verdict, Verdict::fail);
  EXPECT_EQ(r_farther.cases[0].backends[0].metrics.max_abs, 100);
  EXPECT_NE(r_farther.cases[0].backends[0].reason.find("changed from the baseline"), std::string::npos);
  EXPECT_EQ(exit_code(r_farther), 1);
  EXPECT_EQ(run_cases({s}, {&other_side}, opt).cases[0].backends[0].verdict, Verdict::fail);

  base.ignore_magnitude = true;
  EXPECT_EQ(run_cases({s}, {&farther}, opt).cases[0].backends[0].verdict, Verdict::xfail);
  EXPECT_EQ(run_cases({s}, {&other_side}, opt).cases[0].backends[0].verdict, Verdict::xfail);
  FaultyBackend elsewhere(Fault::ties_away, "kernel");  // other elements: a change even so
  EXPECT_EQ(run_cases({s}, {&elsewhere}, opt).cases[0].backends[0].verdict, Verdict::fail);

  base.ignore_magnitude = false;
  std::string& recorded = base.entries.begin()->second.fingerprint;
  ASSERT_EQ(std::count(recorded.begin(), recorded.end(), ':'), 2);
  recorded = recorded.substr(0, recorded.rfind(':'));  // as an older qconform wrote it
  EXPECT_EQ(run_cases({s}, {&farther}, opt).cases[0].backends[0].verdict, Verdict::xfail);
}

// ---- Crashes and hangs -----------------------------------------------------------------------

TEST(Isolation, ACrashIsReportedAndTheRunGoesOn) {
  const Case c = quantize_case("ties", ties_data(), 1.0);
  FaultyBackend crash(Fault::crash), fine(Fault::none);
  RunOptions opt;
  opt.isolate = true;
  Suite s{"planted", "", "", {c}, {}};
  const RunReport r = run_cases({s}, {&crash, &fine}, opt);
  EXPECT_EQ(r.cases[0].backends[0].verdict, Verdict::crash);
  EXPECT_NE(r.cases[0].backends[0].reason.find("signal 11"), std::string::npos) << r.cases[0].backends[0].reason;
  EXPECT_EQ(r.cases[0].backends[1].verdict, Verdict::pass);
}

TEST(Isolation, AHangIsKilledAfterTheTimeout) {
  const Case c = quantize_case("ties", ties_data(), 1.0);
  FaultyBackend hang(Fault::hang);
  RunOptions opt;
  opt.timeout_seconds = 0.5;
  const BackendResult r = run_on(c, hang, opt);
  EXPECT_EQ(r.verdict, Verdict::timeout);
  EXPECT_NE(r.reason.find("0.5 s"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace qc
