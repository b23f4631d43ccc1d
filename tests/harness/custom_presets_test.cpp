// Custom presets (policy files, register_presets_json), the start-up check of claims
// (check_claims) and the fidelity mode (expect_claims), in process; custom_presets_cli_test.cpp
// runs the same through the qconform binary, with the commands of the docs.
#include "cases/case.hpp"
#include "cases/case_writer.hpp"
#include "faulty_backend.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qc {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kExamples = fs::path(QCONFORM_SOURCE_DIR) / "docs" / "examples";

// Every test starts and ends with no custom preset registered.
class CustomPresets : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_registered_presets();
    dir_ = fs::temp_directory_path() / ("qconform_custom_presets_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    clear_registered_presets();
    fs::remove_all(dir_);
  }
  // The InputError message of `f`, or "" when it does not throw.
  template <class F>
  static std::string error_of(F f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

std::vector<std::int64_t> ints(const Tensor& t) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < t.size(); ++i) v.push_back(t.get_int(i));
  return v;
}

TEST_F(CustomPresets, ThePolicyFileOfTheDocsDeclaresOnnxWithTiesAway) {
  EXPECT_FALSE(find_preset("mykernel-1.0"));
  const std::vector<std::string> names = load_preset_file(kExamples / "mykernel-presets.json");
  ASSERT_EQ(names, std::vector<std::string>{"mykernel-1.0"});
  const auto s = find_preset("mykernel-1.0");
  ASSERT_TRUE(s);
  EXPECT_FALSE(is_builtin_preset("mykernel-1.0"));
  EXPECT_EQ(s->description, "mykernel 1.0: ONNX QuantizeLinear, but std::round (ties away from zero)");
  EXPECT_EQ(s->sources, std::vector<std::string>{"example/mykernel src/quantize.cc::quantize (std::round)"});
  // onnx with one change: the rounding.
  Spec expected = *find_preset("onnx");
  expected.quantize.rounding = RoundingMode::rna;
  EXPECT_TRUE(same_numerics(*s, expected));
  EXPECT_EQ(registered_presets().size(), 1u);
  const std::vector<std::string> all = preset_names();
  EXPECT_EQ(all.back(), "mykernel-1.0");
  EXPECT_EQ(all.size(), presets().size() + 1);
  // The case writer names it, and writes overrides on top of it.
  EXPECT_EQ(spec_to_json(*s), json("mykernel-1.0"));
  Spec changed = *s;
  changed.name += "+custom";
  changed.quantize.nan = NanRule::to_qmin;
  EXPECT_EQ(spec_to_json(changed), (json{{"preset", "mykernel-1.0"}, {"nan", "qmin"}}));
}

// By hand: the default case quantize_linear/ties_at_half_integers quantizes x / 1 for
// x = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 126.5, -127.5] to i8. Ties to even (onnx):
// [-4, -2, -2, 0, 0, 2, 2, 4, 126, -128]; ties away: [-4, -3, -2, -1, 1, 2, 3, 4, 127, -128].
// They part on the ties whose lower neighbour is even: elements 1, 3, 4, 6 and 8.
TEST_F(CustomPresets, ADefaultQuantizeCaseDiffersOnTheTiesWithAnEvenNeighbour) {
  load_preset_file(kExamples / "mykernel-presets.json");
  const std::vector<Suite> suites = load_suites({fs::path(QCONFORM_SOURCE_DIR) / "cases" / "quantize_linear.json"});
  const Case* ties = nullptr;
  for (const Case& c : suites.at(0).cases)
    if (c.name == "ties_at_half_integers") ties = &c;
  ASSERT_NE(ties, nullptr);
  const Tensor onnx = evaluate(ties->op, *find_preset("onnx")).expected;
  const Tensor mine = evaluate(ties->op, *find_preset("mykernel-1.0")).expected;
  EXPECT_EQ(ints(onnx), (std::vector<std::int64_t>{-4, -2, -2, 0, 0, 2, 2, 4, 126, -128}));
  EXPECT_EQ(ints(mine), (std::vector<std::int64_t>{-4, -3, -2, -1, 1, 2, 3, 4, 127, -128}));
}

TEST_F(CustomPresets, ACaseFileNamesACustomPresetOnceItIsRegistered) {
  const fs::path cases = kExamples / "mykernel-cases.json";
  const std::string before = error_of([&] { load_suites({cases}); });
  EXPECT_NE(before.find("unknown preset 'mykernel-1.0'"), std::string::npos) << before;
  EXPECT_NE(before.find("mykernel-cases.json"), std::string::npos) << before;
  load_preset_file(kExamples / "mykernel-presets.json");
  const std::vector<Suite> suites = load_suites({cases});
  ASSERT_EQ(suites.at(0).cases.size(), 1u);
  const Case& c = suites[0].cases[0];
  EXPECT_EQ(c.spec.name, "mykernel-1.0");
  // x / 1 for x = [2.5, 0.5, -2.5, 1.25]: ties away [3, 1, -3, 1]; ties to even [2, 0, -2, 1].
  EXPECT_EQ(ints(evaluate(c.op, c.spec).expected), (std::vector<std::int64_t>{3, 1, -3, 1}));
  EXPECT_EQ(ints(evaluate(c.op, *find_preset("onnx")).expected), (std::vector<std::int64_t>{2, 0, -2, 1}));
}

TEST_F(CustomPresets, AListBuildsOnEarlierDefinitionsAndPluginsPassTheText) {
  const std::string text = R"([
    {"preset": "team-a", "spec": {"preset": "onnx", "rounding": "rna"}},
    {"preset": "team-a@2", "spec": {"preset": "team-a", "nan": "qmax"}, "description": "team-a, NaN to qmax"}
  ])";
  EXPECT_EQ(register_presets_json(text, "plugin libteam.so"), (std::vector<std::string>{"team-a", "team-a@2"}));
  const Spec b = *find_preset("team-a@2");
  EXPECT_EQ(b.quantize.rounding, RoundingMode::rna);
  EXPECT_EQ(b.quantize.nan, NanRule::to_qmax);
  EXPECT_EQ(b.description, "team-a, NaN to qmax");
  EXPECT_NE(find_preset("team-a")->description.find("custom preset"), std::string::npos);
}

TEST_F(CustomPresets, BadDefinitionsNameTheOriginAndTheField) {
  struct Bad {
    std::string text, needle;
  };
  const std::vector<Bad> bad = {
      {R"({"preset": "onnx", "spec": {"preset": "onnx", "rounding": "rna"}})",
       "where.json: field 'preset': preset 'onnx' is built in"},
      {R"({"preset": "x-1", "spec": {"preset": "onnx", "rounding": "sideways"}})",
       "where.json: field 'spec.rounding': unknown value 'sideways'"},
      {R"({"preset": "x-1", "spec": {"preset": "onnx", "rouding": "rna"}})", "field 'spec.rouding': unknown field"},
      {R"({"preset": "x-1", "spec": "no-such-preset"})", "field 'spec': unknown preset 'no-such-preset'"},
      {R"({"preset": "x-1"})", "field 'spec': missing"},
      {R"({"spec": "onnx"})", "field 'preset': missing"},
      {R"({"preset": "x-1", "spec": "onnx", "source": "a"})", "field 'source': unknown field"},
      {R"({"preset": "x+1", "spec": "onnx"})", "field 'preset': preset name 'x+1': '+' is not allowed"},
      {R"({"preset": "cpu-ref:x", "spec": "onnx"})", "':' is not allowed"},
      {R"([{"preset": "x-1", "spec": "onnx"}, {"preset": "x-2", "spec": {"nan": 3}}])",
       "field '[1].spec.nan': expected a string"},
      {"{\"preset\": \"x-1\",\n \"spec\": }", "where.json:2: JSON syntax error"},
  };
  for (const Bad& b : bad) {
    clear_registered_presets();
    const std::string e = error_of([&] { register_presets_json(b.text, "where.json"); });
    EXPECT_NE(e.find(b.needle), std::string::npos) << b.text << "\n -> " << e;
  }
  clear_registered_presets();
  register_presets_json(R"({"preset": "x-1", "spec": "onnx"})", "first.json");
  const std::string twice =
      error_of([&] { register_presets_json(R"({"preset": "x-1", "spec": "onnx"})", "second.json"); });
  EXPECT_NE(twice.find("second.json: field 'preset': preset 'x-1' is already registered"), std::string::npos) << twice;
  // register_preset itself (a Spec built in code) refuses a built-in name.
  Spec onnx = *find_preset("onnx");
  EXPECT_NE(error_of([&] { register_preset(onnx); }).find("built in"), std::string::npos);
  EXPECT_NE(error_of([&] { load_preset_file(dir_ / "missing.json"); }).find("missing.json: cannot open"),
            std::string::npos);
}

// A backend that claims whatever it is told.
class Claiming : public testing::FaultyBackend {
 public:
  Claiming(std::string name, std::string claim)
      : FaultyBackend(testing::Fault::none, std::move(name)), claim_(std::move(claim)) {}
  std::string claim() const override { return claim_; }

 private:
  std::string claim_;
};

TEST_F(CustomPresets, CheckClaimsNamesTheBackendTheClaimAndWhatIsKnown) {
  Claiming good("good", "onnx"), custom("team", "mykernel-1.0"), bad("shoddy", "no-such-preset");
  EXPECT_NO_THROW(check_claims({&good}, "run"));
  const std::string e = error_of([&] { check_claims({&good, &bad}, "run"); });
  EXPECT_NE(e.find("run: backend 'shoddy' claims unknown preset 'no-such-preset'"), std::string::npos) << e;
  EXPECT_NE(e.find("known: onnx, onnx-reference"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { check_claims({&custom}, "run"); }).find("'mykernel-1.0'"), std::string::npos);
  load_preset_file(kExamples / "mykernel-presets.json");
  EXPECT_NO_THROW(check_claims({&good, &custom}, "run"));
  EXPECT_NE(error_of([&] { check_claims({&bad}, "run"); }).find("mykernel-1.0"), std::string::npos)
      << "the custom preset is listed as known";
}

// The runner's own message stays for callers that skip check_claims (Python's run_cases).
TEST_F(CustomPresets, TheRunnerStillReportsAnUnknownClaimCaseByCase) {
  std::vector<Suite> suites = load_suites({fs::path(QCONFORM_SOURCE_DIR) / "cases" / "quantize_linear.json"});
  Suite s = suites.at(0);
  s.cases.resize(1);
  s.cases[0].expect = {{"*", {Expectation::Kind::claim, 0}}};
  Claiming bad("shoddy", "no-such-preset");
  RunOptions opt;
  opt.attribute_causes = false;
  const RunReport r = run_cases({s}, {&bad}, opt);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].backends.at(0).verdict, Verdict::fail);
  EXPECT_EQ(r.cases[0].backends[0].reason, "backend claims unknown preset 'no-such-preset'");
}

TEST_F(CustomPresets, ExpectClaimsTurnsEveryExpectationButDotProductIntoClaim) {
  Suite s;
  s.name = "t";
  Case a, b, c;
  a.name = "a";  // no entry: the default, exact
  b.name = "b";
  b.expect = {{"*", {Expectation::Kind::exact, 0}}, {"x", {Expectation::Kind::max_lsb, 1}}};
  c.name = "c";
  c.expect = {{"*", {Expectation::Kind::dot_product, 0}}, {"y", {Expectation::Kind::exact, 0}}};
  s.cases = {a, b};
  s.dependencies = {c};
  std::vector<Suite> v{s};
  expect_claims(v);
  const Case& ra = v[0].cases[0];
  const Case& rb = v[0].cases[1];
  const Case& rc = v[0].dependencies[0];
  for (const char* backend : {"x", "y", "z"}) {
    EXPECT_EQ(ra.expectation_for(backend).kind, Expectation::Kind::claim) << backend;
    EXPECT_EQ(rb.expectation_for(backend).kind, Expectation::Kind::claim) << backend;
  }
  EXPECT_EQ(rc.expectation_for("z").kind, Expectation::Kind::dot_product);
  EXPECT_EQ(rc.expectation_for("y").kind, Expectation::Kind::claim);
}

}  // namespace
}  // namespace qc
