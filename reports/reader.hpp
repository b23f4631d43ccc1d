// Reading a JSON report back into the result model: for `qconform report` (re-render the HTML),
// `qconform merge` (join shard reports) and `qconform baseline` (record known mismatches).
#pragma once

#include "reports/result.hpp"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>

namespace qc {

// Throws InputError naming the file and field when it is not a qconform report of schema 1.x.
RunReport load_report(const std::filesystem::path& path);
// The same from the report's text (`where` names it in messages).
RunReport report_from_text(const std::string& text, const std::string& where);
RunReport report_from_json(const nlohmann::json& j, const std::string& where);

// Joins shard reports into one: cases in the order of the shards' case indices (each shard
// records the global order in its metadata), metadata from the first, seconds summed. Throws
// InputError when two reports hold the same case or the shards disagree on the shard count.
RunReport merge_reports(const std::vector<RunReport>& parts);

}  // namespace qc
