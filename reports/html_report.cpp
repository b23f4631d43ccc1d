// A self-contained HTML report: inline CSS and SVG, no scripts, no network.
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace qc {
namespace {

std::string esc(const std::string& s) { return xml_escape(s); }

std::string anchor(const std::string& id) {
  std::string a = "case-";
  for (char c : id) a += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return a;
}

std::string verdict_class(Verdict v) {
  std::string n(name(v));
  std::transform(n.begin(), n.end(), n.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  return "v-" + n;
}

// A small inline SVG bar chart of the |delta| histogram.
std::string histogram_svg(const std::array<std::int64_t, 5>& h, const std::string& title) {
  const char* labels[] = {"0", "1", "2", "3",
                          "\xE2\x89\xA5"
                          "4"};
  std::int64_t mx = 1;
  for (auto c : h) mx = std::max(mx, c);
  std::ostringstream o;
  o << "<svg class=\"hist\" width=\"260\" height=\"100\" role=\"img\" aria-label=\"" << esc(title) << "\">"
    << "<text x=\"130\" y=\"96\" text-anchor=\"middle\">" << esc(title) << "</text>";
  for (int i = 0; i < 5; ++i) {
    const double hh = 60.0 * static_cast<double>(h[static_cast<std::size_t>(i)]) / static_cast<double>(mx);
    const int x = 10 + i * 50;
    o << "<rect x=\"" << x << "\" y=\"" << 65 - hh << "\" width=\"36\" height=\"" << hh << "\" class=\""
      << (i == 0 ? "bar-ok" : "bar-bad") << "\"/>";
    o << "<text x=\"" << x + 18 << "\" y=\"80\" text-anchor=\"middle\">" << labels[i] << "</text>";
    o << "<text x=\"" << x + 18 << "\" y=\"" << std::max(10.0, 61 - hh) << "\" text-anchor=\"middle\" class=\"cnt\">"
      << h[static_cast<std::size_t>(i)] << "</text>";
  }
  o << "</svg>";
  return o.str();
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:16px 0 6px}
.meta{color:#5a6272;font-size:12px} code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
table{border-collapse:collapse;margin:6px 0} th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f4f7;font-weight:600}
.v-pass{background:#d9f2dd;color:#14532d}.v-fail{background:#fbd5d5;color:#7f1d1d}.v-xfail{background:#fde9c8;color:#7c4a03}
.v-xpass{background:#e3dcfa;color:#3b1f8a}.v-skip{background:#eceef1;color:#4b5260}.v-crash,.v-timeout{background:#1f2937;color:#fff}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px}
.summary span{margin-right:10px} .case{border-top:1px solid #e3e6eb;padding-top:6px}
.hist text{font-size:10px;fill:#333}.hist .cnt{font-size:9px}.bar-ok{fill:#4caf50}.bar-bad{fill:#e5484d}
a{color:#1f5fbf;text-decoration:none} a:hover{text-decoration:underline}
)";

}  // namespace

std::string render_html(const RunReport& r) {
  std::vector<std::string> backends;
  for (const CaseResult& c : r.cases)
    for (const BackendResult& b : c.backends)
      if (std::find(backends.begin(), backends.end(), b.backend) == backends.end()) backends.push_back(b.backend);

  std::ostringstream o;
  o << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>qconform report</title><style>" << kStyle
    << "</style></head><body>";
  o << "<h1>qconform conformance report</h1><div class=\"meta\">qconform " << esc(r.meta.tool_version) << " ("
    << esc(r.meta.git_revision) << ") &middot; " << esc(r.meta.started_at) << " &middot; " << esc(r.meta.host)
    << " &middot; " << esc(r.meta.cpu) << " &middot; " << esc(r.meta.compiler) << "</div>";
  o << "<p class=\"summary\" id=\"summary\">";
  for (const auto& [v, n] : r.verdict_counts()) {
    std::string cls = v;
    std::transform(cls.begin(), cls.end(), cls.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    o << "<span class=\"badge v-" << cls << "\">" << esc(v) << " " << n << "</span>";
  }
  o << "</p>";

  o << "<h2>Cases &times; backends</h2><table id=\"matrix\"><tr><th>case</th><th>spec</th>";
  for (const auto& b : backends) o << "<th>" << esc(b) << "</th>";
  o << "</tr>";
  for (const CaseResult& c : r.cases) {
    o << "<tr><td><a href=\"#" << anchor(c.id) << "\">" << esc(c.id) << "</a></td><td>" << esc(c.spec) << "</td>";
    for (const auto& bn : backends) {
      auto it =
          std::find_if(c.backends.begin(), c.backends.end(), [&](const BackendResult& b) { return b.backend == bn; });
      if (it == c.backends.end()) {
        o << "<td></td>";
        continue;
      }
      o << "<td class=\"" << verdict_class(it->verdict) << "\" title=\"" << esc(it->reason) << "\">"
        << name(it->verdict);
      if (it->verdict != Verdict::skip && it->verdict != Verdict::crash && it->verdict != Verdict::timeout)
        o << " <span class=\"mono\">" << it->metrics.exact << "/" << it->metrics.compared << "</span>";
      o << "</td>";
    }
    o << "</tr>";
  }
  o << "</table>";

  o << "<h2>Details</h2>";
  for (const CaseResult& c : r.cases) {
    o << "<div class=\"case\" id=\"" << anchor(c.id) << "\"><h3>" << esc(c.id) << "</h3>";
    if (!c.description.empty()) o << "<p>" << esc(c.description) << "</p>";
    o << "<p class=\"meta\">" << esc(c.op) << " &middot; " << esc(c.input_dtype) << " " << esc(c.shape) << " &rarr; "
      << esc(c.output_dtype) << " &middot; " << esc(c.granularity) << " &middot; spec <b>" << esc(c.spec)
      << "</b>: " << esc(c.spec_description) << " &middot; <code>" << esc(c.file) << ":" << c.line << "</code></p>";
    for (const BackendResult& b : c.backends) {
      o << "<p><span class=\"badge " << verdict_class(b.verdict) << "\">" << name(b.verdict) << "</span> <b>"
        << esc(b.backend) << "</b> (claims " << esc(b.claim) << ", expected " << esc(b.expectation)
        << "): " << esc(b.reason) << "</p>";
      if (b.verdict == Verdict::skip || b.verdict == Verdict::crash || b.verdict == Verdict::timeout) continue;
      const Metrics& m = b.metrics;
      const std::string unit = m.unit == "ulp" ? "ULP" : "LSB";
      o << "<table><tr><th>elements</th><th>compared</th><th>exact</th><th>mismatched</th><th>max |&Delta;| (" << unit
        << ")</th><th>bias</th><th>unspecified</th>" << (m.unit == "ulp" ? "<th>&plusmn;0 mismatches</th>" : "")
        << "</tr><tr><td>" << m.elements << "</td><td>" << m.compared << "</td><td>" << m.exact << "</td><td>"
        << m.mismatches() << "</td><td>" << m.max_abs << "</td><td>" << m.signed_sum << "</td><td>" << m.unspecified
        << "</td>" << (m.unit == "ulp" ? "<td>" + std::to_string(m.signed_zero_mismatches) + "</td>" : "")
        << "</tr></table>";
      o << histogram_svg(m.histogram, "|\xCE\x94| to the spec, in " + unit);
      if (m.has_to_exact) o << histogram_svg(m.histogram_to_exact, "|\xCE\x94| to the exact value rounded, in ULP");
      o << "<table><tr><th>label</th>";
      for (int l = 0; l < kLabelCount; ++l) o << "<th>" << name(static_cast<Label>(l)) << "</th>";
      o << "</tr><tr><td>total</td>";
      for (auto n : m.label_total) o << "<td>" << n << "</td>";
      o << "</tr><tr><td>mismatched</td>";
      for (auto n : m.label_mismatch) o << "<td>" << n << "</td>";
      o << "</tr></table>";
      if (!m.worst.empty()) {
        o << "<table><tr><th>index</th><th>input</th><th>exact value before "
             "rounding</th><th>expected</th><th>actual</th>"
             "<th>&Delta;</th><th>label</th></tr>";
        for (const ElementDiff& d : m.worst) {
          o << "<tr><td class=\"mono\">" << d.index << "</td><td class=\"mono\">" << esc(d.input)
            << "</td><td class=\"mono\">" << esc(d.exact) << "</td><td class=\"mono\">" << esc(d.expected)
            << "</td><td class=\"mono\">" << esc(d.actual) << "</td><td>" << d.delta << "</td><td>" << name(d.label)
            << "</td></tr>";
        }
        o << "</table>";
      }
    }
    o << "</div>";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace qc
