// Report writers. Every file is written atomically (a temporary file in the same folder, then
// rename), so an interrupted run never leaves a half-written report or destroys the last one.
#pragma once

#include "reports/result.hpp"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace qc {

inline constexpr const char* kReportSchemaVersion = "1.0.0";

nlohmann::json to_json(const RunReport& r);
std::string render_html(const RunReport& r);

void write_file_atomic(const std::filesystem::path& path, const std::string& content);
// Writes DIR/report.json and DIR/report.html.
void write_reports(const RunReport& r, const std::filesystem::path& dir);

}  // namespace qc
