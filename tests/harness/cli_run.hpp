// Running the qconform binary from a test and reading back what it wrote: the exit status of a
// command line, a JSON file, and a report with the fields that differ between any two runs dropped.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace qc::testing {

// `qconform ARGS`, its output discarded: the exit status (-1 if it did not exit).
inline int run_qconform(const std::string& args) {
  const int rc = std::system((std::string(QCONFORM_BIN) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Timing fields differ between any two runs.
inline void drop_timing(nlohmann::json& j) {
  if (j.is_object()) {
    j.erase("seconds");
    j.erase("started_at");
    for (auto& [k, v] : j.items()) drop_timing(v);
  } else if (j.is_array()) {
    for (auto& v : j) drop_timing(v);
  }
}

}  // namespace qc::testing
