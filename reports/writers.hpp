// Report writers. Every file is written atomically (a temporary file in the same folder, then
// rename), so an interrupted run never leaves a half-written report or destroys the last one.
#pragma once

#include "reports/result.hpp"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace qc {

inline constexpr const char* kReportSchemaVersion = "1.2.0";

nlohmann::json to_json(const RunReport& r);
std::string render_html(const RunReport& r);
// JUnit XML (one testsuite per case suite, one testcase per case and backend) for CI systems.
std::string render_junit(const RunReport& r);
// One line of the results stream (DIR/results.jsonl): a case with one backend's result.
std::string jsonl_line(const CaseResult& c, const BackendResult& b);

void write_file_atomic(const std::filesystem::path& path, const std::string& content);
// Writes DIR/report.json, DIR/report.html and DIR/report.junit.xml.
void write_reports(const RunReport& r, const std::filesystem::path& dir);

}  // namespace qc
