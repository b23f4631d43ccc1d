#include "models/model_run.hpp"

#include "cases/generators.hpp"
#include "harness/evaluate.hpp"
#include "models/float_ops.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <stdlib.h>
#include <sys/wait.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

namespace qc::onnx {

namespace {

Value as_value(Tensor t, const Shape& shape, int elem_type) {
  Value v;
  v.elem_type = elem_type;
  v.shape = shape;
  Tensor out(t.dtype(), shape);
  if (numel(shape) != t.size()) throw std::logic_error("model step output of the wrong size");
  std::copy(t.bytes().begin(), t.bytes().end(), out.bytes().begin());
  v.numbers = std::move(out);
  return v;
}

std::vector<const Value*> node_inputs(const Node& n, const Env& env, const std::string& where) {
  std::vector<const Value*> in;
  for (const auto& name : n.inputs) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    const auto it = env.find(name);
    if (it == env.end())
      throw InputError(where + ": node '" + n.label() + "' reads '" + name + "', which is not computed");
    in.push_back(&it->second);
  }
  return in;
}

// Which steps a reading runs: the fused steps replace what they cover.
std::vector<const Step*> steps_of(const Plan& plan, Reading reading) {
  std::set<std::string> covered;
  if (reading == Reading::fused)
    for (const Step& s : plan.steps)
      if (s.kind == Step::Kind::fused) covered.insert(s.covers.begin(), s.covers.end());
  std::vector<const Step*> out;
  for (const Step& s : plan.steps) {
    if (s.kind == Step::Kind::fused && reading != Reading::fused) continue;
    if (covered.count(s.name)) continue;
    out.push_back(&s);
  }
  return out;
}

Value float_step(const Plan& plan, const Step& s, const Env& env) {
  const Node& n = plan.model.graph.nodes[static_cast<std::size_t>(s.node)];
  return run_float_op(n, node_inputs(n, env, plan.where),
                      plan.where + ": node '" + n.label() + "' (" + n.op_type + ")");
}

Expectation expectation_of(const OpRequest& op) {
  Expectation e;
  if (std::holds_alternative<Conv2dOp>(op)) e.kind = Expectation::Kind::dot_product;
  return e;
}

// The real-value range the QuantizeLinear consuming `input` maps onto its integers, if one does.
std::optional<std::pair<double, double>> quantize_range(const Plan& plan, const std::string& input) {
  for (const Node& n : plan.model.graph.nodes) {
    if (n.op_type != "QuantizeLinear" || n.inputs.empty() || n.inputs[0] != input || n.inputs.size() < 2) continue;
    const auto s = plan.constants.find(n.inputs[1]);
    if (s == plan.constants.end() || !s->second.numbers || s->second.numbers->size() != 1) continue;
    const double scale = s->second.numbers->get_double(0);
    std::int64_t zp = 0;
    DType t = DType::u8;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const auto z = plan.constants.find(n.inputs[2]);
      if (z != plan.constants.end() && z->second.numbers) {
        t = z->second.numbers->dtype();
        if (is_int(t)) zp = z->second.numbers->get_int(0);
      }
    }
    if (!is_int(t)) continue;
    return std::pair{(static_cast<double>(int_min(t)) - static_cast<double>(zp)) * scale,
                     (static_cast<double>(int_max(t)) - static_cast<double>(zp)) * scale};
  }
  return std::nullopt;
}

// The leading cause of `backend`'s result on case `id`, with its count: "requantize.scheme=float_multiplier
// (1 of 1 mismatches)"; "" where there is none.
std::string leading_cause(const std::vector<CaseResult>& cases, const std::string& id, const std::string& backend) {
  for (const CaseResult& c : cases) {
    if (c.id != id) continue;
    for (const BackendResult& b : c.backends) {
      if (b.backend != backend || b.causes.empty()) continue;
      const CauseCount& k = b.causes.front();
      return k.cause + " (" + std::to_string(k.count) + " of " +
             std::to_string(k.mismatches_sampled ? k.mismatches_sampled : b.metrics.mismatches()) +
             (k.mismatches_sampled ? " sampled" : "") + " mismatches on the case)";
    }
  }
  return "";
}

std::int64_t argmax_row(const Tensor& t, std::int64_t row, std::int64_t cols) {
  std::int64_t best = 0;
  for (std::int64_t c = 1; c < cols; ++c)
    if (t.get_double(row * cols + c) > t.get_double(row * cols + best)) best = c;
  return best;
}

}  // namespace

std::string_view name(Reading r) { return r == Reading::graph ? "graph" : "fused"; }

Env model_inputs(const Plan& plan, const std::map<std::string, std::string>& files,
                 std::vector<std::string>* described) {
  const Graph& g = plan.model.graph;
  for (const auto& [name, file] : files)
    if (std::none_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == name; })) {
      std::string list;
      for (const auto& v : g.inputs) list += (list.empty() ? "" : ", ") + v.name;
      throw InputError("--input " + name + "=" + file + ": the model " + plan.where + " has no input '" + name +
                       "' (its inputs: " + list + ")");
    }
  Env env = plan.constants;
  std::uint64_t seed = 1;
  for (const ValueInfo& in : g.inputs) {
    const auto dt = to_dtype(in.elem_type);
    const std::string what = plan.where + ": input '" + in.name + "'";
    if (!dt)
      throw InputError(what + " has element type " + elem_type_name(in.elem_type) + ", which qconform does not read");
    Tensor t;
    std::string line;
    if (const auto f = files.find(in.name); f != files.end()) {
      if (!std::filesystem::exists(f->second))
        throw InputError("--input " + in.name + "=" + f->second + ": no such file");
      t = read_npy(f->second);
      const std::string given = "--input " + in.name + "=" + f->second;
      if (t.dtype() != *dt)
        throw InputError(given + ": the array is " + std::string(name(t.dtype())) + ", the model's input is " +
                         elem_type_name(in.elem_type));
      bool fits = !in.has_shape || t.shape().size() == in.dims.size();
      for (std::size_t i = 0; fits && in.has_shape && i < in.dims.size(); ++i)
        fits = in.dims[i] < 0 || in.dims[i] == t.shape()[i];
      if (!fits) {
        std::string declared = "[";
        for (std::size_t i = 0; i < in.dims.size(); ++i)
          declared += (i ? ", " : "") + (in.dims[i] < 0 ? (in.dim_params[i].empty() ? "?" : in.dim_params[i])
                                                        : std::to_string(in.dims[i]));
        throw InputError(given + ": the array's shape " + shape_str(t.shape()) + " does not fit the model's " +
                         declared + "]");
      }
      line = in.name + ": " + std::string(name(*dt)) + " " + shape_str(t.shape()) + " from " + f->second;
    } else {
      if (!in.has_shape || std::any_of(in.dims.begin(), in.dims.end(), [](std::int64_t d) { return d < 0; }))
        throw InputError(what + " has symbolic or unknown dimensions: give its values with --input " + in.name +
                         "=FILE.npy");
      t = Tensor(*dt, in.dims);
      if (is_float(*dt)) {
        const auto range = quantize_range(plan, in.name);
        fill_uniform(t, seed++, range ? range->first : -1.0, range ? range->second : 1.0);
      } else {
        for (std::int64_t i = 0; i < t.size(); ++i)
          t.set_int(i, int_min(*dt) + static_cast<std::int64_t>(i * 37 % 251) % (int_max(*dt) - int_min(*dt) + 1));
      }
      line = in.name + ": " + std::string(name(*dt)) + " " + shape_str(t.shape()) + " generated";
    }
    if (described) described->push_back(line);
    Value v;
    v.elem_type = in.elem_type;
    v.shape = t.shape();
    v.numbers = std::move(t);
    env[in.name] = std::move(v);
  }
  return env;
}

Env oracle_chain(const Plan& plan, const Env& inputs, const Spec& spec, Reading reading,
                 std::map<std::string, Reference>* refs) {
  Env env = inputs;
  for (const Step* s : steps_of(plan, reading)) {
    if (s->kind == Step::Kind::float_op) {
      env[s->writes] = float_step(plan, *s, env);
      continue;
    }
    const MadeOp m = s->make(env);
    Reference r = evaluate(m.op, spec);
    env[s->writes] = as_value(r.expected, m.shape, m.elem_type);
    if (refs) refs->insert_or_assign(s->name, std::move(r));
  }
  return env;
}

Suite isolated_suite(const Plan& plan, const Env& chain, const Spec& spec) {
  Suite suite;
  suite.name = std::filesystem::path(plan.where).stem().string();
  suite.file = plan.where;
  suite.description = "the quantized computations of " + plan.where + " (" + plan.format +
                      "), each on the values the oracle's chain gives it";
  for (const Step& s : plan.steps) {
    if (s.kind == Step::Kind::float_op) continue;
    Case c;
    c.suite = suite.name;
    c.name = s.name;
    c.file = plan.where;
    c.description = s.kind == Step::Kind::fused
                        ? "the fused integer reading of " + s.covers.front() + " .. " + s.covers.back()
                        : "node " + s.name + " (" + s.op_type + ")";
    c.op = s.make(chain).op;
    c.spec = spec;
    c.expect["*"] = expectation_of(c.op);
    suite.cases.push_back(std::move(c));
  }
  return suite;
}

Propagated propagate(const Plan& plan, const Env& inputs, Backend& backend, const Spec& spec, Reading reading) {
  Propagated p;
  p.values = inputs;
  p.run.backend = backend.name();
  p.run.mode = "propagated";
  p.run.reading = std::string(name(reading));
  p.run.compared_with = p.run.reading;
  p.run.name = backend.name() + " (" + p.run.reading + ")";
  const auto started = std::chrono::steady_clock::now();
  for (const Step* s : steps_of(plan, reading)) {
    if (s->kind == Step::Kind::float_op) {
      p.values[s->writes] = float_step(plan, *s, p.values);
      continue;
    }
    const MadeOp m = s->make(p.values);
    const Availability a = backend.supports(m.op);
    if (!a.available) {
      p.by_oracle[s->name] = a.reason;
      ++p.run.steps_by_oracle;
      p.values[s->writes] = as_value(evaluate(m.op, spec).expected, m.shape, m.elem_type);
      continue;
    }
    Tensor out;
    try {
      out = backend.run(m.op);
    } catch (const std::exception& e) {
      p.run.status = "failed";
      p.run.note = "step " + s->name + ": the backend failed: " + e.what();
      break;
    }
    if (out.dtype() != op_output_dtype(m.op) || out.size() != numel(m.shape)) {
      p.run.status = "failed";
      p.run.note = "step " + s->name + ": the backend gave " + std::string(qc::name(out.dtype())) + " " +
                   shape_str(out.shape()) + ", not " + std::string(qc::name(op_output_dtype(m.op))) + " " +
                   shape_str(m.shape);
      break;
    }
    ++p.run.steps_run;
    p.values[s->writes] = as_value(std::move(out), m.shape, m.elem_type);
  }
  p.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return p;
}

std::map<std::string, ModelStepRun> compare_run(const Plan& plan, const Env& chain, const Env& values, Reading reading,
                                                ModelRun& run, const std::vector<std::int64_t>& labels) {
  std::map<std::string, ModelStepRun> out;
  for (const Step* s : steps_of(plan, reading)) {
    const auto got = values.find(s->writes);
    const auto want = chain.find(s->writes);
    if (got == values.end() || want == chain.end() || !got->second.numbers || !want->second.numbers) continue;
    const Tensor& a = *got->second.numbers;
    const Tensor& b = *want->second.numbers;
    ModelStepRun r;
    r.run = run.name;
    r.elements = b.size();
    if (a.dtype() == b.dtype() && a.size() == b.size()) {
      for (std::int64_t i = 0; i < a.size(); ++i) {
        if (a.bits(i) == b.bits(i)) continue;
        const double x = a.get_double(i), y = b.get_double(i);
        if (std::isnan(x) && std::isnan(y)) continue;
        ++r.differing;
        r.max_abs = std::max(r.max_abs, std::fabs(x - y));
        if (is_int(a.dtype())) r.max_lsb = std::max(r.max_lsb, std::abs(a.get_int(i) - b.get_int(i)));
      }
    } else {
      r.differing = r.elements;
    }
    // A float output that differs before any quantized one: a float op rounding otherwise (after a
    // quantized divergence, float differences only follow from it).
    if (r.differing && is_int(b.dtype()) && run.first_divergent.empty()) run.first_divergent = s->name;
    if (r.differing && !is_int(b.dtype()) && run.first_divergent.empty() && run.first_float_difference.empty())
      run.first_float_difference = s->name;
    out[s->name] = r;
  }
  // The output drift, at the graph's outputs.
  for (const ValueInfo& o : plan.model.graph.outputs) {
    const auto got = values.find(o.name);
    const auto want = chain.find(o.name);
    if (got == values.end() || want == chain.end() || !got->second.numbers) continue;
    const Tensor& a = *got->second.numbers;
    const Tensor& b = *want->second.numbers;
    run.output_elements += b.size();
    for (std::int64_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a.bits(i) == b.bits(i)) continue;
      ++run.output_differing;
      run.output_max_abs = std::max(run.output_max_abs, std::fabs(a.get_double(i) - b.get_double(i)));
    }
    if (b.rank() == 2 && a.shape() == b.shape() && o.name == plan.model.graph.outputs.front().name) {
      const std::int64_t rows = b.shape()[0], cols = b.shape()[1];
      run.top1_total = rows;
      run.top1_agree = 0;
      if (static_cast<std::int64_t>(labels.size()) == rows) run.top1_correct = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t got_class = argmax_row(a, r, cols);
        run.top1_agree += got_class == argmax_row(b, r, cols);
        if (run.top1_correct >= 0) run.top1_correct += got_class == labels[static_cast<std::size_t>(r)];
      }
    }
  }
  return out;
}

ModelView model_view(const Plan& plan, const Spec& spec, const std::map<Reading, Env>& chains,
                     std::vector<Propagated>& runs, const std::vector<std::int64_t>& labels,
                     const std::vector<CaseResult>* isolated, const std::map<std::string, Reference>* refs) {
  ModelView v;
  v.file = plan.where;
  v.name = std::filesystem::path(plan.where).stem().string();
  v.format = plan.format;
  v.spec = spec.name;
  v.producer = plan.model.producer;
  v.ir_version = plan.model.ir_version;
  v.opset = plan.model.opset();
  const Env& qdq = chains.at(Reading::graph);
  std::map<std::string, std::size_t> index;
  for (const Step& s : plan.steps) {
    ModelStep m;
    m.name = s.name;
    m.op_type = s.op_type;
    m.kind = s.kind == Step::Kind::op ? "op" : s.kind == Step::Kind::fused ? "fused" : "float";
    if (s.kind != Step::Kind::float_op) m.case_id = v.name + "/" + s.name;
    m.output = s.writes;
    m.covers = s.covers;
    if (s.kind == Step::Kind::fused) {
      // The fused reading on the QDQ chain's own inputs, against the chain's value of the Q's output.
      // `refs` has it when the case was evaluated on the same values (isolated_suite's).
      const auto known = [&]() -> const Reference* {
        if (!refs) return nullptr;
        const auto it = refs->find(s.name);
        return it == refs->end() ? nullptr : &it->second;
      }();
      const Tensor fused = known ? known->expected : evaluate(s.make(qdq).op, spec).expected;
      const Tensor& want = *qdq.at(s.writes).numbers;
      m.fused_elements = want.size();
      m.fused_differs = 0;
      for (std::int64_t i = 0; i < want.size(); ++i) m.fused_differs += fused.bits(i) != want.bits(i);
    }
    if (const auto it = qdq.find(s.writes); it != qdq.end() && it->second.numbers) {
      m.shape = shape_str(it->second.numbers->shape());
      m.dtype = std::string(qc::name(it->second.numbers->dtype()));
    }
    index[s.name] = v.steps.size();
    v.steps.push_back(std::move(m));
  }
  // The oracle's own fused reading against its QDQ reading, where the model has fused readings.
  if (chains.count(Reading::fused) && plan.has_fused_readings()) {
    ModelRun r;
    r.backend = "oracle";
    r.mode = "propagated";
    r.reading = "fused";
    r.compared_with = "graph";
    r.name = "oracle (fused)";
    compare_run(plan, qdq, chains.at(Reading::fused), Reading::graph, r, labels);
    r.note = "the fused integer reading of every QDQ pattern, run exactly, against the QDQ reading";
    v.runs.push_back(std::move(r));
  }
  for (Propagated& p : runs) {
    const Reading reading = p.run.reading == "fused" ? Reading::fused : Reading::graph;
    for (auto& [step, r] : compare_run(plan, chains.at(reading), p.values, reading, p.run, labels)) {
      if (const auto o = p.by_oracle.find(step); o != p.by_oracle.end()) {
        r.computed = false;
        r.note = o->second;
      }
      if (r.differing && r.computed && isolated) r.cause = leading_cause(*isolated, v.name + "/" + step, p.run.backend);
      if (step == p.run.first_divergent) p.run.first_divergent_cause = r.cause;
      v.steps[index.at(step)].runs.push_back(r);
    }
    v.runs.push_back(p.run);
  }
  // The oracle against the labels.
  for (const ValueInfo& o : plan.model.graph.outputs) {
    const auto it = qdq.find(o.name);
    if (it == qdq.end() || !it->second.numbers || it->second.numbers->rank() != 2) break;
    const Tensor& t = *it->second.numbers;
    v.top1_total = t.shape()[0];
    if (static_cast<std::int64_t>(labels.size()) == t.shape()[0]) {
      v.oracle_top1_correct = 0;
      for (std::int64_t r = 0; r < t.shape()[0]; ++r)
        v.oracle_top1_correct += argmax_row(t, r, t.shape()[1]) == labels[static_cast<std::size_t>(r)];
    }
    break;
  }
  return v;
}

}  // namespace qc::onnx

namespace qc::onnx {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string tail_of(const std::filesystem::path& file, std::size_t n) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

}  // namespace

Propagated run_whole_model(const Plan& plan, const Env& inputs, const Env& chain, const WholeModelRuntime& rt,
                           double timeout_seconds) {
  namespace fs = std::filesystem;
  Propagated p;
  p.run.name = rt.name;
  p.run.backend = rt.backend;
  p.run.mode = "whole";
  p.run.reading = "graph";
  p.run.compared_with = "graph";
  const auto started = std::chrono::steady_clock::now();
  std::string tmpl = (fs::temp_directory_path() / "qconform-model-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw std::runtime_error("cannot make a temporary folder under " + fs::temp_directory_path().string());
  const fs::path dir = tmpl;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  std::string cmd = "timeout -k 5 " + std::to_string(static_cast<long>(timeout_seconds > 0 ? timeout_seconds : 600)) +
                    " sh -c " + shell_quote(rt.command + " \"$@\"") + " runner " + shell_quote(plan.where) + " " +
                    rt.level + " " + shell_quote(dir.string());
  if (rt.capture) {
    std::string list;
    for (const Step* s : steps_of(plan, Reading::graph)) {
      const auto it = chain.find(s->writes);
      if (it == chain.end() || !it->second.numbers) continue;
      if (std::any_of(plan.model.graph.outputs.begin(), plan.model.graph.outputs.end(),
                      [&](const ValueInfo& o) { return o.name == s->writes; }))
        continue;
      list += (list.empty() ? "" : ",") + s->writes + ":" + std::to_string(it->second.elem_type);
    }
    if (!list.empty()) cmd += " --capture " + shell_quote(list);
  }
  int index = 0;
  for (const ValueInfo& in : plan.model.graph.inputs) {
    const fs::path file = dir / ("in" + std::to_string(index++) + ".npy");
    write_npy(file, *inputs.at(in.name).numbers);
    cmd += " " + shell_quote(in.name + "=" + file.string());
  }
  const fs::path answer = dir / "answer.json", errors = dir / "stderr.txt";
  cmd += " >" + shell_quote(answer.string()) + " 2>" + shell_quote(errors.string());
  const int status = std::system(cmd.c_str());
  p.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (status != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    p.run.status = "failed";
    p.run.note = code == 124 ? "timed out after " +
                                   std::to_string(static_cast<long>(timeout_seconds > 0 ? timeout_seconds : 600)) + " s"
                             : "exit status " + std::to_string(code) + ": " + tail_of(errors, 600);
    return p;
  }
  p.values = inputs;
  try {
    const auto j = nlohmann::json::parse(std::ifstream(answer));
    for (const auto& v : j.at("values")) {
      const std::string name = v.at("name");
      Tensor t = read_npy(v.at("file").get<std::string>());
      Value val;
      val.shape = t.shape();
      val.numbers = std::move(t);
      const auto it = chain.find(name);
      if (it != chain.end()) val.elem_type = it->second.elem_type;
      p.values[name] = std::move(val);
    }
    p.run.note = "ONNX Runtime " + j.value("ort_version", std::string("?")) + ", graph optimization level " + rt.level +
                 (rt.capture ? ", every step's value captured" : ", compared at the model's outputs only");
  } catch (const std::exception& e) {
    p.run.status = "failed";
    p.run.note = std::string("its answer could not be read: ") + e.what();
    return p;
  }
  for (const Step* s : steps_of(plan, Reading::graph))
    if (s->kind != Step::Kind::float_op && p.values.count(s->writes)) ++p.run.steps_run;
  return p;
}

}  // namespace qc::onnx
