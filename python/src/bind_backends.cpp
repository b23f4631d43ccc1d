// Backends: the built-in ones, backends written in Python (a pybind11 trampoline of qc::Backend),
// running cases through qc::run_cases, the oracle's reference for an op, element-wise comparison,
// and policy inference (qc::infer).
//
// GIL: run_cases and infer release the GIL while the harness runs; a Python backend's methods and
// the progress callback take it back for each call (PYBIND11_OVERRIDE does, and so do the manual
// overrides here).
#include "backends/exec/exec_backend.hpp"
#include "backends/registry.hpp"
#include "common.hpp"
#include "harness/baseline.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/explain.hpp"
#include "harness/infer.hpp"
#include "harness/runner.hpp"
#include "models/model_job.hpp"
#include "qconform/error.hpp"
#include "qconform/exec_runner.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl/filesystem.h>

#include <cmath>
#include <map>
#include <memory>
#include <unordered_set>

namespace qcpy {

using qc::InputError;

namespace {

// The cases of the run in progress on this thread: a Python backend's op arrays view them (no
// copy), kept alive by `owner` for as long as Python holds the arrays. An op that is not one of them
// (an infer probe, a reproducer's unit) is copied for Python.
struct RunScope {
  std::shared_ptr<const std::vector<qc::Suite>> suites;
  py::object owner;
  std::unordered_set<const void*> ops;
};
thread_local RunScope* t_scope = nullptr;

py::handle owner_for(const qc::OpRequest& op) {
  if (t_scope && t_scope->ops.contains(&op)) return t_scope->owner;
  return py::handle();
}

std::string python_error_text(const py::error_already_set& e) {
  return py::str(e.type().attr("__name__")).cast<std::string>() + ": " + py::str(e.value()).cast<std::string>();
}

// None (available), an Availability, a bool, (bool, reason), or a reason string (not available).
// Anything else is the backend's error, named so.
qc::Availability availability_from(const py::object& r, const std::string& backend, const char* method) {
  if (r.is_none()) return {};
  if (py::isinstance<qc::Availability>(r)) return r.cast<qc::Availability>();
  if (py::isinstance<py::bool_>(r)) return {r.cast<bool>(), r.cast<bool>() ? "" : "not supported"};
  if (py::isinstance<py::str>(r)) return {false, r.cast<std::string>()};
  if (py::isinstance<py::tuple>(r) && py::len(r) == 2 && py::isinstance<py::bool_>(r[py::int_(0)]) &&
      py::isinstance<py::str>(r[py::int_(1)]))
    return {r[py::int_(0)].cast<bool>(), r[py::int_(1)].cast<std::string>()};
  throw InputError("backend '" + backend + "': " + method + " returned " +
                   py::repr(r).cast<std::string>().substr(0, 80) +
                   "; it must return None, a bool, (bool, reason), a reason string or an Availability");
}

// A backend written in Python: its methods are the Python class's.
class PyBackend : public qc::Backend {
 public:
  std::string name() const override { PYBIND11_OVERRIDE_PURE(std::string, qc::Backend, name, ); }
  std::string description() const override { PYBIND11_OVERRIDE_PURE(std::string, qc::Backend, description, ); }
  std::string claim() const override { PYBIND11_OVERRIDE_PURE(std::string, qc::Backend, claim, ); }
  std::map<std::string, std::string> facts() const override {
    using Facts = std::map<std::string, std::string>;
    PYBIND11_OVERRIDE(Facts, qc::Backend, facts, );
  }

  qc::Availability availability() const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const qc::Backend*>(this), "availability");
    if (!f) return {};
    try {
      return availability_from(f(), name(), "availability()");
    } catch (py::error_already_set& e) {
      throw std::runtime_error(python_error_text(e));
    }
  }

  qc::Availability supports(const qc::OpRequest& op) const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const qc::Backend*>(this), "supports");
    if (!f) return {};  // a Python backend without supports() takes every op
    try {
      return availability_from(f(op_to_python(op, owner_for(op))), name(), "supports()");
    } catch (py::error_already_set& e) {
      throw std::runtime_error(python_error_text(e));
    }
  }

  // The op goes to Python as its op class with numpy views; the array that comes back becomes a
  // tensor of the op's output format (its bits when it has the format's numpy type, else its values,
  // which must be exact in the format).
  qc::Tensor run(const qc::OpRequest& op) override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const qc::Backend*>(this), "run");
    if (!f) throw std::runtime_error("a Python backend must define run(op)");
    try {
      py::object out = f(op_to_python(op, owner_for(op)));
      if (out.is_none()) throw InputError("run(op) returned None, not an array");
      return to_tensor(out, qc::op_output_dtype(op), "output");
    } catch (py::error_already_set& e) {
      throw std::runtime_error(python_error_text(e));
    }
  }
};

std::unique_ptr<qc::Backend> builtin(const std::string& name) { return qc::make_backend(name); }

qc::RunReport report_arg(const py::handle& h) {
  if (py::isinstance<qc::RunReport>(h)) return h.cast<qc::RunReport>();
  return qc::load_report(py::str(py::module_::import("os").attr("fspath")(h)).cast<std::string>());
}

// A Python backend run in its own interpreter as an exec runner: `python -m qconform.exec
// MODULE:CLASS` with this interpreter's sys.path, so its faults (a segfault, an abort, a hang) stay
// in that process. The class is imported there and made with no arguments. A class defined in the
// main script is found through the script's file (imported as a module, as multiprocessing's spawn
// does).
std::unique_ptr<qc::Backend> isolated_python_backend(const py::handle& b, double timeout) {
  py::module_ os = py::module_::import("os");
  py::module_ sys = py::module_::import("sys");
  const py::handle cls = py::type::of(b);
  std::string module = py::str(cls.attr("__module__")).cast<std::string>();
  const std::string qualname = py::str(cls.attr("__qualname__")).cast<std::string>();
  const std::string name = b.cast<qc::Backend&>().name();
  std::vector<std::string> path;
  if (module == "__main__") {
    py::object main = py::module_::import("__main__");
    if (!py::hasattr(main, "__file__"))
      throw InputError("run_cases(isolate=True): backend '" + name + "' is of class " + qualname +
                       ", defined in an interactive __main__; define it in a module to run it isolated");
    const std::string file = py::str(main.attr("__file__")).cast<std::string>();
    const std::filesystem::path p = std::filesystem::absolute(file);
    module = p.stem().string();
    path.push_back(p.parent_path().string());
  }
  if (qualname.find("<locals>") != std::string::npos)
    throw InputError("run_cases(isolate=True): backend '" + name + "' is of class " + qualname +
                     ", defined inside a function; the exec runner imports the class, so define it at a module's top "
                     "level");
  // The package this module was loaded from comes first, then this interpreter's own path.
  py::object pkg = py::module_::import("qconform");
  path.push_back(py::str(os.attr("path").attr("dirname")(
                             os.attr("path").attr("dirname")(os.attr("path").attr("abspath")(pkg.attr("__file__")))))
                     .cast<std::string>());
  for (const py::handle& e : sys.attr("path")) {
    std::string s = py::str(e).cast<std::string>();
    path.push_back(s.empty() ? std::filesystem::current_path().string() : s);
  }
  std::string pythonpath;
  for (const std::string& s : path) pythonpath += (pythonpath.empty() ? "" : ":") + s;
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string exe = py::str(sys.attr("executable")).cast<std::string>();
  const std::string cmd = quote(exe) + " -m qconform.exec " + quote(module + ":" + qualname);
  std::unique_ptr<qc::Backend> e;
  {
    py::gil_scoped_release release;  // the runner's hello may take a while; nothing here needs Python
    e = std::make_unique<qc::ExecBackend>(cmd, timeout, pythonpath);
  }
  if (e->name() != name)
    throw InputError("run_cases(isolate=True): backend '" + name + "' reports the name '" + e->name() +
                     "' when made by " + module + ":" + qualname + "() in its own process");
  return e;
}

// Cases, suites, case files or folders, or a list of them, grouped into suites by suite name in
// order of first appearance.
std::vector<qc::Suite> suites_arg(const py::handle& h) {
  std::vector<qc::Suite> out;
  auto add_case = [&](const qc::Case& c) {
    for (qc::Suite& s : out)
      if (s.name == c.suite) {
        s.cases.push_back(c);
        return;
      }
    out.push_back(qc::Suite{c.suite, "", c.file, {c}, {}});
  };
  std::function<void(const py::handle&)> add = [&](const py::handle& x) {
    if (py::isinstance<qc::Case>(x)) {
      add_case(x.cast<const qc::Case&>());
    } else if (py::hasattr(x, "cases") && py::hasattr(x, "name") && !py::isinstance<py::str>(x)) {
      for (const py::handle& c : x.attr("cases")) add_case(c.cast<const qc::Case&>());
    } else if (py::isinstance<py::str>(x) || py::hasattr(x, "__fspath__")) {
      const std::string p = py::str(py::module_::import("os").attr("fspath")(x)).cast<std::string>();
      for (qc::Suite& s : qc::load_suites({p}))
        for (const qc::Case& c : s.cases) add_case(c);
    } else if (py::isinstance<py::iterable>(x)) {
      for (const py::handle& y : x) add(y);
    } else {
      throw InputError("run_cases: expected cases, suites, case files or folders");
    }
  };
  add(h);
  return out;
}

// The oracle's reference for an op, with the op it was evaluated from (its describe() refers to it).
struct PyReference {
  qc::OpRequest op;
  qc::Reference ref;
};

std::shared_ptr<PyReference> evaluate_arg(const py::handle& op_or_case, const py::handle& policy) {
  auto r = std::make_shared<PyReference>();
  if (py::isinstance<qc::Case>(op_or_case)) {
    const auto& c = op_or_case.cast<const qc::Case&>();
    if (!c.links.empty())
      throw InputError("case '" + c.name + "' takes its " + c.links.front().field + " from case '" +
                       c.links.front().producer +
                       "': its values exist only in a run; run it with that case (run_cases, keep_outputs=True)");
  }
  r->op = op_arg(op_or_case);
  qc::Spec spec;
  if (!policy.is_none())
    spec = spec_arg(policy);
  else if (py::isinstance<qc::Case>(op_or_case))
    spec = op_or_case.cast<const qc::Case&>().spec;
  else
    spec = *qc::find_preset("onnx");
  resolve_dynamic_rules(r->op, spec);
  {
    py::gil_scoped_release release;
    r->ref = qc::evaluate(r->op, spec);
  }
  return r;
}

// A backend's output compared element by element with the spec.
struct Comparison {
  qc::Metrics metrics;
  py::object expected, actual, delta, mismatch, labels;
};

Comparison compare_arrays(const std::shared_ptr<PyReference>& r, const py::handle& actual, int max_worst) {
  const qc::Reference& ref = r->ref;
  qc::Tensor a = to_tensor(actual, ref.expected.dtype(), "compare: actual");
  if (a.shape() != ref.expected.shape())
    throw InputError("compare: actual has shape " + qc::shape_str(a.shape()) + ", expected " +
                     qc::shape_str(ref.expected.shape()));
  Comparison c;
  c.metrics = qc::compare(ref, a, max_worst);
  const qc::DType t = ref.expected.dtype();
  std::vector<py::ssize_t> dims(a.shape().begin(), a.shape().end());
  py::array_t<std::int64_t> delta(dims);
  py::array_t<bool> mismatch(dims);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    std::int64_t d = 0;
    bool differs = false;
    if (ref.specified[static_cast<std::size_t>(i)]) {
      if (qc::is_float(t)) {
        const bool both_nan = std::isnan(a.get_double(i)) && std::isnan(ref.expected.get_double(i));
        differs = !both_nan && a.bits(i) != ref.expected.bits(i);
        d = qc::ulp_delta(t, ref.expected.bits(i), a.bits(i));
      } else {
        d = a.get_int(i) - ref.expected.get_int(i);
        differs = d != 0;
      }
    }
    delta.mutable_data()[i] = d;
    mismatch.mutable_data()[i] = differs;
  }
  c.expected = view(ref.expected, py::cast(r));
  c.actual = to_numpy(std::move(a));
  c.delta = delta;
  c.mismatch = mismatch;
  c.labels = labels_array(ref.labels, ref.expected.shape());
  return c;
}

}  // namespace

void bind_backends(py::module_& m) {
  py::class_<qc::Availability>(m, "Availability", "Whether a backend (or an op on it) runs, and why not.")
      .def(py::init([](bool available, const std::string& reason) {
             return qc::Availability{available, reason};
           }),
           py::arg("available") = true, py::arg("reason") = "")
      .def_readonly("available", &qc::Availability::available)
      .def_readonly("reason", &qc::Availability::reason)
      .def("__bool__", [](const qc::Availability& a) { return a.available; })
      .def("__repr__", [](const qc::Availability& a) {
        return a.available ? std::string("Availability(True)") : "Availability(False, '" + a.reason + "')";
      });

  py::class_<qc::Backend, PyBackend>(
      m, "Backend",
      "An implementation under test. Subclass it in Python and define name(), description(), claim() (a preset "
      "name) and run(op) -> numpy array; availability() and supports(op) are optional (return None/True, False, a "
      "reason string, (bool, reason) or an Availability). run() receives the op as its qconform op class with "
      "read-only numpy arrays and returns the output in the op's output format (output_dtype; bf16 as uint16 "
      "bits).")
      .def(py::init<>())
      .def("name", &qc::Backend::name)
      .def("description", &qc::Backend::description)
      .def("claim", &qc::Backend::claim)
      .def("availability", &qc::Backend::availability)
      .def("facts", &qc::Backend::facts)
      .def(
          "supports", [](qc::Backend& b, const py::handle& op) { return b.supports(op_arg(op)); }, py::arg("op"))
      .def(
          "run",
          [](qc::Backend& b, const py::handle& op) {
            qc::OpRequest r = op_arg(op);
            qc::Tensor t;
            {
              py::gil_scoped_release release;
              t = b.run(r);
            }
            return to_numpy(std::move(t));
          },
          py::arg("op"), "Runs an op (or a case's op) and returns the output array.")
      .def("__repr__", [](qc::Backend& b) { return "<Backend " + b.name() + ">"; });

  m.def(
      "backends",
      [] {
        std::vector<std::unique_ptr<qc::Backend>> v = qc::make_builtin_backends();
        return v;
      },
      "Every backend built into qconform (cpu-ref, the x86 kernels, ...), in a stable order.");
  m.def(
      "backend", &builtin, py::arg("name"),
      "A built-in backend by name, or a variant such as 'cpu-ref:tflite-reference' (cpu-ref claiming another preset).");

  m.def(
      "run_cases",
      [](const py::handle& cases, const py::handle& backends, int max_worst, bool attribute_causes,
         const py::handle& reproducer_dir, const py::handle& baseline, bool keep_outputs, const py::object& progress,
         bool isolate, double timeout, bool ignore_magnitude, int jobs) {
        if (timeout < 0) throw InputError("run_cases: timeout must be positive");
        if (timeout > 0) isolate = true;
        auto suites = std::make_shared<std::vector<qc::Suite>>(suites_arg(cases));
        // Backends: objects (Python or built-in) or names; default every built-in one.
        std::vector<std::unique_ptr<qc::Backend>> owned;
        std::vector<qc::Backend*> ptrs;
        py::list held;  // keeps Python backends alive during the run
        if (backends.is_none()) {
          owned = qc::make_builtin_backends();
          for (auto& b : owned) ptrs.push_back(b.get());
        } else {
          for (const py::handle& b : backends) {
            if (py::isinstance<py::str>(b)) {
              owned.push_back(builtin(b.cast<std::string>()));
              ptrs.push_back(owned.back().get());
            } else if (isolate && dynamic_cast<PyBackend*>(b.cast<qc::Backend*>()) != nullptr) {
              owned.push_back(isolated_python_backend(b, timeout));
              ptrs.push_back(owned.back().get());
            } else {
              held.append(b);
              ptrs.push_back(b.cast<qc::Backend*>());
            }
          }
        }
        // keep_outputs: (case id, backend) -> output, from the runner (a chained case's backends run on
        // a copy of its op with their own outputs of the earlier cases bound, so the op is no key).
        std::map<std::pair<std::string, std::string>, qc::Tensor> outputs;
        qc::RunOptions opt;
        if (keep_outputs)
          opt.on_output = [&outputs](const qc::Case& c, const qc::BackendResult& b, const qc::Tensor& t) {
            outputs.try_emplace({c.id(), b.backend}, t);
          };
        opt.max_worst = max_worst;
        opt.isolate = isolate;  // built-in backends: a forked child per call (Python ones are exec runners)
        opt.timeout_seconds = timeout;
        if (jobs < 0)
          throw InputError("run_cases: jobs must be 0 (one per core) or a count, got " + std::to_string(jobs));
        opt.jobs = jobs;
        opt.attribute_causes = attribute_causes;
        if (!reproducer_dir.is_none())
          opt.reproducer_dir = py::str(py::module_::import("os").attr("fspath")(reproducer_dir)).cast<std::string>();
        std::optional<qc::Baseline> base;
        if (!baseline.is_none()) {
          base = qc::load_baseline(py::str(py::module_::import("os").attr("fspath")(baseline)).cast<std::string>());
          base->ignore_magnitude = ignore_magnitude;
          opt.baseline = &*base;
        }
        if (!progress.is_none()) {
          // A pointer, not a copy: the callback may be copied while the GIL is released.
          const py::object* callback = &progress;
          opt.progress = [callback](const qc::CaseResult& c, const qc::BackendResult& b, std::size_t done,
                                    std::size_t total) {
            py::gil_scoped_acquire gil;
            (*callback)(py::cast(c, py::return_value_policy::copy), py::cast(b, py::return_value_policy::copy), done,
                        total);
          };
        }
        RunScope scope;
        scope.suites = suites;
        auto* keep = new std::shared_ptr<const std::vector<qc::Suite>>(suites);
        scope.owner =
            py::capsule(keep, [](void* p) { delete static_cast<std::shared_ptr<const std::vector<qc::Suite>>*>(p); });
        for (const qc::Suite& s : *suites)
          for (const qc::Case& c : s.cases) scope.ops.insert(&c.op);
        RunScope* previous = t_scope;
        t_scope = &scope;
        qc::RunReport report;
        try {
          py::gil_scoped_release release;
          report = qc::run_cases(*suites, ptrs, opt);
        } catch (...) {
          t_scope = previous;
          throw;
        }
        t_scope = previous;
        py::object result = py::cast(std::move(report));
        if (keep_outputs) {
          py::dict out;
          for (auto& [key, t] : outputs) out[py::make_tuple(key.first, key.second)] = to_numpy(std::move(t));
          result.attr("outputs") = out;
        }
        return result;
      },
      py::arg("cases"), py::arg("backends") = py::none(), py::arg("max_worst") = 10, py::arg("attribute_causes") = true,
      py::arg("reproducer_dir") = py::none(), py::arg("baseline") = py::none(), py::arg("keep_outputs") = false,
      py::arg("progress") = py::none(), py::arg("isolate") = false, py::arg("timeout") = 0.0,
      py::arg("ignore_magnitude") = false, py::arg("jobs") = 0,
      "Runs cases (Case objects, Suites, case files or folders) on backends (objects, Python or built-in, or names; "
      "default: every built-in backend) through the harness's runner: the same comparison, verdicts, causes, "
      "fingerprints and reproducers as `qconform run`. Returns a RunReport; with keep_outputs=True its `outputs` "
      "maps (case id, backend) to each output array. progress(case_result, backend_result, done, total) is called "
      "after each pair. isolate=True contains each backend's faults: a Python backend runs in its own "
      "interpreter as an exec runner (python -m qconform.exec MODULE:CLASS; its class must be importable and take "
      "no constructor arguments), a built-in one in a forked child per call; a crash becomes CRASH. timeout=S "
      "(seconds per call, implies isolate) makes a slower call TIMEOUT. With a baseline, a FAIL is known (XFAIL) when "
      "its "
      "elements and their signed distances are the ones recorded; ignore_magnitude=True matches the elements alone. "
      "jobs: backends run side by side on each case, this many at once (0: one per core; the report is the same).");

  m.def(
      "serve",
      [](qc::Backend& b) {
        py::gil_scoped_release release;
        return qc::exec::serve(b);
      },
      py::arg("backend"),
      "Serves a backend as an exec runner on this process's stdin/stdout (docs/integrate.md, exec protocol "
      "version 1) until the host says bye; returns the exit status. What the backend prints goes to stderr.");
  m.attr("EXEC_PROTOCOL_VERSION") = qc::exec::kVersion;

  m.def(
      "baseline",
      [](const py::handle& report, const py::handle& path, bool update) {
        const qc::RunReport r = report_arg(report);
        const std::string out = py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
        std::optional<qc::Baseline> previous;
        if (update && std::filesystem::exists(out)) previous = qc::load_baseline(out);
        const qc::Baseline b = qc::baseline_from(r, previous ? &*previous : nullptr);
        qc::save_baseline(b, out);
        return b.entries.size();
      },
      py::arg("report"), py::arg("path"), py::arg("update") = false,
      "Writes a baseline of the report's known mismatches (a RunReport or a report.json path) to `path`, as "
      "`qconform baseline` does (update=True keeps the entries of what the report did not run); returns the number "
      "of entries. Pass it to run_cases(..., baseline=path).");
  m.def(
      "gate",
      [](const py::handle& report) {
        const qc::RunReport r = report_arg(report);
        std::int64_t changes = qc::broken_oracle_agreements(r);
        for (const auto& c : r.cases)
          for (const auto& b : c.backends) changes += qc::is_change(b.verdict) ? 1 : 0;
        return changes;
      },
      py::arg("report"),
      "The number of changes against the baseline the run used, as `qconform run --gate` counts them (FAIL, XPASS, "
      "CRASH, TIMEOUT, and agreements the oracle's outputs break): 0 means the gate passes.");

  py::class_<PyReference, std::shared_ptr<PyReference>>(m, "Reference", "The oracle's answer to an op under a policy.")
      .def_property_readonly("expected",
                             [](py::object self) { return view(self.cast<PyReference&>().ref.expected, self); })
      .def_property_readonly("labels",
                             [](const PyReference& r) { return labels_array(r.ref.labels, r.ref.expected.shape()); })
      .def_property_readonly("specified",
                             [](const PyReference& r) {
                               std::vector<py::ssize_t> dims(r.ref.expected.shape().begin(),
                                                             r.ref.expected.shape().end());
                               py::array_t<bool> s(dims);
                               for (std::size_t i = 0; i < r.ref.specified.size(); ++i)
                                 s.mutable_data()[i] = r.ref.specified[i];
                               return s;
                             })
      .def_property_readonly("correctly_rounded",
                             [](py::object self) -> py::object {
                               const auto& r = self.cast<PyReference&>().ref;
                               if (!r.correctly_rounded) return py::none();
                               return view(*r.correctly_rounded, self);
                             })
      .def(
          "dot_product_check",
          [](const PyReference& r, const py::handle& actual) -> py::object {
            if (!r.ref.dot_product) return py::none();
            const qc::DotProductVerdict v =
                r.ref.dot_product(to_tensor(actual, r.ref.expected.dtype(), "dot_product_check: actual"));
            py::dict d;
            d["pass"] = v.pass;
            d["reason"] = v.reason;
            d["abs_limit"] = v.abs_limit;
            d["variance_limit"] = v.variance_limit;
            d["first_failure"] = v.first_failure;
            return d;
          },
          py::arg("actual"), "Weight-only GEMM: the TOSA dot-product check of an output (None for other ops).");
  m.def("evaluate", &evaluate_arg, py::arg("op"), py::arg("spec") = py::none(),
        "The oracle's reference for an op or case (spec: the case's, else 'onnx'): expected output, labels, which "
        "elements the spec defines, and the correctly rounded exact value for float outputs.");

  py::class_<Comparison>(m, "Comparison", "An output compared with the spec element by element.")
      .def_readonly("metrics", &Comparison::metrics)
      .def_readonly("expected", &Comparison::expected)
      .def_readonly("actual", &Comparison::actual)
      .def_readonly(
          "delta", &Comparison::delta,
          "actual - expected per element: LSB for integer outputs, signed ULP of the output format for floats "
          "(0 where the spec leaves the element open).")
      .def_readonly("mismatch", &Comparison::mismatch, "Where the output differs from the spec (NaN matches NaN).")
      .def_readonly("labels", &Comparison::labels);
  m.def(
      "compare",
      [](const py::handle& op_or_case, const py::handle& actual, const py::handle& policy, int max_worst) {
        return compare_arrays(evaluate_arg(op_or_case, policy), actual, max_worst);
      },
      py::arg("op"), py::arg("actual"), py::arg("spec") = py::none(), py::arg("max_worst") = 10,
      "Compares an output array with the oracle's reference, as the runner does: metrics and per-element deltas.");

  py::class_<qc::InferFinding>(m, "InferFinding", "One policy dimension and the values that reproduce a backend.")
      .def_readonly("op", &qc::InferFinding::op)
      .def_readonly("dimension", &qc::InferFinding::dimension)
      .def_readonly("values", &qc::InferFinding::values)
      .def_readonly("description", &qc::InferFinding::description)
      .def_readonly("unexplained", &qc::InferFinding::unexplained)
      .def_readonly("probes", &qc::InferFinding::probes)
      .def("__repr__", [](const qc::InferFinding& f) {
        std::string v;
        for (const auto& x : f.values) v += (v.empty() ? "" : ", ") + x;
        return "<InferFinding " + f.op + "." + f.dimension + " = {" + v + "}>";
      });
  py::class_<qc::InferReport>(m, "InferReport", "What policy a backend behaves like.")
      .def_readonly("backend", &qc::InferReport::backend)
      .def_readonly("ops", &qc::InferReport::ops)
      .def_readonly("skipped", &qc::InferReport::skipped)
      .def_readonly("probes", &qc::InferReport::probes)
      .def_readonly("presets", &qc::InferReport::presets)
      .def_readonly("findings", &qc::InferReport::findings)
      .def_readonly("outliers", &qc::InferReport::outliers)
      .def_readonly("summary", &qc::InferReport::summary)
      .def(
          "finding",
          [](const qc::InferReport& r, const std::string& op, const std::string& dimension) -> py::object {
            for (const qc::InferFinding& f : r.findings)
              if (f.op == op && f.dimension == dimension) return py::cast(f);
            return py::none();
          },
          py::arg("op"), py::arg("dimension"), "The finding for (op, dimension), or None.")
      .def("__repr__", [](const qc::InferReport& r) { return "<InferReport " + r.backend + ": " + r.summary + ">"; });
  m.def(
      "explain",
      [](const qc::Case& c, const py::handle& index, const py::handle& backend, bool isolate, double timeout) {
        if (!c.links.empty())
          throw InputError("explain: case " + c.id() +
                           " takes operands from other cases; explain it from its case file (qconform explain FILE "
                           "--case NAME), which inlines their outputs");
        const qc::Shape shape = qc::op_output_shape(c.op);
        std::int64_t i = 0;
        if (py::isinstance<py::int_>(index)) {
          i = qc::parse_element_index(std::to_string(index.cast<std::int64_t>()), shape, "explain: index");
        } else {
          std::string coords;
          for (const py::handle& x : index)
            coords += (coords.empty() ? "" : ",") + std::to_string(x.cast<std::int64_t>());
          i = qc::parse_element_index(coords, shape, "explain: index");
        }
        std::unique_ptr<qc::Backend> owned;
        qc::Backend* b = nullptr;
        if (py::isinstance<py::str>(backend)) {
          owned = builtin(backend.cast<std::string>());
          b = owned.get();
        } else if (!backend.is_none()) {
          b = backend.cast<qc::Backend*>();
        }
        qc::CallPolicy call{isolate || timeout > 0, timeout};
        qc::ElementExplanation e;
        {
          py::gil_scoped_release release;
          e = qc::explain_element(c, i, b, call);
        }
        py::object r = json_to_python(qc::to_json(e));
        r["text"] = qc::to_text(e);
        return r;
      },
      py::arg("case"), py::arg("index"), py::arg("backend") = py::none(), py::arg("isolate") = false,
      py::arg("timeout") = 0.0,
      "One output element of a case, step by step (docs/oracle.md \"Explain an element of a case\"): index is a flat "
      "index or a tuple of coordinates; backend (a name or an object) runs the case and its value is explained by "
      "the run's causes or its claim. Returns a dict: inputs, spec (its derivation: steps, result, label), backend "
      "(value, matches_spec), backend_policy (the derivation that reproduces it), parting (where the two part) and "
      "text (what `qconform explain` prints).");
  m.def(
      "infer",
      [](const py::handle& backend, std::uint64_t seed, std::int64_t elements) {
        std::unique_ptr<qc::Backend> owned;
        qc::Backend* b = nullptr;
        if (py::isinstance<py::str>(backend)) {
          owned = builtin(backend.cast<std::string>());
          b = owned.get();
        } else {
          b = backend.cast<qc::Backend*>();
        }
        py::gil_scoped_release release;
        return qc::infer(*b, qc::InferOptions{seed, elements});
      },
      py::arg("backend"), py::arg("seed") = 1, py::arg("elements") = 4096,
      "Policy inference (harness/infer.hpp): probes a backend (an object or a built-in name) with discriminating "
      "inputs and reports which presets and which single policy choices reproduce all its outputs.");

  // qconform.model (docs/models.md "From Python"): a model read, lowered and run on the oracle; its node
  // cases run with run_cases, then judge() drives each backend through the graph.
  using Prepared = qc::onnx::PreparedModel;
  py::class_<Prepared, std::shared_ptr<Prepared>>(m, "PreparedModel",
                                                  "A quantized ONNX model lowered to its node cases, with the oracle's "
                                                  "run of the whole graph (qconform.prepare_model).")
      .def_property_readonly("name", [](const Prepared& p) { return p.suite.name; })
      .def_property_readonly("format", [](const Prepared& p) { return p.plan.format; })
      .def_property_readonly(
          "cases",
          [](const Prepared& p) {
            py::list l;
            for (const qc::Case& c : p.suite.cases) l.append(py::cast(c, py::return_value_policy::copy));
            return l;
          },
          "The node cases (isolated mode): run them with run_cases.")
      .def(
          "judge",
          [](const Prepared& p, const py::handle& backends, const qc::RunReport& report) {
            std::vector<std::unique_ptr<qc::Backend>> owned;
            std::vector<qc::Backend*> ptrs;
            if (backends.is_none()) {
              owned = qc::make_builtin_backends();
              for (auto& b : owned) ptrs.push_back(b.get());
            } else {
              for (const py::handle& b : backends) {
                if (py::isinstance<py::str>(b)) {
                  owned.push_back(builtin(b.cast<std::string>()));
                  ptrs.push_back(owned.back().get());
                } else {
                  ptrs.push_back(b.cast<qc::Backend*>());
                }
              }
            }
            qc::RunReport r;
            r.models.push_back(qc::onnx::judge_model(p, ptrs, {}, 0, &report.cases));
            return json_to_python(qc::to_json(r)["models"][0]);
          },
          py::arg("backends") = py::none(), py::arg("report"),
          "The model view (as report.json's models[] entry): each backend (names or objects; default every "
          "built-in one) driven through the graph and compared with the oracle's chain; `report` (of run_cases on "
          "`cases`) gives each differing step its cause.");
  m.def(
      "prepare_model",
      [](const py::handle& path, const std::map<std::string, std::string>& inputs, const py::handle& labels,
         const std::string& spec) {
        qc::onnx::ModelJob job;
        const auto fspath = [](const py::handle& h) {
          return py::str(py::module_::import("os").attr("fspath")(h)).cast<std::string>();
        };
        const std::string file = fspath(path);
        if (qc::onnx::is_model_file(file))
          job = qc::onnx::load_model_file(file);
        else
          job.model = file;
        for (const auto& [k, v] : inputs) job.inputs[k] = v;
        if (!labels.is_none()) job.labels = fspath(labels);
        if (!spec.empty()) {
          job.spec = spec;
          job.spec_from = "spec";
        }
        return std::make_shared<Prepared>(qc::onnx::prepare_model(job));
      },
      py::arg("path"), py::arg("inputs") = std::map<std::string, std::string>{}, py::arg("labels") = py::none(),
      py::arg("spec") = "",
      "Reads a quantized ONNX model (or a model file NAME.model.json), lowers it and runs it on the oracle: "
      "inputs maps graph inputs to .npy files; labels is a .npy of classes. InputError for a bad model or input.");
}

}  // namespace qcpy
