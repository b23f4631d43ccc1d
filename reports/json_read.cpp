#include "qconform/error.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

namespace qc {

using json = nlohmann::json;

namespace {

// A value of a report with its place in it ("/cases/3/backends/1/verdict"): every read names the
// field it fails on, since a report handed to merge, report or baseline may be anything.
class Node {
 public:
  Node(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
  bool is_null() const { return j_.is_null(); }
  Node at(const char* key) const {
    if (!j_.is_object()) fail("must be an object");
    if (!j_.contains(key)) throw std::out_of_range("field '" + path_ + "/" + key + "' is missing");
    return {j_[key], path_ + "/" + key};
  }
  template <class T>
  T as() const {
    try {
      return j_.get<T>();
    } catch (const json::exception&) {
      fail(std::string("must be ") + kind<T>());
    }
  }
  template <class T>
  T get(const char* key) const {
    return at(key).as<T>();
  }
  template <class T>
  T get_or(const char* key, T otherwise) const {
    return has(key) ? get<T>(key) : otherwise;
  }
  // The elements of a list.
  std::vector<Node> elements() const {
    if (!j_.is_array()) fail("must be a list");
    std::vector<Node> out;
    for (std::size_t i = 0; i < j_.size(); ++i) out.emplace_back(j_[i], path_ + "/" + std::to_string(i));
    return out;
  }
  // The members of an object, as (key, value).
  std::vector<std::pair<std::string, Node>> members() const {
    if (!j_.is_object()) fail("must be an object");
    std::vector<std::pair<std::string, Node>> out;
    for (const auto& [k, v] : j_.items()) out.emplace_back(k, Node(v, path_ + "/" + k));
    return out;
  }
  // Text as the report writes it: a string, or a number written as JSON.
  std::string text() const { return j_.is_string() ? j_.get<std::string>() : j_.dump(); }
  template <class E>
  E enumerator(const char* what) const {
    const auto s = as<std::string>();
    if (const auto v = table_parse<E>(s)) return *v;
    fail(std::string("is not a known ") + what + " ('" + s + "')");
  }
  [[noreturn]] void fail(const std::string& problem) const {
    std::string got = j_.dump();
    if (got.size() > 60) got = got.substr(0, 57) + "...";
    throw std::out_of_range("field '" + (path_.empty() ? std::string("/") : path_) + "' " + problem + ", got " + got);
  }

 private:
  template <class T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
    if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) return "a list of integers";
    if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) return "an object of strings";
    return "an object of objects of strings";
  }

  const json& j_;
  std::string path_;
};

std::array<std::int64_t, 5> histogram_from(const Node& h) {
  return {h.get<std::int64_t>("0"), h.get<std::int64_t>("1"), h.get<std::int64_t>("2"), h.get<std::int64_t>("3"),
          h.get<std::int64_t>(">=4")};
}

Metrics metrics_from(const Node& j) {
  Metrics m;
  m.unit = j.get<std::string>("unit");
  m.elements = j.get<std::int64_t>("elements");
  m.compared = j.get<std::int64_t>("compared");
  m.unspecified = j.get<std::int64_t>("unspecified");
  m.exact = j.get<std::int64_t>("exact_matches");
  m.histogram = histogram_from(j.at("histogram"));
  m.max_abs = j.get<std::int64_t>("max_abs_delta");
  m.signed_sum = j.get<std::int64_t>("signed_bias");
  m.signed_zero_mismatches = j.get_or<std::int64_t>("signed_zero_mismatches", 0);
  if (j.has("histogram_to_exact")) {
    m.has_to_exact = true;
    m.histogram_to_exact = histogram_from(j.at("histogram_to_exact"));
    m.max_to_exact = j.get<std::int64_t>("max_ulp_to_exact");
  }
  for (const auto& [lname, counts] : j.at("labels").members()) {
    const auto label = table_parse<Label>(lname);
    if (!label) counts.fail("is not a known label");
    const auto l = static_cast<std::size_t>(*label);
    m.label_total[l] = counts.get<std::int64_t>("total");
    m.label_mismatch[l] = counts.get<std::int64_t>("mismatched");
  }
  for (const Node& e : j.at("worst").elements()) {
    ElementDiff d;
    d.index = e.get<std::int64_t>("index");
    d.coords = e.get<std::vector<std::int64_t>>("coords");
    d.input = e.get<std::string>("input");
    d.expected = e.at("expected").text();
    d.actual = e.at("actual").text();
    d.delta = e.get<std::int64_t>("delta");
    d.exact = e.get<std::string>("exact");
    d.label = e.at("label").enumerator<Label>("label");
    d.causes = e.get_or<std::vector<std::string>>("causes", {});
    m.worst.push_back(std::move(d));
  }
  return m;
}

std::vector<AgreementCheck> agreements_from(const Node& j, const char* key) {
  std::vector<AgreementCheck> out;
  if (!j.has(key)) return out;  // reports before schema 1.2 have none
  for (const Node& a : j.at(key).elements()) {
    AgreementCheck c;
    c.assertion = a.get<std::string>("assertion");
    c.other = a.get<std::string>("other");
    c.stated = a.get_or<std::int64_t>("stated_elements", -1);
    c.status = a.at("status").enumerator<AgreementStatus>("agreement status");
    c.elements = a.get<std::int64_t>("elements");
    c.differing = a.get<std::int64_t>("differing");
    c.first_differing = a.get<std::vector<std::int64_t>>("first_differing");
    c.reason = a.get<std::string>("reason");
    out.push_back(std::move(c));
  }
  return out;
}

BackendResult backend_from(const Node& j) {
  BackendResult b;
  b.backend = j.get<std::string>("backend");
  b.claim = j.get<std::string>("claim");
  b.expectation = j.get<std::string>("expectation");
  b.verdict = j.at("verdict").enumerator<Verdict>("verdict");
  b.reason = j.get<std::string>("reason");
  b.seconds = j.get<double>("seconds");
  if (j.has("metrics")) b.metrics = metrics_from(j.at("metrics"));
  b.claim_mismatches = j.get_or<std::int64_t>("claim_mismatches", -1);
  if (j.has("causes")) {
    for (const Node& c : j.at("causes").elements()) {
      CauseCount cc{c.get<std::string>("cause"), c.get<std::string>("description"), c.get<std::int64_t>("count"), {}};
      cc.kind = c.get_or<std::string>("kind", "single");  // reports before schema 1.3 name single changes only
      cc.matches_sampled = c.get_or<std::int64_t>("matches_sampled", 0);
      cc.matches_broken = c.get_or<std::int64_t>("matches_broken", 0);
      cc.mismatches_sampled = c.get_or<std::int64_t>("mismatches_sampled", 0);  // since schema 1.6
      for (const auto& [ch, n] : c.at("per_channel").members()) {
        std::int64_t channel = 0;
        const auto [end, ec] = std::from_chars(ch.data(), ch.data() + ch.size(), channel);
        if (ch.empty() || ec != std::errc() || end != ch.data() + ch.size()) n.fail("is not under a channel number");
        cc.per_channel[channel] = n.as<std::int64_t>();
      }
      b.causes.push_back(std::move(cc));
    }
  }
  b.unexplained = j.get_or<std::int64_t>("unexplained", 0);
  b.unexplained_sampled = j.get_or<std::int64_t>("unexplained_sampled", 0);
  b.fingerprint = j.get_or<std::string>("fingerprint", "");
  b.reproducer = j.get_or<std::string>("reproducer", "");
  b.reproduce_command = j.get_or<std::string>("reproduce_command", "");
  b.agreements = agreements_from(j, "agreements");
  return b;
}

CaseResult case_from(const Node& j) {
  CaseResult c;
  c.id = j.get<std::string>("id");
  c.suite = j.get<std::string>("suite");
  c.name = j.get<std::string>("name");
  c.description = j.get<std::string>("description");
  c.file = j.get<std::string>("file");
  const Node line = j.at("line");
  const auto line_number = line.as<std::int64_t>();
  if (line_number < 0 || line_number > std::numeric_limits<int>::max()) line.fail("is not a line number");
  c.line = static_cast<int>(line_number);
  c.op = j.get<std::string>("op");
  c.spec = j.get<std::string>("spec");
  c.spec_description = j.get<std::string>("spec_description");
  c.shape = j.get<std::string>("shape");
  c.input_dtype = j.get<std::string>("input_dtype");
  c.output_dtype = j.get<std::string>("output_dtype");
  c.granularity = j.get<std::string>("granularity");
  c.operands_from = j.get_or<std::map<std::string, std::string>>("operands_from", {});
  c.agreements = agreements_from(j, "agreements");
  for (const Node& b : j.at("backends").elements()) c.backends.push_back(backend_from(b));
  return c;
}

// A difference as a real number: JSON has no infinity, and the writer writes an infinite one (an
// infinity against a number) as null, which reads back as infinity.
double real_from(const Node& j, const char* key) {
  const Node n = j.at(key);
  return n.is_null() ? std::numeric_limits<double>::infinity() : n.as<double>();
}

// The model view (qconform model), schema 1.7: `model_json`'s fields, every one read back.
ModelView model_from(const Node& j) {
  ModelView v;
  v.file = j.get<std::string>("file");
  v.name = j.get<std::string>("name");
  v.format = j.get<std::string>("format");
  v.spec = j.get<std::string>("spec");
  v.producer = j.get<std::string>("producer");
  v.ir_version = j.get<std::int64_t>("ir_version");
  v.opset = j.get<std::int64_t>("opset");
  v.inputs = j.get<std::vector<std::string>>("inputs");
  for (const Node& n : j.at("steps").elements()) {
    ModelStep s;
    s.name = n.get<std::string>("name");
    s.op_type = n.get<std::string>("op_type");
    s.kind = n.get<std::string>("kind");
    s.case_id = n.get<std::string>("case");
    s.output = n.get<std::string>("output");
    s.shape = n.get<std::string>("shape");
    s.dtype = n.get<std::string>("dtype");
    s.covers = n.get_or<std::vector<std::string>>("covers", {});
    if (n.has("fused_agreement")) {
      const Node f = n.at("fused_agreement");
      s.fused_differs = f.get<std::int64_t>("differing");
      s.fused_elements = f.get<std::int64_t>("elements");
    }
    for (const Node& x : n.at("runs").elements()) {
      ModelStepRun r;
      r.run = x.get<std::string>("run");
      r.computed = x.get<bool>("computed");
      r.note = x.get_or<std::string>("note", "");
      r.elements = x.get<std::int64_t>("elements");
      r.differing = x.get<std::int64_t>("differing");
      r.max_lsb = x.get<std::int64_t>("max_lsb");
      r.max_abs = real_from(x, "max_abs");
      r.cause = x.get_or<std::string>("cause", "");
      s.runs.push_back(std::move(r));
    }
    v.steps.push_back(std::move(s));
  }
  for (const Node& n : j.at("runs").elements()) {
    ModelRun r;
    r.name = n.get<std::string>("name");
    r.backend = n.get<std::string>("backend");
    r.mode = n.get<std::string>("mode");
    r.reading = n.get<std::string>("reading");
    r.compared_with = n.get<std::string>("compared_with");
    r.status = n.get<std::string>("status");
    r.note = n.get_or<std::string>("note", "");
    r.first_divergent = n.get<std::string>("first_divergent");
    r.first_divergent_cause = n.get_or<std::string>("first_divergent_cause", "");
    // Written by every qconform since the model files; the first model reports have none.
    r.first_float_difference = n.get_or<std::string>("first_float_difference", "");
    r.steps_run = n.get<std::int64_t>("steps_run");
    r.steps_by_oracle = n.get<std::int64_t>("steps_by_oracle");
    const Node out = n.at("output");
    r.output_elements = out.get<std::int64_t>("elements");
    r.output_differing = out.get<std::int64_t>("differing");
    r.output_max_abs = real_from(out, "max_abs");
    if (n.has("top1")) {
      const Node t = n.at("top1");
      r.top1_total = t.get_or<std::int64_t>("rows", 0);
      r.top1_agree = t.get_or<std::int64_t>("agree_with_oracle", -1);
      r.top1_correct = t.get_or<std::int64_t>("correct", -1);
    }
    r.seconds = n.get<double>("seconds");
    v.runs.push_back(std::move(r));
  }
  if (j.has("oracle_top1")) {
    const Node t = j.at("oracle_top1");
    v.top1_total = t.get<std::int64_t>("rows");
    v.oracle_top1_correct = t.get<std::int64_t>("correct");
  }
  return v;
}

// Every number of a report is an integer but the timings ("seconds") and the model view's
// differences as real numbers ("max_abs"). A float where an integer belongs would be converted
// with a cast (undefined for 1e77), so it is refused before reading.
void check_integers(const json& j, const std::string& path, const std::string& where) {
  if (j.is_number_float() && !path.ends_with("/seconds") &&
      !(path.starts_with("/models/") && path.ends_with("/max_abs")))
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
    const Node root(j, "");
    const Node m = root.at("metadata");
    r.meta.tool_version = m.get<std::string>("version");
    r.meta.git_revision = m.get<std::string>("git_revision");
    r.meta.compiler = m.get<std::string>("compiler");
    r.meta.host = m.get<std::string>("host");
    r.meta.cpu = m.get<std::string>("cpu");
    r.meta.cpu_features = m.get<std::vector<std::string>>("cpu_features");
    r.meta.backends = m.get<std::vector<std::string>>("backends");
    r.meta.backend_facts = m.get_or<std::map<std::string, std::map<std::string, std::string>>>("backend_facts", {});
    r.meta.command_line = m.get<std::vector<std::string>>("command_line");
    r.meta.shard = m.get_or<std::string>("shard", "");
    r.meta.started_at = m.get<std::string>("started_at");
    r.meta.seconds = m.get<double>("seconds");
    for (const Node& c : root.at("cases").elements()) r.cases.push_back(case_from(c));
    if (root.has("models"))  // since schema 1.7, only in reports of qconform model
      for (const Node& v : root.at("models").elements()) r.models.push_back(model_from(v));
  } catch (const std::out_of_range& e) {  // Node's errors, which name the field
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
    // Model views: a sharded run writes them in shard 1 (qconform run --shard), so each appears once.
    out.models.insert(out.models.end(), r->models.begin(), r->models.end());
  }
  return out;
}

}  // namespace qc
