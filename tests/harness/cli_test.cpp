// The qconform binary end to end: exit codes, messages for bad input, and that a run that
// cannot start leaves an existing report untouched.
#include "cli_run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Result = qc::testing::CliResult;

Result run(const std::string& args) { return qc::testing::run_qconform_output(args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qconform_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "reports");
    std::ofstream(dir_ / "reports" / "report.json") << "previous report";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_case(const std::string& text) {
    const fs::path f = dir_ / "bad.json";
    std::ofstream(f) << text;
    return f;
  }
  std::string previous_report() {
    std::ifstream in(dir_ / "reports" / "report.json");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  Result run_file(const fs::path& f) {
    return run("run " + f.string() + " --report-dir " + (dir_ / "reports").string());
  }

  // Expects exit 2, each fragment in the message, and the previous report intact.
  void expect_input_error(const std::string& text, std::initializer_list<std::string> fragments) {
    const fs::path f = write_case(text);
    const Result r = run_file(f);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(f.string()), std::string::npos) << "message must name the file: " << r.output;
    for (const std::string& frag : fragments)
      EXPECT_NE(r.output.find(frag), std::string::npos) << frag << " in: " << r.output;
    EXPECT_EQ(previous_report(), "previous report");
    EXPECT_FALSE(fs::exists(dir_ / "reports" / "report.html"));
  }

  fs::path dir_;
};

// A valid case with one field replaced; `field` and `value` are raw JSON.
std::string case_with(const std::string& field, const std::string& value) {
  nlohmann::json c = {{"name", "c1"},        {"op", "quantize"},
                      {"spec", "onnx"},      {"input", {{"dtype", "f32"}, {"shape", {2}}, {"data", {0.5, 1.5}}}},
                      {"scale", 1.0},        {"zero_point", 0},
                      {"output_dtype", "i8"}};
  if (!field.empty()) {
    nlohmann::json v = nlohmann::json::parse(value);
    if (field == "input.data")
      c["input"]["data"] = v;
    else
      c[field] = v;
  }
  nlohmann::json s = {{"suite", "t"}, {"cases", {c}}};
  return s.dump(1);
}

TEST_F(Cli, ValidCaseRunsAndWritesBothReports) {
  const Result r = run_file(write_case(case_with("", "")));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "reports" / "report.html"));
  std::ifstream in(dir_ / "reports" / "report.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["cases"][0]["backends"][0]["verdict"], "PASS");
  EXPECT_EQ(j["cases"][0]["backends"][0]["metrics"]["exact_matches"], 2);
  // Every backend that runs a quantize passes it (cpu-ref, and the x86 kernels this CPU has): the
  // printed summary counts the same PASSes as the JSON report.
  int passes = 0;
  for (const auto& b : j["cases"][0]["backends"]) passes += b["verdict"] == "PASS";
  EXPECT_GE(passes, 1);
  EXPECT_NE(r.output.find("summary: " + std::to_string(passes) + " PASS"), std::string::npos) << r.output;
}

// --timings FILE: every phase of the run by name, each at least 0 and together at most the run's
// wall time (nested phases pause the outer one), next to the reports; an unwritable path is an
// input error after the reports are written.
TEST_F(Cli, TimingsNameEveryPhaseWithinTheWallTime) {
  const fs::path f = write_case(case_with("", ""));
  const fs::path t = dir_ / "timings.json";
  const Result r = run("run " + f.string() + " --backend cpu-ref --report-dir " + (dir_ / "reports").string() +
                       " --timings " + t.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = qc::testing::read_json(t);
  const double wall = j.at("wall").get<double>();
  EXPECT_GT(wall, 0.0);
  double sum = 0;
  for (const char* phase : {"load", "oracle", "claim", "backend", "compare", "causes", "reproducers", "reports"}) {
    ASSERT_TRUE(j.at("phases").contains(phase)) << phase;
    const double s = j["phases"][phase].get<double>();
    EXPECT_GE(s, 0.0) << phase;
    sum += s;
  }
  EXPECT_EQ(j["phases"].size(), 8u);
  EXPECT_LE(sum, wall);
  EXPECT_GT(j["phases"]["oracle"].get<double>(), 0.0);
  EXPECT_GT(j["phases"]["backend"].get<double>(), 0.0);
  const Result bad = run("run " + f.string() + " --backend cpu-ref --report-dir " + (dir_ / "reports").string() +
                         " --timings " + (dir_ / "no" / "such" / "dir" / "t.json").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--timings"), std::string::npos) << bad.output;
  EXPECT_TRUE(fs::exists(dir_ / "reports" / "report.json"));
}

TEST_F(Cli, SyntaxErrorNamesFileAndLine) {
  expect_input_error("{\n  \"suite\": \"t\",\n  \"cases\": [\n    {\"name\": \"c1\",, }\n  ]\n}\n",
                     {":4:", "JSON syntax error"});
}

TEST_F(Cli, UnknownFieldNamesCaseAndField) {
  expect_input_error(case_with("scael", "1.0"), {"case 'c1'", "field 'scael'", "unknown field"});
}

TEST_F(Cli, NonPositiveScale) {
  expect_input_error(case_with("scale", "0.0"), {"case 'c1'", "field 'scale'", "positive"});
  expect_input_error(case_with("scale", "-0.5"), {"case 'c1'", "field 'scale'", "positive"});
}

TEST_F(Cli, NanScale) { expect_input_error(case_with("scale", "\"nan\""), {"case 'c1'", "field 'scale'", "finite"}); }

TEST_F(Cli, ZeroPointOutsideItsType) {
  expect_input_error(case_with("zero_point", "128"), {"case 'c1'", "field 'zero_point[0]'", "outside i8"});
}

TEST_F(Cli, ShapeDoesNotMatchData) {
  expect_input_error(case_with("input.data", "[0.5, 1.5, 2.5]"),
                     {"case 'c1'", "field 'input.data'", "shape [2] needs 2"});
}

TEST_F(Cli, UnknownPresetAndAxisOutOfRange) {
  expect_input_error(case_with("spec", "\"no-such-preset\""), {"field 'spec'", "unknown preset"});
  expect_input_error(case_with("axis", "3"), {"field 'axis'", "out of range"});
}

// Numbers a C++ int or int64 cannot hold were wrapped (a zero point of 2^64-1 ran as -1, an axis
// of 2^32 as 0), and a shape of 2^40 was an allocation failure (exit 3).
TEST_F(Cli, NumbersTooLargeForTheirFieldAreInputErrors) {
  expect_input_error(case_with("zero_point", "18446744073709551615"),
                     {"case 'c1'", "field 'zero_point'", "outside the 64-bit integers"});
  expect_input_error(case_with("axis", "4294967296"), {"case 'c1'", "field 'axis'", "out of range"});
  nlohmann::json c = nlohmann::json::parse(case_with("", ""));
  c["cases"][0]["input"] = {{"dtype", "f32"}, {"shape", {1099511627776}}, {"generator", {{"kind", "uniform"}}}};
  expect_input_error(c.dump(1), {"case 'c1'", "field 'input.shape'", "QCONFORM_MAX_ELEMENTS"});
  c["cases"][0]["input"]["shape"] = {1048576, 1048576, 1048576, 1048576};  // 2^80: no overflow on the way
  expect_input_error(c.dump(1), {"field 'input.shape'", "limit"});
}

// A value nested 100,000 deep used to overflow the stack of the walks after the parse (the issue's
// was inside a sweep); the parse refuses it.
TEST_F(Cli, DeepNestingIsAnInputError) {
  std::string text = case_with("", "");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  text.insert(text.rfind('}'), ", \"sweep\": {\"scale\": " + deep + "}");
  expect_input_error(text, {"nested deeper than 64 levels"});
}

// A generator writes only values of its tensor's type, and its parameters cannot overflow.
TEST_F(Cli, GeneratorsStayInsideTheirType) {
  nlohmann::json c = nlohmann::json::parse(case_with("", ""));
  c["cases"][0]["op"] = "dequantize";
  c["cases"][0]["output_dtype"] = "f32";
  c["cases"][0]["input"] = {
      {"dtype", "i8"}, {"shape", {4}}, {"generator", {{"kind", "uniform"}, {"low", -200}, {"high", 200}}}};
  expect_input_error(c.dump(1), {"case 'c1'", "outside i8 [-128, 127]"});
  nlohmann::json t = nlohmann::json::parse(case_with("", ""));
  t["cases"][0]["input"] = {{"dtype", "f32"},
                            {"shape", {4}},
                            {"generator",
                             {{"kind", "ties"},
                              {"scale", 1.0},
                              {"k_min", std::numeric_limits<std::int64_t>::min()},
                              {"k_max", std::numeric_limits<std::int64_t>::max()}}}};
  expect_input_error(t.dump(1), {"case 'c1'", "2^53"});
}

TEST_F(Cli, BlockSizeOfZero) {
  nlohmann::json c = nlohmann::json::parse(case_with("axis", "0"));
  c["cases"][0]["block_size"] = 0;
  expect_input_error(c.dump(1), {"case 'c1'", "field 'block_size'", "must be positive"});
}

TEST_F(Cli, MalformedGemmNamesTheOperandField) {
  const std::string bad = R"({"suite": "t", "cases": [{"name": "g", "op": "qgemm",
    "a": {"dtype": "u8", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6], "scale": 0.5},
    "b": {"dtype": "i8", "shape": [4, 2], "data": [1, 2, 3, 4, 5, 6, 7, 8], "scale": [0.5, 0.25], "axis": 1},
    "output": {"kind": "int32"}}]})";
  expect_input_error(bad, {"case 'g'", "field 'b.shape'"});
  const std::string bad_axis = R"({"suite": "t", "cases": [{"name": "g", "op": "qgemm",
    "a": {"dtype": "u8", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6], "scale": 0.5},
    "b": {"dtype": "i8", "shape": [3, 2], "data": [1, 2, 3, 4, 5, 6], "scale": [0.5, 0.25], "axis": 2},
    "output": {"kind": "int32"}}]})";
  expect_input_error(bad_axis, {"case 'g'", "field 'b.axis'", "out of range"});
}

TEST_F(Cli, MissingFileAndUnknownBackend) {
  Result r = run("run " + (dir_ / "missing.json").string() + " --report-dir " + (dir_ / "reports").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("missing.json: no such file"), std::string::npos) << r.output;
  r = run("run " + write_case(case_with("", "")).string() + " --backend nope --report-dir " +
          (dir_ / "reports").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("unknown backend 'nope'"), std::string::npos) << r.output;
  EXPECT_EQ(previous_report(), "previous report");
}

// A time limit that is not a number would compare false everywhere and turn isolation off.
TEST_F(Cli, TimeoutMustBeAFiniteNumberOfSeconds) {
  for (const char* t : {"nan", "inf", "-1"}) {
    const Result r = run("run " + write_case(case_with("", "")).string() + " --backend cpu-ref --timeout " + t +
                         " --report-dir " + (dir_ / "reports").string());
    EXPECT_EQ(r.code, 2) << t << ": " << r.output;
    EXPECT_NE(r.output.find("--timeout"), std::string::npos) << r.output;
    EXPECT_EQ(previous_report(), "previous report");
  }
}

TEST_F(Cli, FailingExpectationExitsOne) {
  // A spec the cpu-ref backend does not implement (ties away from zero) at exact ties.
  const Result r = run_file(write_case(case_with("spec", R"({"preset": "onnx", "rounding": "rna"})")));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL"), std::string::npos) << r.output;
}

TEST_F(Cli, CpuRefClaimsAnotherPresetByName) {
  // Quotients 0.5 and 1.5 at scale 1: TFLite's std::round gives 1 and 2, ONNX's ties to even 0 and
  // 2; judged "exact" against the onnx spec, the tflite-reference variant fails on 1 element.
  const fs::path f = write_case(case_with("", ""));
  Result r =
      run("run " + f.string() + " --backend cpu-ref:tflite-reference --report-dir " + (dir_ / "reports").string());
  EXPECT_EQ(r.code, 1) << r.output;
  std::ifstream in(dir_ / "reports" / "report.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["cases"][0]["backends"][0]["backend"], "cpu-ref:tflite-reference");
  EXPECT_EQ(j["cases"][0]["backends"][0]["claim"], "tflite-reference");
  EXPECT_EQ(j["cases"][0]["backends"][0]["metrics"]["exact_matches"], 1);
  r = run("run " + f.string() + " --backend cpu-ref:tosa-single --report-dir " + (dir_ / "reports").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("cpu-ref can claim onnx, tflite-reference, pytorch-cpu, not 'tosa-single'"),
            std::string::npos)
      << r.output;
  r = run("list backends");
  EXPECT_NE(r.output.find("cpu-ref:pytorch-cpu  claims pytorch-cpu"), std::string::npos) << r.output;
}

TEST_F(Cli, BackendTakesOneNamePerFlag) {
  // A path after --backend NAME is a path: cpu-ref passes the case, the tflite-reference variant
  // fails it (see CpuRefClaimsAnotherPresetByName).
  const std::string f = write_case(case_with("", "")).string(), o = " --report-dir " + (dir_ / "reports").string();
  auto backends_run = [&] {
    std::ifstream in(dir_ / "reports" / "report.json");
    std::vector<std::string> names;
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const auto& b : j["cases"][0]["backends"]) names.push_back(b["backend"]);
    return names;
  };
  Result r = run("run --backend cpu-ref " + f + o);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(backends_run(), std::vector<std::string>{"cpu-ref"});
  r = run("run -b cpu-ref:tflite-reference " + f + o);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_EQ(backends_run(), std::vector<std::string>{"cpu-ref:tflite-reference"});
  r = run("run --backend cpu-ref --backend cpu-ref:tflite-reference " + f + o);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_EQ(backends_run(), (std::vector<std::string>{"cpu-ref", "cpu-ref:tflite-reference"}));
  r = run("run " + f + o + " --backend");
  EXPECT_EQ(r.code, 2) << r.output;
  // README's example, in the source folder (env's -C).
  r = qc::testing::run_qconform_output("run --backend cpu-ref cases/qgemm.json" + o, "-C " QCONFORM_SOURCE_DIR);
  EXPECT_EQ(r.code, 0) << r.output;
  {
    std::ifstream in(dir_ / "reports" / "report.json");
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_GT(j["cases"].size(), 10u);
    for (const auto& c : j["cases"]) EXPECT_EQ(c["id"].get<std::string>().rfind("qgemm/", 0), 0u) << c["id"];
    EXPECT_EQ(j["metadata"]["backends"], nlohmann::json::parse(R"(["cpu-ref"])"));
  }
  // shrink and infer take one backend: the file after it is shrink's case file, and a second name
  // is an error.
  r = run("shrink --backend cpu-ref " + f + " --case c1 -o " + (dir_ / "small.json").string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("t/c1 passes on cpu-ref: nothing to shrink"), std::string::npos) << r.output;
  r = run("shrink " + f + " --case c1 --backend cpu-ref --backend cpu-ref:tflite-reference");
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("infer --backend cpu-ref cpu-ref:tflite-reference");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("not expected: cpu-ref:tflite-reference"), std::string::npos) << r.output;
  r = run("infer --backend cpu-ref --backend cpu-ref:tflite-reference");
  EXPECT_EQ(r.code, 2) << r.output;
}

TEST_F(Cli, SummaryColumnsFitTheLongestBackendName) {
  const std::string name = "cpu-ref:tflite-reference";
  const Result r = run("run " + write_case(case_with("", "")).string() + " --backend cpu-ref --backend " + name +
                       " --report-dir " + (dir_ / "reports").string());
  ASSERT_EQ(r.code, 1) << r.output;
  std::istringstream lines(r.output);
  std::string line, header, failure;
  std::map<std::string, std::string> rows;  // backend -> its row of the table
  while (std::getline(lines, line)) {
    if (line.rfind("  backend ", 0) == 0) header = line;
    if (line.rfind("  FAIL ", 0) == 0) failure = line;
    for (const std::string b : {"cpu-ref", "cpu-ref:tflite-reference"})
      if (line.rfind("  " + b + " ", 0) == 0) rows[b] = line;
  }
  // The failure line: verdict, case, the whole backend name, a gap, then the reason.
  std::istringstream words(failure);
  std::string verdict, id, backend;
  words >> verdict >> id >> backend;
  EXPECT_EQ(backend, name) << r.output;
  EXPECT_NE(failure.find(name + "  "), std::string::npos) << r.output;
  // The table: each row the whole name, a gap, and a count right-aligned under each verdict of the
  // header.
  auto words_of = [](const std::string& l) {  // each word and where it ends
    std::vector<std::pair<std::string, std::size_t>> out;
    for (std::size_t i = 0; i < l.size();) {
      const std::size_t b = l.find_first_not_of(' ', i);
      if (b == std::string::npos) break;
      const std::size_t e = std::min(l.size(), l.find(' ', b));
      out.emplace_back(l.substr(b, e - b), e);
      i = e;
    }
    return out;
  };
  ASSERT_FALSE(header.empty()) << r.output;
  ASSERT_EQ(rows.size(), 2u) << r.output;
  const auto heads = words_of(header);
  ASSERT_EQ(heads.size(), 8u) << header;
  for (const auto& [b, row] : rows) {
    EXPECT_TRUE(std::isspace(static_cast<unsigned char>(row.at(2 + b.size())))) << row;
    const auto cells = words_of(row);
    ASSERT_EQ(cells.size(), heads.size()) << header << "\n" << row;
    EXPECT_EQ(cells[0].first, b);
    std::map<std::string, std::string> count;
    for (std::size_t k = 1; k < cells.size(); ++k) {
      EXPECT_EQ(cells[k].second, heads[k].second) << heads[k].first << " column:\n" << header << "\n" << row;
      count[heads[k].first] = cells[k].first;
    }
    EXPECT_EQ(count["PASS"], b == name ? "0" : "1") << row;
    EXPECT_EQ(count["FAIL"], b == name ? "1" : "0") << row;
  }
}

TEST_F(Cli, NothingRunnableExitsSeventySeven) {
  // cpu-ref does not quantize to i32: its only result is SKIP.
  const Result r = run_file(write_case(case_with("output_dtype", "\"i32\"")));
  EXPECT_EQ(r.code, 77) << r.output;
}

TEST_F(Cli, VersionAndList) {
  Result r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("qconform 0."), std::string::npos);
  r = run("list presets");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("onnx"), std::string::npos);
  r = run("list backends");
  EXPECT_NE(r.output.find("cpu-ref"), std::string::npos);
  r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, OracleQuantizeToJson) {
  // s = 0.5, zp = 1: 0.25/0.5 = 0.5 -> 0 (even) + 1; 0.75/0.5 = 1.5 -> 2 + 1; -1/0.5 = -2 + 1.
  const Result r =
      run("oracle quantize --policy onnx --scale 0.5 --zero-point 1 --to i8 --values '[0.25, 0.75, -1.0]' --labels");
  EXPECT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["values"], nlohmann::json::parse("[1, 3, -1]"));
  EXPECT_EQ(j["labels"], nlohmann::json::parse(R"(["tie", "tie", "clear"])"));
}

// Every f16 value under onnx and ORT's CPU kernel (s = 0.05, zp = 3, into i8). They differ on +inf
// alone: ONNX saturates it to 127; ORT's f16 path computes static_cast<int32_t>(nearbyint(x / s)),
// which gives INT32_MIN for inf on x86, and INT32_MIN + 3 clamps to -128 (at -inf both give -128).
// The 2046 NaN patterns are open under onnx. The command docs/oracle.md shows, on f16.
TEST_F(Cli, OracleSweepsEveryValueOfAFormat) {
  const Result r = run("oracle quantize --sweep --from f16 --scale 0.05 --zero-point 3 --vs ort-cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["inputs"], 65536);
  EXPECT_EQ(j["open"], 2046);
  EXPECT_EQ(j["output_range"], nlohmann::json::parse("[-128, 127]"));
  EXPECT_EQ(j["slow_path_elements"], 0);
  EXPECT_EQ(j["vs"]["differ"], 1);
  EXPECT_EQ(j["vs"]["first"][0]["bits"], "0x7c00");
  EXPECT_EQ(j["vs"]["first"][0]["onnx"], 127);
  EXPECT_EQ(j["vs"]["first"][0]["ort-cpu"], -128);
  // One thread or two: the same digest.
  const Result one = run("oracle quantize --sweep --from f16 --scale 0.05 --zero-point 3 --threads 1");
  ASSERT_EQ(one.code, 0) << one.output;
  EXPECT_EQ(nlohmann::json::parse(one.output)["digest"], j["digest"]);
}

TEST_F(Cli, OracleNpyRoundTrip) {
  // Quantize to a .npy file, then dequantize it: (q - zp) * s gives back the grid points.
  const fs::path q = dir_ / "q.npy";
  Result r =
      run("oracle quantize --scale 0.25 --to u8 --zero-point 10 --values '[0.5, 1.25, -2.5]' --output " + q.string());
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("oracle dequantize --scale 0.25 --from u8 --zero-point 10 --to f32 --input " + q.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["values"], nlohmann::json::parse("[0.5, 1.25, -2.5]"));
}

TEST_F(Cli, OracleRequantizeSchemes) {
  // acc 5 at 1*1/10: exact 0.5 -> 0 (ties to even); gemmlowp's Q31 multiplier 1717986918 with
  // SRDHM truncating to 4 and RoundingDivideByPOT(4, 3) = 1.
  Result r = run("oracle requantize --spec onnx --output-scale 10 --values '[5]'");
  EXPECT_EQ(nlohmann::json::parse(r.output)["values"][0], 0) << r.output;
  r = run("oracle requantize --spec gemmlowp --output-scale 10 --values '[5]'");
  EXPECT_EQ(nlohmann::json::parse(r.output)["values"][0], 1) << r.output;
  // --policy, the option's older name, still selects the spec.
  r = run("oracle requantize --policy gemmlowp --output-scale 10 --values '[5]'");
  EXPECT_EQ(nlohmann::json::parse(r.output)["values"][0], 1) << r.output;
}

TEST_F(Cli, ExplainShowsWhereTwoPoliciesPart) {
  // FBGEMM's example: division 127.499992 -> 127, reciprocal 127.5 -> 128.
  const Result r = run("explain quantize --x 0.273939937 --scale 0.00214854861 --to u8 --policy onnx --vs pytorch-cpu");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("they agree in value through step 2; at step 3 onnx does 'x / s in f32'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("pytorch-cpu does '1 / s in f32'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("results: onnx 127, pytorch-cpu 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exactly half-way (a tie)"), std::string::npos) << r.output;
}

// docs/oracle.md's double rounding: multiplier 1/4, acc 53. TOSA SINGLE_ROUND: 53 * 2^30 / 2^32 = 13.25
// -> 13; gemmlowp: 53 * 2^30 / 2^31 = 26.5 -> 27 (ties up), 27 / 2 = 13.5 -> 14 (ties away).
TEST_F(Cli, ExplainNamesBothRoundingsOfADoubleRounding) {
  const Result r =
      run("explain requantize --at 53 --input-scale 0.25 --weight-scale 0.5 --output-scale 0.5 --spec tosa-single "
          "--vs gemmlowp");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("they agree in value through step 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tosa-single rounds once (step 4 'apply_scale_32' 13.25 -> 13)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("gemmlowp rounds twice (step 5 'SaturatingRoundingDoublingHighMul' 26.5 -> 27, step 6 "
                          "'RoundingDivideByPOT' 13.5 -> 14)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("results: tosa-single 13, gemmlowp 14"), std::string::npos) << r.output;
}

// The command docs/oracle.md shows: row 0, column 0 of QLinearMatMul with a per-column scale and an
// int32 bias. By hand: A row 0 quantizes to (130, 124, 136, 129) with zero point 128, B column 0 is
// (1, 4, 7, 10): acc = 2 - 16 + 56 + 10 = 52, + bias 1 = 53; multiplier 0.25 * 0.5 / 0.5 = 1/4;
// the spec gives round(13.25) + 3 = 16, gemmlowp 53 / 2 = 26.5 -> 27, 27 / 2 = 13.5 -> 14, + 3 = 17.
TEST_F(Cli, ExplainsAnElementOfACaseOnABackend) {
  const std::string file = std::string(QCONFORM_SOURCE_DIR) + "/cases/qgemm.json";
  const Result r = run("explain " + file +
                       " --case qlinear_matmul_per_channel_i8_relu --index 0,0 --backend cpu-ref:tflite-reference"
                       " --json " +
                       (dir_ / "explain.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("+ int32 bias of channel 0 in int32_wrap: 52 + 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gives 17: not the spec's value"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("result: 16  [clear]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("result: 17  [clear]  = the backend's value"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'RoundingDivideByPOT' 13.5 -> 14"), std::string::npos) << r.output;
  const nlohmann::json j = qc::testing::read_json(dir_ / "explain.json");
  EXPECT_EQ(j["backend"]["value"], "17");
  EXPECT_EQ(j["spec"]["result"], "16");
  // Without a backend: the spec's derivation alone.
  const Result s = run("explain " + file + " --case qlinear_matmul_per_channel_i8_relu --index 0");
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("result: 16  [clear]"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("backend"), std::string::npos) << s.output;
}

TEST_F(Cli, OracleBadParameters) {
  Result r = run("oracle quantize --scale -1 --values '[1]'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("field 'scale[0]'"), std::string::npos) << r.output;
  r = run("oracle quantize --scale 1 --values '[1]' --rounding sideways");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("spec.rounding"), std::string::npos) << r.output;
  r = run("oracle quantize --scale 1 --input " + (dir_ / "none.npy").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("none.npy: cannot open"), std::string::npos) << r.output;
}

}  // namespace
