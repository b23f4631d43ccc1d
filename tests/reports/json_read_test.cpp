// Reading a report back (reports/reader.hpp): what `qconform report`, `merge` and `baseline` rest
// on. A report written by to_json reads back into the same result model field by field, and a file
// that is not a readable report is an InputError naming the file and what is wrong.
#include "model_report.hpp"
#include "qconform/error.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace qc {
namespace {

RunReport sample_report() {
  RunReport r;
  r.meta.tool_version = "0.1.0";
  r.meta.git_revision = "abc123";
  r.meta.host = "ci-host";
  r.meta.cpu = "some cpu";
  r.meta.started_at = "2026-11-24T10:00:00Z";
  r.meta.cpu_features = {"avx2", "avx512_vnni"};
  r.meta.backends = {"cpu-ref", "faulty"};
  r.meta.backend_facts = {{"cpu-ref", {{"isa", "scalar"}}}};
  r.meta.command_line = {"qconform", "run", "cases/"};
  r.meta.shard = "1/3";
  r.meta.seconds = 1.5;
  CaseResult c;
  c.id = "quantize/ties";
  c.suite = "quantize";
  c.name = "ties";
  c.description = "ties to even";
  c.file = "cases/quantize_linear.json";
  c.line = 12;
  c.op = "quantize";
  c.spec = "onnx";
  c.shape = "[4]";
  c.input_dtype = "f32";
  c.output_dtype = "i8";
  c.granularity = "per_tensor";
  BackendResult pass;
  pass.backend = "cpu-ref";
  pass.claim = "onnx";
  pass.expectation = "exact";
  pass.verdict = Verdict::pass;
  pass.reason = "4/4 exact against onnx";
  pass.metrics.elements = 4;
  pass.metrics.compared = 4;
  pass.metrics.exact = 4;
  pass.metrics.histogram = {4, 0, 0, 0, 0};
  BackendResult fail;
  fail.backend = "faulty";
  fail.claim = "onnx";
  fail.expectation = "exact";
  fail.verdict = Verdict::fail;
  fail.reason = "3/4 exact, max |delta| 1 LSB against onnx";
  fail.metrics.elements = 4;
  fail.metrics.compared = 4;
  fail.metrics.exact = 3;
  fail.metrics.histogram = {3, 1, 0, 0, 0};
  fail.metrics.max_abs = 1;
  fail.metrics.signed_sum = 1;
  ElementDiff d;
  d.index = 0;
  d.coords = {0};
  d.input = "0.5";
  d.expected = "0";
  d.actual = "1";
  d.delta = 1;
  d.exact = "0.5";
  d.label = Label::tie;
  fail.metrics.worst = {d};
  fail.causes = {{"quantize.rounding=rna", "rounds ties away from zero", 1, {}}};
  fail.fingerprint = "1:0123456789abcdef";
  fail.reproducer = "out/reproducers/quantize__ties__faulty.json";
  fail.reproduce_command = "qconform run out/reproducers/quantize__ties__faulty.json --backend faulty";
  fail.seconds = 0.25;
  c.backends = {pass, fail};
  r.cases = {c};
  return r;
}

TEST(ReportRead, AWrittenReportReadsBackFieldByField) {
  const RunReport w = sample_report();
  const RunReport r = report_from_json(to_json(w), "sample");
  EXPECT_EQ(r.meta.tool_version, "0.1.0");
  EXPECT_EQ(r.meta.git_revision, "abc123");
  EXPECT_EQ(r.meta.shard, "1/3");
  EXPECT_EQ(r.meta.cpu_features, w.meta.cpu_features);
  EXPECT_EQ(r.meta.backends, w.meta.backends);
  EXPECT_EQ(r.meta.backend_facts, w.meta.backend_facts);
  EXPECT_EQ(r.meta.command_line, w.meta.command_line);
  ASSERT_EQ(r.cases.size(), 1u);
  const CaseResult& c = r.cases[0];
  EXPECT_EQ(c.id, "quantize/ties");
  EXPECT_EQ(c.file, "cases/quantize_linear.json");
  EXPECT_EQ(c.line, 12);
  EXPECT_EQ(c.spec, "onnx");
  EXPECT_EQ(c.granularity, "per_tensor");
  ASSERT_EQ(c.backends.size(), 2u);
  EXPECT_EQ(c.backends[0].verdict, Verdict::pass);
  const BackendResult& f = c.backends[1];
  EXPECT_EQ(f.backend, "faulty");
  EXPECT_EQ(f.verdict, Verdict::fail);
  EXPECT_EQ(f.reason, w.cases[0].backends[1].reason);
  EXPECT_EQ(f.fingerprint, "1:0123456789abcdef");
  EXPECT_EQ(f.reproducer, w.cases[0].backends[1].reproducer);
  EXPECT_EQ(f.reproduce_command, w.cases[0].backends[1].reproduce_command);
  EXPECT_EQ(f.metrics.compared, 4);
  EXPECT_EQ(f.metrics.exact, 3);
  EXPECT_EQ(f.metrics.max_abs, 1);
  EXPECT_EQ(f.metrics.histogram, w.cases[0].backends[1].metrics.histogram);
  ASSERT_EQ(f.metrics.worst.size(), 1u);
  EXPECT_EQ(f.metrics.worst[0].actual, "1");
  EXPECT_EQ(f.metrics.worst[0].delta, 1);
  EXPECT_EQ(f.metrics.worst[0].label, Label::tie);
  ASSERT_EQ(f.causes.size(), 1u);
  EXPECT_EQ(f.causes[0].cause, "quantize.rounding=rna");
  EXPECT_EQ(f.causes[0].count, 1);
  // Written again, the report is the same JSON.
  EXPECT_EQ(to_json(r), to_json(w));
}

// The model view (qconform model): every field model_json writes reads back, and the report
// written again, from the JSON value and from the file's text, is the same.
TEST(ReportRead, AModelViewReadsBackFieldByFieldAndWritesTheSameJson) {
  const RunReport w = test::model_report();
  const nlohmann::json j = to_json(w);
  ASSERT_TRUE(j.contains("models"));
  const RunReport r = report_from_json(j, "model");
  ASSERT_EQ(r.models.size(), 1u);
  const ModelView& v = r.models[0];
  EXPECT_EQ(v.file, "models/tiny.onnx");
  EXPECT_EQ(v.name, "tiny_qdq");
  EXPECT_EQ(v.format, "QDQ");
  EXPECT_EQ(v.spec, "onnx");
  EXPECT_EQ(v.producer, "hand-written for the tests");
  EXPECT_EQ(v.ir_version, 8);
  EXPECT_EQ(v.opset, 17);
  EXPECT_EQ(v.inputs, std::vector<std::string>{"x: f32 [2, 4] generated"});
  EXPECT_EQ(v.top1_total, 8);
  EXPECT_EQ(v.oracle_top1_correct, 7);
  ASSERT_EQ(v.steps.size(), 4u);
  const ModelStep& fc = v.steps[1];
  EXPECT_EQ(fc.name, "fc_MatMul.fused");
  EXPECT_EQ(fc.op_type, "fused MatMul");
  EXPECT_EQ(fc.kind, "fused");
  EXPECT_EQ(fc.case_id, "tiny_qdq/fc_MatMul.fused");
  EXPECT_EQ(fc.output, "y_q");
  EXPECT_EQ(fc.shape, "[2, 20]");
  EXPECT_EQ(fc.dtype, "u8");
  EXPECT_EQ(fc.covers, (std::vector<std::string>{"x_DequantizeLinear", "fc_MatMul", "y_QuantizeLinear"}));
  EXPECT_EQ(fc.fused_differs, 2);
  EXPECT_EQ(fc.fused_elements, 40);
  ASSERT_EQ(fc.runs.size(), 2u);
  EXPECT_EQ(fc.runs[1].run, "vnni512 (fused)");
  EXPECT_TRUE(fc.runs[1].computed);
  EXPECT_EQ(fc.runs[1].elements, 40);
  EXPECT_EQ(fc.runs[1].differing, 3);
  EXPECT_EQ(fc.runs[1].max_lsb, 2);
  EXPECT_EQ(fc.runs[1].max_abs, 0.0625);
  EXPECT_EQ(fc.runs[1].cause, "requantize.rounding=rna");
  EXPECT_EQ(fc.runs[0].cause, "");
  // Not fused: no agreement (-1), no covers.
  EXPECT_EQ(v.steps[0].fused_differs, -1);
  EXPECT_TRUE(v.steps[0].covers.empty());
  EXPECT_EQ(v.steps[2].kind, "float");
  EXPECT_EQ(v.steps[2].case_id, "");
  const ModelStepRun& by_oracle = v.steps[3].runs.at(1);
  EXPECT_FALSE(by_oracle.computed);
  EXPECT_EQ(by_oracle.note, "vnni512 does not implement dequantize to f32");
  EXPECT_EQ(by_oracle.max_abs, 0.5);
  ASSERT_EQ(v.runs.size(), 5u);
  const ModelRun& oracle = v.runs[0];
  EXPECT_EQ(oracle.name, "oracle (fused)");
  EXPECT_EQ(oracle.backend, "oracle");
  EXPECT_EQ(oracle.mode, "propagated");
  EXPECT_EQ(oracle.reading, "fused");
  EXPECT_EQ(oracle.compared_with, "graph");
  EXPECT_EQ(oracle.note, "the fused reading against the QDQ reading");
  EXPECT_EQ(oracle.first_divergent, "fc_MatMul.fused");
  EXPECT_EQ(oracle.output_elements, 40);
  EXPECT_EQ(oracle.output_differing, 2);
  EXPECT_EQ(oracle.output_max_abs, 0.125);
  EXPECT_EQ(oracle.first_divergent_cause, "");
  EXPECT_EQ(oracle.first_float_difference, "");
  const ModelRun& vnni = v.runs[2];
  EXPECT_EQ(vnni.first_divergent_cause, "requantize.rounding=rna");
  EXPECT_EQ(v.runs[3].first_float_difference, "relu_Relu");
  EXPECT_EQ(vnni.steps_run, 2);
  EXPECT_EQ(vnni.steps_by_oracle, 1);
  EXPECT_EQ(vnni.top1_total, 8);
  EXPECT_EQ(vnni.top1_agree, 6);
  EXPECT_EQ(vnni.top1_correct, 5);
  EXPECT_EQ(vnni.seconds, 0.0031);
  const ModelRun& failed = v.runs[4];
  EXPECT_EQ(failed.mode, "whole");
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.note, "its answer could not be read: " + test::kModelHostile);
  EXPECT_EQ(failed.top1_agree, -1) << "no top-1 written, none read";
  EXPECT_EQ(failed.top1_correct, -1);
  EXPECT_EQ(v.runs[3].status, "ok");
  // Written again, the same JSON; and through the file's text (where 0.0 and 0.0625 are floats the
  // integer check must let pass), the same text.
  EXPECT_EQ(to_json(r), j);
  const std::string text = json_file_text(j, 2);
  EXPECT_EQ(json_file_text(to_json(report_from_text(text, "model text")), 2), text);
  // A report without a model view has no "models", and reads back without one.
  const nlohmann::json plain = to_json(sample_report());
  EXPECT_FALSE(plain.contains("models"));
  EXPECT_TRUE(report_from_json(plain, "plain").models.empty());
}

// JSON has no infinity: an infinite difference (an infinity against a number) is written as null
// and reads back as infinity, so the text round trip still holds.
TEST(ReportRead, AnInfiniteModelDifferenceRoundTripsAsNull) {
  RunReport w = test::model_report();
  w.models[0].steps[2].runs[1].max_abs = std::numeric_limits<double>::infinity();
  const std::string text = json_file_text(to_json(w), 2);
  const RunReport r = report_from_text(text, "inf");
  EXPECT_TRUE(std::isinf(r.models[0].steps[2].runs[1].max_abs));
  EXPECT_EQ(json_file_text(to_json(r), 2), text);
}

TEST(ReportRead, AMalformedModelViewIsAnInputErrorNamingTheField) {
  const auto error = [](const nlohmann::json& j) {
    try {
      (void)report_from_json(j, "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  nlohmann::json j = to_json(test::model_report());
  nlohmann::json wrong = j;
  wrong["models"][0]["steps"][3]["runs"][1]["computed"] = 1;
  EXPECT_NE(error(wrong).find("field '/models/0/steps/3/runs/1/computed' must be true or false"), std::string::npos)
      << error(wrong);
  wrong = j;
  wrong["models"][0]["steps"][1]["runs"][1]["differing"] = 1.5;  // only max_abs and seconds are real numbers
  EXPECT_NE(error(wrong).find("'/models/0/steps/1/runs/1/differing' must be an integer"), std::string::npos)
      << error(wrong);
  wrong = j;
  wrong["models"][0]["runs"][2].erase("output");
  EXPECT_NE(error(wrong).find("field '/models/0/runs/2/output' is missing"), std::string::npos) << error(wrong);
}

std::string error_of(const std::filesystem::path& p) {
  try {
    (void)load_report(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportRead, WhatIsNotAReadableReportIsAnInputErrorNamingTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("qconform-report-read-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  EXPECT_NE(error_of(dir / "missing.json").find("missing.json: cannot open"), std::string::npos);
  EXPECT_NE(error_of(write("bad.json", "{not json")).find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(write("other.json", R"({"tool": "other"})")).find("not a qconform report"), std::string::npos);
  nlohmann::json future = to_json(sample_report());
  future["schema_version"] = "99.0";
  EXPECT_NE(error_of(write("future.json", future.dump())).find("is not readable by this qconform"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A merge is of a whole sharded run or refused: a merge of 2 of 3 shards would read as complete.
TEST(ReportMerge, RefusesAnIncompleteOrInconsistentSetOfShards) {
  const auto shard = [](const std::string& s, const std::string& id) {
    RunReport r = sample_report();
    r.meta.shard = s;
    r.cases.resize(1);
    r.cases[0].id = id;
    return r;
  };
  const auto refused = [](const std::vector<RunReport>& parts) {
    try {
      (void)merge_reports(parts);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("merged");
  };
  EXPECT_EQ(merge_reports({shard("2/3", "s/b"), shard("3/3", "s/c"), shard("1/3", "s/a")}).cases.size(), 3u);
  EXPECT_EQ(merge_reports({shard("3/3", "s/c"), shard("1/3", "s/a"), shard("2/3", "s/b")}).cases[0].id, "s/a");
  EXPECT_NE(refused({shard("1/3", "s/a"), shard("3/3", "s/c")}).find("shard 2/3 is missing"), std::string::npos);
  EXPECT_NE(refused({shard("1/3", "s/a")}).find("shard 2/3, 3/3 is missing"), std::string::npos);
  EXPECT_NE(refused({shard("1/2", "s/a"), shard("1/2", "s/b")}).find("shard 1/2 is given twice"), std::string::npos);
  EXPECT_NE(refused({shard("1/2", "s/a"), shard("2/3", "s/b")}).find("different shardings"), std::string::npos);
  EXPECT_NE(refused({shard("", "s/a"), shard("1/1", "s/b")}).find("without a shard"), std::string::npos);
  EXPECT_NE(refused({shard("1/2", "s/a"), shard("2x/2", "s/b")}).find("shard '2x/2'"), std::string::npos);
  EXPECT_NE(refused({shard("1/2", "s/a"), shard("3/2", "s/b")}).find("shard '3/2'"), std::string::npos);
}

// The report schema's verdicts and agreement statuses are the enums' tables, in order.
TEST(ReportSchema, ListsEachVerdictAndAgreementStatusFromItsTable) {
  std::ifstream f(std::filesystem::path(QCONFORM_SOURCE_DIR) / "reports" / "report.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(f);
  const auto names = [](const auto& table) {
    std::vector<std::string> v;
    for (const auto& e : table) v.emplace_back(e.name);
    return v;
  };
  const nlohmann::json& defs = schema["$defs"];
  EXPECT_EQ(defs["backend_result"]["properties"]["verdict"]["enum"].get<std::vector<std::string>>(),
            names(kVerdictTable));
  EXPECT_EQ(schema["properties"]["summary"]["propertyNames"]["enum"].get<std::vector<std::string>>(),
            names(kVerdictTable));
  EXPECT_EQ(defs["agreement"]["properties"]["status"]["enum"].get<std::vector<std::string>>(),
            names(kAgreementStatusTable));
}

}  // namespace
}  // namespace qc
