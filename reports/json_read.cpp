#include "qconform/error.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace qc {

using json = nlohmann::json;

namespace {

std::array<std::int64_t, 5> histogram_from(const json& h) {
  return {h.at("0").get<std::int64_t>(), h.at("1").get<std::int64_t>(), h.at("2").get<std::int64_t>(),
          h.at("3").get<std::int64_t>(), h.at(">=4").get<std::int64_t>()};
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

Verdict verdict_from(const std::string& s) {
  if (const auto v = table_parse<Verdict>(s)) return *v;
  throw std::out_of_range("unknown verdict '" + s + "'");
}

Label label_from(const std::string& s) {
  if (const auto l = table_parse<Label>(s)) return *l;
  throw std::out_of_range("unknown label '" + s + "'");
}

Metrics metrics_from(const json& j) {
  Metrics m;
  m.unit = j.at("unit");
  m.elements = j.at("elements");
  m.compared = j.at("compared");
  m.unspecified = j.at("unspecified");
  m.exact = j.at("exact_matches");
  m.histogram = histogram_from(j.at("histogram"));
  m.max_abs = j.at("max_abs_delta");
  m.signed_sum = j.at("signed_bias");
  m.signed_zero_mismatches = j.value("signed_zero_mismatches", std::int64_t{0});
  if (j.contains("histogram_to_exact")) {
    m.has_to_exact = true;
    m.histogram_to_exact = histogram_from(j["histogram_to_exact"]);
    m.max_to_exact = j.at("max_ulp_to_exact");
  }
  for (const auto& [lname, counts] : j.at("labels").items()) {
    const auto l = static_cast<std::size_t>(label_from(lname));
    m.label_total[l] = counts.at("total");
    m.label_mismatch[l] = counts.at("mismatched");
  }
  for (const json& e : j.at("worst")) {
    ElementDiff d;
    d.index = e.at("index");
    d.coords = e.at("coords").get<std::vector<std::int64_t>>();
    d.input = e.at("input");
    d.expected = text_of(e.at("expected"));
    d.actual = text_of(e.at("actual"));
    d.delta = e.at("delta");
    d.exact = e.at("exact");
    d.label = label_from(e.at("label"));
    if (e.contains("causes")) d.causes = e["causes"].get<std::vector<std::string>>();
    m.worst.push_back(std::move(d));
  }
  return m;
}

AgreementStatus agreement_status_from(const std::string& s) {
  if (const auto a = table_parse<AgreementStatus>(s)) return *a;
  throw std::out_of_range("unknown agreement status '" + s + "'");
}

std::vector<AgreementCheck> agreements_from(const json& j, const char* key) {
  std::vector<AgreementCheck> out;
  if (!j.contains(key)) return out;  // reports before schema 1.2 have none
  for (const json& a : j.at(key)) {
    AgreementCheck c;
    c.assertion = a.at("assertion");
    c.other = a.at("other");
    c.stated = a.value("stated_elements", std::int64_t{-1});
    c.status = agreement_status_from(a.at("status"));
    c.elements = a.at("elements");
    c.differing = a.at("differing");
    c.first_differing = a.at("first_differing").get<std::vector<std::int64_t>>();
    c.reason = a.at("reason");
    out.push_back(std::move(c));
  }
  return out;
}

BackendResult backend_from(const json& j) {
  BackendResult b;
  b.backend = j.at("backend");
  b.claim = j.at("claim");
  b.expectation = j.at("expectation");
  b.verdict = verdict_from(j.at("verdict"));
  b.reason = j.at("reason");
  b.seconds = j.at("seconds");
  if (j.contains("metrics")) b.metrics = metrics_from(j["metrics"]);
  b.claim_mismatches = j.value("claim_mismatches", std::int64_t{-1});
  if (j.contains("causes")) {
    for (const json& c : j["causes"]) {
      CauseCount cc{c.at("cause"), c.at("description"), c.at("count"), {}};
      for (const auto& [ch, n] : c.at("per_channel").items()) cc.per_channel[std::stoll(ch)] = n.get<std::int64_t>();
      b.causes.push_back(std::move(cc));
    }
  }
  b.unexplained = j.value("unexplained", std::int64_t{0});
  b.fingerprint = j.value("fingerprint", "");
  b.reproducer = j.value("reproducer", "");
  b.reproduce_command = j.value("reproduce_command", "");
  b.agreements = agreements_from(j, "agreements");
  return b;
}

CaseResult case_from(const json& j) {
  CaseResult c;
  c.id = j.at("id");
  c.suite = j.at("suite");
  c.name = j.at("name");
  c.description = j.at("description");
  c.file = j.at("file");
  c.line = j.at("line");
  c.op = j.at("op");
  c.spec = j.at("spec");
  c.spec_description = j.at("spec_description");
  c.shape = j.at("shape");
  c.input_dtype = j.at("input_dtype");
  c.output_dtype = j.at("output_dtype");
  c.granularity = j.at("granularity");
  if (j.contains("operands_from")) c.operands_from = j["operands_from"].get<std::map<std::string, std::string>>();
  c.agreements = agreements_from(j, "agreements");
  for (const json& b : j.at("backends")) c.backends.push_back(backend_from(b));
  return c;
}

// Every number of a report is an integer but the timings ("seconds"). A float where an integer
// belongs would be converted with a cast (undefined for 1e77), so it is refused before reading.
void check_integers(const json& j, const std::string& path, const std::string& where) {
  if (j.is_number_float() && !path.ends_with("/seconds"))
    throw InputError(where + ": malformed report: field '" + path + "' must be an integer, got " + j.dump());
  if (j.is_object())
    for (const auto& [k, v] : j.items()) check_integers(v, path + "/" + k, where);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) check_integers(j[i], path + "/" + std::to_string(i), where);
}

}  // namespace

RunReport report_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("tool") || j["tool"] != "qconform" || !j.contains("schema_version") ||
      !j["schema_version"].is_string())
    throw InputError(where + ": not a qconform report (no \"tool\": \"qconform\" and \"schema_version\")");
  const std::string version = j["schema_version"];
  check_integers(j, "", where);
  if (version.rfind("1.", 0) != 0)
    throw InputError(where + ": report schema " + version + " is not readable by this qconform (schema " +
                     kReportSchemaVersion + ")");
  RunReport r;
  try {
    const json& m = j.at("metadata");
    r.meta.tool_version = m.at("version");
    r.meta.git_revision = m.at("git_revision");
    r.meta.compiler = m.at("compiler");
    r.meta.host = m.at("host");
    r.meta.cpu = m.at("cpu");
    r.meta.cpu_features = m.at("cpu_features").get<std::vector<std::string>>();
    r.meta.backends = m.at("backends").get<std::vector<std::string>>();
    if (m.contains("backend_facts"))
      r.meta.backend_facts = m["backend_facts"].get<std::map<std::string, std::map<std::string, std::string>>>();
    r.meta.command_line = m.at("command_line").get<std::vector<std::string>>();
    r.meta.shard = m.value("shard", "");
    r.meta.started_at = m.at("started_at");
    r.meta.seconds = m.at("seconds");
    for (const json& c : j.at("cases")) r.cases.push_back(case_from(c));
  } catch (const std::exception& e) {
    throw InputError(where + ": malformed report: " + e.what());
  }
  return r;
}

RunReport report_from_text(const std::string& text, const std::string& where) {
  // A report nests a few levels; a file nested thousands deep would overflow the stack of the
  // recursive walks after the parse.
  constexpr int kMaxDepth = 64;
  const auto bounded = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth)
      throw InputError(where + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return true;
  };
  json j;
  try {
    j = json::parse(text, bounded);
  } catch (const json::exception& e) {  // a syntax error, or a number no double holds (1e999)
    throw InputError(where + ": not valid JSON: " + e.what());
  }
  return report_from_json(j, where);
}

RunReport load_report(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open the report");
  std::stringstream buf;
  buf << in.rdbuf();
  return report_from_text(buf.str(), path.string());
}

RunReport merge_reports(const std::vector<RunReport>& parts) {
  if (parts.empty()) throw InputError("merge: no reports given");
  // Shards hold contiguous ranges of the global case order (qconform run --shard), so the merged
  // order is the shards' order by index.
  // A merge is complete or refused: every part is shard i/n of one sharding and each i from 1 to n
  // is there once, since a merge of fewer would read as a complete run.
  const auto shard_of = [](const RunReport& r) {
    const std::string& s = r.meta.shard;
    const auto slash = s.find('/');
    int i = 0, n = 0;
    const auto whole = [](std::string_view t, int& v) {
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return !t.empty() && ec == std::errc() && end == t.data() + t.size();
    };
    if (slash == std::string::npos || !whole(std::string_view(s).substr(0, slash), i) ||
        !whole(std::string_view(s).substr(slash + 1), n) || n < 1 || i < 1 || i > n)
      throw InputError("merge: a report " + (s.empty() ? std::string("without a shard") : "of shard '" + s + "'") +
                       " is not part of a sharded run (qconform run --shard i/n)");
    return std::pair{i, n};
  };
  const int count = shard_of(parts.front()).second;
  std::vector<const RunReport*> order(static_cast<std::size_t>(count), nullptr);
  for (const RunReport& p : parts) {
    const auto [i, n] = shard_of(p);
    if (n != count)
      throw InputError("merge: the reports come from different shardings ('" + parts.front().meta.shard + "' and '" +
                       p.meta.shard + "')");
    if (order[static_cast<std::size_t>(i - 1)]) throw InputError("merge: shard " + p.meta.shard + " is given twice");
    order[static_cast<std::size_t>(i - 1)] = &p;
  }
  std::string missing;
  for (int i = 1; i <= count; ++i)
    if (!order[static_cast<std::size_t>(i - 1)])
      missing += (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
  if (!missing.empty())
    throw InputError("merge: shard " + missing + " is missing: the merged report would be incomplete");
  RunReport out;
  out.meta = order.front()->meta;
  out.meta.shard.clear();
  out.meta.seconds = 0;
  std::map<std::string, int> seen;
  for (const RunReport* r : order) {
    out.meta.seconds += r->meta.seconds;
    for (const std::string& b : r->meta.backends)
      if (std::find(out.meta.backends.begin(), out.meta.backends.end(), b) == out.meta.backends.end())
        out.meta.backends.push_back(b);
    for (const auto& [b, f] : r->meta.backend_facts) out.meta.backend_facts.emplace(b, f);
    for (const CaseResult& c : r->cases) {
      if (seen[c.id]++) throw InputError("merge: case '" + c.id + "' appears in more than one report");
      out.cases.push_back(c);
    }
  }
  return out;
}

}  // namespace qc
