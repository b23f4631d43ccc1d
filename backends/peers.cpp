#include "backends/peers.hpp"

#include "backends/exec/exec_backend.hpp"

#include "qconform/error.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <system_error>

namespace qc {
namespace fs = std::filesystem;

std::vector<PeerEntry> load_peer_manifest(const fs::path& file) {
  std::error_code ec;
  if (file.empty() || !fs::is_regular_file(file, ec)) return {};
  const std::string where = "peer manifest " + file.string();
  std::ifstream in(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": not JSON: " + e.what());
  }
  if (!j.is_object() || j.value("qconform_peers", 0) != 1 || !j.contains("peers") || !j["peers"].is_array())
    throw InputError(where + ": expected {\"qconform_peers\": 1, \"peers\": [...]}");
  const fs::path dir = fs::absolute(file).parent_path();
  std::vector<PeerEntry> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < j["peers"].size(); ++i) {
    const nlohmann::json& e = j["peers"][i];
    const std::string at = where + ": peers[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty())
      throw InputError(at + ": needs a non-empty \"name\"");
    PeerEntry p;
    p.name = e["name"].get<std::string>();
    p.library = e.value("library", p.name);
    const bool has_plugin = e.contains("plugin"), has_backend = e.contains("backend");
    if (has_plugin == has_backend || !(has_plugin ? e["plugin"] : e["backend"]).is_string())
      throw InputError(at + " ('" + p.name + "'): needs exactly one of \"plugin\" (a path) or \"backend\" (exec:/py:)");
    if (has_plugin) {
      p.plugin = (dir / e["plugin"].get<std::string>()).lexically_normal().string();
    } else {
      p.backend = e["backend"].get<std::string>();
      for (std::size_t at_dir; (at_dir = p.backend.find("{dir}")) != std::string::npos;)
        p.backend.replace(at_dir, 5, sh_quote(dir.string()));
      if (!p.backend.starts_with("exec:") && !p.backend.starts_with("py:"))
        throw InputError(at + " ('" + p.name + "'): \"backend\" must be exec:CMD or py:MODULE:CLASS");
    }
    if (!names.insert(p.name).second) throw InputError(at + ": the name '" + p.name + "' is listed twice");
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace qc
