// Running a lowered model (models/model_plan.hpp): the oracle's execution of the whole graph, the
// cases of its quantized computations (isolated mode), backends driven through the graph
// (propagated mode), and the model view of the report (docs/models.md).
#pragma once

#include "cases/case.hpp"
#include "harness/evaluate.hpp"
#include "models/model_plan.hpp"
#include "qconform/backend.hpp"
#include "reports/result.hpp"

#include <map>
#include <string>
#include <vector>

namespace qc::onnx {

// The model's inputs: `files` (graph input name -> .npy path) where given; every other graph input
// made from a fixed seed, uniform over the real range of the QuantizeLinear it feeds (else [-1, 1]),
// which needs its declared shape to be static. Throws InputError naming the model, the input and the
// file: a name that is not a graph input, a dtype or shape that differs from the declared one,
// symbolic dimensions without a file. `described` gets one line per input.
Env model_inputs(const Plan& plan, const std::map<std::string, std::string>& files,
                 std::vector<std::string>* described);

// Which nodes a run computes: the graph's own (QDQ: dequantize, float op, quantize), or each QDQ
// pattern's fused integer reading in place of the nodes it covers.
enum class Reading : std::uint8_t { graph, fused };
std::string_view name(Reading r);

// The oracle's execution of the model under `spec`: every op step evaluated exactly, the float
// steps by the float executor. The values of every step (constants and inputs included).
// `refs` (optional) gets each op step's whole Reference, by step name.
Env oracle_chain(const Plan& plan, const Env& inputs, const Spec& spec, Reading reading,
                 std::map<std::string, Reference>* refs = nullptr);

// One case per op and fused step, named by the step, holding the values the oracle's QDQ chain gave
// its inputs (a fused step reads the chain's integers before the DQ), under `spec`; expectations:
// exact, except a float convolution's, which is TOSA's dot-product bound (no summation order is
// specified). The suite is named after the model file.
Suite isolated_suite(const Plan& plan, const Env& chain, const Spec& spec);

// `backend` driven through the graph: each op step of `reading` run on the backend with the
// backend's own earlier outputs, the float steps on the executor. A step the backend does not
// support is computed by the oracle on the backend's inputs (and the run says so); a backend fault
// or an output of the wrong shape ends the run there (status "failed"). The values of every step.
struct Propagated {
  ModelRun run;
  Env values;
  std::map<std::string, std::string> by_oracle;  // step -> why the oracle computed it
};
Propagated propagate(const Plan& plan, const Env& inputs, Backend& backend, const Spec& spec, Reading reading);

// The model view: the plan's steps with the fused readings' agreement with the QDQ chain, and each
// run compared step by step with the oracle chain of its reading (`chains`: by Reading). `labels`
// (one class per row of a [rows, classes] output; empty: none) gives the top-1 accuracy.
// `isolated` (the run's case results; null: none) gives each differing step of a run the leading
// cause of the same backend's result on the step's case.
ModelView model_view(const Plan& plan, const Spec& spec, const std::map<Reading, Env>& chains,
                     std::vector<Propagated>& runs, const std::vector<std::int64_t>& labels,
                     const std::vector<CaseResult>* isolated = nullptr,
                     const std::map<std::string, Reference>* refs = nullptr);

// Compares one run's values with a chain of the same reading: per step (ModelStepRun, in plan
// order, for the steps the run computed), the first divergent step and the output drift. Fills
// `run` and returns the step comparisons keyed by step name.
std::map<std::string, ModelStepRun> compare_run(const Plan& plan, const Env& chain, const Env& values, Reading reading,
                                                ModelRun& run, const std::vector<std::int64_t>& labels);

}  // namespace qc::onnx

namespace qc::onnx {

// A runtime that runs the model itself (docs/models.md "Whole-model runs"): a command that takes
// MODEL LEVEL OUT_DIR [--capture NAME:TYPE,...] INPUT=FILE.npy... and answers as
// peers/ort/model_runner.js does.
struct WholeModelRuntime {
  std::string name;      // "onnxruntime-cpu [disabled]"
  std::string backend;   // the peer it belongs to
  std::string command;   // a shell command line, the arguments appended
  std::string level;     // the graph optimization level
  bool capture = false;  // ask for every step's value (only where that cannot change the graph run)
};

// Runs the model on `rt` with `inputs`; compared as the QDQ reading (the graph's own nodes). A
// failure (the command's exit status, its stderr tail, a timeout after `timeout_seconds`) is the run's
// status "failed" with the reason, not an exception.
Propagated run_whole_model(const Plan& plan, const Env& inputs, const Env& chain, const WholeModelRuntime& rt,
                           double timeout_seconds);

}  // namespace qc::onnx
