// qconform: the command-line front end.
//
// Exit codes: 0 every expectation met; 1 a conformance failure (FAIL, XPASS, CRASH, TIMEOUT);
// 2 a usage or input error (nothing is written); 77 nothing could run (every result SKIP).
// With --gate (and a baseline), 0 unless something changed against the baseline.
#include "backends/exec/paths.hpp"
#include "backends/peers.hpp"
#include "backends/plugin/plugin_backend.hpp"
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "cases/case_writer.hpp"
#include "cli/oracle_cli.hpp"
#include "harness/baseline.hpp"
#include "harness/explain.hpp"
#include "harness/infer.hpp"
#include "harness/phase_times.hpp"
#include "harness/reproducer.hpp"
#include "harness/runner.hpp"
#include "models/model_job.hpp"
#include "oracles/choose_qparams.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"
#include "reports/reader.hpp"
#include "reports/writers.hpp"

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "qconform_revision.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kExitInput = 2;

// A run between its first backend call and its written reports. A backend that calls exit() in
// this process (a kernel's error path, a library's abort handler that exits 0) would otherwise end
// the run with its status, 0 included, and no report: the exit handler turns that into exit 1 with
// a message. (_exit and signals bypass exit handlers; --isolate turns those into CRASH verdicts.)
struct RunInFlight {
  pid_t pid = 0;  // the harness's own process: a forked backend child inherits the handler
  bool active = false;
  std::size_t done = 0, total = 0;
  std::string last;  // the last finished (case, backend)
};
RunInFlight g_run;

void exit_during_run() {
  if (!g_run.active || ::getpid() != g_run.pid) return;
  std::fprintf(
      stderr,
      "qconform: a backend ended the process (exit) during the run, after %zu of %zu results%s%s; no report "
      "was written (the previous one is untouched; results.partial.jsonl holds the finished results); run with "
      "--isolate to make this a CRASH verdict\n",
      g_run.done, g_run.total, g_run.last.empty() ? "" : ", the last ", g_run.last.c_str());
  std::fflush(stderr);
  ::_exit(1);
}

std::vector<fs::path> case_paths(const std::vector<std::string>& args) {
  if (args.empty()) return {qc::default_cases_dir()};
  return {args.begin(), args.end()};
}

// Where each custom preset came from (a policy file, a plugin), for `list presets`.
std::map<std::string, std::string>& preset_origin();

// Plugins named with --plugin (any subcommand that takes backends), after those of QCONFORM_PLUGINS.
std::vector<std::string> g_plugin_paths;
// --no-peers: leave out the peer backends of the manifest (docs/peers.md).
bool g_no_peers = false;
// The manifest's peers that are exec runners: started only when a run selects them.
std::vector<qc::PeerEntry> g_exec_peers;
// Every peer's name (plugins and runners), for judging them against their claims.
std::vector<std::string> g_peer_names;

// Every backend this run can offer: the built-in ones, then each plugin's, in load order (each
// plugin's preset declarations are registered as it loads). A name offered twice is an input error
// naming both sources.
std::vector<std::unique_ptr<qc::Backend>> all_backends() {
  auto all = qc::make_builtin_backends();
  std::map<std::string, std::string> source;
  for (const auto& b : all) source[b->name()] = "built in";
  std::vector<std::string> paths = qc::plugin_paths_from_environment();
  paths.insert(paths.end(), g_plugin_paths.begin(), g_plugin_paths.end());
  for (const std::string& p : paths) {
    qc::LoadedPlugin plugin = qc::load_plugin(p);
    // The presets the plugin declares (its backends may claim them, cases may name them).
    if (!plugin.presets_json.empty())
      for (const std::string& n : qc::register_presets_json(plugin.presets_json, "plugin " + p))
        preset_origin()[n] = "plugin " + p;
    for (auto& b : plugin.backends) {
      auto [it, fresh] = source.emplace(b->name(), "plugin " + p);
      if (!fresh)
        throw qc::InputError("plugin " + p + ": backend '" + b->name() + "' is already offered (" + it->second + ")");
      all.push_back(std::move(b));
    }
  }
  // The peers this build made (docs/peers.md): plugins load now, runners start when selected.
  g_exec_peers.clear();
  g_peer_names.clear();
  if (g_no_peers) return all;
  const fs::path manifest = qc::peers_manifest();
  for (qc::PeerEntry& p : qc::load_peer_manifest(manifest)) {
    const std::string origin = "peer " + p.library + " (" + manifest.string() + ")";
    const auto [it, fresh] = source.emplace(p.name, origin);
    if (!fresh)
      throw qc::InputError(origin + ": backend '" + p.name + "' is already offered (" + it->second +
                           "); --no-peers leaves the peers out");
    g_peer_names.push_back(p.name);
    if (!p.backend.empty()) {
      g_exec_peers.push_back(std::move(p));
      continue;
    }
    qc::LoadedPlugin plugin = qc::load_plugin(p.plugin);
    for (auto& b : plugin.backends) {
      if (b->name() != p.name)
        throw qc::InputError(origin + ": the plugin " + p.plugin + " offers '" + b->name() + "', the manifest says '" +
                             p.name + "'");
      all.push_back(std::move(b));
    }
  }
  return all;
}

// Starts a peer runner of the manifest; its hello must give the manifest's name.
qc::Backend* make_exec_peer(std::vector<std::unique_ptr<qc::Backend>>& all, const qc::PeerEntry& p,
                            const qc::BackendOptions& options) {
  all.push_back(qc::make_backend(p.backend, options));
  if (all.back()->name() != p.name)
    throw qc::InputError("peer " + p.library + ": the runner '" + p.backend + "' says its name is '" +
                         all.back()->name() + "', the manifest says '" + p.name + "'");
  return all.back().get();
}

// The named backends (default: every built-in one). A name outside the default set, such as
// cpu-ref:tflite-reference, is made and kept in `all`.
// An exec runner (exec:CMD, py:MODULE:CLASS) is started once per distinct command and named by what
// it reports; two backends of a run may not share a name.
std::vector<qc::Backend*> select_backends(std::vector<std::unique_ptr<qc::Backend>>& all,
                                          const std::vector<std::string>& names,
                                          const qc::BackendOptions& options = {}) {
  std::vector<qc::Backend*> out;
  if (names.empty()) {
    for (const auto& b : all) out.push_back(b.get());
    for (const qc::PeerEntry& p : g_exec_peers) out.push_back(make_exec_peer(all, p, options));
    return out;
  }
  std::map<std::string, qc::Backend*> made;  // by the name given to --backend
  std::map<std::string, std::string> named;  // backend name -> the --backend that made it
  for (const std::string& n : names) {
    qc::Backend* found = made.contains(n) ? made[n] : nullptr;
    for (const auto& b : all)
      if (!found && b->name() == n) found = b.get();
    for (const qc::PeerEntry& p : g_exec_peers)
      if (!found && p.name == n) found = make_exec_peer(all, p, options);
    if (!found) {
      try {
        all.push_back(qc::make_backend(n, options));
      } catch (const qc::InputError& e) {
        throw qc::InputError(std::string("--backend: ") + e.what());
      }
      found = all.back().get();
    }
    made[n] = found;
    if (std::find(out.begin(), out.end(), found) != out.end()) continue;
    const std::string name = found->name();
    if (named.contains(name))
      throw qc::InputError("--backend: '" + n + "' and '" + named[name] + "' are both named '" + name +
                           "' (a backend's name identifies its results; give each runner its own)");
    named[name] = n;
    out.push_back(found);
  }
  return out;
}

// The file each custom preset came from, for `list presets`.
std::map<std::string, std::string>& preset_origin() {
  static std::map<std::string, std::string> m;
  return m;
}

// Registers the custom presets of QCONFORM_PRESETS (a ':'-separated list of policy files), then
// of the --preset-file options, in order. A file named twice is read once; two files that declare
// one name are refused (a policy file's error names the file and the field).
void load_custom_presets(const std::vector<std::string>& flag_files) {
  std::vector<std::pair<std::string, std::string>> files;  // (origin, path)
  if (const char* env = std::getenv("QCONFORM_PRESETS")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string f(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (!f.empty()) files.emplace_back("QCONFORM_PRESETS", f);
    }
  }
  for (const std::string& f : flag_files) files.emplace_back("--preset-file", f);
  std::vector<fs::path> seen;
  for (const auto& [origin, f] : files) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(f, ec);
    const fs::path key = ec ? fs::path(f) : canonical;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    try {
      for (const std::string& n : qc::load_preset_file(f)) preset_origin()[n] = f;
    } catch (const qc::InputError& e) {
      throw qc::InputError(origin + ": " + e.what());
    }
  }
}

struct Style {
  bool color = false;
  const char* on(qc::Verdict v) const {
    if (!color) return "";
    switch (v) {
      case qc::Verdict::pass:
        return "\033[32m";
      case qc::Verdict::xfail:
      case qc::Verdict::skip:
        return "\033[2m";
      default:
        return "\033[1;31m";
    }
  }
  const char* off() const { return color ? "\033[0m" : ""; }
};

// Every result that needs a look (not PASS, XFAIL or SKIP), then one row per backend. The backend
// column is as wide as the longest backend name (cpu-ref:tflite-reference is 24), plus a gap.
void print_summary(const qc::RunReport& r, const Style& st, std::ostream& os) {
  std::size_t w = 4, bw = std::string("backend").size();
  for (const auto& c : r.cases) {
    w = std::max(w, c.id.size());
    for (const auto& b : c.backends) bw = std::max(bw, b.backend.size());
  }
  bw += 2;
  std::size_t shown = 0, hidden = 0;
  for (const auto& c : r.cases) {
    for (const auto& b : c.backends) {
      if (b.verdict == qc::Verdict::pass || b.verdict == qc::Verdict::skip || b.verdict == qc::Verdict::xfail) continue;
      if (shown++ >= 40) {
        ++hidden;
        continue;
      }
      std::string line = c.id;
      line.resize(w + 2, ' ');
      std::string bn = b.backend;
      bn.resize(bw, ' ');
      std::string v(qc::name(b.verdict));
      v.resize(7, ' ');
      os << "  " << st.on(b.verdict) << v << st.off() << " " << line << bn << b.reason << "\n";
      if (!b.reproduce_command.empty()) os << "          reproduce: " << b.reproduce_command << "\n";
    }
  }
  if (hidden) os << "  ... and " << hidden << " more (see the report)\n";
  const auto& order = qc::kAllVerdicts;
  std::map<std::string, std::map<qc::Verdict, int>> table;
  std::vector<std::string> names;
  for (const auto& c : r.cases)
    for (const auto& b : c.backends) {
      if (!table.count(b.backend)) names.push_back(b.backend);
      ++table[b.backend][b.verdict];
    }
  if (!names.empty()) {
    std::string header = "backend";
    header.resize(bw, ' ');
    os << "\n  " << header;
    for (qc::Verdict v : order) os << std::string(8 - std::min<std::size_t>(8, qc::name(v).size()), ' ') << qc::name(v);
    os << "\n";
    for (const auto& n : names) {
      std::string bn = n;
      bn.resize(bw, ' ');
      os << "  " << bn;
      for (qc::Verdict v : order) {
        const int k = table[n][v];
        const std::string num = std::to_string(k);
        os << std::string(8 - std::min<std::size_t>(8, num.size()), ' ') << (k ? st.on(v) : "") << num
           << (k ? st.off() : "");
      }
      os << "\n";
    }
  }
  os << "summary:";
  for (const auto& [v, n] : r.verdict_counts()) os << " " << n << " " << v;
  os << " (" << r.cases.size() << " cases)\n";
}

// A whole number written as plain decimal digits (no sign, space or suffix) that fits an int.
// Each run of a model in one line: where it first parts from the oracle, and how far its outputs drift.
void print_model_summary(const qc::ModelView& v, std::ostream& os) {
  os << "model " << v.file << " (" << v.format << ", spec " << v.spec << "): " << v.steps.size() << " steps";
  if (v.oracle_top1_correct >= 0)
    os << "; the oracle's top-1 " << v.oracle_top1_correct << "/" << v.top1_total << " correct";
  os << "\n";
  for (const qc::ModelStep& s : v.steps)
    if (s.fused_differs > 0)
      os << "  " << s.name << ": the fused integer reading differs from the QDQ reading in " << s.fused_differs
         << " of " << s.fused_elements << " elements\n";
  for (const qc::ModelRun& r : v.runs) {
    os << "  " << r.name << " [" << r.mode << ", against the oracle's " << r.compared_with << " reading]: ";
    if (r.status != "ok") {
      os << r.status << ": " << r.note << "\n";
      continue;
    }
    os << (r.first_divergent.empty() ? "no step differs" : "first divergent step " + r.first_divergent)
       << (r.first_divergent_cause.empty() ? "" : ", " + r.first_divergent_cause) << "; outputs differ in "
       << r.output_differing << " of " << r.output_elements << " (max abs " << r.output_max_abs << ")";
    if (r.top1_agree >= 0) os << "; top-1 agrees " << r.top1_agree << "/" << r.top1_total;
    if (r.top1_correct >= 0) os << ", correct " << r.top1_correct << "/" << r.top1_total;
    if (!r.first_float_difference.empty()) os << "; first float difference " << r.first_float_difference;
    if (r.steps_by_oracle) os << "; " << r.steps_by_oracle << " step(s) computed by the oracle (not supported)";
    os << "\n";
  }
}

std::optional<int> parse_count(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "i/n" (1 <= i <= n): this run takes the i-th of n contiguous ranges of the case order, so the
// merged shards list the cases in the unsharded order.
std::pair<int, int> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : parse_count(std::string_view(s).substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : parse_count(std::string_view(s).substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 1 || *i > *n)
    throw qc::InputError("--shard: expected i/n with 1 <= i <= n, got '" + s + "'");
  return {*i, *n};
}

// The shard a test runner asks for, 1-based as --shard: googletest's GTEST_SHARD_INDEX and
// GTEST_TOTAL_SHARDS or Bazel's TEST_SHARD_INDEX and TEST_TOTAL_SHARDS (both 0-based; Bazel sets
// both pairs, which must then agree). Nothing when neither pair is set.
std::optional<std::pair<int, int>> shard_from_env() {
  struct Pair {
    const char *index, *total;
  };
  std::optional<std::pair<int, int>> found;
  std::string found_in;
  for (const Pair& p :
       {Pair{"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"}, Pair{"TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"}}) {
    const char* i = std::getenv(p.index);
    const char* n = std::getenv(p.total);
    if (!i && !n) continue;
    if (!i || !n)
      throw qc::InputError(std::string(i ? p.index : p.total) + "='" + (i ? i : n) + "' is set but " +
                           (i ? p.total : p.index) + " is not: a shard needs both");
    const auto total = parse_count(n);
    if (!total || *total < 1)
      throw qc::InputError(std::string(p.total) + "='" + n + "': expected a whole number of shards, at least 1");
    const auto index = parse_count(i);
    if (!index || *index >= *total)
      throw qc::InputError(std::string(p.index) + "='" + i + "': expected a whole number from 0 to " +
                           std::to_string(*total - 1) + " (" + p.total + "=" + n + ")");
    const std::pair<int, int> shard{*index + 1, *total};
    const std::string in = std::string(p.index) + "=" + i + " " + p.total + "=" + n;
    if (found && *found != shard)
      throw qc::InputError("the environment asks for two different shards: " + found_in + " and " + in);
    found = shard;
    found_in = in;
  }
  return found;
}

// A case whose operands come from, or whose outputs are compared with, a case of another shard
// keeps that case as a dependency: the shard evaluates it again and reports nothing for it.
std::vector<qc::Suite> take_shard(const std::vector<qc::Suite>& suites, int i, int n) {
  std::size_t total = 0;
  for (const auto& s : suites) total += s.cases.size();
  const std::size_t lo = total * static_cast<std::size_t>(i - 1) / static_cast<std::size_t>(n);
  const std::size_t hi = total * static_cast<std::size_t>(i) / static_cast<std::size_t>(n);
  std::size_t k = 0;
  std::vector<qc::Suite> out;
  for (const auto& s : suites) {
    std::vector<bool> keep;
    for (std::size_t j = 0; j < s.cases.size(); ++j, ++k) keep.push_back(k >= lo && k < hi);
    out.push_back(qc::select_cases(s, keep));
  }
  return out;
}

// --timeout of run and shrink. NaN would compare false everywhere and silently turn isolation off.
void check_timeout(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw qc::InputError("--timeout: must be a finite number of seconds >= 0, got " + std::to_string(seconds));
}

struct RunArgs {
  std::vector<std::string> paths, backends, preset_files;
  std::string report_dir = "qconform-report";
  std::string expect = "spec";
  bool quiet = false;
  std::string baseline, shard, timings;
  bool gate = false, no_causes = false, no_reproducers = false, isolate = false, ignore_magnitude = false;
  double timeout = 0;
  int jobs = 0;
};

// --timings FILE: each phase's seconds and the run's wall time (docs/reports.md "Timings").
void write_timings(const std::string& path, std::chrono::steady_clock::duration wall) {
  nlohmann::ordered_json phases;
  for (const qc::Phase p : qc::table_values<qc::Phase>()) phases[std::string(qc::table_name(p))] = qc::phase_seconds(p);
  const nlohmann::ordered_json j{{"wall", std::chrono::duration<double>(wall).count()}, {"phases", phases}};
  std::ofstream f(path, std::ios::trunc);
  f << j.dump(2) << "\n";
  if (!f) throw qc::InputError("--timings " + path + ": cannot write it");
}

// --timings FILE must be writable before the run writes anything (a bad path loses no report):
// its folder exists and takes files, and the path is not a folder.
void check_timings_path(const std::string& path) {
  if (path.empty()) return;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw qc::InputError("--timings " + path + ": its folder " + dir.string() + " does not exist");
  if (fs::is_directory(p, ec)) throw qc::InputError("--timings " + path + ": is a folder, not a file");
  if (access(dir.c_str(), W_OK) != 0 || (fs::exists(p, ec) && access(p.c_str(), W_OK) != 0))
    throw qc::InputError("--timings " + path + ": cannot write it");
}

// What `model` adds to a run: after the cases ran, the model view (docs/models.md).
using RunAugment = std::function<void(qc::RunReport&, const std::vector<qc::Backend*>&)>;

// The oracle's references known before the run (the models' chains), by case id.
using KnownReferences = std::function<std::optional<qc::Reference>(const qc::Case&)>;

int execute_run(std::vector<qc::Suite> suites, const std::vector<qc::Backend*>& backends, const RunArgs& a, int argc,
                char** argv, std::chrono::steady_clock::time_point started, const RunAugment& augment = {},
                const KnownReferences& known = {});

RunAugment judge_models(const std::vector<qc::onnx::PreparedModel>& models, double timeout);
qc::Suite model_suite(const qc::onnx::PreparedModel& m);
KnownReferences model_references(const std::vector<qc::onnx::PreparedModel>& models);

int cmd_run(const RunArgs& a, int argc, char** argv) {
  // Everything that can fail on bad input happens before anything is written: custom presets
  // first (the cases' specs may name them), then the cases, then the backends' claims.
  load_custom_presets(a.preset_files);
  auto all = all_backends();  // plugins may declare presets too
  const auto started = std::chrono::steady_clock::now();
  // Model files (*.model.json) among the paths are run as models: their node cases join the suites,
  // their model views the report (docs/models.md).
  std::vector<qc::onnx::PreparedModel> models;
  std::vector<qc::Suite> suites = [&] {
    const qc::PhaseTimer timer(qc::Phase::load);
    std::vector<qc::Suite> s = qc::load_suites(case_paths(a.paths));
    for (const fs::path& f : qc::onnx::find_model_files(case_paths(a.paths))) {
      models.push_back(qc::onnx::prepare_model(qc::onnx::load_model_file(f)));
      s.push_back(model_suite(models.back()));
    }
    return s;
  }();
  check_timeout(a.timeout);
  check_timings_path(a.timings);
  const std::vector<qc::Backend*> backends = select_backends(all, a.backends, qc::BackendOptions{a.timeout});
  qc::check_claims(backends, "run");
  // A sharded run judges the models' runs through the graph once, in shard 1 (merge joins them).
  const bool first_shard =
      a.shard.empty() ? !shard_from_env() || shard_from_env()->first == 1 : parse_shard(a.shard).first == 1;
  return execute_run(std::move(suites), backends, a, argc, argv, started,
                     models.empty() || !first_shard ? RunAugment{} : judge_models(models, a.timeout),
                     model_references(models));
}

// The rest of a run, once its suites and backends are made: expectations, baseline, shard, the
// cases on the backends, the reports.
int execute_run(std::vector<qc::Suite> suites, const std::vector<qc::Backend*>& backends, const RunArgs& a, int argc,
                char** argv, std::chrono::steady_clock::time_point started, const RunAugment& augment,
                const KnownReferences& known) {
  if (a.expect == "claim")
    qc::expect_claims(suites);
  else
    qc::expect_claims_for(suites, g_peer_names);  // a peer is held to its claim unless a case names it
  if (a.gate && a.baseline.empty()) throw qc::InputError("--gate needs --baseline FILE (see qconform baseline)");
  std::optional<qc::Baseline> baseline;
  if (a.ignore_magnitude && a.baseline.empty()) throw qc::InputError("--ignore-magnitude goes with --baseline FILE");
  if (!a.baseline.empty()) baseline = qc::load_baseline(a.baseline);
  if (baseline) baseline->ignore_magnitude = a.ignore_magnitude;
  // An explicit --shard wins over a test runner's environment (and then does not announce to
  // Bazel that the run follows its sharding, which it does not).
  const std::optional<std::pair<int, int>> ishard = a.shard.empty() ? shard_from_env() : parse_shard(a.shard);
  std::string shard;
  if (ishard) {
    suites = take_shard(suites, ishard->first, ishard->second);
    shard = std::to_string(ishard->first) + "/" + std::to_string(ishard->second);
  }
  // Bazel's protocol: touching the status file says that this test runs only its shard.
  if (const char* status = std::getenv("TEST_SHARD_STATUS_FILE"); status && a.shard.empty()) {
    std::ofstream touch(status, std::ios::app);
    if (!touch) throw qc::InputError(std::string("TEST_SHARD_STATUS_FILE='") + status + "': cannot create it");
  }
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  const Style st{tty && std::getenv("NO_COLOR") == nullptr};
  qc::RunOptions opt;
  opt.known_reference = known;
  opt.attribute_causes = !a.no_causes;
  opt.baseline = baseline ? &*baseline : nullptr;
  opt.isolate = a.isolate;
  opt.timeout_seconds = a.timeout;
  if (a.jobs < 0) throw qc::InputError("--jobs: must be 0 (one per core) or a count, got " + std::to_string(a.jobs));
  opt.jobs = a.jobs;
  if (!a.no_reproducers) opt.reproducer_dir = (fs::path(a.report_dir) / "reproducers").string();
  // Results stream to DIR/results.partial.jsonl as they complete, so an interrupted run keeps what
  // it finished; at the end it becomes DIR/results.jsonl together with the reports, so a run that
  // stops early leaves the previous set (results.jsonl included) as it was.
  std::error_code dir_error;
  fs::create_directories(a.report_dir, dir_error);
  if (dir_error || !fs::is_directory(a.report_dir))
    throw qc::InputError("--report-dir " + a.report_dir + ": not a folder that can be created (" +
                         (dir_error ? dir_error.message() : std::string("it is a file")) + ")");
  const fs::path partial = fs::path(a.report_dir) / "results.partial.jsonl";
  std::ofstream stream(partial, std::ios::trunc);
  if (!stream) throw qc::InputError(partial.string() + ": cannot write it");
  const bool quiet = a.quiet;
  opt.progress = [tty, quiet, &stream, &st, &partial](const qc::CaseResult& c, const qc::BackendResult& b,
                                                      std::size_t done, std::size_t total) {
    stream << qc::jsonl_line(c, b) << std::flush;
    if (!stream) throw qc::InputError(partial.string() + ": cannot write it: " + std::strerror(errno));
    g_run.done = done;
    g_run.total = total;
    g_run.last = c.id + " on " + b.backend;
    if (quiet) return;
    if (tty) {  // one redrawn line: a bar, the count and the current case
      constexpr int kWidth = 30;
      const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
      std::printf("\r[%s%s] %zu/%zu %-40.40s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), done, total, c.id.c_str());
      if (done == total) std::printf("\r%100s\r", "");
      std::fflush(stdout);
    } else if (b.verdict != qc::Verdict::pass && b.verdict != qc::Verdict::skip) {
      std::printf("%s %s on %s: %s\n", std::string(qc::name(b.verdict)).c_str(), c.id.c_str(), b.backend.c_str(),
                  b.reason.c_str());
    }
    (void)st;
  };
  static const bool registered = std::atexit(exit_during_run) == 0;
  if (!registered) throw std::runtime_error("cannot register the run's exit handler");
  struct InFlight {  // the run's backend calls and report writing; an exception ends it too
    InFlight() {
      g_run.pid = ::getpid();
      g_run.active = true;
    }
    ~InFlight() { g_run.active = false; }
  };
  qc::RunReport report;
  {
    const InFlight in_flight;
    report = qc::run_cases(suites, backends, opt);
    if (augment) augment(report, backends);
    for (int i = 0; i < argc; ++i) report.meta.command_line.emplace_back(argv[i]);
    report.meta.shard = shard;
    stream.close();
    const qc::PhaseTimer timer(qc::Phase::reports);
    qc::write_reports(report, a.report_dir, partial);
  }
  if (!a.timings.empty()) write_timings(a.timings, std::chrono::steady_clock::now() - started);
  if (!a.quiet) print_summary(report, st, std::cout);
  if (!a.quiet)
    for (const qc::ModelView& v : report.models) print_model_summary(v, std::cout);
  std::cout << "reports: " << (fs::path(a.report_dir) / "report.json").string() << ", "
            << (fs::path(a.report_dir) / "report.html").string() << ", "
            << (fs::path(a.report_dir) / "report.junit.xml").string() << "\n";
  if (a.gate) {
    // An agreement the oracle's own outputs break is a wrong case, which no baseline accepts.
    std::int64_t changes = qc::broken_oracle_agreements(report);
    for (const auto& c : report.cases)
      for (const auto& b : c.backends) changes += qc::is_change(b.verdict) ? 1 : 0;
    std::cout << "gate: "
              << (changes ? std::to_string(changes) + " change(s) against the baseline " + a.baseline
                          : "no change against the baseline " + a.baseline)
              << "\n";
    return changes ? 1 : 0;
  }
  return qc::exit_code(report);
}

struct ModelArgs {
  std::string file, spec, emit_cases, labels;
  std::vector<std::string> inputs;  // NAME=FILE.npy
};

// The runtimes that run a model whole: ONNX Runtime's peer (when selected and available) with graph
// optimizations off, every step's value captured, and all on, compared at the outputs (capturing would
// change what it fuses). Its whole-model runner sits beside its op runner (peers/ort/model_runner.js).
std::vector<qc::onnx::WholeModelRuntime> whole_model_runtimes(const std::vector<qc::Backend*>& bs) {
  std::vector<qc::onnx::WholeModelRuntime> out;
  for (const qc::PeerEntry& p : g_exec_peers) {
    const std::string_view runner = "/ort/runner.js";
    const auto at = p.backend.find(runner);
    if (at == std::string::npos || std::none_of(bs.begin(), bs.end(), [&](qc::Backend* b) {
          return b->name() == p.name && b->availability().available;
        }))
      continue;
    std::string command = p.backend.substr(0, at) + "/ort/model_runner.js" + p.backend.substr(at + runner.size());
    if (command.starts_with("exec:")) command = command.substr(5);
    out.push_back({p.name + " [disabled]", p.name, command, "disabled", true});
    out.push_back({p.name + " [all]", p.name, command, "all", false});
  }
  return out;
}

// The model view of each prepared model, added to a run's report once its cases ran.
RunAugment judge_models(const std::vector<qc::onnx::PreparedModel>& models, double timeout) {
  return [&models, timeout](qc::RunReport& report, const std::vector<qc::Backend*>& bs) {
    const qc::PhaseTimer timer(qc::Phase::backend);
    const auto whole = whole_model_runtimes(bs);
    for (const auto& m : models) report.models.push_back(qc::onnx::judge_model(m, bs, whole, timeout, &report.cases));
  };
}

// The node cases' references from the models' chains (the oracle evaluated each once already).
KnownReferences model_references(const std::vector<qc::onnx::PreparedModel>& models) {
  if (models.empty()) return {};
  return [&models](const qc::Case& c) -> std::optional<qc::Reference> {
    for (const auto& m : models) {
      if (m.suite.name != c.suite) continue;
      const auto it = m.references.find(c.name);
      if (it != m.references.end()) return it->second;
    }
    return std::nullopt;
  };
}

// A model's suite judged against the backends' claims when its model file says "expect": "claim".
qc::Suite model_suite(const qc::onnx::PreparedModel& m) {
  std::vector<qc::Suite> one{m.suite};
  if (m.job.expect == "claim") qc::expect_claims(one);
  return one.front();
}

// qconform model MODEL.onnx|NAME.model.json: the model's quantized computations as cases on every
// backend (isolated), each backend driven through the graph (propagated), and the runtimes that run
// it whole, against the oracle's chain (docs/models.md).
int cmd_model(const ModelArgs& args, const RunArgs& a, int argc, char** argv) {
  load_custom_presets(a.preset_files);
  auto all = all_backends();
  const auto started = std::chrono::steady_clock::now();
  qc::onnx::ModelJob job;
  if (qc::onnx::is_model_file(args.file))
    job = qc::onnx::load_model_file(args.file);
  else
    job.model = args.file;
  std::set<std::string> given;
  for (const std::string& in : args.inputs) {
    const auto eq = in.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == in.size())
      throw qc::InputError("--input " + in + ": expected NAME=FILE.npy");
    if (given.contains(in.substr(0, eq)))
      throw qc::InputError("--input " + in + ": the input '" + in.substr(0, eq) + "' is given twice");
    given.insert(in.substr(0, eq));
    job.inputs[in.substr(0, eq)] = in.substr(eq + 1);
  }
  if (!args.labels.empty()) job.labels = args.labels;
  if (!args.spec.empty()) {
    job.spec = args.spec;
    job.spec_from = "--spec";
  }
  std::vector<qc::onnx::PreparedModel> models;
  {
    const qc::PhaseTimer timer(qc::Phase::load);
    models.push_back(qc::onnx::prepare_model(job));
  }
  check_timeout(a.timeout);
  check_timings_path(a.timings);
  const std::vector<qc::Backend*> backends = select_backends(all, a.backends, qc::BackendOptions{a.timeout});
  qc::check_claims(backends, "model");
  const qc::Suite& suite = models.front().suite;
  if (!args.emit_cases.empty()) {
    std::error_code ec;
    fs::create_directories(args.emit_cases, ec);
    if (ec || !fs::is_directory(args.emit_cases))
      throw qc::InputError("--emit-cases " + args.emit_cases + ": not a folder that can be created");
    const fs::path file = fs::path(args.emit_cases) / (suite.name + ".json");
    qc::save_cases(file, suite.name, suite.cases);
    std::cout << "cases: " << file.string() << " (" << suite.cases.size() << "; qconform run " << file.string()
              << " runs them again)\n";
  }
  return execute_run({model_suite(models.front())}, backends, a, argc, argv, started, judge_models(models, a.timeout),
                     model_references(models));
}

int cmd_baseline(const std::string& report_path, const std::string& out, bool update) {
  const qc::RunReport r = qc::load_report(report_path);
  std::optional<qc::Baseline> previous;
  if (update && fs::exists(out)) previous = qc::load_baseline(out);
  const qc::Baseline b = qc::baseline_from(r, previous ? &*previous : nullptr);
  qc::save_baseline(b, out);
  std::cout << "baseline: " << b.entries.size() << " known mismatch(es) in " << out << "\n";
  return 0;
}

// `report` re-renders one report, or merges several; `merge` always merges, so that one shard of
// several is refused as the incomplete set it is.
int cmd_report(const std::vector<std::string>& inputs, const std::string& out_dir, bool merge) {
  std::vector<qc::RunReport> parts;
  for (const auto& p : inputs) parts.push_back(qc::load_report(p));
  const qc::RunReport r = parts.size() == 1 && !merge ? parts.front() : qc::merge_reports(parts);
  qc::write_reports(r, out_dir);
  std::cout << "reports: " << (fs::path(out_dir) / "report.json").string() << ", "
            << (fs::path(out_dir) / "report.html").string() << ", " << (fs::path(out_dir) / "report.junit.xml").string()
            << "\n";
  return qc::exit_code(r);
}

std::pair<const qc::Case*, const qc::Suite*> find_case(const std::vector<qc::Suite>& suites, const std::string& name) {
  for (const auto& s : suites)
    for (const auto& c : s.cases)
      if (c.name == name || c.id() == name) return {&c, &s};
  throw qc::InputError("--case: no case named '" + name + "'");
}

int cmd_shrink(const std::string& path, const std::string& case_name, const std::string& backend,
               const std::string& out, const qc::CallPolicy& call) {
  const std::vector<qc::Suite> suites = qc::load_suites({path});
  const auto [found, suite] = find_case(suites, case_name);
  // A case that takes operands from other cases shrinks standing alone, with the oracle's outputs of
  // those cases inlined (the shrunk file then needs no other case).
  std::string producers;
  for (const qc::OperandLink& l : found->links) producers += (producers.empty() ? "'" : ", '") + l.producer + "'";
  if (!producers.empty())
    std::cout << found->id() << " takes operands from " << producers
              << ": shrinking it with the oracle's outputs of those cases inlined\n";
  const qc::Case c = producers.empty() ? *found : qc::standalone_case(*found, *suite);
  auto all = all_backends();
  qc::Backend* b = select_backends(all, {backend}).front();
  if (!b->availability().available) {
    std::cerr << "qconform: " << backend << " is not available: " << b->availability().reason << "\n";
    return 77;
  }
  if (!qc::still_fails(c, c.op, *b, call)) {
    if (producers.empty())
      std::cout << c.id() << " passes on " << backend << ": nothing to shrink\n";
    else
      std::cout << c.id() << " passes on " << backend << " with the oracle's outputs of " << producers
                << " inlined: a failure of the chain comes through those cases (shrink them, or run the chain "
                   "reproducer of the run)\n";
    return 0;
  }
  const qc::Case small = qc::shrink_case(c, *b, 200, call);
  qc::save_single_case(small, backend, out);
  std::cout << "shrunk " << c.id() << " (" << qc::shape_str(qc::op_input(c.op).shape()) << ") to "
            << qc::shape_str(qc::op_input(small.op).shape()) << ", still failing on " << backend << ": " << out
            << "\n  reproduce: qconform run " << out << " --backend " << backend << "\n";
  return 0;
}

struct ExplainCaseArgs {
  std::string case_name, index, backend, json_out;
  qc::CallPolicy call;
};

// `explain CASEFILE --case C --index I [--backend B]`: one element of a case's op, step by step.
int cmd_explain_case(const std::string& path, const ExplainCaseArgs& a) {
  if (a.case_name.empty()) throw qc::InputError("explain " + path + ": --case names the case");
  if (a.index.empty()) throw qc::InputError("explain " + path + ": --index names the output element");
  const std::vector<qc::Suite> suites = qc::load_suites({path});
  const auto [found, suite] = find_case(suites, a.case_name);
  // A case that takes operands from other cases is explained standing alone, with the oracle's
  // outputs of those cases inlined (as shrink does).
  const qc::Case c = found->links.empty() ? *found : qc::standalone_case(*found, *suite);
  const std::int64_t index = qc::parse_element_index(a.index, qc::op_output_shape(c.op), "--index");
  std::vector<std::unique_ptr<qc::Backend>> all;
  qc::Backend* b = nullptr;
  if (!a.backend.empty()) {
    all = all_backends();
    b = select_backends(all, {a.backend}).front();
    if (!b->availability().available) {
      std::cerr << "qconform: " << a.backend << " is not available: " << b->availability().reason << "\n";
      return 77;
    }
  }
  const qc::ElementExplanation e = qc::explain_element(c, index, b, a.call);
  if (a.json_out == "-") {
    std::cout << qc::to_json(e).dump(2) << "\n";
    return 0;
  }
  std::cout << qc::to_text(e);
  if (!a.json_out.empty()) qc::write_file_atomic(a.json_out, qc::json_file_text(qc::to_json(e), 2));
  return 0;
}

int cmd_infer(const std::string& backend, const std::string& json_out, std::uint64_t seed) {
  auto all = all_backends();
  qc::Backend* b = select_backends(all, {backend}).front();
  qc::InferOptions opt;
  opt.seed = seed;
  const qc::InferReport r = qc::infer(*b, opt);
  std::cout << r.backend << ": " << r.probes << " probe elements (" << (r.ops.empty() ? "none" : "");
  for (std::size_t i = 0; i < r.ops.size(); ++i) std::cout << (i ? ", " : "") << r.ops[i];
  std::cout << ")\n";
  for (const auto& s : r.skipped) std::cout << "  not probed: " << s << "\n";
  for (const auto& f : r.findings) {
    std::cout << "  " << f.op << "." << f.dimension << ": ";
    if (f.values.empty()) std::cout << "(no policy reproduces 49 in 50 of the outputs)";
    for (std::size_t i = 0; i < f.values.size(); ++i) std::cout << (i ? " | " : "") << f.values[i];
    if (f.unexplained > 0) std::cout << "  (" << f.unexplained << " of " << f.probes << " elements unexplained)";
    std::cout << "\n";
  }
  for (const auto& o : r.outliers) std::cout << "  outlier: " << o << "\n";
  std::cout << "  presets reproducing every output: ";
  if (r.presets.empty()) std::cout << "none";
  for (std::size_t i = 0; i < r.presets.size(); ++i) std::cout << (i ? ", " : "") << r.presets[i];
  std::cout << "\n" << r.summary << "\n";
  if (!json_out.empty()) {
    nlohmann::json j = {{"backend", r.backend}, {"ops", r.ops},         {"skipped", r.skipped},  {"probes", r.probes},
                        {"presets", r.presets}, {"summary", r.summary}, {"outliers", r.outliers}};
    j["findings"] = nlohmann::json::array();
    for (const auto& f : r.findings)
      j["findings"].push_back({{"op", f.op},
                               {"dimension", f.dimension},
                               {"values", f.values},
                               {"description", f.description},
                               {"unexplained", f.unexplained},
                               {"probes", f.probes}});
    qc::write_file_atomic(json_out, qc::json_file_text(j, 2));
  }
  return r.ops.empty() ? 77 : 0;
}

int cmd_list(const std::string& what, const std::vector<std::string>& paths) {
  auto all = all_backends();  // loads plugins, and with them their presets
  if (what == "backends" || what == "all") {
    std::cout << "backends:\n";
    for (const qc::Backend* b : select_backends(all, {})) {  // the peers' runners start here
      const qc::Availability a = b->availability();
      std::cout << "  " << b->name() << "  claims " << b->claim() << "  "
                << (a.available ? "available" : "unavailable: " + a.reason) << "\n    " << b->description() << "\n";
      // A peer says which library version and which ISA its results come from (docs/peers.md).
      const auto facts = b->facts();
      std::string line;
      for (const char* key : {"library", "version", "isa"})
        if (const auto it = facts.find(key); it != facts.end() && !it->second.empty())
          line += (line.empty() ? "" : ", ") + std::string(key) + " " + it->second;
      if (!line.empty()) std::cout << "    " << line << "\n";
    }
    std::cout << "  not run by default, named with --backend:\n";
    for (const std::string& n : qc::backend_variants()) {
      const auto b = qc::make_backend(n);
      std::cout << "  " << b->name() << "  claims " << b->claim() << "\n    " << b->description() << "\n";
    }
  }
  if (what == "presets" || what == "all") {
    std::cout << "presets:\n";
    for (const qc::Spec& s : qc::presets()) std::cout << "  " << s.name << "  " << s.description << "\n";
    const std::vector<qc::Spec> custom = qc::registered_presets();
    if (!custom.empty()) std::cout << "  custom (--preset-file, QCONFORM_PRESETS, plugins):\n";
    for (const qc::Spec& s : custom) {
      const auto it = preset_origin().find(s.name);
      std::cout << "  " << s.name << "  " << s.description
                << (it == preset_origin().end() ? "" : "  [" + it->second + "]") << "\n";
    }
  }
  if (what == "qparams" || what == "all") {
    std::cout << "parameter-choice rules (choose_qparams \"rule\", a spec's \"qparams\"):\n";
    for (const qc::QParamsPreset& p : qc::qparams_presets()) std::cout << "  " << p.name << "  " << p.source << "\n";
  }
  if (what == "cases" || what == "all") {
    std::cout << "cases:\n";
    for (const qc::Suite& s : qc::load_suites(case_paths(paths))) {
      std::cout << "  " << s.name << " (" << s.file << ", " << s.cases.size() << " cases)\n";
      for (const qc::Case& c : s.cases) {
        std::cout << "    " << c.id() << "  [" << c.spec.name << "]";
        for (const qc::OperandLink& l : c.links) std::cout << "  " << l.field << " <- " << l.producer;
        for (const qc::Agreement& g : c.agreements) std::cout << "  " << g.assertion() << " " << g.other;
        std::cout << "\n";
      }
    }
  }
  if (what != "backends" && what != "presets" && what != "qparams" && what != "cases" && what != "all")
    throw qc::InputError("list: unknown topic '" + what + "' (backends, presets, qparams, cases, all)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qconform: an exact-arithmetic conformance harness for quantized ML kernels"};
  app.set_version_flag("--version", std::string("qconform ") + QCONFORM_VERSION + " (" + QCONFORM_GIT_REVISION + ")");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 all expectations met, 1 conformance failure, 2 usage or input error, 77 nothing could run.");

  RunArgs ra;
  CLI::App* run = app.add_subcommand("run", "run cases on backends and write report.json and report.html");
  run->add_option("paths", ra.paths,
                  "case files or folders (default: the built-in suites in " + qc::default_cases_dir().string() + ")");
  // One name per flag: in `run --backend cpu-ref cases/qgemm.json` the file is a path, not a backend.
  run->add_option("--backend,-b", ra.backends,
                  "backend to run (repeatable; default: every built-in backend and every peer, docs/peers.md); also "
                  "exec:CMD ARGS (a program speaking "
                  "the exec protocol) and py:MODULE:CLASS (a Python qconform.Backend class), docs/integrate.md")
      ->allow_extra_args(false);
  run->add_option("--report-dir,-o", ra.report_dir, "folder for the reports, results.jsonl and reproducers/")
      ->capture_default_str();
  run->add_flag("--quiet,-q", ra.quiet, "print only the report paths");
  run->add_option("--baseline", ra.baseline, "known mismatches (qconform baseline): unchanged ones are XFAIL");
  run->add_flag("--gate", ra.gate, "exit 1 only on a change against --baseline (CI gate)");
  run->add_flag("--ignore-magnitude", ra.ignore_magnitude,
                "match a FAIL to its baseline entry by the elements alone, whatever their distances now");
  run->add_option("--shard", ra.shard,
                  "run the i-th of n parts of the cases, as i/n (join with qconform merge); default: the shard "
                  "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS or TEST_SHARD_INDEX/TEST_TOTAL_SHARDS name (0-based)");
  run->add_option("--timeout", ra.timeout, "seconds per backend call; a slower call is killed and reported TIMEOUT");
  run->add_option("--jobs,-j", ra.jobs,
                  "backends run side by side on each case, this many at once (0: one per core; the report is "
                  "the same for any count)")
      ->capture_default_str();
  const auto add_plugin_option = [](CLI::App* c) {
    c->add_option("--plugin", g_plugin_paths,
                  "a backend plugin (shared library, docs/integrate.md) to load; repeatable; also QCONFORM_PLUGINS")
        ->allow_extra_args(false);
    c->add_flag("--no-peers", g_no_peers,
                "leave out the peer backends, the real libraries this build runs (docs/peers.md)");
  };
  add_plugin_option(run);
  run->add_flag("--isolate", ra.isolate, "run each backend call in a child process (a crash becomes CRASH)");
  run->add_option("--preset-file", ra.preset_files,
                  "a policy file declaring custom presets (repeatable; also QCONFORM_PRESETS=FILE:FILE...)")
      ->allow_extra_args(false);
  run->add_option("--expect", ra.expect,
                  "spec: judge each case's expectations (default); claim: judge every backend against its own "
                  "claimed preset (dot_product expectations stay)")
      ->check(CLI::IsMember({"spec", "claim"}))
      ->capture_default_str();
  run->add_flag("--no-causes", ra.no_causes, "skip cause attribution");
  run->add_flag("--no-reproducers", ra.no_reproducers, "write no reproducer case files");
  run->add_option("--timings", ra.timings, "write each phase's wall time to FILE (JSON)");

  RunArgs ma;
  ModelArgs mm;
  CLI::App* model = app.add_subcommand(
      "model",
      "judge a quantized ONNX model: its nodes as cases on every backend, and each backend driven through "
      "the graph (docs/models.md)");
  model->add_option("model", mm.file, "the .onnx file (QDQ or QOperator), or a model file NAME.model.json")->required();
  model->add_option("--input", mm.inputs, "a graph input's values, NAME=FILE.npy (repeatable)")
      ->allow_extra_args(false);
  model->add_option("--labels", mm.labels, "one class per row of the first output (.npy): top-1 accuracy");
  model->add_option("--spec", mm.spec, "the numerics spec the model is judged under (default: onnx)");
  model->add_option("--emit-cases", mm.emit_cases, "also write the node cases as a case file into DIR");
  model->add_option("--backend,-b", ma.backends, "backend to run (repeatable; default: every backend)")
      ->allow_extra_args(false);
  model->add_option("--report-dir,-o", ma.report_dir, "folder for the reports")->capture_default_str();
  model->add_flag("--quiet,-q", ma.quiet, "print only the report paths");
  model->add_option("--baseline", ma.baseline, "known mismatches (qconform baseline): unchanged ones are XFAIL");
  model->add_flag("--gate", ma.gate, "exit 1 only on a change against --baseline (CI gate)");
  model->add_option("--timeout", ma.timeout, "seconds per backend call (isolated mode)");
  model->add_option("--jobs,-j", ma.jobs, "backends side by side on each case (0: one per core)")
      ->capture_default_str();
  add_plugin_option(model);
  model->add_flag("--isolate", ma.isolate, "run each backend call of the node cases in a child process");
  model->add_option("--preset-file", ma.preset_files, "a policy file declaring custom presets (repeatable)")
      ->allow_extra_args(false);
  model->add_option("--expect", ma.expect, "spec or claim, as for run")
      ->check(CLI::IsMember({"spec", "claim"}))
      ->capture_default_str();
  model->add_flag("--no-causes", ma.no_causes, "skip cause attribution");
  model->add_flag("--no-reproducers", ma.no_reproducers, "write no reproducer case files");
  model->add_option("--timings", ma.timings, "write each phase's wall time to FILE (JSON)");

  std::string baseline_report, baseline_out = "qconform-baseline.json";
  bool baseline_update = false;
  CLI::App* baseline = app.add_subcommand("baseline", "write or update a baseline of known mismatches from a report");
  baseline->add_option("report", baseline_report, "report.json of a run")->required();
  baseline->add_option("--output,-o", baseline_out, "the baseline file")->capture_default_str();
  baseline->add_flag("--update", baseline_update, "keep entries for what the report did not run");

  std::vector<std::string> report_inputs;
  std::string report_out = "qconform-report";
  CLI::App* report = app.add_subcommand("report", "re-render the reports (HTML, JUnit) from report.json");
  report->add_option("reports", report_inputs, "report.json files (several: the shards of one run, merged)")
      ->required();
  report->add_option("--report-dir,-o", report_out, "output folder")->capture_default_str();
  CLI::App* merge =
      app.add_subcommand("merge", "join the reports of qconform run --shard i/n into one (all n of them)");
  merge->add_option("reports", report_inputs, "the shards' report.json files")->required();
  merge->add_option("--report-dir,-o", report_out, "output folder")->capture_default_str();

  std::string shrink_path, shrink_case, shrink_backend, shrink_out = "shrunk.json";
  CLI::App* shrink = app.add_subcommand("shrink", "reduce a failing case while the backend keeps failing");
  shrink->add_option("file", shrink_path, "the case file")->required();
  shrink->add_option("--case,-c", shrink_case, "the case's name")->required();
  shrink->add_option("--backend,-b", shrink_backend, "the failing backend")->required();
  shrink->add_option("--output,-o", shrink_out, "where to write the smaller case")->capture_default_str();
  qc::CallPolicy shrink_call;
  shrink->add_flag("--isolate", shrink_call.isolate, "run each backend call in a forked child (a crash is a failure)");
  shrink->add_option("--timeout", shrink_call.timeout_seconds,
                     "seconds per backend call; a slower call is killed and counts as a failure (implies --isolate)");
  add_plugin_option(shrink);

  std::string infer_backend, infer_json;
  std::uint64_t infer_seed = 1;
  CLI::App* inferc = app.add_subcommand("infer", "name the presets and policies a backend behaves like");
  inferc->add_option("--backend,-b", infer_backend, "the backend to probe")->required();
  inferc->add_option("--json", infer_json, "also write the findings as JSON");
  inferc->add_option("--seed", infer_seed, "seed of the probe generator")->capture_default_str();
  add_plugin_option(inferc);

  std::string topic = "all";
  std::vector<std::string> list_paths;
  CLI::App* list = app.add_subcommand("list", "list backends, presets, parameter-choice rules and cases");
  list->add_option("topic", topic, "backends, presets, qparams, cases or all")->capture_default_str();
  list->add_option("paths", list_paths, "case files or folders for 'cases'");
  add_plugin_option(list);
  std::vector<std::string> list_preset_files;
  list->add_option("--preset-file", list_preset_files, "a policy file declaring custom presets (repeatable)")
      ->allow_extra_args(false);

  qc::OracleOptions oracle_opts, explain_opts;
  CLI::App* oracle = app.add_subcommand("oracle", "evaluate quantize, dequantize or requantize exactly, elementwise");
  qc::add_oracle_options(oracle, oracle_opts, false);
  CLI::App* explain = app.add_subcommand("explain", "one element, every step of the exact derivation");
  qc::add_oracle_options(explain, explain_opts, true);
  ExplainCaseArgs xa;
  explain->add_option("--case,-c", xa.case_name, "with a case file: the case's name");
  explain->add_option("--index", xa.index, "with a case file: the output element, flat (17) or coordinates (1,5)");
  explain->add_option("--backend,-b", xa.backend,
                      "with a case file: run the case on this backend and explain its value");
  explain->add_option("--json", xa.json_out, "with a case file: also write the explanation as JSON ('-': stdout only)");
  explain->add_flag("--isolate", xa.call.isolate, "run the backend call in a forked child (a crash is reported)");
  explain->add_option("--timeout", xa.call.timeout_seconds, "kill the backend call after this many seconds");
  add_plugin_option(explain);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInput;
  }

  try {
    if (*run) return cmd_run(ra, argc, argv);
    if (*model) return cmd_model(mm, ma, argc, argv);
    if (*baseline) return cmd_baseline(baseline_report, baseline_out, baseline_update);
    if (*report || *merge) return cmd_report(report_inputs, report_out, merge->parsed());
    if (*list) {
      load_custom_presets(list_preset_files);
      return cmd_list(topic, list_paths);
    }
    // The other commands that read specs or claims see QCONFORM_PRESETS' presets too.
    if (*shrink || *inferc || *oracle || *explain) load_custom_presets({});
    if (*shrink) {
      check_timeout(shrink_call.timeout_seconds);
      return cmd_shrink(shrink_path, shrink_case, shrink_backend, shrink_out, shrink_call);
    }
    if (*inferc) return cmd_infer(infer_backend, infer_json, infer_seed);
    if (*oracle) return qc::cmd_oracle(oracle_opts);
    if (*explain) {
      const std::string& what = explain_opts.op;
      if (what == "quantize" || what == "dequantize" || what == "requantize") {
        if (!xa.case_name.empty() || !xa.index.empty() || !xa.backend.empty() || !xa.json_out.empty())
          throw qc::InputError("explain " + what + ": --case, --index, --backend and --json go with a case file");
        return qc::cmd_explain(explain_opts);
      }
      if (!explain_opts.at.empty() || !explain_opts.vs.empty())
        throw qc::InputError("explain " + what +
                             ": --at and --vs go with an op (quantize, dequantize, requantize); a "
                             "case file takes --case and --index");
      check_timeout(xa.call.timeout_seconds);
      return cmd_explain_case(what, xa);
    }
  } catch (const qc::InputError& e) {
    std::cerr << "qconform: error: " << e.what() << "\n";
    return kExitInput;
  } catch (const std::exception& e) {
    std::cerr << "qconform: internal error: " << e.what() << "\n";
    return 3;
  }
  return kExitInput;
}
