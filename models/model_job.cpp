#include "models/model_job.hpp"

#include "harness/evaluate.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace qc::onnx {

namespace fs = std::filesystem;

bool is_model_file(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.size() > 11 && n.ends_with(".model.json");
}

std::vector<fs::path> find_model_files(const std::vector<fs::path>& paths) {
  std::vector<fs::path> out;
  for (const fs::path& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && is_model_file(e.path())) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (is_model_file(p)) {
      out.push_back(p);
    }
  }
  return out;
}

ModelJob load_model_file(const fs::path& file) {
  const std::string where = file.string();
  std::ifstream in(file);
  if (!in) throw InputError(where + ": cannot open the model file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(where + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(where + ": a model file is a JSON object");
  static const char* const kFields[] = {"model", "inputs", "labels", "spec", "expect", "description"};
  for (const auto& [k, _] : j.items())
    if (std::none_of(std::begin(kFields), std::end(kFields), [&](const char* f) { return k == f; }))
      throw InputError(where + ": unknown field '" + k +
                       "' (a model file has model, inputs, labels, spec, expect, description)");
  const fs::path dir = file.parent_path();
  auto path_field = [&](const nlohmann::json& v, const std::string& field) {
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(where + ": field '" + field + "' must be a file name");
    return (dir / v.get<std::string>()).lexically_normal().string();
  };
  ModelJob m;
  if (!j.contains("model")) throw InputError(where + ": field 'model' (the .onnx file) is missing");
  m.model = path_field(j["model"], "model");
  if (j.contains("inputs")) {
    if (!j["inputs"].is_object()) throw InputError(where + ": field 'inputs' must map graph inputs to .npy files");
    for (const auto& [k, v] : j["inputs"].items()) m.inputs[k] = path_field(v, "inputs." + k);
  }
  if (j.contains("labels")) m.labels = path_field(j["labels"], "labels");
  if (j.contains("spec")) {
    m.spec = j["spec"].is_string() ? j["spec"].get<std::string>() : j["spec"].dump();
    m.spec_from = where;
  }
  if (j.contains("expect")) {
    if (!j["expect"].is_string() || (j["expect"] != "spec" && j["expect"] != "claim"))
      throw InputError(where + ": field 'expect' must be \"spec\" or \"claim\"");
    m.expect = j["expect"];
  }
  if (j.contains("description")) {
    if (!j["description"].is_string()) throw InputError(where + ": field 'description' must be text");
    m.description = j["description"];
  }
  return m;
}

PreparedModel prepare_model(const ModelJob& job) {
  PreparedModel m;
  m.job = job;
  m.spec = parse_spec(job.spec, job.spec_from);
  if (!fs::exists(job.model)) throw InputError(job.model + ": no such model file");
  if (fs::is_directory(job.model)) throw InputError(job.model + ": a folder, not a model file");
  for (const auto& [name, file] : job.inputs)
    if (!fs::is_regular_file(file)) throw InputError("--input " + name + "=" + file + ": no such file");
  if (!job.labels.empty()) {
    if (!fs::is_regular_file(job.labels)) throw InputError("--labels " + job.labels + ": no such file");
    const Tensor t = read_npy(job.labels);
    if (!is_int(t.dtype()) || t.rank() != 1)
      throw InputError("--labels " + job.labels + ": expected a 1-D integer array, got " +
                       std::string(name(t.dtype())) + " " + shape_str(t.shape()));
    for (std::int64_t i = 0; i < t.size(); ++i) m.labels.push_back(t.get_int(i));
  }
  m.plan = plan_model(read_model(job.model), job.model, m.spec);
  m.inputs = model_inputs(m.plan, job.inputs, &m.described);
  m.chains[Reading::graph] = oracle_chain(m.plan, m.inputs, m.spec, Reading::graph, &m.references);
  for (const Step& s : m.plan.steps)
    if (s.kind == Step::Kind::fused)
      m.references.insert_or_assign(s.name, evaluate(s.make(m.chains[Reading::graph]).op, m.spec));
  // Backends driven through the graph run the fused integer kernels where the model has QDQ patterns.
  if (m.plan.has_fused_readings()) {
    m.propagated = Reading::fused;
    m.chains[Reading::fused] = oracle_chain(m.plan, m.inputs, m.spec, Reading::fused);
  }
  if (!m.labels.empty()) {
    const Value& out = m.chains[Reading::graph].at(m.plan.model.graph.outputs.at(0).name);
    if (!out.numbers || out.numbers->rank() != 2 ||
        out.numbers->shape()[0] != static_cast<std::int64_t>(m.labels.size()))
      throw InputError("--labels " + job.labels + ": " + std::to_string(m.labels.size()) +
                       " labels, but the model's first output is " +
                       (out.numbers ? shape_str(out.numbers->shape()) : std::string("not numbers")) +
                       " (one label per row of a [rows, classes] output)");
  }
  m.suite = isolated_suite(m.plan, m.chains[Reading::graph], m.spec);
  if (!job.description.empty()) m.suite.description = job.description;
  return m;
}

ModelView judge_model(const PreparedModel& m, const std::vector<Backend*>& backends,
                      const std::vector<WholeModelRuntime>& whole, double timeout_seconds,
                      const std::vector<CaseResult>* isolated) {
  std::vector<Propagated> runs;
  for (Backend* b : backends)
    if (b->availability().available) runs.push_back(propagate(m.plan, m.inputs, *b, m.spec, m.propagated));
  for (const WholeModelRuntime& rt : whole)
    runs.push_back(run_whole_model(m.plan, m.inputs, m.chains.at(Reading::graph), rt, timeout_seconds));
  ModelView view = model_view(m.plan, m.spec, m.chains, runs, m.labels, isolated, &m.references);
  view.inputs = m.described;
  return view;
}

}  // namespace qc::onnx
