#include "harness/baseline.hpp"

#include "harness/compare.hpp"

#include "qconform/error.hpp"
#include "reports/writers.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace qc {

using json = nlohmann::json;

const BaselineEntry* Baseline::find(const std::string& case_id, const std::string& backend) const {
  auto it = entries.find({case_id, backend});
  return it == entries.end() ? nullptr : &it->second;
}

Baseline load_baseline(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open the baseline file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(path.string() + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("format", "") != kBaselineFormat)
    throw InputError(path.string() + ": not a qconform baseline (expected \"format\": \"" + kBaselineFormat + "\")");
  if (!j.contains("entries") || !j["entries"].is_array())
    throw InputError(path.string() + ": field 'entries' must be an array");
  Baseline b;
  std::size_t n = 0;
  for (const json& e : j["entries"]) {
    const std::string where = path.string() + ": entries[" + std::to_string(n++) + "]";
    for (const char* f : {"case", "backend", "verdict"})
      if (!e.contains(f) || !e[f].is_string()) throw InputError(where + ": field '" + f + "' must be a string");
    BaselineEntry be{e["verdict"], e.value("fingerprint", ""), e.value("reason", "")};
    if (be.verdict != "FAIL" && be.verdict != "CRASH" && be.verdict != "TIMEOUT")
      throw InputError(where + ": field 'verdict' must be FAIL, CRASH or TIMEOUT, not '" + be.verdict + "'");
    if (!b.entries.emplace(std::pair{e["case"].get<std::string>(), e["backend"].get<std::string>()}, be).second)
      throw InputError(where + ": a second entry for case '" + e["case"].get<std::string>() + "' on backend '" +
                       e["backend"].get<std::string>() + "'");
  }
  return b;
}

void save_baseline(const Baseline& b, const std::filesystem::path& path) {
  json entries = json::array();
  for (const auto& [key, e] : b.entries) {  // sorted by case, then backend: stable diffs in review
    json je = {{"case", key.first}, {"backend", key.second}, {"verdict", e.verdict}};
    if (!e.fingerprint.empty()) je["fingerprint"] = e.fingerprint;
    if (!e.reason.empty()) je["reason"] = e.reason;
    entries.push_back(std::move(je));
  }
  write_file_atomic(path, json_file_text(json{{"format", kBaselineFormat}, {"entries", entries}}, 2));
}

Baseline baseline_from(const RunReport& r, const Baseline* previous) {
  Baseline b;
  if (previous) b = *previous;
  for (const CaseResult& c : r.cases) {
    for (const BackendResult& br : c.backends) {
      const std::pair key{c.id, br.backend};
      switch (br.verdict) {
        case Verdict::fail:
        case Verdict::crash:
        case Verdict::timeout:
          b.entries[key] = {std::string(name(br.verdict)), br.fingerprint, br.reason};
          break;
        case Verdict::xfail:
          break;  // unchanged: the entry stays as recorded
        case Verdict::skip:
          break;  // not run here: say nothing about it
        case Verdict::pass:
        case Verdict::xpass:
          b.entries.erase(key);  // fixed: the known mismatch is gone
          break;
      }
    }
  }
  return b;
}

bool apply_baseline(const Baseline& b, const std::string& case_id, BackendResult& r) {
  const BaselineEntry* e = b.find(case_id, r.backend);
  if (!e) return false;
  if (r.verdict == Verdict::pass) {
    r.verdict = Verdict::xpass;
    r.reason = "the baseline records " + e->verdict + (e->fingerprint.empty() ? "" : " " + e->fingerprint) +
               ", but it passes now (update the baseline); " + r.reason;
    return true;
  }
  const std::string now(name(r.verdict));
  if (r.verdict == Verdict::fail || r.verdict == Verdict::crash || r.verdict == Verdict::timeout) {
    if (now == e->verdict && same_fingerprint(r.fingerprint, e->fingerprint, b.ignore_magnitude)) {
      r.verdict = Verdict::xfail;
      r.reason = "known " + now + (e->fingerprint.empty() ? "" : ", fingerprint " + e->fingerprint + " unchanged") +
                 "; " + r.reason;
      return true;
    }
    r.reason = "changed from the baseline's " + e->verdict + (e->fingerprint.empty() ? "" : " " + e->fingerprint) +
               " to " + now + (r.fingerprint.empty() ? "" : " " + r.fingerprint) + "; " + r.reason;
  }
  return false;
}

bool is_change(Verdict v) {
  return v == Verdict::fail || v == Verdict::xpass || v == Verdict::crash || v == Verdict::timeout;
}

}  // namespace qc
