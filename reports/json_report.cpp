#include "reports/writers.hpp"

#include "qconform/error.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

namespace qc {

using json = nlohmann::json;

namespace {

json histogram_json(const std::array<std::int64_t, 5>& h) {
  return {{"0", h[0]}, {"1", h[1]}, {"2", h[2]}, {"3", h[3]}, {">=4", h[4]}};
}

json metrics_json(const Metrics& m) {
  json labels = json::object();
  for (int l = 0; l < kLabelCount; ++l)
    labels[std::string(name(static_cast<Label>(l)))] = {{"total", m.label_total[static_cast<std::size_t>(l)]},
                                                        {"mismatched", m.label_mismatch[static_cast<std::size_t>(l)]}};
  const bool integers = m.unit == "lsb";
  auto value = [&](const std::string& text) -> json {
    if (integers) return std::stoll(text);  // integer outputs stay numbers
    return text;
  };
  json worst = json::array();
  for (const ElementDiff& d : m.worst) {
    json e = {
        {"index", d.index},          {"coords", d.coords}, {"input", d.input}, {"expected", value(d.expected)},
        {"actual", value(d.actual)}, {"delta", d.delta},   {"exact", d.exact}, {"label", std::string(name(d.label))}};
    e["causes"] = d.causes;
    worst.push_back(e);
  }
  json j = {{"unit", m.unit},
            {"elements", m.elements},
            {"compared", m.compared},
            {"unspecified", m.unspecified},
            {"exact_matches", m.exact},
            {"mismatches", m.mismatches()},
            {"histogram", histogram_json(m.histogram)},
            {"max_abs_delta", m.max_abs},
            {"signed_bias", m.signed_sum},
            {"labels", labels},
            {"worst", worst}};
  if (!integers) {
    j["signed_zero_mismatches"] = m.signed_zero_mismatches;
    if (m.has_to_exact) {
      j["histogram_to_exact"] = histogram_json(m.histogram_to_exact);
      j["max_ulp_to_exact"] = m.max_to_exact;
    }
  }
  return j;
}

json agreements_json(const std::vector<AgreementCheck>& v) {
  json out = json::array();
  for (const AgreementCheck& a : v) {
    json j = {{"assertion", a.assertion}, {"other", a.other},         {"status", std::string(name(a.status))},
              {"elements", a.elements},   {"differing", a.differing}, {"first_differing", a.first_differing},
              {"reason", a.reason}};
    if (a.stated >= 0) j["stated_elements"] = a.stated;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

namespace {

json backend_json(const BackendResult& b) {
  json jb = {{"backend", b.backend},         {"claim", b.claim},
             {"expectation", b.expectation}, {"verdict", std::string(name(b.verdict))},
             {"reason", b.reason},           {"seconds", b.seconds}};
  if (b.verdict != Verdict::skip && b.verdict != Verdict::crash && b.verdict != Verdict::timeout)
    jb["metrics"] = metrics_json(b.metrics);
  if (b.claim_mismatches >= 0) jb["claim_mismatches"] = b.claim_mismatches;
  if (jb.contains("metrics")) {
    json causes = json::array();
    for (const CauseCount& c : b.causes) {
      json per_channel = json::object();
      for (const auto& [ch, n] : c.per_channel) per_channel[std::to_string(ch)] = n;
      causes.push_back({{"cause", c.cause},
                        {"description", c.description},
                        {"count", c.count},
                        {"per_channel", per_channel},
                        {"kind", c.kind},
                        {"matches_sampled", c.matches_sampled},
                        {"matches_broken", c.matches_broken}});
      if (c.mismatches_sampled > 0) causes.back()["mismatches_sampled"] = c.mismatches_sampled;
    }
    jb["causes"] = causes;
    jb["unexplained"] = b.unexplained;
    if (b.unexplained_sampled > 0) jb["unexplained_sampled"] = b.unexplained_sampled;
  }
  if (!b.fingerprint.empty()) jb["fingerprint"] = b.fingerprint;
  if (!b.reproducer.empty()) {
    jb["reproducer"] = b.reproducer;
    jb["reproduce_command"] = b.reproduce_command;
  }
  if (!b.agreements.empty()) jb["agreements"] = agreements_json(b.agreements);
  return jb;
}

json case_json(const CaseResult& c, json backends) {
  json j = {{"id", c.id},
            {"suite", c.suite},
            {"name", c.name},
            {"description", c.description},
            {"file", c.file},
            {"line", c.line},
            {"op", c.op},
            {"spec", c.spec},
            {"spec_description", c.spec_description},
            {"shape", c.shape},
            {"input_dtype", c.input_dtype},
            {"output_dtype", c.output_dtype},
            {"granularity", c.granularity},
            {"backends", std::move(backends)}};
  // Only for cases that use them, so a report of cases without chains reads as before.
  if (!c.operands_from.empty()) j["operands_from"] = c.operands_from;
  if (!c.agreements.empty()) j["agreements"] = agreements_json(c.agreements);
  return j;
}

}  // namespace

std::string json_file_text(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string jsonl_line(const CaseResult& c, const BackendResult& b) {
  return json_file_text(case_json(c, json::array({backend_json(b)})), -1);
}

json model_json(const ModelView& v) {
  json steps = json::array();
  for (const ModelStep& s : v.steps) {
    json runs = json::array();
    for (const ModelStepRun& r : s.runs) {
      json j = {{"run", r.run},         {"computed", r.computed}, {"elements", r.elements}, {"differing", r.differing},
                {"max_lsb", r.max_lsb}, {"max_abs", r.max_abs}};
      if (!r.note.empty()) j["note"] = r.note;
      if (!r.cause.empty()) j["cause"] = r.cause;
      runs.push_back(std::move(j));
    }
    json j = {{"name", s.name},     {"op_type", s.op_type}, {"kind", s.kind},   {"case", s.case_id},
              {"output", s.output}, {"shape", s.shape},     {"dtype", s.dtype}, {"runs", runs}};
    if (!s.covers.empty()) j["covers"] = s.covers;
    if (s.fused_differs >= 0) j["fused_agreement"] = {{"differing", s.fused_differs}, {"elements", s.fused_elements}};
    steps.push_back(std::move(j));
  }
  json runs = json::array();
  for (const ModelRun& r : v.runs) {
    json j = {
        {"name", r.name},
        {"backend", r.backend},
        {"mode", r.mode},
        {"reading", r.reading},
        {"compared_with", r.compared_with},
        {"status", r.status},
        {"first_divergent", r.first_divergent},
        {"first_float_difference", r.first_float_difference},
        {"steps_run", r.steps_run},
        {"steps_by_oracle", r.steps_by_oracle},
        {"output", {{"elements", r.output_elements}, {"differing", r.output_differing}, {"max_abs", r.output_max_abs}}},
        {"seconds", r.seconds}};
    if (!r.note.empty()) j["note"] = r.note;
    if (!r.first_divergent_cause.empty()) j["first_divergent_cause"] = r.first_divergent_cause;
    if (r.top1_agree >= 0) j["top1"] = {{"rows", r.top1_total}, {"agree_with_oracle", r.top1_agree}};
    if (r.top1_correct >= 0) j["top1"]["correct"] = r.top1_correct;
    runs.push_back(std::move(j));
  }
  json j = {{"file", v.file},   {"name", v.name},         {"format", v.format},
            {"spec", v.spec},   {"producer", v.producer}, {"ir_version", v.ir_version},
            {"opset", v.opset}, {"inputs", v.inputs},     {"steps", steps},
            {"runs", runs}};
  if (v.oracle_top1_correct >= 0) j["oracle_top1"] = {{"rows", v.top1_total}, {"correct", v.oracle_top1_correct}};
  return j;
}

json to_json(const RunReport& r) {
  json cases = json::array();
  for (const CaseResult& c : r.cases) {
    json backends = json::array();
    for (const BackendResult& b : c.backends) backends.push_back(backend_json(b));
    cases.push_back(case_json(c, std::move(backends)));
  }
  const RunMetadata& m = r.meta;
  json j = {{"schema_version", kReportSchemaVersion},
            {"tool", "qconform"},
            {"metadata",
             {{"version", m.tool_version},
              {"git_revision", m.git_revision},
              {"compiler", m.compiler},
              {"host", m.host},
              {"cpu", m.cpu},
              {"cpu_features", m.cpu_features},
              {"backends", m.backends},
              {"backend_facts", m.backend_facts},
              {"command_line", m.command_line},
              {"shard", m.shard},
              {"started_at", m.started_at},
              {"seconds", m.seconds}}},
            {"summary", r.verdict_counts()},
            {"cases", cases}};
  if (!r.models.empty()) {
    j["models"] = json::array();
    for (const ModelView& v : r.models) j["models"].push_back(model_json(v));
  }
  return j;
}

namespace {

namespace fs = std::filesystem;

// `content` into a new file beside `path` (its name + ".tmp.PID"), complete on disk or removed:
// the temporary's path, or an InputError naming `path` and the system's reason (a full disk, a
// folder that is a file, no permission).
fs::path stage(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) throw InputError(path.string() + ": cannot create its folder: " + ec.message());
  }
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(path.string() + ": cannot write it: " + std::strerror(errno));
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    const int e = written ? errno : write_errno;
    fs::remove(tmp, ec);
    throw InputError(path.string() + ": cannot write it: " + std::strerror(e));
  }
  return tmp;
}

void replace(const fs::path& tmp, const fs::path& path) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(path.string() + ": cannot replace it: " + ec.message());
  }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  replace(stage(path, content), path);
}

void write_reports(const RunReport& r, const std::filesystem::path& dir,
                   const std::optional<std::filesystem::path>& results) {
  // Every file is staged complete before any is replaced, so a write that fails (a full disk, a
  // folder that is a file) leaves the previous set as it was and no temporary behind; what is left
  // are renames within one folder, which need no space.
  const std::pair<const char*, std::string> files[] = {{"report.json", json_file_text(to_json(r), 2)},
                                                       {"report.html", render_html(r)},
                                                       {"report.junit.xml", render_junit(r)}};
  for (const auto& [name, content] : files)
    if (fs::is_directory(dir / name)) throw InputError((dir / name).string() + ": is a folder, not a report file");
  std::vector<fs::path> staged;
  try {
    for (const auto& [name, content] : files) staged.push_back(stage(dir / name, content));
  } catch (...) {
    std::error_code ec;
    for (const fs::path& t : staged) fs::remove(t, ec);
    throw;
  }
  for (std::size_t i = 0; i < staged.size(); ++i) replace(staged[i], dir / files[i].first);
  if (results) replace(*results, dir / "results.jsonl");
}

}  // namespace qc
