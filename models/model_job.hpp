// A model to judge, from the command line (qconform model MODEL.onnx ...) or from a model file
// (NAME.model.json, which `qconform run` finds among the case files: docs/models.md "Model files"),
// prepared into the suite of its node cases, and judged into the report's model view.
#pragma once

#include "models/model_run.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qc::onnx {

struct ModelJob {
  std::string model;                          // the .onnx file
  std::map<std::string, std::string> inputs;  // graph input -> .npy file
  std::string labels;                         // .npy of one class per output row; "" none
  std::string spec = "onnx";                  // a preset name or a spec object's JSON text
  std::string spec_from = "--spec";           // where `spec` came from, for messages
  std::string expect;                         // "spec" or "claim"; "" as the command says
  std::string description;
};

// Reads a model file: {"model": "x.onnx", "inputs": {"image": "x.npy"}, "labels": "y.npy",
// "spec": "onnx", "expect": "claim", "description": "..."}, its paths relative to its folder.
// Throws InputError naming the file and the field.
ModelJob load_model_file(const std::filesystem::path& file);
bool is_model_file(const std::filesystem::path& p);  // *.model.json
// The model files among `paths` (given, or found in folders, sorted).
std::vector<std::filesystem::path> find_model_files(const std::vector<std::filesystem::path>& paths);

struct PreparedModel {
  ModelJob job;
  Spec spec;
  Plan plan;
  Env inputs;
  std::vector<std::string> described;  // one line per input
  std::vector<std::int64_t> labels;
  std::map<Reading, Env> chains;        // the oracle's graph reading, and its fused one where there is one
  Reading propagated = Reading::graph;  // what backends driven through the graph run
  Suite suite;                          // the node cases (isolated mode)
  // The oracle's reference of each node case, by case name: the graph chain's, and each fused
  // reading's on the graph chain's values (a run takes them instead of evaluating the cases again).
  std::map<std::string, Reference> references;
};

// Reads, lowers and runs the model on the oracle; makes its cases. Throws InputError for a bad model,
// input or label file, naming it.
PreparedModel prepare_model(const ModelJob& job);

// The model view: every available backend driven through the graph, and `whole` runtimes running
// the model itself (timeout per runtime call, 0: 600 s).
// `isolated`: the run's case results, which give each differing step its cause (model_view).
ModelView judge_model(const PreparedModel& m, const std::vector<Backend*>& backends,
                      const std::vector<WholeModelRuntime>& whole, double timeout_seconds,
                      const std::vector<CaseResult>* isolated);

}  // namespace qc::onnx
