// JUnit XML, the format CI systems (Jenkins, GitLab, GitHub test reporters) read: one
// <testsuite> per case suite, one <testcase> per (case, backend); for a model run (qconform model)
// one <testsuite> "model NAME" per model, with a <testcase> per step (failed where a run computed
// the step otherwise than the oracle's chain, the message naming each such run, its difference and
// the leading cause) and one per run (failed where the run failed).
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace qc {
namespace {

std::string xml(const std::string& s) { return xml_escape(s); }

// "1 LSB" for integer outputs, else the real difference in six significant digits.
std::string step_run_max(const ModelStepRun& r) {
  if (r.max_lsb > 0) return std::to_string(r.max_lsb) + " LSB";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", r.max_abs);
  return buf;
}

struct ModelSuite {
  std::string name;
  int tests = 0, failures = 0;
  double time = 0;
  std::ostringstream body;
};

// One model's testsuite: a testcase per step, then one per run.
void model_suite(const ModelView& v, ModelSuite& s) {
  s.name = "model " + v.name;
  const std::string classname = xml("model." + v.name);
  for (const ModelStep& step : v.steps) {
    ++s.tests;
    std::string message;
    for (const ModelStepRun& r : step.runs) {
      if (r.differing <= 0) continue;
      message += (message.empty() ? "" : "; ") + r.run + (r.computed ? "" : " (by the oracle)") + ": " +
                 std::to_string(r.differing) + " of " + std::to_string(r.elements) + " differ, max " + step_run_max(r) +
                 (r.cause.empty() ? "" : ", cause " + r.cause);
    }
    s.body << "    <testcase classname=\"" << classname << "\" name=\"" << xml(step.name) << "\" time=\"0\">";
    if (!message.empty()) {
      ++s.failures;
      s.body << "<failure type=\"DIFFERS\" message=\"" << xml(message) << "\">" << xml(message) << "</failure>";
    }
    s.body << "</testcase>\n";
  }
  for (const ModelRun& r : v.runs) {
    ++s.tests;
    s.time += r.seconds;
    s.body << "    <testcase classname=\"" << classname << "\" name=\"" << xml("run " + r.name) << "\" time=\""
           << r.seconds << "\">";
    if (r.status == "failed") {
      ++s.failures;
      const std::string message = r.note.empty() ? "the run failed" : r.note;
      s.body << "<failure type=\"FAILED\" message=\"" << xml(message) << "\">" << xml(message) << "</failure>";
    }
    s.body << "</testcase>\n";
  }
}

}  // namespace

std::string render_junit(const RunReport& r) {
  struct Counts {
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    double time = 0;
    std::ostringstream body;
  };
  std::map<std::string, Counts> suites;
  for (const CaseResult& c : r.cases) {
    Counts& s = suites[c.suite];
    for (const BackendResult& b : c.backends) {
      ++s.tests;
      s.time += b.seconds;
      s.body << "    <testcase classname=\"" << xml(c.suite + "." + b.backend) << "\" name=\"" << xml(c.name)
             << "\" time=\"" << b.seconds << "\" file=\"" << xml(c.file) << "\" line=\"" << c.line << "\">";
      switch (b.verdict) {
        case Verdict::pass:
        case Verdict::xfail:
          break;  // an accepted, unchanged known mismatch passes the gate
        case Verdict::skip:
          ++s.skipped;
          s.body << "<skipped message=\"" << xml(b.reason) << "\"/>";
          break;
        case Verdict::fail:
        case Verdict::xpass:
          ++s.failures;
          s.body << "<failure type=\"" << name(b.verdict) << "\" message=\"" << xml(b.reason) << "\">" << xml(b.reason)
                 << "</failure>";
          break;
        case Verdict::crash:
        case Verdict::timeout:
          ++s.errors;
          s.body << "<error type=\"" << name(b.verdict) << "\" message=\"" << xml(b.reason) << "\"/>";
          break;
      }
      s.body << "</testcase>\n";
    }
  }
  std::vector<ModelSuite> models(r.models.size());
  for (std::size_t i = 0; i < r.models.size(); ++i) model_suite(r.models[i], models[i]);
  std::ostringstream o;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const auto& [_, s] : suites) tests += s.tests, failures += s.failures, errors += s.errors, skipped += s.skipped;
  for (const ModelSuite& m : models) tests += m.tests, failures += m.failures;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"qconform\" tests=\"" << tests << "\" failures=\""
    << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"" << r.meta.seconds << "\">\n";
  for (const auto& [name_, s] : suites) {
    o << "  <testsuite name=\"" << xml(name_) << "\" tests=\"" << s.tests << "\" failures=\"" << s.failures
      << "\" errors=\"" << s.errors << "\" skipped=\"" << s.skipped << "\" time=\"" << s.time << "\">\n"
      << s.body.str() << "  </testsuite>\n";
  }
  for (const ModelSuite& m : models)
    o << "  <testsuite name=\"" << xml(m.name) << "\" tests=\"" << m.tests << "\" failures=\"" << m.failures
      << "\" errors=\"0\" skipped=\"0\" time=\"" << m.time << "\">\n"
      << m.body.str() << "  </testsuite>\n";
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace qc
