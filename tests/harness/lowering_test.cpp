// Lowering comparisons in the case format: chained cases ({"from": name}) and agreement statements
// (same_outputs_as, differs_from). Loader errors name the file, the case and the field; a chain's
// reference uses the oracle's intermediate and each backend its own (a planted fault at the
// intermediate, tests/harness/faulty_backend.hpp, shows through); agreements are checked on the
// oracle's and on each backend's outputs; the report round-trips; shards merge to the unsharded run.
// Every expected value is worked out by hand in the comment above it, never taken from the oracle.
#include "cli_run.hpp"
#include "faulty_backend.hpp"

#include "cases/case.hpp"
#include "cases/case_writer.hpp"
#include "harness/runner.hpp"
#include "qconform/error.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace qc {
namespace {

namespace fs = std::filesystem;
using testing::Fault;
using testing::FaultyBackend;

// A temporary folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("qconform-lowering-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
};

// The message of the InputError that loading `text` throws ("" if it loads).
std::string load_error(const TempDir& dir, const std::string& text) {
  try {
    (void)load_suite(dir.write("cases.json", text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_fragments(const std::string& message, std::initializer_list<std::string> fragments) {
  EXPECT_FALSE(message.empty()) << "expected a load error";
  for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << f << " in: " << message;
}

// A quantize case of f32 data with scale 1 and zero point 0 (the JSON of one case).
std::string quantize(const std::string& name, const std::string& data, const std::string& out = "i8",
                     const std::string& extra = "") {
  return R"({"name": ")" + name + R"(", "op": "quantize", "input": {"dtype": "f32", "shape": [4], "data": )" + data +
         R"(}, "scale": 1.0, "zero_point": 0, "output_dtype": ")" + out + "\"" + extra + "}";
}

std::string suite(const std::vector<std::string>& cases) {
  std::string s = R"({"suite": "t", "cases": [)";
  for (std::size_t i = 0; i < cases.size(); ++i) s += (i ? ",\n" : "\n") + cases[i];
  return s + "\n]}";
}

// ---- Loading ----------------------------------------------------------------------------------

TEST(ChainLoading, AnUnknownProducerNamesFileCaseAndField) {
  TempDir dir;
  const std::string m = load_error(dir, suite({R"({"name": "c", "op": "requantize", "input": {"from": "nope"},
      "input_scale": 1.0, "weight_scale": 1.0, "output_scale": 1.0, "output_dtype": "i8"})"}));
  expect_fragments(
      m, {(dir.path() / "cases.json").string() + ":2: case 'c'", "field 'input.from'", "no case named 'nope'"});
}

TEST(ChainLoading, ASweptProducerIsNamedWithItsValues) {
  TempDir dir;
  const std::string m =
      load_error(dir, suite({quantize("p", "[1, 2, 3, 4]", "i8", R"(, "sweep": {"output_dtype": ["i8", "u8"]})"),
                             R"({"name": "c", "op": "dequantize", "input": {"from": "p"}, "scale": 1.0})"}));
  expect_fragments(m, {"case 'c'", "field 'input.from'", "'p' is a sweep", "'p[output_dtype=i8]'"});
  // Named with its values, the swept case is a producer like any other.
  EXPECT_EQ(load_error(dir, suite({quantize("p", "[1, 2, 3, 4]", "i8", R"(, "sweep": {"output_dtype": ["i8", "u8"]})"),
                                   R"({"name": "c", "op": "dequantize", "input": {"from": "p[output_dtype=u8]"},
                                       "scale": 1.0})"})),
            "");
}

TEST(ChainLoading, ACycleNamesItsCases) {
  TempDir dir;
  // Requantize i32 -> i32 (scales 1) takes what it gives, so a and b could feed each other.
  auto req = [](const std::string& name, const std::string& from) {
    return R"({"name": ")" + name + R"(", "op": "requantize", "input": {"from": ")" + from +
           R"("}, "input_scale": 1.0, "weight_scale": 1.0, "output_scale": 1.0, "output_dtype": "i32"})";
  };
  expect_fragments(load_error(dir, suite({req("a", "b"), req("b", "a")})),
                   {"case 'a'", "field 'input.from'", "cycle: a -> b -> a"});
  expect_fragments(load_error(dir, suite({req("a", "a")})),
                   {"case 'a'", "field 'input.from'", "cannot take an operand from itself"});
}

TEST(ChainLoading, TheProducersFormatAndShapeMustBeTheOperands) {
  TempDir dir;
  // p outputs i8 [4]; a consumer that says u8 or [2, 2] is wrong, and so is one whose op needs
  // integers where p gives floats.
  const std::string p = quantize("p", "[1, 2, 3, 4]");
  expect_fragments(load_error(dir, suite({p, R"({"name": "c", "op": "dequantize",
                                                  "input": {"from": "p", "dtype": "u8"}, "scale": 1.0})"})),
                   {"case 'c'", "field 'input.dtype'", "'p' outputs i8 [4]"});
  expect_fragments(load_error(dir, suite({p, R"({"name": "c", "op": "dequantize",
                                                  "input": {"from": "p", "shape": [2, 2]}, "scale": 1.0})"})),
                   {"case 'c'", "field 'input.shape'", "'p' outputs i8 [4]"});
  const std::string dq = R"({"name": "d", "op": "dequantize", "input": {"from": "p"}, "scale": 1.0})";
  expect_fragments(load_error(dir, suite({p, dq, R"({"name": "c", "op": "requantize", "input": {"from": "d"},
      "input_scale": 1.0, "weight_scale": 1.0, "output_scale": 1.0, "output_dtype": "i8"})"})),
                   {"case 'c'", "field 'input.dtype'", "integer"});
  // A GEMM whose A comes from p ([4] is no matrix) is rejected by the GEMM's own shape check.
  const std::string g = R"({"name": "g", "op": "qgemm", "a": {"from": "m", "scale": 1.0},
      "b": {"dtype": "i8", "shape": [3, 1], "data": [1, 2, 3], "scale": 1.0}, "output": {"kind": "int32"}})";
  const std::string m = R"({"name": "m", "op": "quantize", "input": {"dtype": "f32", "shape": [2, 4],
      "data": [1, 2, 3, 4, 5, 6, 7, 8]}, "scale": 1.0, "output_dtype": "u8"})";
  expect_fragments(load_error(dir, suite({g, m})), {"case 'g'", "field 'b.shape'"});
  // Values from a producer and from data at once are one source too many.
  expect_fragments(load_error(dir, suite({p, R"({"name": "c", "op": "dequantize",
      "input": {"from": "p", "dtype": "i8", "shape": [4], "data": [1, 2, 3, 4]}, "scale": 1.0})"})),
                   {"case 'c'", "field 'input.from'", "not both"});
}

TEST(ChainLoading, AgreementsNameCasesOfTheFileWithTheSameOutputs) {
  TempDir dir;
  const std::string p = quantize("p", "[1, 2, 3, 4]");
  expect_fragments(load_error(dir, suite({p, quantize("c", "[1, 2, 3, 4]", "i8", R"(, "same_outputs_as": "q")")})),
                   {"case 'c'", "field 'same_outputs_as'", "no case named 'q'"});
  expect_fragments(load_error(dir, suite({quantize("c", "[1, 2, 3, 4]", "i8", R"(, "same_outputs_as": "c")")})),
                   {"case 'c'", "field 'same_outputs_as'", "itself"});
  // u8 outputs cannot be compared element by element with i8 ones.
  expect_fragments(
      load_error(dir,
                 suite({p, quantize("c", "[1, 2, 3, 4]", "u8", R"(, "differs_from": {"case": "p", "elements": 2})")})),
      {"case 'c'", "field 'differs_from'", "'p' outputs i8 [4] and this case u8 [4]"});
  expect_fragments(
      load_error(dir,
                 suite({p, quantize("c", "[1, 2, 3, 4]", "i8", R"(, "differs_from": {"case": "p", "elements": 0})")})),
      {"case 'c'", "field 'differs_from.elements'", "same_outputs_as"});
}

TEST(ChainLoading, TheCaseWriterRoundTripsLinksAndAgreements) {
  TempDir dir;
  const Suite s = load_suite(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "pipelines.json");
  save_cases(dir.path() / "back.json", s.name, s.cases);
  const Suite back = load_suite(dir.path() / "back.json");
  ASSERT_EQ(back.cases.size(), s.cases.size());
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    const Case &a = s.cases[i], &b = back.cases[i];
    EXPECT_EQ(case_to_json(a), case_to_json(b)) << a.name;
    ASSERT_EQ(a.links.size(), b.links.size()) << a.name;
    for (std::size_t k = 0; k < a.links.size(); ++k) {
      EXPECT_EQ(a.links[k].field, b.links[k].field);
      EXPECT_EQ(a.links[k].producer, b.links[k].producer);
    }
    ASSERT_EQ(a.agreements.size(), b.agreements.size()) << a.name;
    for (std::size_t k = 0; k < a.agreements.size(); ++k) {
      EXPECT_EQ(a.agreements[k].kind, b.agreements[k].kind);
      EXPECT_EQ(a.agreements[k].other, b.agreements[k].other);
      EXPECT_EQ(a.agreements[k].elements, b.agreements[k].elements);
    }
  }
  // fc_lowered_bias_add is written with its two links and its statement.
  const auto it =
      std::find_if(s.cases.begin(), s.cases.end(), [](const Case& c) { return c.name == "fc_lowered_bias_add"; });
  ASSERT_NE(it, s.cases.end());
  const nlohmann::json j = case_to_json(*it);
  EXPECT_EQ(j["a"]["from"], "fc_lowered_matmul_requantized");
  EXPECT_FALSE(j["a"].contains("data"));
  EXPECT_EQ(j["b"]["from"], "fc_lowered_bias_quantize");
  EXPECT_EQ(j["b"]["scale"], 0.05f);  // the operand keeps its own parameters (scales in f32)
  EXPECT_EQ(j["differs_from"], (nlohmann::json{{"case", "fc_fused"}, {"elements", 3}}));
  // Without its producers the file would not read back: the writer refuses it.
  EXPECT_THROW(save_cases(dir.path() / "alone.json", s.name, {*it}), InputError);
}

TEST(ChainLoading, ASelectionKeepsWhatItsCasesNeedAsDependencies) {
  const Suite s = load_suite(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "pipelines.json");
  std::vector<bool> keep;
  for (const Case& c : s.cases) keep.push_back(c.name == "fc_lowered_bias_add");
  const Suite one = select_cases(s, keep);
  ASSERT_EQ(one.cases.size(), 1u);
  std::set<std::string> deps;
  for (const Case& c : one.dependencies) deps.insert(c.name);
  // Its A and B (the quantized bias), and the case it compares with.
  EXPECT_EQ(deps, (std::set<std::string>{"fc_lowered_matmul_requantized", "fc_lowered_bias_quantize", "fc_fused"}));
}

// ---- Running chains ---------------------------------------------------------------------------

// q quantizes x = [0.5, 1.5, 2.5, 3.0] (scale 1, zp 0) to u8: ties to even give [0, 2, 2, 3],
// ties away [1, 2, 3, 3]. g multiplies q's output (as a [1, 4] u8 A, scale 1, zp 0) by
// B = [1, 2, 4, 8]^T into int32: 0*1 + 2*2 + 2*4 + 3*8 = 36 from the oracle's q, and
// 1*1 + 2*2 + 3*4 + 3*8 = 41 from a backend that rounds q's ties away: +5 = 1*1 + 1*4, the two
// elements that moved by one times their weights.
std::string chain_suite(const std::string& q_expect = "") {
  return suite(
      {R"({"name": "q", "op": "quantize", "input": {"dtype": "f32", "shape": [1, 4], "data": [0.5, 1.5, 2.5, 3.0]},
           "scale": 1.0, "zero_point": 0, "output_dtype": "u8")" +
           q_expect + "}",
       R"({"name": "g", "op": "qgemm", "a": {"from": "q", "scale": 1.0, "zero_point": 0},
           "b": {"dtype": "i8", "shape": [4, 1], "data": [1, 2, 4, 8], "scale": 1.0}, "output": {"kind": "int32"}})"});
}

const CaseResult& case_named(const RunReport& r, const std::string& name) {
  for (const CaseResult& c : r.cases)
    if (c.name == name) return c;
  throw std::out_of_range("no case " + name);
}

TEST(ChainRuns, TheReferenceUsesTheOraclesIntermediateAndTheBackendItsOwn) {
  TempDir dir;
  const Suite s = load_suite(dir.write("chain.json", chain_suite()));
  FaultyBackend away(Fault::ties_away), right(Fault::none);
  const RunReport r = run_cases({s}, {&away, &right}, {});
  const CaseResult& q = case_named(r, "q");
  const CaseResult& g = case_named(r, "g");
  EXPECT_EQ(g.operands_from.at("a"), "t/q");
  // The producer: ties away misses 0.5 and 2.5.
  EXPECT_EQ(q.backends[0].verdict, Verdict::fail);
  EXPECT_EQ(q.backends[0].metrics.mismatches(), 2);
  // The consumer on the faulty backend: reference 36 (the oracle's q), the backend's 41 (its q).
  const BackendResult& ga = g.backends[0];
  EXPECT_EQ(ga.verdict, Verdict::fail);
  ASSERT_EQ(ga.metrics.mismatches(), 1);
  ASSERT_EQ(ga.metrics.worst.size(), 1u);
  EXPECT_EQ(ga.metrics.worst[0].expected, "36");
  EXPECT_EQ(ga.metrics.worst[0].actual, "41");
  EXPECT_EQ(ga.metrics.worst[0].delta, 5);
  // The propagated difference is named as the cause: g evaluated on the backend's own q is 41.
  ASSERT_FALSE(ga.causes.empty());
  EXPECT_EQ(ga.causes.front().cause, "a.from=q");
  EXPECT_EQ(ga.causes.front().count, 1);
  EXPECT_EQ(ga.unexplained, 0);
  // The correct backend: 36 from its own q, which is the oracle's.
  EXPECT_EQ(q.backends[1].verdict, Verdict::pass);
  EXPECT_EQ(g.backends[1].verdict, Verdict::pass);
  EXPECT_EQ(g.backends[1].metrics.exact, 1);
}

TEST(ChainRuns, AProducerWithinItsToleranceStillMovesTheConsumer) {
  TempDir dir;
  // q allows 1 LSB and passes on the faulty backend; g, bit-exact, fails by the propagated +5.
  const Suite s = load_suite(dir.write("chain.json", chain_suite(R"(, "expect": {"*": {"max_lsb": 1}})")));
  FaultyBackend away(Fault::ties_away);
  const RunReport r = run_cases({s}, {&away}, {});
  EXPECT_EQ(case_named(r, "q").backends[0].verdict, Verdict::pass);
  const BackendResult& g = case_named(r, "g").backends[0];
  EXPECT_EQ(g.verdict, Verdict::fail);
  EXPECT_EQ(g.metrics.max_abs, 5);
}

TEST(ChainRuns, NoOutputFromTheProducerSkipsTheConsumerNamingIt) {
  TempDir dir;
  // The faulty backend quantizes to i8/u8 only: q to i16 is a SKIP, and so is g, naming q (g's own
  // A would be i16, which the backend does not take either, but it is never asked).
  std::string text = chain_suite();
  text.replace(text.find(R"("output_dtype": "u8")"), 20, R"("output_dtype": "i16")");
  const Suite s = load_suite(dir.write("chain.json", text));
  FaultyBackend right(Fault::none);
  const RunReport r = run_cases({s}, {&right}, {});
  EXPECT_EQ(case_named(r, "q").backends[0].verdict, Verdict::skip);
  const BackendResult& g = case_named(r, "g").backends[0];
  EXPECT_EQ(g.verdict, Verdict::skip);
  EXPECT_NE(g.reason.find("takes its a from 'q', which gave no output on faulty-none (SKIP"), std::string::npos)
      << g.reason;
  // A crash in the producer: the consumer is not run (it would crash too) but SKIP, naming q.
  const Suite crashing = load_suite(dir.write("chain2.json", chain_suite()));
  FaultyBackend crash(Fault::crash);
  RunOptions isolated;
  isolated.isolate = true;
  const RunReport rc = run_cases({crashing}, {&crash}, isolated);
  EXPECT_EQ(case_named(rc, "q").backends[0].verdict, Verdict::crash);
  const BackendResult& gc = case_named(rc, "g").backends[0];
  EXPECT_EQ(gc.verdict, Verdict::skip);
  EXPECT_NE(gc.reason.find("'q', which gave no output on faulty-crash (CRASH"), std::string::npos) << gc.reason;
}

TEST(ChainRuns, ReproducersOfChainedCasesStandAloneOrKeepTheChain) {
  TempDir dir;
  RunOptions opt;
  opt.reproducer_dir = (dir.path() / "repro").string();
  // A fault in g's own kernel: u8 255 x i8 127 pairs saturate to 32767 in int16, so g gives
  // 2 * 32767 = 65534 where 4 * 255 * 127 = 129540 is right. g's unit, with the oracle's q
  // ([255, 255, 255, 255]) inlined, fails alone: a one-case file with the data inline.
  const std::string sat = suite(
      {R"({"name": "q", "op": "quantize", "input": {"dtype": "f32", "shape": [1, 4], "data": [255, 255, 255, 255]},
           "scale": 1.0, "zero_point": 0, "output_dtype": "u8"})",
       R"({"name": "g", "op": "qgemm", "a": {"from": "q", "scale": 1.0, "zero_point": 0},
           "b": {"dtype": "i8", "shape": [4, 1], "data": [127, 127, 127, 127], "scale": 1.0},
           "output": {"kind": "int32"}})"});
  FaultyBackend pairs(Fault::int16_pairs);
  const RunReport r1 = run_cases({load_suite(dir.write("sat.json", sat))}, {&pairs}, opt);
  const BackendResult& g1 = case_named(r1, "g").backends[0];
  ASSERT_EQ(g1.verdict, Verdict::fail);
  ASSERT_FALSE(g1.reproducer.empty());
  const Suite alone = load_suite(g1.reproducer);
  ASSERT_EQ(alone.cases.size(), 1u);
  EXPECT_TRUE(alone.cases[0].links.empty());
  const nlohmann::json a = case_to_json(alone.cases[0])["a"];
  EXPECT_EQ(a["data"], (nlohmann::json{255, 255, 255, 255}));
  EXPECT_EQ(run_cases({alone}, {&pairs}, {}).cases[0].backends[0].verdict, Verdict::fail);

  // A fault in q only (ties away): g's kernel is right on the oracle's q, so no single case
  // reproduces g's failure. The reproducer is the chain, q then g with its link, and it fails again.
  FaultyBackend away(Fault::ties_away);
  const RunReport r2 = run_cases({load_suite(dir.write("chain.json", chain_suite()))}, {&away}, opt);
  const BackendResult& g2 = case_named(r2, "g").backends[0];
  ASSERT_EQ(g2.verdict, Verdict::fail);
  ASSERT_FALSE(g2.reproducer.empty());
  EXPECT_EQ(g2.reason.find("when re-run"), std::string::npos) << g2.reason;
  const Suite chain = load_suite(g2.reproducer);
  ASSERT_EQ(chain.cases.size(), 2u);
  EXPECT_EQ(chain.cases[0].name, "q");
  ASSERT_EQ(chain.cases[1].links.size(), 1u);
  EXPECT_EQ(chain.cases[1].links[0].producer, "q");
  const RunReport again = run_cases({chain}, {&away}, {});
  EXPECT_EQ(case_named(again, "g").backends[0].verdict, Verdict::fail);
  EXPECT_EQ(case_named(again, "g").backends[0].metrics.worst.at(0).actual, "41");
}

TEST(ChainRuns, StandaloneCaseInlinesTheOraclesChain) {
  TempDir dir;
  const Suite s = load_suite(dir.write("chain.json", chain_suite()));
  const Case g = standalone_case(s.cases[1], s);
  EXPECT_TRUE(g.links.empty());
  // A holds q's ties-to-even output [0, 2, 2, 3].
  const Tensor& a = std::get<QGemmOp>(g.op).a.values;
  ASSERT_EQ(a.size(), 4);
  EXPECT_EQ(a.get_int(0), 0);
  EXPECT_EQ(a.get_int(1), 2);
  EXPECT_EQ(a.get_int(2), 2);
  EXPECT_EQ(a.get_int(3), 3);
}

// ---- Agreements -------------------------------------------------------------------------------

// Quantized to i8 with scale 1 under ONNX (ties to even):
//   x = [0.4, 1.6, 2.4, 3.1] -> [0, 2, 2, 3]
//   y = [0.5, 1.5, 2.5, 3.0] -> [0, 2, 2, 3]   (the same: y same_outputs_as x holds)
//   z = y under tflite-reference, which rounds ties away -> [1, 2, 3, 3]: it differs from x at
//       indices 0 and 2, so differs_from x holds with 2 elements and is broken with 3.
std::string agreement_suite(const std::string& z_statement, const std::string& y_expect = "") {
  return suite({quantize("x", "[0.4, 1.6, 2.4, 3.1]"),
                quantize("y", "[0.5, 1.5, 2.5, 3.0]", "i8", R"(, "same_outputs_as": "x")" + y_expect),
                quantize("z", "[0.5, 1.5, 2.5, 3.0]", "i8", R"(, "spec": "tflite-reference", )" + z_statement)});
}

TEST(AgreementChecks, TheOracleFindingCountsAndLocatesTheDifferences) {
  TempDir dir;
  FaultyBackend right(Fault::none);
  const RunReport r =
      run_cases({load_suite(dir.write("a.json", agreement_suite(R"("differs_from": {"case": "x", "elements": 2})")))},
                {&right}, {});
  const AgreementCheck& same = case_named(r, "y").agreements.at(0);
  EXPECT_EQ(same.assertion, "same_outputs_as");
  EXPECT_EQ(same.other, "t/x");
  EXPECT_EQ(same.status, AgreementStatus::holds);
  EXPECT_EQ(same.differing, 0);
  EXPECT_EQ(same.elements, 4);
  const AgreementCheck& diff = case_named(r, "z").agreements.at(0);
  EXPECT_EQ(diff.assertion, "differs_from");
  EXPECT_EQ(diff.stated, 2);
  EXPECT_EQ(diff.status, AgreementStatus::holds);
  EXPECT_EQ(diff.differing, 2);
  EXPECT_EQ(diff.first_differing, (std::vector<std::int64_t>{0, 2}));
  // The correct backend rounds ties to even: y agrees with x on it too. z is judged against its
  // tflite-reference spec, which it misses at the two ties, but its outputs still differ from x's.
  EXPECT_EQ(case_named(r, "y").backends[0].verdict, Verdict::pass);
  EXPECT_EQ(case_named(r, "y").backends[0].agreements.at(0).status, AgreementStatus::holds);
  EXPECT_EQ(case_named(r, "z").backends[0].agreements.at(0).differing, 0);
  EXPECT_EQ(exit_code(r), 1);  // z's own FAIL

  // Stating 3 differing elements is wrong under the specs: the oracle's finding is broken, and the
  // run exits 1 even with no backend at all.
  const RunReport wrong = run_cases(
      {load_suite(dir.write("b.json", agreement_suite(R"("differs_from": {"case": "x", "elements": 3})")))}, {}, {});
  const AgreementCheck& w = case_named(wrong, "z").agreements.at(0);
  EXPECT_EQ(w.status, AgreementStatus::broken);
  EXPECT_NE(w.reason.find("'z' and 'x' differ in 2 of 4 elements (at 0, 2); the case states 3 differing elements"),
            std::string::npos)
      << w.reason;
  EXPECT_EQ(broken_oracle_agreements(wrong), 1);
  EXPECT_EQ(exit_code(wrong), 1);
}

TEST(AgreementChecks, ABackendThatBreaksAStatementFailsNamingBothCases) {
  TempDir dir;
  RunOptions opt;
  opt.reproducer_dir = (dir.path() / "repro").string();
  // On the ties-away backend y gives [1, 2, 3, 3]: 1 LSB off the spec at 0 and 2, within y's
  // tolerance, but no longer x's [0, 2, 2, 3] (x has no ties): same_outputs_as breaks at 0 and 2.
  const Suite s = load_suite(
      dir.write("a.json", agreement_suite(R"("differs_from": "x")", R"(, "expect": {"*": {"max_lsb": 1}})")));
  FaultyBackend away(Fault::ties_away);
  const RunReport r = run_cases({s}, {&away}, opt);
  const CaseResult& y = case_named(r, "y");
  EXPECT_EQ(y.agreements.at(0).status, AgreementStatus::holds);  // the oracle's outputs agree
  const BackendResult& b = y.backends.at(0);
  EXPECT_EQ(b.verdict, Verdict::fail);
  ASSERT_EQ(b.agreements.size(), 1u);
  EXPECT_EQ(b.agreements[0].status, AgreementStatus::broken);
  EXPECT_EQ(b.agreements[0].differing, 2);
  EXPECT_EQ(b.agreements[0].first_differing, (std::vector<std::int64_t>{0, 2}));
  EXPECT_NE(b.reason.find("faulty-ties-away's outputs of 'y' and 'x' differ in 2 of 4 elements (at 0, 2)"),
            std::string::npos)
      << b.reason;
  EXPECT_EQ(b.fingerprint.substr(0, 2), "2:");
  // No single case reproduces a broken agreement: the reproducer holds both cases and the
  // statement, and fails again.
  ASSERT_FALSE(b.reproducer.empty());
  const Suite repro = load_suite(b.reproducer);
  ASSERT_EQ(repro.cases.size(), 2u);
  const RunReport again = run_cases({repro}, {&away}, {});
  EXPECT_EQ(case_named(again, "y").backends.at(0).verdict, Verdict::fail);
  // z (any difference from x) holds on the faulty backend: [1, 2, 3, 3] against [0, 2, 2, 3].
  EXPECT_EQ(case_named(r, "z").backends.at(0).agreements.at(0).status, AgreementStatus::holds);
}

TEST(AgreementChecks, AStatementIsUncheckedWhereTheOtherCaseHasNoOutput) {
  TempDir dir;
  // The faulty backend quantizes per tensor only: x (per axis) is a SKIP there, y runs and passes,
  // and its statement has nothing to compare with. The oracle's outputs agree ([0, 2, 2, 3] both).
  const Suite s = load_suite(
      dir.write("a.json", suite({R"({"name": "x", "op": "quantize", "input": {"dtype": "f32", "shape": [4],
                           "data": [0.4, 1.6, 2.4, 3.1]}, "scale": [1, 1, 1, 1], "axis": 0, "output_dtype": "i8"})",
                                 quantize("y", "[0.5, 1.5, 2.5, 3.0]", "i8", R"(, "same_outputs_as": "x")")})));
  FaultyBackend right(Fault::none);
  const RunReport r = run_cases({s}, {&right}, {});
  EXPECT_EQ(case_named(r, "x").backends.at(0).verdict, Verdict::skip);
  const BackendResult& y = case_named(r, "y").backends.at(0);
  EXPECT_EQ(y.verdict, Verdict::pass);
  ASSERT_EQ(y.agreements.size(), 1u);
  EXPECT_EQ(y.agreements[0].status, AgreementStatus::unchecked);
  EXPECT_NE(y.agreements[0].reason.find("'x' gave no output (SKIP)"), std::string::npos) << y.agreements[0].reason;
  EXPECT_EQ(case_named(r, "y").agreements.at(0).status, AgreementStatus::holds);
}

// ---- Reports and shards -----------------------------------------------------------------------

TEST(AgreementReport, TheJsonReportRoundTripsChainsAndAgreements) {
  TempDir dir;
  const Suite s = load_suite(dir.write("a.json", agreement_suite(R"("differs_from": {"case": "x", "elements": 2})",
                                                                 R"(, "expect": {"*": {"max_lsb": 1}})")));
  const Suite c = load_suite(dir.write("c.json", chain_suite()));
  FaultyBackend away(Fault::ties_away);
  const RunReport r = run_cases({s, c}, {&away}, {});
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["schema_version"], "1.7.0");
  const nlohmann::json& z = j["cases"][2];
  ASSERT_EQ(z["name"], "z");
  EXPECT_EQ(z["agreements"][0]["stated_elements"], 2);
  EXPECT_EQ(z["agreements"][0]["first_differing"], (nlohmann::json{0, 2}));
  EXPECT_EQ(j["cases"][1]["backends"][0]["agreements"][0]["status"], "broken");
  EXPECT_EQ(j["cases"][4]["operands_from"], (nlohmann::json{{"a", "t/q"}}));
  EXPECT_FALSE(j["cases"][0].contains("agreements"));  // x states nothing
  const RunReport back = report_from_json(j, "report.json");
  EXPECT_EQ(to_json(back), j);
  // Merged from two halves, the same.
  RunReport first = r, second = r;
  first.cases.resize(2);
  second.cases.erase(second.cases.begin(), second.cases.begin() + 2);
  first.meta.shard = "1/2";
  second.meta.shard = "2/2";
  const RunReport merged = merge_reports({second, first});
  nlohmann::json mj = to_json(merged), rj = j;
  EXPECT_EQ(mj["cases"], rj["cases"]);
  // The HTML drill-down shows the statement with the oracle's and the backend's finding.
  const std::string html = render_html(r);
  EXPECT_NE(html.find("<table class=\"small agreements\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-status=\"broken\">"), std::string::npos);
  EXPECT_NE(html.find("from the output of <a href="), std::string::npos);
}

TEST(ChainShards, ShardsOfAChainedSuiteMergeToTheUnshardedRun) {
  TempDir dir;
  const std::string cases = std::string(QCONFORM_SOURCE_DIR) + "/cases/pipelines.json";
  ASSERT_EQ(testing::run_qconform("run " + cases + " -b cpu-ref -q -o " + (dir.path() / "all").string()), 0);
  constexpr int kShards = 4;
  std::string inputs;
  std::map<std::string, int> shard_of;
  for (int i = 1; i <= kShards; ++i) {
    const fs::path d = dir.path() / ("shard" + std::to_string(i));
    ASSERT_EQ(testing::run_qconform("run " + cases + " -b cpu-ref -q --shard " + std::to_string(i) + "/" +
                                    std::to_string(kShards) + " -o " + d.string()),
              0);
    inputs += " " + (d / "report.json").string();
    const nlohmann::json shard = testing::read_json(d / "report.json");
    for (const auto& c : shard["cases"]) shard_of[c["id"].get<std::string>()] = i;
  }
  // The split is one that cuts chains: fc_lowered_bias_add's bias comes from another shard.
  EXPECT_NE(shard_of.at("pipelines/fc_lowered_bias_add"), shard_of.at("pipelines/fc_lowered_bias_quantize"));
  ASSERT_EQ(testing::run_qconform("merge" + inputs + " -o " + (dir.path() / "merged").string()), 0);
  nlohmann::json all = testing::read_json(dir.path() / "all" / "report.json");
  nlohmann::json merged = testing::read_json(dir.path() / "merged" / "report.json");
  testing::drop_timing(all);
  testing::drop_timing(merged);
  EXPECT_EQ(all["cases"].size(), shard_of.size());  // each case reported once, by its own shard
  EXPECT_EQ(all["cases"], merged["cases"]);
  EXPECT_EQ(all["summary"], merged["summary"]);
}

}  // namespace
}  // namespace qc
