// A self-contained HTML report: one file, inline CSS and SVG, no scripts, no network, so it can
// be archived as a CI artifact and opened anywhere. Every string from the run is escaped.
//
// Layout: run header (metadata, verdict legend with totals, backends and their facts), for a
// model run (qconform model) one section per model (its runs, and its steps in graph order with
// each step's isolated verdicts, linked to the drill-downs, and what each run computed there), the
// matrix of cases x backends (each cell links to its drill-down), then one section per case
// with a <details> drill-down per backend. PASS and SKIP drill-downs start collapsed so a run of
// hundreds of cases stays navigable; every other verdict starts open. Backends that SKIP every
// case (no GPU here) get neither a column nor drill-downs: one line per reason above the matrix.
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace qc {
namespace {

std::string esc(const std::string& s) { return xml_escape(s); }

// Escaped, with a line-break opportunity after each separator, so that a long backend, case or
// preset name wraps in a narrow matrix column instead of widening it ("hip-<wbr>recip").
std::string breakable(const std::string& s) {
  std::string o;
  for (char c : s) {
    o += esc(std::string(1, c));
    if (std::string_view("-_:./@").find(c) != std::string_view::npos) o += "<wbr>";
  }
  return o;
}

std::string lower(std::string_view s) {
  std::string o(s);
  std::transform(o.begin(), o.end(), o.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  return o;
}

std::string verdict_class(Verdict v) { return "v-" + lower(name(v)); }

std::string_view verdict_meaning(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "every expectation met";
    case Verdict::fail:
      return "an expectation not met";
    case Verdict::xfail:
      return "known mismatch, unchanged since the baseline";
    case Verdict::xpass:
      return "a baseline mismatch that now passes";
    case Verdict::skip:
      return "not run (backend unavailable, case unsupported)";
    case Verdict::crash:
      return "the backend threw or died";
    case Verdict::timeout:
      return "the backend ran past its time limit";
  }
  return "";
}

// The verdicts that make `qconform run` exit 1.
bool fails_run(Verdict v) {
  return v == Verdict::fail || v == Verdict::xpass || v == Verdict::crash || v == Verdict::timeout;
}

bool starts_open(Verdict v) { return v != Verdict::pass && v != Verdict::skip; }

// A PASS judged against the backend's claimed preset, not the case's spec: its counts against the
// spec may be far from zero, so it must not read like a PASS against the spec.
bool claim_pass(const BackendResult& b) { return b.verdict == Verdict::pass && b.expectation == "claim"; }

// Whether the comparison ran (a shape mismatch FAILs before it, with empty metrics).
bool has_metrics(const BackendResult& b) {
  return b.verdict != Verdict::skip && b.verdict != Verdict::crash && b.verdict != Verdict::timeout &&
         b.metrics.elements > 0;
}

std::string unit_name(const Metrics& m) { return m.unit == "ulp" ? "ULP" : "LSB"; }

// A claim-PASS whose outputs differ from the spec: green next to "17 of 48 off", the cell that
// most needs to stand out. (Most claim-PASS results of a default run are bit-exact against the
// spec too; striping those would make the stripes the norm.)
bool claim_pass_off_spec(const BackendResult& b) {
  return claim_pass(b) && has_metrics(b) && b.metrics.mismatches() > 0;
}

std::string distance(std::int64_t d) { return std::abs(d) >= kUlpInfinite ? "∞" : std::to_string(d); }

std::string signed_distance(std::int64_t d) {
  if (std::abs(d) >= kUlpInfinite) return d < 0 ? "-∞" : "+∞";
  return (d > 0 ? "+" : "") + std::to_string(d);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A real number in six significant digits ("0.0213349", "5.78335", "0").
std::string real(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string duration(double s) {
  if (s < 0.1) return fixed(s * 1000, s < 0.01 ? 2 : 1) + " ms";
  if (s < 60) return fixed(s, s < 10 ? 2 : 1) + " s";
  const auto total = static_cast<std::int64_t>(std::llround(s));
  return std::to_string(total / 60) + " min " + std::to_string(total % 60) + " s";
}

std::string percent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "";
  const double p = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  return fixed(p, p != 0 && p < 0.1 ? 3 : (p < 10 ? 2 : 1)) + "%";
}

// What a claim-PASS means for this result, in one sentence (plain text, not escaped).
std::string claim_note(const BackendResult& b, const std::string& spec) {
  std::string o = "Passed against its claimed preset " + (b.claim.empty() ? std::string("(none)") : b.claim) +
                  ", not the case's spec " + spec;
  if (!has_metrics(b)) return o;
  const Metrics& m = b.metrics;
  if (m.mismatches() == 0) return o + "; it is bit-exact against the spec too";
  return o + ": " + std::to_string(m.mismatches()) + " of " + std::to_string(m.compared) +
         " elements differ from the spec, by up to " + distance(m.max_abs) + " " + unit_name(m);
}

// The command line as a shell would need it, so it can be pasted back.
std::string shell_join(const std::vector<std::string>& args) {
  std::string o;
  for (const std::string& a : args) {
    if (!o.empty()) o += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+@%").find(c) != std::string::npos;
    });
    if (plain) {
      o += a;
      continue;
    }
    o += '\'';
    for (char c : a) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
    o += '\'';
  }
  return o;
}

std::string label_words(Label l) {
  std::string s(name(l));
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

// Fragment identifiers: readable (derived from the case id and backend name) and unique (a
// suffix where two names reduce to the same text).
class Anchors {
 public:
  // The page's own ids, so no case can take them.
  Anchors()
      : used_{"run-metadata", "outcome",      "attention", "legend",       "backends", "backend-facts",
              "matrix",       "matrix-title", "details",   "claim-legend", "folded"} {}

  std::string make(const std::string& text) {
    std::string a;
    for (char c : text) {
      const bool keep = std::isalnum(static_cast<unsigned char>(c));
      if (keep)
        a += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      else if (!a.empty() && a.back() != '-')
        a += '-';
      if (a.size() >= 64) break;
    }
    while (!a.empty() && a.back() == '-') a.pop_back();
    if (a.empty() || !std::isalpha(static_cast<unsigned char>(a[0]))) a = "x-" + a;
    std::string u = a;
    for (int n = 2; !used_.insert(u).second; ++n) u = a + "-" + std::to_string(n);
    return u;
  }

 private:
  std::set<std::string> used_;
};

struct ResultRef {
  const BackendResult* result = nullptr;
  std::string anchor;
};

struct CaseRef {
  const CaseResult* c = nullptr;
  std::string anchor;
  std::vector<ResultRef> results;  // in the case's order
};

struct ModelRef {
  const ModelView* v = nullptr;
  std::string anchor;
  std::vector<std::string> step_anchors;  // ModelView::steps' order
};

// |Delta| histogram as inline SVG bars, each count written above its bar. Heights are
// log-scaled: a kernel with 4095 exact elements and one off by 1 must still show the 1.
std::string histogram_svg(const std::array<std::int64_t, 5>& h, const std::string& caption) {
  static constexpr const char* kBins[] = {"0", "1", "2", "3", "≥4"};
  static constexpr const char* kFills[] = {"#3f9b5a", "#e0a526", "#e07b26", "#d9534f", "#a61b29"};
  constexpr double kTop = 16, kBase = 78, kBar = 30, kGap = 10, kLeft = 6;
  std::int64_t mx = 0;
  for (auto c : h) mx = std::max(mx, c);
  const double scale = mx > 0 ? std::log1p(static_cast<double>(mx)) : 1;
  std::ostringstream o;
  o << "<figure class=\"hist\"><svg class=\"hist\" width=\"206\" height=\"96\" viewBox=\"0 0 206 96\" role=\"img\" "
       "aria-label=\""
    << esc(caption) << "\">";
  o << "<line x1=\"2\" y1=\"" << kBase << "\" x2=\"204\" y2=\"" << kBase << "\" class=\"axis\"></line>";
  for (std::size_t i = 0; i < 5; ++i) {
    const double x = kLeft + static_cast<double>(i) * (kBar + kGap);
    double hh = h[i] > 0 ? (kBase - kTop) * std::log1p(static_cast<double>(h[i])) / scale : 0;
    if (h[i] > 0) hh = std::max(hh, 2.0);
    o << "<rect x=\"" << x << "\" y=\"" << fixed(kBase - hh, 1) << "\" width=\"" << kBar << "\" height=\""
      << fixed(hh, 1) << "\" fill=\"" << kFills[i] << "\"></rect>";
    o << "<text x=\"" << x + kBar / 2 << "\" y=\"" << fixed(kBase - hh - 3, 1) << "\" class=\"count\">" << h[i]
      << "</text>";
    o << "<text x=\"" << x + kBar / 2 << "\" y=\"91\" class=\"bin\">" << kBins[i] << "</text>";
  }
  o << "</svg><figcaption>" << esc(caption) << "</figcaption></figure>";
  return o.str();
}

// The channels of a cause's per-channel counts that a chart can show: those with mismatches, at
// channel numbers a tensor can have (a hand-edited report.json may hold anything).
std::map<std::int64_t, std::int64_t> plottable(const std::map<std::int64_t, std::int64_t>& per_channel) {
  constexpr std::int64_t kMaxChannel = std::int64_t{1} << 40;
  std::map<std::int64_t, std::int64_t> o;
  for (const auto& [ch, n] : per_channel)
    if (ch >= 0 && ch < kMaxChannel && n > 0) o.emplace(ch, n);
  return o;
}

// Mismatches per channel that one cause reproduces (plottable() counts, not empty), as inline SVG bars, with axes and a
// tooltip per bar. Heights are linear: channels are compared with each other, and one channel far above the rest (its
// scale or zero point) should look it. Channels without mismatches keep their slot, so a pattern (every fourth channel,
// the last block) shows; past kMaxSlots channels, each bar sums a group of neighbouring channels. `same` more causes
// have the same counts; the axis runs to `last`, the last channel any chart of the result has, so its charts line up.
std::string channel_svg(const std::map<std::int64_t, std::int64_t>& per_channel, const std::string& cause,
                        std::size_t same, std::int64_t last) {
  constexpr std::int64_t kMaxSlots = 96;
  constexpr double kLeft = 40, kTop = 14, kPlot = 84, kRight = 26, kBottom = 34;  // room for "296–299"
  last = std::max(last, per_channel.rbegin()->first);
  const std::int64_t group = (last + kMaxSlots) / kMaxSlots;  // channels per bar
  const std::int64_t slots = last / group + 1;
  std::map<std::int64_t, std::int64_t> bars;  // slot -> mismatches
  for (const auto& [ch, n] : per_channel) {
    std::int64_t& sum = bars[ch / group];
    if (__builtin_add_overflow(sum, n, &sum)) sum = std::numeric_limits<std::int64_t>::max();
  }
  std::int64_t most = 0;
  for (const auto& bar : bars) most = std::max(most, bar.second);
  const double slot = std::clamp(384.0 / static_cast<double>(slots), 4.0, 28.0);
  const double gap = slot >= 8 ? 2 : 0.5;
  const double width = kLeft + slot * static_cast<double>(slots) + kRight, base = kTop + kPlot;
  const std::string axis = group == 1 ? "channel" : "channel (" + std::to_string(group) + " per bar)";
  const std::string title = "Mismatches per " + axis + " that " + cause + " reproduces";
  auto channel_text = [&](std::int64_t bar) {
    const std::int64_t lo = bar * group;
    return group == 1 ? std::to_string(lo) : std::to_string(lo) + "–" + std::to_string(lo + group - 1);
  };
  std::ostringstream o;
  o << "<figure class=\"perch\"><svg class=\"perch\" width=\"" << fixed(width, 0) << "\" height=\""
    << fixed(base + kBottom, 0) << "\" viewBox=\"0 0 " << fixed(width, 0) << " " << fixed(base + kBottom, 0)
    << "\" role=\"img\" aria-label=\"" << esc(title) << "\"><title>" << esc(title) << "</title>";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << base << "\" x2=\"" << fixed(width - kRight + 2, 1) << "\" y2=\"" << base
    << "\" class=\"axis\"></line><line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\""
    << base << "\" class=\"axis\"></line>";
  // The y axis: 0 and the largest count; the x axis: every channel where there is room, else the
  // first and last.
  const bool roomy = slot >= 14;
  o << "<text x=\"" << kLeft - 4 << "\" y=\"" << base << "\" class=\"tick y\">0</text><text x=\"" << kLeft - 4
    << "\" y=\"" << kTop + 8 << "\" class=\"tick y\">" << most << "</text>";
  o << "<text x=\"12\" y=\"" << kTop + kPlot / 2 << "\" class=\"axis-label\" transform=\"rotate(-90 12 "
    << kTop + kPlot / 2 << ")\">mismatches</text>";
  for (std::int64_t bar = 0; bar < slots; bar += roomy ? 1 : std::max<std::int64_t>(1, slots - 1))
    o << "<text x=\"" << fixed(kLeft + slot * (static_cast<double>(bar) + 0.5), 1) << "\" y=\"" << base + 12
      << "\" class=\"tick\">" << channel_text(bar) << "</text>";
  o << "<text x=\"" << fixed(kLeft + slot * static_cast<double>(slots) / 2, 1) << "\" y=\"" << base + 28
    << "\" class=\"axis-label\">" << esc(axis) << "</text>";
  for (const auto& [bar, n] : bars) {
    const double h = std::max(1.0, kPlot * static_cast<double>(n) / static_cast<double>(most));
    o << "<rect class=\"bar\" x=\"" << fixed(kLeft + slot * static_cast<double>(bar) + gap / 2, 2) << "\" y=\""
      << fixed(base - h, 2) << "\" width=\"" << fixed(slot - gap, 2) << "\" height=\"" << fixed(h, 2)
      << "\"><title>channel " << channel_text(bar) << ": " << n << (n == 1 ? " mismatch" : " mismatches")
      << "</title></rect>";
    if (roomy)
      o << "<text x=\"" << fixed(kLeft + slot * (static_cast<double>(bar) + 0.5), 1) << "\" y=\""
        << fixed(base - h - 3, 1) << "\" class=\"count\">" << n << "</text>";
  }
  o << "</svg><figcaption>mismatches per channel that <code>" << esc(cause) << "</code>";
  if (same) o << " and " << same << (same == 1 ? " more cause" : " more causes") << " with the same counts";
  o << " reproduce" << (same ? "" : "s") << "</figcaption></figure>";
  return o.str();
}

const char* kStyle = R"(
:root{--fg:#1c2230;--muted:#626b7b;--line:#d8dce3;--soft:#f4f5f7}
*{box-sizing:border-box}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI","Liberation Sans","DejaVu Sans",sans-serif;margin:0;color:var(--fg);background:#fff}
main{padding:18px 24px 40px;overflow-wrap:break-word}
h1{font-size:19px;margin:0 0 10px;font-weight:650}
h2{font-size:15px;margin:26px 0 8px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:14px;margin:0;font-weight:650;overflow-wrap:anywhere}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;font-size:12px}
a{color:#1d5fbf;text-decoration:none} a:hover{text-decoration:underline}
table{border-collapse:collapse}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}
.bad{color:#b42318;font-weight:600}
.v-pass{background:#d5f2dc;color:#11582a}
.v-fail{background:#fcd2d0;color:#8f1411}
.v-xfail{background:#fde8bf;color:#7a4600}
.v-xpass{background:#e4dcff;color:#43208f}
.v-skip{background:#e9ebef;color:#4b5260}
.v-crash{background:#262a33;color:#fff}
.v-timeout{background:#9a3412;color:#fff}
.badge{display:inline-block;min-width:62px;text-align:center;padding:1px 7px;border-radius:3px;font-weight:700;font-size:11px;letter-spacing:.03em}
.meta{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:0}
.meta dt{color:var(--muted)} .meta dd{margin:0;overflow-wrap:anywhere}
.features{font-size:11px;color:var(--muted);word-spacing:2px}
.banner{margin:14px 0 8px;padding:7px 12px;border-radius:3px;font-weight:600}
.banner.ok{background:#d5f2dc;color:#11582a} .banner.notok{background:#fcd2d0;color:#8f1411}
.legend{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:4px 18px;list-style:none;padding:0;margin:12px 0 6px}
.legend li{display:flex;align-items:center;gap:8px}
.legend .n{font-weight:700;font-variant-numeric:tabular-nums;min-width:2ch;flex:none}
.legend .badge{flex:none}
.legend .zero{opacity:.45}
.matrix-wrap{overflow:auto;max-height:80vh;max-width:100%}
table.matrix thead th{position:sticky;top:0;z-index:2;box-shadow:0 1px 0 var(--line);vertical-align:bottom}
table.matrix thead th:first-child{left:0;z-index:3}
table.matrix tbody td:first-child{position:sticky;left:0;z-index:1;background:#fff;min-width:9em;max-width:18em;overflow-wrap:anywhere}
table.matrix tr.suite th{background:#fff;border-left:0;border-right:0;padding-top:8px;color:var(--muted);font-weight:600}
td.cell{padding:0}
td.cell a{display:block;padding:3px 6px;color:inherit}
td.cell .vt{font-weight:700;font-size:11px;letter-spacing:.03em;white-space:nowrap}
td.cell .d{font-size:11px;opacity:.85;margin-left:5px;font-variant-numeric:tabular-nums}
td.none{color:var(--muted);text-align:center}
td.cell.claim-pass.off-spec{background:repeating-linear-gradient(135deg,#d5f2dc 0 6px,#f2faf4 6px 12px);box-shadow:inset 3px 0 0 #2f7a45}
.claim-tag{display:inline-block;margin-left:5px;padding:0 4px;border:1px dashed #2f7a45;border-radius:3px;background:#fff;color:#11582a;font-size:10px;font-weight:600;white-space:nowrap}
.claim-note{margin:0 0 8px;color:#11582a}
.claim-legend{margin:2px 0 6px}
.folded{margin:0 0 10px}
.folded p{margin:0 0 2px}
.folded ul{margin:0;padding-left:18px}
.folded li{margin:1px 0}
section.case{margin:0 0 10px;padding:8px 0 0;border-top:1px solid var(--line)}
h2+section.case{border-top:0}
.case .sub{color:var(--muted);font-size:12px;margin:2px 0 4px}
.case .desc{margin:2px 0 6px}
details.result{margin:4px 0 4px 14px;border:1px solid var(--line);border-radius:3px}
details.result>summary{padding:4px 8px;cursor:pointer;list-style-position:inside}
details.result[open]>summary{border-bottom:1px solid var(--line);background:var(--soft)}
details.result .body{padding:8px 10px 10px;overflow-x:auto}
.row{display:flex;flex-wrap:wrap;gap:10px 26px;align-items:flex-start;margin-bottom:8px}
.kv{display:grid;grid-template-columns:max-content max-content;gap:1px 12px}
.kv .k{color:var(--muted)} .kv .v{font-variant-numeric:tabular-nums;text-align:right}
figure.hist{margin:0}
figure.hist figcaption{font-size:11px;color:var(--muted);max-width:206px}
svg.hist text{font:10px system-ui,"Liberation Sans",sans-serif;fill:#333;text-anchor:middle}
svg.hist .axis{stroke:#999;stroke-width:1}
figure.perch{margin:0;display:table}
figure.perch figcaption{display:table-caption;caption-side:bottom;font-size:11px;color:var(--muted)}
svg.perch text{font:10px system-ui,"Liberation Sans",sans-serif;fill:#333;text-anchor:middle}
svg.perch text.y{text-anchor:end;dominant-baseline:middle}
svg.perch .axis{stroke:#999;stroke-width:1}
svg.perch rect.bar{fill:#c0392b}
table.small td,table.small th{padding:2px 6px;font-size:12px}
h4{font-size:12px;margin:10px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.ch{display:inline-block;margin:0 8px 0 0;white-space:nowrap}
pre.cmd{margin:4px 0;padding:6px 8px;background:#1f2430;color:#e8ebf0;border-radius:3px;white-space:pre-wrap;word-break:break-all;user-select:all}
.repro{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;align-items:baseline}
.k{color:var(--muted)}
.fact{margin-right:16px;white-space:nowrap}
.facts{font-size:12px;margin-top:8px}
.attention{list-style:none;padding:0;margin:4px 0 0}
.attention li{margin:2px 0}
.from{margin:2px 0 6px}
ul.agreements{list-style:none;padding:0;margin:4px 0}
ul.agreements li{margin:2px 0}
.badge.agree-holds,td.agree-holds{background:#d5f2dc;color:#11582a;font-weight:600}
.badge.agree-broken,td.agree-broken{background:#fcd2d0;color:#8f1411;font-weight:600}
.badge.agree-unchecked,td.agree-unchecked{background:#e9ebef;color:#4b5260}
section.model{margin:0 0 10px}
section.model h2 code{font-size:14px}
.model-wrap{overflow:auto;max-width:100%;margin:0 0 8px}
table.model-steps thead th{vertical-align:bottom}
table.model-steps th.group{text-align:center}
table.model-steps td.cell,table.model-runs td.cell{padding:2px 6px}
table.model-steps td.cell a{padding:0}
table.model-steps td .d{display:block;margin-left:0;font-size:11px}
table.model-steps td code,table.model-runs .cause code{font-size:11px}
table.model-runs .cause{font-size:11px;color:var(--muted)}
table.model-steps td.step{min-width:15em}
table.model-steps td.out,table.model-steps td.num{white-space:nowrap}
table.model-steps td.num code{white-space:normal}
table.model-steps tr.step-differs>td:first-child{box-shadow:inset 3px 0 0 #b42318}
table.model-steps .covers{font-size:11px}
table.model-runs tr.run-failed>td:first-child{box-shadow:inset 3px 0 0 #b42318}
.model-note{margin:2px 0 6px}
)";

class Renderer {
 public:
  explicit Renderer(const RunReport& r) : r_(r) {
    std::vector<std::string> backends;
    for (const CaseResult& c : r.cases)
      for (const BackendResult& b : c.backends)
        if (std::find(backends.begin(), backends.end(), b.backend) == backends.end()) backends.push_back(b.backend);
    fold(backends);
    for (const CaseResult& c : r.cases) {
      CaseRef cr{&c, anchors_.make("case-" + (c.id.empty() ? c.name : c.id)), {}};
      case_anchor_.emplace(c.id, cr.anchor);
      for (const BackendResult& b : c.backends)
        if (!folded_names_.count(b.backend)) cr.results.push_back({&b, anchors_.make(cr.anchor + "-" + b.backend)});
      case_index_.emplace(c.id, cases_.size());
      cases_.push_back(std::move(cr));
    }
    // After the cases, so a case's anchor is the same with or without a model view.
    for (const ModelView& v : r.models) {
      ModelRef mr{&v, anchors_.make("model-" + v.name), {}};
      for (const ModelStep& s : v.steps) mr.step_anchors.push_back(anchors_.make(mr.anchor + "-" + s.name));
      models_.push_back(std::move(mr));
    }
  }

  std::string render() {
    o_ << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<title>qconform report";
    if (!r_.meta.started_at.empty()) o_ << " " << esc(r_.meta.started_at);
    o_ << "</title><style>" << kStyle << "</style></head><body><main>";
    header();
    for (const ModelRef& m : models_) model_section(m);
    matrix();
    o_ << "<h2 id=\"details\">Details</h2>";
    for (const CaseRef& c : cases_) case_section(c);
    o_ << "</main></body></html>\n";
    return o_.str();
  }

 private:
  void header() {
    const RunMetadata& m = r_.meta;
    o_ << "<header><h1>qconform conformance report</h1><dl class=\"meta\" id=\"run-metadata\">";
    auto item = [&](const char* k, const std::string& v) {
      if (!v.empty()) o_ << "<dt>" << k << "</dt><dd>" << v << "</dd>";
    };
    item("version", esc(m.tool_version) +
                        (m.git_revision.empty() ? "" : " &middot; git <code>" + esc(m.git_revision) + "</code>"));
    item("host", esc(m.host));
    std::string cpu = esc(m.cpu);
    if (!m.cpu_features.empty()) {
      cpu += "<div class=\"features mono\">";
      for (const std::string& f : m.cpu_features) cpu += esc(f) + " ";
      cpu += "</div>";
    }
    item("cpu", cpu);
    item("compiler", esc(m.compiler));
    item("started", esc(m.started_at));
    item("duration", m.seconds > 0 ? duration(m.seconds) : "");
    item("shard", esc(m.shard));
    item("command", m.command_line.empty() ? "" : "<code>" + esc(shell_join(m.command_line)) + "</code>");
    o_ << "</dl></header>";

    std::map<Verdict, std::int64_t> counts;
    std::int64_t total = 0, failing = 0;
    for (const CaseResult& c : r_.cases)
      for (const BackendResult& b : c.backends) {
        ++counts[b.verdict];
        ++total;
        failing += fails_run(b.verdict);
      }
    if (failing) {
      o_ << "<p class=\"banner notok\" id=\"outcome\">" << failing << " of " << total
         << " results fail the run (FAIL, XPASS, CRASH or TIMEOUT)</p>";
      attention(failing);
    } else {
      o_ << "<p class=\"banner ok\" id=\"outcome\">No result fails the run (" << total << " results)</p>";
    }
    o_ << "<ul class=\"legend\" id=\"legend\">";
    for (Verdict v : kAllVerdicts) {
      const std::int64_t n = counts[v];
      o_ << "<li" << (n ? "" : " class=\"zero\"") << " data-verdict=\"" << name(v) << "\"><span class=\"badge "
         << verdict_class(v) << "\">" << name(v) << "</span><span class=\"n\">" << n << "</span><span class=\"muted\">"
         << verdict_meaning(v) << "</span></li>";
    }
    o_ << "</ul>";
    std::int64_t claim_passes = 0, off_spec = 0;
    for (const CaseResult& c : r_.cases)
      for (const BackendResult& b : c.backends) {
        claim_passes += claim_pass(b);
        off_spec += claim_pass_off_spec(b);
      }
    if (claim_passes)
      o_ << "<p class=\"claim-legend\" id=\"claim-legend\"><span class=\"badge v-pass\">PASS</span><span "
            "class=\"claim-tag\">vs claim</span> "
         << claim_passes << " of the " << counts[Verdict::pass]
         << " PASS results passed against the backend's claimed preset (expectation <code>claim</code>), not the "
            "case's spec; their counts are still against the spec, and "
         << off_spec << " of them (striped) differ from it</p>";

    if (!m.backends.empty() || !m.backend_facts.empty()) {
      o_ << "<h2 id=\"backends\">Backends</h2><table class=\"small\" "
            "id=\"backend-facts\"><thead><tr><th>backend</th><th>device and "
            "build</th></tr></thead><tbody>";
      // meta.backends reads "name" or "name (unavailable: reason)"; facts of a backend missing
      // from it (a report merged from shards) still get a row.
      auto base_name = [](const std::string& entry) { return entry.substr(0, entry.find(" (")); };
      std::vector<std::string> listed = m.backends;
      for (const auto& entry : m.backend_facts) {
        const std::string& b = entry.first;  // a name, not a structured binding: clang 14 cannot capture those
        if (std::none_of(listed.begin(), listed.end(), [&](const std::string& e) { return base_name(e) == b; }))
          listed.push_back(b);
      }
      for (const std::string& entry : listed) {
        o_ << "<tr><td>" << esc(entry) << "</td><td>";
        if (auto it = m.backend_facts.find(base_name(entry)); it != m.backend_facts.end() && !it->second.empty())
          facts_inline(it->second);
        else
          o_ << "<span class=\"muted\">&mdash;</span>";
        o_ << "</td></tr>";
      }
      o_ << "</tbody></table>";
    }
  }

  // The results that fail the run, linked, so a large run's few failures are one click away.
  void attention(std::int64_t failing) {
    constexpr std::int64_t kListed = 40;
    o_ << "<ul class=\"attention\" id=\"attention\">";
    std::int64_t n = 0;
    for (const CaseRef& cr : cases_)
      for (const ResultRef& rr : cr.results) {
        const BackendResult& b = *rr.result;
        if (!fails_run(b.verdict) || n++ >= kListed) continue;
        o_ << "<li><span class=\"badge " << verdict_class(b.verdict) << "\">" << name(b.verdict)
           << "</span> <a href=\"#" << rr.anchor << "\">" << esc(cr.c->id) << " &times; " << esc(b.backend)
           << "</a> <span class=\"muted\">" << esc(b.reason) << "</span></li>";
      }
    if (failing > kListed) o_ << "<li class=\"muted\">&hellip; and " << failing - kListed << " more in the matrix</li>";
    o_ << "</ul>";
  }

  // A backend that SKIPs every case (no GPU, a missing CPU feature) would fill a matrix column and
  // a block in every case section with the same line: such backends become one line per group with
  // the same reasons, above the matrix. report.json keeps every result.
  void fold(const std::vector<std::string>& backends) {
    std::map<std::vector<std::pair<std::string, std::int64_t>>, std::size_t> group_of;  // reasons -> folded_ index
    for (const std::string& bn : backends) {
      std::vector<std::pair<std::string, std::int64_t>> reasons;  // in first-seen order, with their counts
      bool all_skip = true;
      for (const CaseResult& c : r_.cases)
        for (const BackendResult& b : c.backends) {
          if (b.backend != bn) continue;
          all_skip = all_skip && b.verdict == Verdict::skip;
          auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& x) { return x.first == b.reason; });
          if (it == reasons.end())
            reasons.emplace_back(b.reason, 1);
          else
            ++it->second;
        }
      if (!all_skip) {
        columns_.push_back(bn);
        continue;
      }
      folded_names_.insert(bn);
      const auto [it, added] = group_of.emplace(reasons, folded_.size());
      if (added) folded_.push_back({{}, reasons});
      folded_[it->second].backends.push_back(bn);
    }
  }

  void folded() {
    if (folded_.empty()) return;
    o_ << "<div class=\"folded\" id=\"folded\"><p class=\"muted\">Not shown as columns: " << folded_names_.size()
       << (folded_names_.size() == 1 ? " backend" : " backends")
       << " that skipped every case (their results are kept in report.json).</p><ul>";
    for (const FoldGroup& g : folded_) {
      std::int64_t results = 0;
      for (const auto& reason : g.reasons) results += reason.second;
      o_ << "<li class=\"fold\">";
      for (std::size_t i = 0; i < g.backends.size(); ++i)
        o_ << (i == 0                       ? ""
               : i + 1 == g.backends.size() ? " and "
                                            : ", ")
           << "<b class=\"fb\">" << esc(g.backends[i]) << "</b>";
      o_ << " skipped " << (results == 1 ? "the one case" : "all " + std::to_string(results) + " cases") << ": ";
      // A pathological run could give a reason per case; the first few tell the story.
      constexpr std::size_t kShown = 8;
      for (std::size_t i = 0; i < g.reasons.size() && i < kShown; ++i) {
        o_ << (i ? "; " : "") << "<span class=\"reason\">" << esc(g.reasons[i].first) << "</span>";
        if (g.reasons.size() > 1)
          o_ << " <span class=\"muted\">(" << g.reasons[i].second << (g.reasons[i].second == 1 ? " case" : " cases")
             << ")</span>";
      }
      if (g.reasons.size() > kShown)
        o_ << "; <span class=\"muted\">&hellip; " << g.reasons.size() - kShown << " more reasons</span>";
      o_ << "</li>";
    }
    o_ << "</ul></div>";
  }

  void facts_inline(const std::map<std::string, std::string>& facts) {
    for (const auto& [k, v] : facts)
      o_ << "<span class=\"fact\"><span class=\"k\">" << esc(k) << "</span> " << esc(v) << "</span> ";
  }

  // ---- the model view (qconform model) ----------------------------------------------------------

  // The result of `backend` on the case `case_id`, with the anchor of its drill-down (or of the
  // case's section, for a backend without one); null when the report has no such result.
  struct StepResult {
    const CaseResult* c = nullptr;
    const BackendResult* b = nullptr;
    std::string anchor;
  };
  StepResult case_result(const std::string& case_id, const std::string& backend) const {
    const auto it = case_index_.find(case_id);
    if (it == case_index_.end()) return {};
    const CaseRef& cr = cases_[it->second];
    for (const ResultRef& rr : cr.results)
      if (rr.result->backend == backend) return {cr.c, rr.result, rr.anchor};
    for (const BackendResult& b : cr.c->backends)
      if (b.backend == backend) return {cr.c, &b, cr.anchor};
    return {};
  }

  static bool step_has_case(const ModelStep& s) { return s.kind != "float" && !s.case_id.empty(); }

  static const ModelStepRun* step_run(const ModelStep& s, const std::string& run) {
    for (const ModelStepRun& x : s.runs)
      if (x.run == run) return &x;
    return nullptr;
  }

  // The largest difference of a step in a run: in LSB where the output is an integer, else as a
  // real number.
  static std::string step_run_max(const ModelStepRun& x) {
    return x.max_lsb > 0 ? std::to_string(x.max_lsb) + " LSB" : real(x.max_abs);
  }

  // Whether a step differs anywhere: in a run, between its fused and QDQ readings, or in its case
  // judged alone on a backend (any verdict but PASS and SKIP).
  bool step_differs(const ModelStep& s, const std::vector<std::string>& backends) const {
    if (s.fused_differs > 0) return true;
    for (const ModelStepRun& x : s.runs)
      if (x.differing > 0) return true;
    if (!step_has_case(s)) return false;
    for (const std::string& bn : backends) {
      const BackendResult* b = case_result(s.case_id, bn).b;
      if (b && b->verdict != Verdict::pass && b->verdict != Verdict::skip) return true;
    }
    return false;
  }

  void model_section(const ModelRef& mr) {
    const ModelView& v = *mr.v;
    // The backends of the steps' cases, in order of first appearance; those that SKIP every one of
    // them get no column (one line names them), as in the matrix.
    std::vector<std::string> backends, skipped;
    std::set<std::string> ran;
    for (const ModelStep& s : v.steps) {
      if (!step_has_case(s)) continue;
      const auto it = case_index_.find(s.case_id);
      if (it == case_index_.end()) continue;
      for (const BackendResult& b : cases_[it->second].c->backends) {
        if (std::find(backends.begin(), backends.end(), b.backend) == backends.end()) backends.push_back(b.backend);
        if (b.verdict != Verdict::skip) ran.insert(b.backend);
      }
    }
    std::vector<std::string> columns;
    for (const std::string& b : backends) (ran.count(b) ? columns : skipped).push_back(b);
    // The runs with a comparison at some step get a column (the oracle's fused reading is compared
    // at the output only: its steps are the fused agreement column).
    std::vector<const ModelRun*> run_columns, output_only;
    for (const ModelRun& run : v.runs) {
      const bool any = std::any_of(v.steps.begin(), v.steps.end(),
                                   [&](const ModelStep& s) { return step_run(s, run.name) != nullptr; });
      (any ? run_columns : output_only).push_back(&run);
    }
    auto step_anchor = [&](const std::string& step) -> std::string {
      for (std::size_t i = 0; i < v.steps.size(); ++i)
        if (v.steps[i].name == step) return mr.step_anchors[i];
      return "";
    };

    o_ << "<section class=\"model\" id=\"" << mr.anchor << "\" data-model=\"" << esc(v.name) << "\"><h2><a href=\"#"
       << mr.anchor << "\">Model <code>" << esc(v.name) << "</code></a></h2><dl class=\"meta model-meta\">";
    auto item = [&](const char* k, const std::string& value) {
      if (!value.empty()) o_ << "<dt>" << k << "</dt><dd>" << value << "</dd>";
    };
    item("file", v.file.empty() ? "" : "<code>" + esc(v.file) + "</code>");
    item("format", esc(v.format));
    item("spec", v.spec.empty() ? "" : "<b>" + esc(v.spec) + "</b>");
    item("producer", esc(v.producer));
    std::string versions;
    if (v.ir_version) versions += "IR " + std::to_string(v.ir_version);
    if (v.opset) versions += (versions.empty() ? "" : " &middot; ") + std::string("opset ") + std::to_string(v.opset);
    item("ONNX", versions);
    std::string inputs;
    for (const std::string& in : v.inputs) inputs += "<div class=\"mono\">" + esc(in) + "</div>";
    item("inputs", inputs);
    if (v.oracle_top1_correct >= 0)
      item("oracle top-1", std::to_string(v.oracle_top1_correct) + " of " + std::to_string(v.top1_total) +
                               " correct (" + percent(v.oracle_top1_correct, v.top1_total) +
                               ") <span class=\"muted\">the oracle's reading of the graph against the labels</span>");
    o_ << "</dl>";

    std::int64_t differing_runs = 0, failed_runs = 0, differing_steps = 0;
    for (const ModelRun& run : v.runs) {
      differing_runs += run.output_differing > 0;
      failed_runs += run.status == "failed";
    }
    for (const ModelStep& s : v.steps) differing_steps += step_differs(s, columns);
    o_ << "<p class=\"model-note\">" << v.runs.size() << (v.runs.size() == 1 ? " run" : " runs") << ": "
       << "<span" << (differing_runs ? " class=\"bad\"" : "") << ">" << differing_runs
       << " differ from the oracle at the output</span>, <span" << (failed_runs ? " class=\"bad\"" : "") << ">"
       << failed_runs << " failed</span>; " << v.steps.size() << " steps, <span"
       << (differing_steps ? " class=\"bad\"" : "") << ">" << differing_steps << " with a difference</span>.</p>";
    model_runs(v, step_anchor);
    model_steps(mr, columns, skipped, run_columns, output_only);
    o_ << "</section>";
  }

  // A step's name linked to its row of the steps table; "none" for no step.
  template <class StepAnchor>
  void step_link(const std::string& step, const StepAnchor& step_anchor) {
    if (step.empty()) {
      o_ << "<span class=\"muted\">none</span>";
      return;
    }
    const std::string a = step_anchor(step);
    if (a.empty())
      o_ << "<code>" << esc(step) << "</code>";
    else
      o_ << "<a href=\"#" << a << "\"><code>" << breakable(step) << "</code></a>";
  }

  template <class StepAnchor>
  void model_runs(const ModelView& v, const StepAnchor& step_anchor) {
    if (v.runs.empty()) return;
    o_ << "<h4>Runs</h4><div class=\"model-wrap\"><table class=\"small model-runs\"><thead><tr><th>run</th>"
          "<th>mode</th><th>reading</th><th>compared with</th><th>status</th><th>first divergent step</th>"
          "<th>first float difference</th>"
          "<th class=\"num\">output differing</th><th class=\"num\">output max |&Delta;|</th><th class=\"num\">top-1 "
          "agrees with the oracle</th><th class=\"num\">top-1 correct</th><th class=\"num\">steps run</th><th "
          "class=\"num\">steps by the oracle</th><th class=\"num\">time</th></tr></thead><tbody>";
    for (const ModelRun& run : v.runs) {
      const bool failed = run.status == "failed";
      o_ << "<tr data-run=\"" << esc(run.name) << "\"" << (failed ? " class=\"run-failed\"" : "") << "><td><b>"
         << breakable(run.name) << "</b></td><td>" << esc(run.mode) << "</td><td>" << esc(run.reading) << "</td><td>"
         << esc(run.compared_with) << "</td><td><span class=\"badge " << (failed ? "v-fail" : "v-pass") << "\">"
         << esc(run.status) << "</span>";
      if (!run.note.empty()) o_ << "<div class=\"" << (failed ? "bad" : "muted") << "\">" << esc(run.note) << "</div>";
      o_ << "</td><td class=\"first-divergent\">";
      step_link(run.first_divergent, step_anchor);
      if (!run.first_divergent_cause.empty())
        o_ << "<div class=\"cause\">cause <code>" << breakable(run.first_divergent_cause) << "</code></div>";
      o_ << "</td><td class=\"first-float\">";
      step_link(run.first_float_difference, step_anchor);
      o_ << "</td><td class=\"num" << (run.output_differing > 0 ? " v-fail" : "") << "\">" << run.output_differing
         << " of " << run.output_elements << "</td><td class=\"num\">" << real(run.output_max_abs) << "</td>";
      if (run.top1_agree >= 0)
        o_ << "<td class=\"num" << (run.top1_agree < run.top1_total ? " bad" : "") << "\">" << run.top1_agree << " of "
           << run.top1_total << "</td>";
      else
        o_ << "<td class=\"num muted\">&mdash;</td>";
      if (run.top1_correct >= 0)
        o_ << "<td class=\"num\">" << run.top1_correct << " of " << run.top1_total << "</td>";
      else
        o_ << "<td class=\"num muted\">&mdash;</td>";
      o_ << "<td class=\"num\">" << run.steps_run << "</td><td class=\"num\">" << run.steps_by_oracle
         << "</td><td class=\"num\">" << (run.seconds > 0 ? duration(run.seconds) : "&ndash;") << "</td></tr>";
    }
    o_ << "</tbody></table></div>";
  }

  void model_steps(const ModelRef& mr, const std::vector<std::string>& columns, const std::vector<std::string>& skipped,
                   const std::vector<const ModelRun*>& run_columns, const std::vector<const ModelRun*>& output_only) {
    const ModelView& v = *mr.v;
    if (v.steps.empty()) return;
    o_ << "<h4>Steps</h4><p class=\"muted model-note\">In graph order. <b>Isolated</b>: each step's case judged "
          "alone on each backend (the cell links to its drill-down). <b>In the run</b>: the elements of the step's "
          "output that differ from the oracle's chain when the run feeds each step its own outputs, with the leading "
          "cause of the backend's result on the step's case; "
          "<i>(oracle)</i>: the backend does not run the step, the oracle computed it on the run's inputs.</p>";
    if (!skipped.empty()) {
      o_ << "<p class=\"muted model-note\">Not shown as columns: ";
      for (std::size_t i = 0; i < skipped.size(); ++i) o_ << (i ? ", " : "") << "<b>" << esc(skipped[i]) << "</b>";
      o_ << " (skipped every step's case).</p>";
    }
    if (!output_only.empty()) {
      o_ << "<p class=\"muted model-note\">Compared at the output only (the runs table): ";
      for (std::size_t i = 0; i < output_only.size(); ++i)
        o_ << (i ? ", " : "") << "<b>" << esc(output_only[i]->name) << "</b>";
      o_ << ".</p>";
    }
    o_ << "<div class=\"model-wrap\"><table class=\"small model-steps\"><thead><tr><th rowspan=\"2\">step</th><th "
          "rowspan=\"2\">op</th><th rowspan=\"2\">kind</th><th rowspan=\"2\">output</th><th rowspan=\"2\" "
          "class=\"num\">fused vs QDQ differing</th>";
    if (!columns.empty()) o_ << "<th class=\"group\" colspan=\"" << columns.size() << "\">isolated</th>";
    if (!run_columns.empty())
      o_ << "<th class=\"group\" colspan=\"" << run_columns.size() << "\">in the run: differing of elements</th>";
    o_ << "</tr><tr>";
    for (const std::string& b : columns) o_ << "<th data-backend=\"" << esc(b) << "\">" << breakable(b) << "</th>";
    for (const ModelRun* run : run_columns)
      o_ << "<th data-run=\"" << esc(run->name) << "\">" << breakable(run->name) << "</th>";
    o_ << "</tr></thead><tbody>";
    for (std::size_t i = 0; i < v.steps.size(); ++i) {
      const ModelStep& s = v.steps[i];
      const bool differs = step_differs(s, columns);
      o_ << "<tr id=\"" << mr.step_anchors[i] << "\" data-step=\"" << esc(s.name) << "\""
         << (differs ? " class=\"step-differs\"" : "") << "><td class=\"step\"><span"
         << (differs ? " class=\"bad\"" : "") << ">";
      const auto anchor = case_anchor_.find(s.case_id);
      if (step_has_case(s) && anchor != case_anchor_.end())
        o_ << "<a href=\"#" << anchor->second << "\">" << breakable(s.name) << "</a>";
      else
        o_ << breakable(s.name);
      o_ << "</span>";
      if (!s.covers.empty()) {
        o_ << "<div class=\"covers muted\">covers ";
        for (std::size_t k = 0; k < s.covers.size(); ++k) o_ << (k ? ", " : "") << breakable(s.covers[k]);
        o_ << "</div>";
      }
      o_ << "</td><td>" << esc(s.op_type) << "</td><td>" << esc(s.kind) << "</td><td class=\"mono out\" title=\""
         << esc(s.output) << "\">" << esc(s.dtype) << " " << esc(s.shape) << "</td>";
      if (s.fused_differs >= 0)
        o_ << "<td class=\"num" << (s.fused_differs > 0 ? " v-fail" : "") << "\">" << s.fused_differs << " of "
           << s.fused_elements << "</td>";
      else
        o_ << "<td class=\"none\">&mdash;</td>";
      for (const std::string& bn : columns) isolated_cell(s, bn);
      for (const ModelRun* run : run_columns) {
        const ModelStepRun* x = step_run(s, run->name);
        if (!x) {
          o_ << "<td class=\"none\" title=\"not computed in this run\">&mdash;</td>";
          continue;
        }
        o_ << "<td class=\"num" << (x->differing > 0 ? " v-fail" : "") << "\" data-run=\"" << esc(run->name) << "\"";
        if (!x->note.empty()) o_ << " title=\"" << esc(x->note) << "\"";
        o_ << ">" << x->differing << " of " << x->elements;
        if (x->differing > 0) {
          o_ << "<span class=\"d\">max " << step_run_max(*x) << "</span>";
          if (!x->cause.empty()) o_ << "<span class=\"d\"><code>" << breakable(x->cause) << "</code></span>";
        }
        if (!x->computed) o_ << " <i>(oracle)</i>";
        o_ << "</td>";
      }
      o_ << "</tr>";
    }
    o_ << "</tbody></table></div>";
  }

  // A step's case on one backend: the verdict and, where it is neither PASS nor SKIP, the
  // mismatches and the leading cause; linked to the drill-down.
  void isolated_cell(const ModelStep& s, const std::string& backend) {
    const StepResult found = step_has_case(s) ? case_result(s.case_id, backend) : StepResult{};
    const BackendResult* b = found.b;
    if (!b) {
      o_ << "<td class=\"none\" title=\"" << (step_has_case(s) ? "not run" : "no case: the float executor runs it")
         << "\">&mdash;</td>";
      return;
    }
    const bool cp = claim_pass(*b);
    o_ << "<td class=\"cell " << verdict_class(b->verdict) << (cp ? " claim-pass" : "")
       << (claim_pass_off_spec(*b) ? " off-spec" : "") << "\" data-backend=\"" << esc(b->backend) << "\" title=\""
       << esc(cp ? claim_note(*b, found.c->spec) + ". " + b->reason : b->reason) << "\"><a href=\"#" << found.anchor
       << "\"><span class=\"vt\">" << name(b->verdict) << "</span>";
    if (cp) o_ << "<span class=\"claim-tag\">vs claim</span>";
    if (b->verdict != Verdict::pass && b->verdict != Verdict::skip) {
      if (has_metrics(*b) && b->metrics.mismatches() > 0) {
        const Metrics& m = b->metrics;
        o_ << "<span class=\"d\">" << m.mismatches() << " of " << m.compared << " off, max " << distance(m.max_abs)
           << " " << unit_name(m) << "</span>";
      }
      if (!b->causes.empty())
        o_ << "<span class=\"d\"><code>" << breakable(b->causes.front().cause) << "</code></span>";
    }
    o_ << "</a></td>";
  }

  void matrix() {
    o_ << "<h2 id=\"matrix-title\">Cases &times; backends</h2>";
    folded();
    // Wider than the window, the matrix scrolls in its own box (headers and case names stay in
    // view), never the page.
    o_ << "<div class=\"matrix-wrap\"><table class=\"matrix\" id=\"matrix\"><thead><tr><th>case</th><th>op</th>"
          "<th>spec</th>";
    for (const std::string& b : columns_) o_ << "<th>" << breakable(b) << "</th>";
    o_ << "</tr></thead><tbody>";
    const std::string* suite = nullptr;
    for (const CaseRef& cr : cases_) {
      const CaseResult& c = *cr.c;
      if (!c.suite.empty() && (!suite || *suite != c.suite)) {
        suite = &c.suite;
        o_ << "<tr class=\"suite\"><th colspan=\"" << 3 + columns_.size() << "\">" << esc(c.suite) << "</th></tr>";
      }
      o_ << "<tr data-case=\"" << esc(c.id) << "\"><td><a href=\"#" << cr.anchor << "\">"
         << breakable(c.suite.empty() || c.name.empty() ? c.id : c.name) << "</a></td><td>" << breakable(c.op)
         << "</td><td>" << breakable(c.spec) << "</td>";
      for (const std::string& bn : columns_) {
        auto it = std::find_if(cr.results.begin(), cr.results.end(),
                               [&](const ResultRef& x) { return x.result->backend == bn; });
        if (it == cr.results.end()) {
          o_ << "<td class=\"none\" title=\"not run\">&mdash;</td>";
          continue;
        }
        const BackendResult& b = *it->result;
        const bool cp = claim_pass(b);
        o_ << "<td class=\"cell " << verdict_class(b.verdict) << (cp ? " claim-pass" : "")
           << (claim_pass_off_spec(b) ? " off-spec" : "") << "\" data-case=\"" << esc(c.id) << "\" data-backend=\""
           << esc(b.backend) << "\" title=\"" << esc(cp ? claim_note(b, c.spec) + ". " + b.reason : b.reason)
           << "\"><a href=\"#" << it->anchor << "\"><span class=\"vt\">" << name(b.verdict) << "</span>";
        if (cp) o_ << "<span class=\"claim-tag\">vs claim</span>";
        if (has_metrics(b)) {
          const Metrics& m = b.metrics;
          o_ << "<span class=\"d\">";
          if (m.mismatches() == 0)
            o_ << m.exact << " exact";
          else
            o_ << m.mismatches() << " of " << m.compared << " off, max " << distance(m.max_abs) << " " << unit_name(m);
          o_ << "</span>";
        }
        o_ << "</a></td>";
      }
      o_ << "</tr>";
    }
    o_ << "</tbody></table></div>";
  }

  void case_section(const CaseRef& cr) {
    const CaseResult& c = *cr.c;
    o_ << "<section class=\"case\" id=\"" << cr.anchor << "\"><h3><a href=\"#" << cr.anchor << "\">" << esc(c.id)
       << "</a></h3>";
    o_ << "<div class=\"sub\">" << esc(c.op) << " &middot; " << esc(c.input_dtype) << " " << esc(c.shape) << " &rarr; "
       << esc(c.output_dtype);
    if (!c.granularity.empty()) o_ << " &middot; " << esc(c.granularity);
    o_ << " &middot; spec <b>" << esc(c.spec) << "</b>";
    if (!c.spec_description.empty()) o_ << ": " << esc(c.spec_description);
    if (!c.file.empty()) o_ << " &middot; <code>" << esc(c.file) << ":" << c.line << "</code>";
    o_ << "</div>";
    if (!c.description.empty()) o_ << "<div class=\"desc\">" << esc(c.description) << "</div>";
    operands_from(c);
    agreements(cr);
    for (const ResultRef& rr : cr.results) result(c, rr);
    o_ << "</section>";
  }

  // A case id, linked to its section when the report has it (a merged or sharded report may not).
  std::string case_link(const std::string& id) const {
    const auto it = case_anchor_.find(id);
    if (it == case_anchor_.end()) return "<code>" + esc(id) + "</code>";
    return "<a href=\"#" + it->second + "\"><code>" + esc(id) + "</code></a>";
  }

  void operands_from(const CaseResult& c) {
    if (c.operands_from.empty()) return;
    o_ << "<div class=\"from\">takes ";
    std::size_t n = 0;
    for (const auto& [operand, producer] : c.operands_from)
      o_ << (n++ ? ", " : "") << "<b>" << esc(operand) << "</b> from the output of " << case_link(producer);
    o_ << " <span class=\"muted\">(the oracle's output for the reference, each backend's own for that "
          "backend)</span></div>";
  }

  // The case's agreement statements: one row for the oracle's outputs, one per backend.
  void agreements(const CaseRef& cr) {
    const CaseResult& c = *cr.c;
    if (c.agreements.empty()) return;
    o_ << "<h4>Agreements</h4><table class=\"small agreements\"><thead><tr><th>statement</th><th>outputs "
          "of</th><th>status</th><th class=\"num\">differing</th><th>first differing indices</th></tr></thead><tbody>";
    for (std::size_t k = 0; k < c.agreements.size(); ++k) {
      const AgreementCheck& a = c.agreements[k];
      std::string statement = "<code>" + esc(a.assertion) + "</code> " + case_link(a.other);
      if (a.stated >= 0) statement += " in " + std::to_string(a.stated) + " elements";
      std::vector<std::pair<std::string, const AgreementCheck*>> rows{{"oracle", &a}};
      for (const ResultRef& rr : cr.results)
        if (k < rr.result->agreements.size()) rows.emplace_back(rr.result->backend, &rr.result->agreements[k]);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const AgreementCheck& x = *rows[i].second;
        o_ << "<tr data-status=\"" << name(x.status) << "\">";
        if (i == 0) o_ << "<td rowspan=\"" << rows.size() << "\">" << statement << "</td>";
        o_ << "<td>" << (i == 0 ? "<i>oracle</i>" : esc(rows[i].first)) << "</td><td class=\"agree-" << name(x.status)
           << "\" title=\"" << esc(x.reason) << "\">" << name(x.status) << "</td>";
        if (x.status == AgreementStatus::unchecked) {
          o_ << "<td class=\"num muted\">&mdash;</td><td class=\"muted\">" << esc(x.reason) << "</td></tr>";
          continue;
        }
        o_ << "<td class=\"num\">" << x.differing << " of " << x.elements << "</td><td class=\"mono\">";
        for (std::size_t j = 0; j < x.first_differing.size(); ++j) o_ << (j ? ", " : "") << x.first_differing[j];
        if (x.differing > static_cast<std::int64_t>(x.first_differing.size())) o_ << ", &hellip;";
        o_ << "</td></tr>";
      }
    }
    o_ << "</tbody></table>";
  }

  void result(const CaseResult& c, const ResultRef& rr) {
    const BackendResult& b = *rr.result;
    const bool cp = claim_pass(b);
    o_ << "<details class=\"result\" id=\"" << rr.anchor << "\" data-backend=\"" << esc(b.backend) << "\""
       << (starts_open(b.verdict) ? " open" : "") << "><summary><span class=\"badge " << verdict_class(b.verdict)
       << "\">" << name(b.verdict) << "</span>" << (cp ? "<span class=\"claim-tag\">vs claim</span>" : "") << " <b>"
       << esc(b.backend) << "</b> <span class=\"muted\">";
    if (!b.claim.empty()) o_ << "claims " << esc(b.claim) << " &middot; ";
    o_ << "expects " << esc(b.expectation) << "</span> &mdash; " << esc(b.reason) << "</summary><div class=\"body\">";
    if (cp)
      o_ << "<p class=\"claim-note\"><span class=\"claim-tag\">vs claim</span> " << esc(claim_note(b, c.spec))
         << ".</p>";
    if (has_metrics(b)) {
      const Metrics& m = b.metrics;
      o_ << "<div class=\"row\">";
      stats(b);
      o_ << histogram_svg(m.histogram, "|Δ| to the spec's value, in " + unit_name(m) + " (log height)");
      if (m.has_to_exact)
        o_ << histogram_svg(m.histogram_to_exact, "|Δ| to the exact value correctly rounded, in ULP (log height)");
      labels(m);
      o_ << "</div>";
      causes(b);
      worst(m);
    }
    if (!b.agreements.empty()) {
      o_ << "<h4>Agreements</h4><ul class=\"agreements\">";
      for (const AgreementCheck& a : b.agreements)
        o_ << "<li><span class=\"badge agree-" << name(a.status) << "\">" << name(a.status) << "</span> "
           << esc(a.reason) << "</li>";
      o_ << "</ul>";
    }
    reproduce(b);
    if (auto it = r_.meta.backend_facts.find(b.backend); it != r_.meta.backend_facts.end() && !it->second.empty()) {
      o_ << "<div class=\"facts\"><span class=\"fact\"><b>device</b></span>";
      facts_inline(it->second);
      o_ << "</div>";
    }
    o_ << "</div></details>";
  }

  void stats(const BackendResult& b) {
    const Metrics& m = b.metrics;
    const std::string u = unit_name(m);
    o_ << "<div class=\"kv\">";
    auto kv = [&](const std::string& k, const std::string& v, bool bad = false) {
      o_ << "<span class=\"k\">" << k << "</span><span class=\"v" << (bad ? " bad" : "") << "\">" << v << "</span>";
    };
    kv("elements", std::to_string(m.elements));
    kv("compared", std::to_string(m.compared));
    if (m.unspecified) kv("unspecified by the spec", std::to_string(m.unspecified));
    kv("bit-exact", std::to_string(m.exact));
    kv("mismatched",
       std::to_string(m.mismatches()) + (m.mismatches() ? " (" + percent(m.mismatches(), m.compared) + ")" : ""),
       m.mismatches() > 0);
    kv("max |&Delta;| to spec", distance(m.max_abs) + " " + u, m.max_abs > 0);
    kv("bias &Sigma;&Delta;", signed_distance(m.signed_sum) + " " + u);
    if (m.unit == "ulp") kv("+0 vs &minus;0", std::to_string(m.signed_zero_mismatches), m.signed_zero_mismatches > 0);
    if (m.has_to_exact) kv("max |&Delta;| to exact", distance(m.max_to_exact) + " ULP");
    if (b.claim_mismatches >= 0)
      kv("vs its claim " + esc(b.claim), std::to_string(b.claim_mismatches) + " mismatched", b.claim_mismatches > 0);
    if (b.seconds > 0) kv("backend time", duration(b.seconds));
    o_ << "</div>";
  }

  void labels(const Metrics& m) {
    o_ << "<table class=\"small labels\"><thead><tr><th>label</th><th class=\"num\">total</th><th "
          "class=\"num\">mismatched</th></tr></thead><tbody>";
    for (int l = 0; l < kLabelCount; ++l) {
      const auto i = static_cast<std::size_t>(l);
      o_ << "<tr><td>" << label_words(static_cast<Label>(l)) << "</td><td class=\"num\">" << m.label_total[i]
         << "</td><td class=\"num" << (m.label_mismatch[i] ? " bad" : "") << "\">" << m.label_mismatch[i]
         << "</td></tr>";
    }
    o_ << "</tbody></table>";
  }

  void causes(const BackendResult& b) {
    if (b.causes.empty() && b.unexplained == 0) return;
    o_ << "<h4>Causes</h4><table class=\"small causes\"><thead><tr><th>change to the spec (best first)</th><th "
          "class=\"num\">reproduces</th><th class=\"num\">breaks</th><th>what it means</th><th>per "
          "channel</th></tr></thead><tbody>";
    for (const CauseCount& c : b.causes) {
      o_ << "<tr><td><code>" << esc(c.cause) << "</code></td><td class=\"num\">" << c.count;
      if (c.mismatches_sampled > 0) o_ << " of " << c.mismatches_sampled << " sampled";
      o_ << "</td><td class=\"num" << (c.matches_broken ? " bad" : "")
         << "\" title=\"matching elements it would compute otherwise, of those "
         << "sampled\">";
      if (c.matches_sampled > 0)
        o_ << c.matches_broken << " of " << c.matches_sampled;
      else
        o_ << "&ndash;";
      o_ << "</td><td>" << esc(c.description) << "</td><td>";
      per_channel(c.per_channel);
      o_ << "</td></tr>";
    }
    o_ << "<tr class=\"unexplained\"><td><i>unexplained</i></td><td class=\"num" << (b.unexplained ? " bad" : "")
       << "\">" << b.unexplained;
    if (b.unexplained_sampled > 0) o_ << " of " << b.unexplained_sampled << " sampled";
    o_ << "</td><td></td><td>mismatches that no change, pair of changes or preset reproduces</td><td></td></tr>";
    o_ << "</tbody></table>";
    channel_plots(b);
  }

  // Where the output has channels, the best causes' counts per channel as bar charts: one channel
  // standing out points at its parameters, all of them alike at the kernel.
  // Causes with the same counts per channel (often several, alike on these elements) share a chart.
  void channel_plots(const BackendResult& b) {
    constexpr std::size_t kPlots = 4;  // the best few; the table above has every cause
    struct Plot {
      std::map<std::int64_t, std::int64_t> counts;
      const CauseCount* cause;  // the best of those with these counts
      std::size_t same;         // how many more have them
    };
    std::vector<Plot> plots;
    for (const CauseCount& c : b.causes) {
      auto counts = plottable(c.per_channel);
      if (counts.empty()) continue;
      auto it = std::find_if(plots.begin(), plots.end(), [&](const Plot& p) { return p.counts == counts; });
      if (it != plots.end())
        ++it->same;
      else if (plots.size() < kPlots)
        plots.push_back({std::move(counts), &c, 0});
    }
    if (plots.empty()) return;
    std::int64_t last = 0;
    for (const Plot& p : plots) last = std::max(last, p.counts.rbegin()->first);
    o_ << "<h4>Per channel</h4><div class=\"row\">";
    for (const Plot& p : plots) o_ << channel_svg(p.counts, p.cause->cause, p.same, last);
    o_ << "</div>";
  }

  void per_channel(const std::map<std::int64_t, std::int64_t>& pc) {
    // Long channel lists are cut: the first channels show the pattern, the JSON has them all.
    constexpr std::size_t kShown = 48;
    std::size_t n = 0;
    for (const auto& [ch, count] : pc) {
      if (n++ == kShown) {
        o_ << "<span class=\"muted\">&hellip; " << pc.size() - kShown << " more channels</span>";
        break;
      }
      o_ << "<span class=\"ch\">ch " << ch << ": <b>" << count << "</b></span>";
    }
  }

  void worst(const Metrics& m) {
    if (m.worst.empty()) return;
    o_ << "<h4>Worst elements</h4><table class=\"small worst\"><thead><tr><th class=\"num\">index</th><th>coords</th>"
          "<th>input / operands</th><th>exact value</th><th>expected</th><th>actual</th><th class=\"num\">&Delta; "
       << unit_name(m) << "</th><th>label</th><th>reproduced by</th></tr></thead><tbody>";
    for (const ElementDiff& d : m.worst) {
      o_ << "<tr><td class=\"num mono\">" << d.index << "</td><td class=\"mono\">(";
      for (std::size_t i = 0; i < d.coords.size(); ++i) o_ << (i ? ", " : "") << d.coords[i];
      o_ << ")</td><td class=\"mono\">" << esc(d.input) << "</td><td class=\"mono\">" << esc(d.exact)
         << "</td><td class=\"mono\">" << esc(d.expected) << "</td><td class=\"mono\">" << esc(d.actual)
         << "</td><td class=\"num mono bad\">" << signed_distance(d.delta) << "</td><td>" << label_words(d.label)
         << "</td><td>";
      for (std::size_t i = 0; i < d.causes.size(); ++i)
        o_ << (i ? " " : "") << "<code>" << esc(d.causes[i]) << "</code>";
      o_ << "</td></tr>";
    }
    o_ << "</tbody></table>";
    if (static_cast<std::int64_t>(m.worst.size()) < m.mismatches())
      o_ << "<div class=\"muted\">" << m.worst.size() << " of " << m.mismatches() << " mismatches shown</div>";
  }

  void reproduce(const BackendResult& b) {
    if (b.fingerprint.empty() && b.reproducer.empty() && b.reproduce_command.empty()) return;
    o_ << "<h4>Reproduce</h4><div class=\"repro\">";
    if (!b.fingerprint.empty())
      o_ << "<span class=\"k\">fingerprint</span><code class=\"fingerprint\">" << esc(b.fingerprint) << "</code>";
    if (!b.reproducer.empty())
      o_ << "<span class=\"k\">reproducer</span><code class=\"reproducer\">" << esc(b.reproducer) << "</code>";
    if (!b.reproduce_command.empty())
      o_ << "<span class=\"k\">command</span><pre class=\"cmd\"><code>" << esc(b.reproduce_command) << "</code></pre>";
    o_ << "</div>";
  }

  const RunReport& r_;
  // Backends that skipped every case, grouped by their reasons (and how many cases gave each).
  struct FoldGroup {
    std::vector<std::string> backends;
    std::vector<std::pair<std::string, std::int64_t>> reasons;
  };
  std::vector<std::string> columns_;  // the matrix's backend columns: the others
  std::vector<FoldGroup> folded_;
  std::set<std::string> folded_names_;
  Anchors anchors_;
  std::map<std::string, std::string> case_anchor_;  // case id -> its section's anchor
  std::map<std::string, std::size_t> case_index_;   // case id -> its place in cases_
  std::vector<CaseRef> cases_;
  std::vector<ModelRef> models_;
  std::ostringstream o_;
};

}  // namespace

std::string render_html(const RunReport& r) { return Renderer(r).render(); }

}  // namespace qc
