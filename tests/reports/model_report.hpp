// A hand-built report of a model run (qconform model) for the report writers' tests: a model of
// four steps in graph order (an op, a fused reading, a float step, an op), its three cases judged
// on three backends, and five runs. Every value is set here by hand; the tests check what the
// writers make of them.
//
//   step                kind   case                         isolated (cpu-ref / vnni512 / hip)
//   x_QuantizeLinear    op     tiny_qdq/x_QuantizeLinear    PASS / PASS / SKIP
//   fc_MatMul.fused     fused  tiny_qdq/fc_MatMul.fused     PASS / FAIL (3 of 40, max 2 LSB, rounding=rna) / SKIP
//   relu_Relu           float  -
//   y_DequantizeLinear  op     tiny_qdq/y_DequantizeLinear  PASS / CRASH / SKIP
//
//   run                     mode        steps it compared (differing of elements)
//   oracle (fused)          propagated  none (the output only: 2 of 40)
//   cpu-ref (fused)         propagated  x 0/8, fc 0/40, relu 0/40, y 0/40
//   vnni512 (fused)         propagated  x 0/8, fc 3/40 (max 2 LSB, cause rounding=rna: its first divergent step),
//                                       relu 3/40 (max 0.25), y 3/40 by the oracle (max 0.5)
//   onnxruntime [disabled]  whole       x 0/8; its first float difference at relu_Relu
//   onnxruntime [all]       whole       none: it failed
#pragma once

#include "reports/result.hpp"

#include <string>

namespace qc::test {

inline const std::string kModelHostile = "<script>alert(2)</script> & \"q\"";

inline RunReport model_report() {
  RunReport r;
  r.meta.tool_version = "0.1.0";
  r.meta.host = "model-host";
  r.meta.cpu = "a cpu";
  r.meta.started_at = "2026-12-01T08:00:00Z";
  r.meta.backends = {"cpu-ref", "vnni512", "hip (unavailable: no HIP device found)"};
  r.meta.command_line = {"qconform", "model", "models/tiny.onnx"};
  r.meta.seconds = 2.5;

  auto make_case = [](const std::string& name, const std::string& op, const std::string& out_dtype) {
    CaseResult c;
    c.suite = "tiny_qdq";
    c.name = name;
    c.id = "tiny_qdq/" + name;
    c.description = "node " + name + " of models/tiny.onnx";
    c.file = "models/tiny.onnx";
    c.op = op;
    c.spec = "onnx";
    c.shape = "[2, 4]";
    c.input_dtype = "u8";
    c.output_dtype = out_dtype;
    c.granularity = "per_tensor";
    return c;
  };
  auto result = [](const std::string& backend, Verdict v, const std::string& reason, std::int64_t elements,
                   std::int64_t mismatches, std::int64_t max_abs) {
    BackendResult b;
    b.backend = backend;
    b.claim = "onnx";
    b.expectation = "exact";
    b.verdict = v;
    b.reason = reason;
    b.seconds = 0.001;
    b.metrics.elements = b.metrics.compared = elements;
    b.metrics.exact = elements - mismatches;
    b.metrics.histogram = {elements - mismatches, 0, mismatches, 0, 0};
    b.metrics.max_abs = max_abs;
    return b;
  };
  auto skip = [](const std::string& backend) {
    BackendResult b;
    b.backend = backend;
    b.verdict = Verdict::skip;
    b.reason = "no HIP device found";
    return b;
  };

  CaseResult q = make_case("x_QuantizeLinear", "quantize", "u8");
  q.backends = {result("cpu-ref", Verdict::pass, "8/8 exact against onnx", 8, 0, 0),
                result("vnni512", Verdict::pass, "8/8 exact against onnx", 8, 0, 0), skip("hip")};
  CaseResult f = make_case("fc_MatMul.fused", "qgemm", "u8");
  BackendResult ffail = result("vnni512", Verdict::fail, "37/40 exact, max |delta| 2 LSB against onnx", 40, 3, 2);
  ffail.causes = {{"requantize.rounding=rna", "requantize rounds ties away from zero", 3, {}},
                  {"requantize.scheme=float_multiplier", "a float multiplier", 1, {}}};
  f.backends = {result("cpu-ref", Verdict::pass, "40/40 exact against onnx", 40, 0, 0), ffail, skip("hip")};
  CaseResult d = make_case("y_DequantizeLinear", "dequantize", "f32");
  BackendResult crash;
  crash.backend = "vnni512";
  crash.verdict = Verdict::crash;
  crash.reason = "backend threw: dequantize blew up";
  d.backends = {result("cpu-ref", Verdict::pass, "40/40 exact against onnx", 40, 0, 0), crash, skip("hip")};
  r.cases = {q, f, d};

  ModelView v;
  v.file = "models/tiny.onnx";
  v.name = "tiny_qdq";
  v.format = "QDQ";
  v.spec = "onnx";
  v.producer = "hand-written for the tests";
  v.ir_version = 8;
  v.opset = 17;
  v.inputs = {"x: f32 [2, 4] generated"};
  v.top1_total = 8;
  v.oracle_top1_correct = 7;

  auto step_run = [](const std::string& run, std::int64_t elements, std::int64_t differing, std::int64_t max_lsb,
                     double max_abs) {
    ModelStepRun s;
    s.run = run;
    s.elements = elements;
    s.differing = differing;
    s.max_lsb = max_lsb;
    s.max_abs = max_abs;
    return s;
  };
  ModelStep x;
  x.name = "x_QuantizeLinear";
  x.op_type = "QuantizeLinear";
  x.kind = "op";
  x.case_id = "tiny_qdq/x_QuantizeLinear";
  x.output = "x_q";
  x.shape = "[2, 4]";
  x.dtype = "u8";
  x.runs = {step_run("cpu-ref (fused)", 8, 0, 0, 0), step_run("vnni512 (fused)", 8, 0, 0, 0),
            step_run("onnxruntime [disabled]", 8, 0, 0, 0)};
  ModelStep fc;
  fc.name = "fc_MatMul.fused";
  fc.op_type = "fused MatMul";
  fc.kind = "fused";
  fc.case_id = "tiny_qdq/fc_MatMul.fused";
  fc.output = "y_q";
  fc.shape = "[2, 20]";
  fc.dtype = "u8";
  fc.covers = {"x_DequantizeLinear", "fc_MatMul", "y_QuantizeLinear"};
  fc.fused_differs = 2;
  fc.fused_elements = 40;
  fc.runs = {step_run("cpu-ref (fused)", 40, 0, 0, 0), step_run("vnni512 (fused)", 40, 3, 2, 0.0625)};
  fc.runs[1].cause = "requantize.rounding=rna";
  ModelStep relu;
  relu.name = "relu_Relu";
  relu.op_type = "Relu";
  relu.kind = "float";
  relu.output = "relu_out";
  relu.shape = "[2, 20]";
  relu.dtype = "f32";
  relu.runs = {step_run("cpu-ref (fused)", 40, 0, 0, 0), step_run("vnni512 (fused)", 40, 3, 0, 0.25)};
  ModelStep y;
  y.name = "y_DequantizeLinear";
  y.op_type = "DequantizeLinear";
  y.kind = "op";
  y.case_id = "tiny_qdq/y_DequantizeLinear";
  y.output = "y";
  y.shape = "[2, 20]";
  y.dtype = "f32";
  ModelStepRun by_oracle = step_run("vnni512 (fused)", 40, 3, 0, 0.5);
  by_oracle.computed = false;
  by_oracle.note = "vnni512 does not implement dequantize to f32";
  y.runs = {step_run("cpu-ref (fused)", 40, 0, 0, 0), by_oracle};
  v.steps = {x, fc, relu, y};

  auto run = [](const std::string& name, const std::string& backend, const std::string& mode,
                const std::string& reading, const std::string& compared_with) {
    ModelRun m;
    m.name = name;
    m.backend = backend;
    m.mode = mode;
    m.reading = reading;
    m.compared_with = compared_with;
    return m;
  };
  ModelRun oracle = run("oracle (fused)", "oracle", "propagated", "fused", "graph");
  oracle.note = "the fused reading against the QDQ reading";
  oracle.first_divergent = "fc_MatMul.fused";
  oracle.output_elements = 40;
  oracle.output_differing = 2;
  oracle.output_max_abs = 0.125;
  oracle.top1_total = 8;
  oracle.top1_agree = 8;
  oracle.top1_correct = 7;
  ModelRun cpu = run("cpu-ref (fused)", "cpu-ref", "propagated", "fused", "fused");
  cpu.steps_run = 3;
  cpu.output_elements = 40;
  cpu.top1_total = 8;
  cpu.top1_agree = 8;
  cpu.top1_correct = 7;
  cpu.seconds = 0.0125;
  ModelRun vnni = run("vnni512 (fused)", "vnni512", "propagated", "fused", "fused");
  vnni.first_divergent = "fc_MatMul.fused";
  vnni.first_divergent_cause = "requantize.rounding=rna";
  vnni.steps_run = 2;
  vnni.steps_by_oracle = 1;
  vnni.output_elements = 40;
  vnni.output_differing = 3;
  vnni.output_max_abs = 0.5;
  vnni.top1_total = 8;
  vnni.top1_agree = 6;
  vnni.top1_correct = 5;
  vnni.seconds = 0.0031;
  ModelRun ort = run("onnxruntime [disabled]", "onnxruntime", "whole", "graph", "graph");
  ort.note = "ONNX Runtime 1.17.0, graph optimization level disabled";
  ort.first_float_difference = "relu_Relu";
  ort.output_elements = 40;
  ort.seconds = 0.75;
  ModelRun ort_all = run("onnxruntime [all]", "onnxruntime", "whole", "graph", "graph");
  ort_all.status = "failed";
  ort_all.note = "its answer could not be read: " + kModelHostile;
  v.runs = {oracle, cpu, vnni, ort, ort_all};
  r.models = {v};
  return r;
}

}  // namespace qc::test
