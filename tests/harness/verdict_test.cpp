// The verdict rule is one (harness/verdict.hpp): the runner and the shrinker's still_fails must
// judge every output the same way. Both are run here on the same outputs under every kind of
// expectation, and both are checked against verdicts derived by hand.
//
// The case: ONNX QuantizeLinear of {0.5, 1.5, 2.3, -7} with scale 1 and zero point 0 to int8.
// x / s rounded half to even is {0, 2, 2, -7}; TFLite's reference rounds half away from zero
// (std::round in reference/quantize.h::AffineQuantize), which gives {1, 2, 2, -7}.
#include "cases/case.hpp"
#include "harness/reproducer.hpp"
#include "harness/runner.hpp"
#include "oracles/presets.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qc {
namespace {

// A backend that returns a fixed output, whatever it is asked.
class Fixed : public Backend {
 public:
  Fixed(Tensor out, std::string claim) : out_(std::move(out)), claim_(std::move(claim)) {}
  std::string name() const override { return "fixed"; }
  std::string description() const override { return "returns a fixed tensor"; }
  std::string claim() const override { return claim_; }
  Availability supports(const OpRequest&) const override { return {}; }
  Tensor run(const OpRequest&) override { return out_; }

 private:
  Tensor out_;
  std::string claim_;
};

Tensor int8(const std::vector<std::int64_t>& v) {
  Tensor t(DType::i8, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.set_int(static_cast<std::int64_t>(i), v[i]);
  return t;
}

Case quantize_case(const Expectation& ex) {
  QuantizeOp op;
  op.x = Tensor(DType::f32, {4});
  const double xs[] = {0.5, 1.5, 2.3, -7.0};
  for (std::int64_t i = 0; i < 4; ++i) op.x.set_double(i, xs[i]);
  op.params.scales = {1.0};
  op.params.zero_points = {0};
  op.out = DType::i8;
  Case c;
  c.suite = "verdict";
  c.name = "quantize";
  c.op = op;
  c.spec = *find_preset("onnx");
  c.expect["*"] = ex;
  return c;
}

Expectation expect(Expectation::Kind k, std::int64_t tolerance = 0) {
  Expectation e;
  e.kind = k;
  e.tolerance = tolerance;
  return e;
}

struct Row {
  const char* what;
  Expectation ex;
  std::string claim;
  Tensor out;
  bool pass;  // derived by hand (see the comment at the top)
};

TEST(Verdict, TheRunnerAndTheShrinkerJudgeEveryOutputAlike) {
  using K = Expectation::Kind;
  const Tensor right = int8({0, 2, 2, -7}), away = int8({1, 2, 2, -7}), off3 = int8({0, 2, 5, -7});
  const Tensor short_one = int8({0, 2, 2});
  const std::vector<Row> rows = {
      {"exact, right", expect(K::exact), "onnx", right, true},
      {"exact, ties away", expect(K::exact), "onnx", away, false},
      {"exact, wrong shape", expect(K::exact), "onnx", short_one, false},
      {"max_lsb 1, ties away (1 LSB)", expect(K::max_lsb, 1), "onnx", away, true},
      {"max_lsb 1, 3 LSB off", expect(K::max_lsb, 1), "onnx", off3, false},
      {"max_lsb 3, 3 LSB off", expect(K::max_lsb, 3), "onnx", off3, true},
      // An integer output is measured in LSB: an expectation in ULP is the wrong unit, a FAIL even
      // for the right output (the shrinker used to ignore the unit).
      {"max_ulp 1 on an integer output", expect(K::max_ulp, 1), "onnx", right, false},
      // Quantize is no dot-product op: a dot_product expectation cannot be met (the shrinker used
      // to call this a pass).
      {"dot_product on quantize", expect(K::dot_product), "onnx", right, false},
      {"claim onnx, right", expect(K::claim), "onnx", right, true},
      {"claim onnx, ties away", expect(K::claim), "onnx", away, false},
      {"claim tflite-reference, ties away", expect(K::claim), "tflite-reference", away, true},
      {"claim tflite-reference, half to even", expect(K::claim), "tflite-reference", right, false},
      {"claim of an unknown preset", expect(K::claim), "no-such-preset", right, false},
  };
  RunOptions opt;
  opt.attribute_causes = false;
  for (const Row& row : rows) {
    const Case c = quantize_case(row.ex);
    Fixed b(row.out, row.claim);
    const RunReport r = run_cases({Suite{"verdict", "", "", {c}, {}}}, {&b}, opt);
    ASSERT_EQ(r.cases.size(), 1u) << row.what;
    ASSERT_EQ(r.cases[0].backends.size(), 1u) << row.what;
    const Verdict runner = r.cases[0].backends[0].verdict;
    EXPECT_EQ(runner, row.pass ? Verdict::pass : Verdict::fail) << row.what << ": " << r.cases[0].backends[0].reason;
    EXPECT_EQ(still_fails(c, c.op, b), !row.pass) << row.what;
  }
}

// A claim whose scheme cannot represent the case's multiplier (x86-vnni requantizes by XNNPACK's
// fp32 scheme, defined for 2^-32 <= s_in * s_w / s_out < 256; here 2^-40) does not define the
// case: the result fails, saying so, and the run goes on to the next result.
TEST(Verdict, AClaimThatCannotEvaluateTheCaseFailsItWithTheReason) {
  RequantizeOp op;
  op.acc = Tensor(DType::i32, {2});
  op.params.input_scale = 0x1p-20;
  op.params.weight_scales = {0x1p-20};
  op.params.output_scale = 1.0;
  op.out = DType::i8;
  Case c;
  c.suite = "verdict";
  c.name = "tiny_multiplier";
  c.op = op;
  c.spec = *find_preset("onnx");
  c.expect["*"] = expect(Expectation::Kind::claim);
  Fixed b(int8({0, 0}), "x86-vnni");
  const RunReport r = run_cases({Suite{"verdict", "", "", {c}, {}}}, {&b}, RunOptions{});
  const BackendResult& res = r.cases.at(0).backends.at(0);
  EXPECT_EQ(res.verdict, Verdict::fail);
  EXPECT_NE(res.reason.find("its claim x86-vnni does not define this case"), std::string::npos) << res.reason;
}

}  // namespace
}  // namespace qc
