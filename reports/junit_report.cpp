// JUnit XML, the format CI systems (Jenkins, GitLab, GitHub test reporters) read: one
// <testsuite> per case suite, one <testcase> per (case, backend).
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <map>
#include <sstream>

namespace qc {
namespace {

std::string xml(const std::string& s) { return xml_escape(s); }

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
  std::ostringstream o;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const auto& [_, s] : suites) tests += s.tests, failures += s.failures, errors += s.errors, skipped += s.skipped;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"qconform\" tests=\"" << tests << "\" failures=\""
    << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"" << r.meta.seconds << "\">\n";
  for (const auto& [name_, s] : suites) {
    o << "  <testsuite name=\"" << xml(name_) << "\" tests=\"" << s.tests << "\" failures=\"" << s.failures
      << "\" errors=\"" << s.errors << "\" skipped=\"" << s.skipped << "\" time=\"" << s.time << "\">\n"
      << s.body.str() << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace qc
