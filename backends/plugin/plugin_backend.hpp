// The host side of the plugin ABI (qconform/plugin.h): loads a plugin's shared library and offers its
// backends as qc::Backend objects. docs/integrate.md, "Plugins".
#pragma once

#include "qconform/backend.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace qc {

struct LoadedPlugin {
  std::string path;
  std::string name;
  std::string presets_json;  // the plugin's preset declarations (a JSON array), or empty
  std::vector<std::unique_ptr<Backend>> backends;
};

// dlopens `path` (kept loaded for the life of the process) and checks its ABI and wire versions.
// Throws InputError naming the file for a missing file, a library that does not load, a missing entry
// point, or another ABI version (naming both versions).
LoadedPlugin load_plugin(const std::filesystem::path& path);

// The QCONFORM_PLUGINS variable split at ':' (empty entries skipped).
std::vector<std::string> plugin_paths_from_environment();

}  // namespace qc
