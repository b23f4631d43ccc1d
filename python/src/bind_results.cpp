// The result model (reports/result.hpp) as Python objects, histograms as numpy arrays, and the
// report writers (reports/writers.hpp). Objects read from a report refer into it (no copies).
#include "common.hpp"
#include "harness/runner.hpp"
#include "qconform/error.hpp"
#include "reports/reader.hpp"
#include "reports/result.hpp"
#include "reports/writers.hpp"

#include <pybind11/stl/filesystem.h>

#include <nlohmann/json.hpp>

namespace qcpy {

namespace {

template <std::size_t N>
py::array_t<std::int64_t> int_array(const std::array<std::int64_t, N>& a) {
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(N));
  for (std::size_t i = 0; i < N; ++i) out.mutable_data()[i] = a[i];
  return out;
}

std::filesystem::path path_arg(const py::handle& h) {
  return py::str(py::module_::import("os").attr("fspath")(h)).cast<std::string>();
}

}  // namespace

void bind_results(py::module_& m) {
  bind_enum<qc::Verdict>(m, "Verdict", "A (case, backend) verdict: PASS, FAIL, XFAIL, XPASS, SKIP, CRASH, TIMEOUT.");

  py::class_<qc::ElementDiff>(m, "ElementDiff", "One element a backend got wrong, with its operands and exact value.")
      .def_readonly("index", &qc::ElementDiff::index)
      .def_readonly("coords", &qc::ElementDiff::coords)
      .def_readonly("input", &qc::ElementDiff::input)
      .def_readonly("expected", &qc::ElementDiff::expected)
      .def_readonly("actual", &qc::ElementDiff::actual)
      .def_readonly("delta", &qc::ElementDiff::delta)
      .def_readonly("exact", &qc::ElementDiff::exact)
      .def_readonly("label", &qc::ElementDiff::label)
      .def_readonly("causes", &qc::ElementDiff::causes)
      .def("__repr__", [](const qc::ElementDiff& d) {
        return "<ElementDiff [" + std::to_string(d.index) + "] expected " + d.expected + ", actual " + d.actual +
               ", delta " + std::to_string(d.delta) + ">";
      });

  py::class_<qc::CauseCount>(m, "CauseCount", "A single policy change that reproduces some mismatching elements.")
      .def_readonly("cause", &qc::CauseCount::cause)
      .def_readonly("description", &qc::CauseCount::description)
      .def_readonly("count", &qc::CauseCount::count)
      .def_readonly("per_channel", &qc::CauseCount::per_channel)
      .def_readonly("kind", &qc::CauseCount::kind)
      .def_readonly("matches_sampled", &qc::CauseCount::matches_sampled)
      .def_readonly("matches_broken", &qc::CauseCount::matches_broken)
      .def_readonly("mismatches_sampled", &qc::CauseCount::mismatches_sampled,
                    "0: count is over every mismatch; else over this many sampled")
      .def("__repr__",
           [](const qc::CauseCount& c) { return "<CauseCount " + c.cause + ": " + std::to_string(c.count) + ">"; });

  py::class_<qc::Metrics>(m, "Metrics", "What the comparison measured for one output against the spec.")
      .def_readonly("unit", &qc::Metrics::unit)
      .def_readonly("elements", &qc::Metrics::elements)
      .def_readonly("compared", &qc::Metrics::compared)
      .def_readonly("unspecified", &qc::Metrics::unspecified)
      .def_readonly("exact", &qc::Metrics::exact)
      .def_property_readonly("mismatches", &qc::Metrics::mismatches)
      .def_property_readonly(
          "histogram", [](const qc::Metrics& x) { return int_array(x.histogram); },
          "Counts of |delta| = 0, 1, 2, 3, >= 4 (in `unit`), as an int64 array.")
      .def_readonly("max_abs", &qc::Metrics::max_abs)
      .def_readonly("signed_sum", &qc::Metrics::signed_sum)
      .def_readonly("signed_zero_mismatches", &qc::Metrics::signed_zero_mismatches)
      .def_readonly("has_to_exact", &qc::Metrics::has_to_exact)
      .def_property_readonly("histogram_to_exact",
                             [](const qc::Metrics& x) -> py::object {
                               if (!x.has_to_exact) return py::none();
                               return int_array(x.histogram_to_exact);
                             })
      .def_readonly("max_to_exact", &qc::Metrics::max_to_exact)
      .def_property_readonly("label_total", [](const qc::Metrics& x) { return int_array(x.label_total); })
      .def_property_readonly("label_mismatch", [](const qc::Metrics& x) { return int_array(x.label_mismatch); })
      .def_property_readonly(
          "labels",
          [](const qc::Metrics& x) {
            py::dict d;
            for (qc::Label l : qc::table_values<qc::Label>()) {
              const auto i = static_cast<std::size_t>(l);
              py::dict e;
              e["total"] = x.label_total[i];
              e["mismatched"] = x.label_mismatch[i];
              d[py::str(std::string(qc::name(l)))] = e;
            }
            return d;
          },
          "Per label: {'total': n, 'mismatched': m}.")
      .def_readonly("worst", &qc::Metrics::worst);

  py::class_<qc::AgreementCheck>(m, "AgreementCheck",
                                 "A case's agreement statement (same_outputs_as, differs_from) checked on the "
                                 "oracle's outputs or on one backend's.")
      .def_readonly("assertion", &qc::AgreementCheck::assertion)
      .def_readonly("other", &qc::AgreementCheck::other)
      .def_property_readonly(
          "stated",
          [](const qc::AgreementCheck& a) -> py::object {
            return a.stated < 0 ? py::object(py::none()) : py::object(py::int_(a.stated));
          },
          "differs_from: the number of differing elements the case states (None: any number but 0).")
      .def_property_readonly(
          "status", [](const qc::AgreementCheck& a) { return std::string(qc::name(a.status)); },
          "'holds', 'broken' or 'unchecked'.")
      .def_readonly("elements", &qc::AgreementCheck::elements)
      .def_readonly("differing", &qc::AgreementCheck::differing)
      .def_readonly("first_differing", &qc::AgreementCheck::first_differing)
      .def_readonly("reason", &qc::AgreementCheck::reason)
      .def("__repr__", [](const qc::AgreementCheck& a) { return "<AgreementCheck " + a.reason + ">"; });

  py::class_<qc::BackendResult>(m, "BackendResult", "One backend's result on one case.")
      .def_readonly("backend", &qc::BackendResult::backend)
      .def_readonly("claim", &qc::BackendResult::claim)
      .def_readonly("expectation", &qc::BackendResult::expectation)
      .def_readonly("verdict", &qc::BackendResult::verdict)
      .def_readonly("reason", &qc::BackendResult::reason)
      .def_readonly("metrics", &qc::BackendResult::metrics)
      .def_readonly("claim_mismatches", &qc::BackendResult::claim_mismatches)
      .def_readonly("causes", &qc::BackendResult::causes)
      .def_readonly("unexplained", &qc::BackendResult::unexplained)
      .def_readonly("unexplained_sampled", &qc::BackendResult::unexplained_sampled)
      .def_readonly("fingerprint", &qc::BackendResult::fingerprint)
      .def_readonly("reproducer", &qc::BackendResult::reproducer)
      .def_readonly("reproduce_command", &qc::BackendResult::reproduce_command)
      .def_readonly("agreements", &qc::BackendResult::agreements)
      .def_readonly("seconds", &qc::BackendResult::seconds)
      .def("__repr__", [](const qc::BackendResult& b) {
        return "<BackendResult " + b.backend + " " + std::string(qc::name(b.verdict)) + ": " + b.reason + ">";
      });

  py::class_<qc::CaseResult>(m, "CaseResult", "Every backend's result on one case.")
      .def_readonly("id", &qc::CaseResult::id)
      .def_readonly("suite", &qc::CaseResult::suite)
      .def_readonly("name", &qc::CaseResult::name)
      .def_readonly("description", &qc::CaseResult::description)
      .def_readonly("file", &qc::CaseResult::file)
      .def_readonly("line", &qc::CaseResult::line)
      .def_readonly("op", &qc::CaseResult::op)
      .def_readonly("spec", &qc::CaseResult::spec)
      .def_readonly("spec_description", &qc::CaseResult::spec_description)
      .def_readonly("shape", &qc::CaseResult::shape)
      .def_readonly("input_dtype", &qc::CaseResult::input_dtype)
      .def_readonly("output_dtype", &qc::CaseResult::output_dtype)
      .def_readonly("granularity", &qc::CaseResult::granularity)
      .def_readonly("operands_from", &qc::CaseResult::operands_from)
      .def_readonly("agreements", &qc::CaseResult::agreements)
      .def_readonly("backends", &qc::CaseResult::backends)
      .def(
          "backend",
          [](const qc::CaseResult& c, const std::string& name) -> const qc::BackendResult& {
            for (const qc::BackendResult& b : c.backends)
              if (b.backend == name) return b;
            throw py::key_error("no result for backend '" + name + "' in case " + c.id);
          },
          py::return_value_policy::reference_internal, py::arg("name"))
      .def("__repr__", [](const qc::CaseResult& c) { return "<CaseResult " + c.id + ">"; });

  py::class_<qc::RunMetadata>(m, "RunMetadata", "Where and how a run ran.")
      .def_readonly("tool_version", &qc::RunMetadata::tool_version)
      .def_readonly("git_revision", &qc::RunMetadata::git_revision)
      .def_readonly("compiler", &qc::RunMetadata::compiler)
      .def_readonly("host", &qc::RunMetadata::host)
      .def_readonly("cpu", &qc::RunMetadata::cpu)
      .def_readonly("started_at", &qc::RunMetadata::started_at)
      .def_readonly("cpu_features", &qc::RunMetadata::cpu_features)
      .def_readonly("backends", &qc::RunMetadata::backends)
      .def_readonly("backend_facts", &qc::RunMetadata::backend_facts)
      .def_readonly("command_line", &qc::RunMetadata::command_line)
      .def_readonly("shard", &qc::RunMetadata::shard)
      .def_readonly("seconds", &qc::RunMetadata::seconds);

  py::class_<qc::RunReport>(m, "RunReport", py::dynamic_attr(),
                            "A run: metadata and every case's results. `outputs` holds the backends' output arrays "
                            "by (case id, backend) when run with keep_outputs=True.")
      .def_readonly("meta", &qc::RunReport::meta)
      .def_readonly("cases", &qc::RunReport::cases)
      .def("verdict_counts", &qc::RunReport::verdict_counts)
      .def_property_readonly("exit_code", &qc::exit_code,
                             "The CLI's exit status: 1 on FAIL/XPASS/CRASH/TIMEOUT or an agreement the oracle's "
                             "outputs break, 77 if nothing ran, else 0.")
      .def(
          "result",
          [](const qc::RunReport& r, const std::string& case_id,
             const std::string& backend) -> const qc::BackendResult& {
            for (const qc::CaseResult& c : r.cases)
              if (c.id == case_id)
                for (const qc::BackendResult& b : c.backends)
                  if (b.backend == backend) return b;
            throw py::key_error("no result for (" + case_id + ", " + backend + ")");
          },
          py::return_value_policy::reference_internal, py::arg("case_id"), py::arg("backend"))
      .def(
          "to_json",
          [](const qc::RunReport& r) { return py::module_::import("json").attr("loads")(qc::to_json(r).dump()); },
          "The JSON report (reports/report.schema.json) as a dict.")
      .def("html", &qc::render_html, "The self-contained HTML report.")
      .def("junit", &qc::render_junit, "JUnit XML.")
      .def(
          "write",
          [](const qc::RunReport& r, const py::handle& dir) {
            const std::filesystem::path d = path_arg(dir);
            std::filesystem::create_directories(d);
            qc::write_reports(r, d);
          },
          py::arg("dir"), "Writes DIR/report.json, DIR/report.html and DIR/report.junit.xml (each atomically).")
      .def(
          "write_json",
          [](const qc::RunReport& r, const py::handle& path) {
            qc::write_file_atomic(path_arg(path), qc::to_json(r).dump(2) + "\n");
          },
          py::arg("path"))
      .def(
          "write_html",
          [](const qc::RunReport& r, const py::handle& path) {
            qc::write_file_atomic(path_arg(path), qc::render_html(r));
          },
          py::arg("path"))
      .def("__repr__", [](const qc::RunReport& r) {
        std::string s = "<RunReport " + std::to_string(r.cases.size()) + " cases:";
        for (const auto& [v, n] : r.verdict_counts()) s += " " + std::to_string(n) + " " + v;
        return s + ">";
      });

  m.def(
      "load_report", [](const py::handle& path) { return qc::load_report(path_arg(path)); }, py::arg("path"),
      "Reads a report.json back into a RunReport.");
}

}  // namespace qcpy
