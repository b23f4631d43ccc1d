// qconform: the command-line front end.
//
// Exit codes: 0 every expectation met; 1 a conformance failure (FAIL, XPASS, CRASH, TIMEOUT);
// 2 a usage or input error (nothing is written); 77 nothing could run (every result SKIP).
#include "backends/backend.hpp"
#include "cases/case.hpp"
#include "harness/oracle_cli.hpp"
#include "harness/runner.hpp"
#include "oracles/error.hpp"
#include "oracles/presets.hpp"
#include "reports/writers.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "qconform_revision.hpp"

#ifndef QCONFORM_CASES_DIR
#define QCONFORM_CASES_DIR "cases"
#endif

namespace fs = std::filesystem;

namespace {

constexpr int kExitInput = 2;

std::vector<fs::path> case_paths(const std::vector<std::string>& args) {
  if (args.empty()) return {fs::path(QCONFORM_CASES_DIR)};
  return {args.begin(), args.end()};
}

std::vector<qc::Backend*> select_backends(const std::vector<std::unique_ptr<qc::Backend>>& all,
                                          const std::vector<std::string>& names) {
  std::vector<qc::Backend*> out;
  if (names.empty()) {
    for (const auto& b : all) out.push_back(b.get());
    return out;
  }
  for (const std::string& n : names) {
    qc::Backend* found = nullptr;
    for (const auto& b : all)
      if (b->name() == n) found = b.get();
    if (!found) {
      std::string known;
      for (const auto& b : all) known += (known.empty() ? "" : ", ") + b->name();
      throw qc::InputError("--backend: unknown backend '" + n + "' (known: " + known + ")");
    }
    out.push_back(found);
  }
  return out;
}

void print_summary(const qc::RunReport& r, std::ostream& os) {
  std::size_t w = 4;
  for (const auto& c : r.cases) w = std::max(w, c.id.size());
  for (const auto& c : r.cases) {
    for (const auto& b : c.backends) {
      std::string line = c.id;
      line.resize(w + 2, ' ');
      std::string bn = b.backend;
      bn.resize(12, ' ');
      std::string v(qc::name(b.verdict));
      v.resize(6, ' ');
      os << "  " << line << bn << v << "  " << b.reason << "\n";
    }
  }
  os << "summary:";
  for (const auto& [v, n] : r.verdict_counts()) os << " " << n << " " << v;
  os << " (" << r.cases.size() << " cases)\n";
}

int cmd_run(const std::vector<std::string>& paths, const std::vector<std::string>& backend_names,
            const std::string& report_dir, bool quiet, int argc, char** argv) {
  // Everything that can fail on bad input happens before anything is written.
  const std::vector<qc::Suite> suites = qc::load_suites(case_paths(paths));
  const auto all = qc::make_builtin_backends();
  const std::vector<qc::Backend*> backends = select_backends(all, backend_names);
  const bool tty = ::isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  qc::RunOptions opt;
  // Results stream to DIR/results.jsonl as they complete, so an interrupted run keeps what it
  // finished; the reports themselves are replaced only at the end, atomically.
  fs::create_directories(report_dir);
  std::ofstream stream(fs::path(report_dir) / "results.jsonl", std::ios::trunc);
  opt.progress = [tty, quiet, &stream](const qc::CaseResult& c, const qc::BackendResult& b, std::size_t done,
                                       std::size_t total) {
    stream << qc::jsonl_line(c, b) << std::flush;
    if (quiet) return;
    {
      if (tty) {
        std::printf("\r[%zu/%zu] %-50.50s", done, total, c.id.c_str());
        if (done == total) std::printf("\r%80s\r", "");
        std::fflush(stdout);
      } else if (b.verdict != qc::Verdict::pass && b.verdict != qc::Verdict::skip) {
        std::printf("%s %s on %s: %s\n", std::string(qc::name(b.verdict)).c_str(), c.id.c_str(), b.backend.c_str(),
                    b.reason.c_str());
      }
    }
  };
  qc::RunReport report = qc::run_cases(suites, backends, opt);
  for (int i = 0; i < argc; ++i) report.meta.command_line.emplace_back(argv[i]);
  qc::write_reports(report, report_dir);
  if (!quiet) print_summary(report, std::cout);
  std::cout << "reports: " << (fs::path(report_dir) / "report.json").string() << ", "
            << (fs::path(report_dir) / "report.html").string() << ", "
            << (fs::path(report_dir) / "report.junit.xml").string() << "\n";
  return qc::exit_code(report);
}

int cmd_list(const std::string& what, const std::vector<std::string>& paths) {
  if (what == "backends" || what == "all") {
    std::cout << "backends:\n";
    for (const auto& b : qc::make_builtin_backends()) {
      const qc::Availability a = b->availability();
      std::cout << "  " << b->name() << "  claims " << b->claim() << "  "
                << (a.available ? "available" : "unavailable: " + a.reason) << "\n    " << b->description() << "\n";
    }
  }
  if (what == "presets" || what == "all") {
    std::cout << "presets:\n";
    for (const qc::Spec& s : qc::presets()) std::cout << "  " << s.name << "  " << s.description << "\n";
  }
  if (what == "cases" || what == "all") {
    std::cout << "cases:\n";
    for (const qc::Suite& s : qc::load_suites(case_paths(paths))) {
      std::cout << "  " << s.name << " (" << s.file << ", " << s.cases.size() << " cases)\n";
      for (const qc::Case& c : s.cases) std::cout << "    " << c.id() << "  [" << c.spec.name << "]\n";
    }
  }
  if (what != "backends" && what != "presets" && what != "cases" && what != "all")
    throw qc::InputError("list: unknown topic '" + what + "' (backends, presets, cases, all)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qconform: an exact-arithmetic conformance harness for quantized ML kernels"};
  app.set_version_flag("--version", std::string("qconform ") + QCONFORM_VERSION + " (" + QCONFORM_GIT_REVISION + ")");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 all expectations met, 1 conformance failure, 2 usage or input error, 77 nothing could run.");

  std::vector<std::string> run_paths, backends;
  std::string report_dir = "qconform-report";
  bool quiet = false;
  CLI::App* run = app.add_subcommand("run", "run cases on backends and write report.json and report.html");
  run->add_option("paths", run_paths, "case files or folders (default: the built-in suites in " QCONFORM_CASES_DIR ")");
  run->add_option("--backend,-b", backends, "backend to run (repeatable; default: every backend)");
  run->add_option("--report-dir,-o", report_dir, "folder for report.json and report.html")->capture_default_str();
  run->add_flag("--quiet,-q", quiet, "print only the report paths");

  std::string topic = "all";
  std::vector<std::string> list_paths;
  CLI::App* list = app.add_subcommand("list", "list backends, presets and cases");
  list->add_option("topic", topic, "backends, presets, cases or all")->capture_default_str();
  list->add_option("paths", list_paths, "case files or folders for 'cases'");

  qc::OracleOptions oracle_opts, explain_opts;
  CLI::App* oracle = app.add_subcommand("oracle", "evaluate quantize, dequantize or requantize exactly, elementwise");
  qc::add_oracle_options(oracle, oracle_opts, false);
  CLI::App* explain = app.add_subcommand("explain", "one element, every step of the exact derivation");
  qc::add_oracle_options(explain, explain_opts, true);

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
    if (*run) return cmd_run(run_paths, backends, report_dir, quiet, argc, argv);
    if (*list) return cmd_list(topic, list_paths);
    if (*oracle) return qc::cmd_oracle(oracle_opts);
    if (*explain) return qc::cmd_explain(explain_opts);
  } catch (const qc::InputError& e) {
    std::cerr << "qconform: error: " << e.what() << "\n";
    return kExitInput;
  } catch (const std::exception& e) {
    std::cerr << "qconform: internal error: " << e.what() << "\n";
    return 3;
  }
  return kExitInput;
}
