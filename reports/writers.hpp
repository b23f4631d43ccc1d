// Report writers. Every file is written atomically (a temporary file in the same folder, then
// rename), so an interrupted run never leaves a half-written report or destroys the last one.
#pragma once

#include "reports/result.hpp"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace qc {

inline constexpr const char* kReportSchemaVersion = "1.7.0";

nlohmann::json to_json(const RunReport& r);
std::string render_html(const RunReport& r);
// JUnit XML (one testsuite per case suite, one testcase per case and backend) for CI systems.
std::string render_junit(const RunReport& r);
// One line of the results stream (DIR/results.jsonl): a case with one backend's result.
std::string jsonl_line(const CaseResult& c, const BackendResult& b);
// JSON text for a file qconform writes (indent < 0: one line). Paths and command lines are bytes,
// not always UTF-8 (a file named in Latin-1): a byte that is not UTF-8 becomes U+FFFD instead of
// failing the write after the whole run.
std::string json_file_text(const nlohmann::json& j, int indent);

// Writes `path` whole or not at all (a temporary beside it, then a rename); a failure is an
// InputError naming `path` and the reason, and leaves the previous file as it was.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
// Replaces DIR/report.json, DIR/report.html and DIR/report.junit.xml together: all three are written
// before any is replaced, so a failure leaves the previous set whole. `results`, a run's stream of
// results (DIR/results.partial.jsonl), then becomes DIR/results.jsonl.
void write_reports(const RunReport& r, const std::filesystem::path& dir,
                   const std::optional<std::filesystem::path>& results = std::nullopt);

}  // namespace qc
