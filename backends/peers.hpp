// Peer backends: the real libraries (oneDNN, XNNPACK, gemmlowp, PyTorch, ONNX Runtime) run as
// qconform backends through the public routes, plugins and exec runners (docs/peers.md). The build
// writes a manifest of the peers it made, peers.json, which the CLI reads so that every command
// offers them by name, and runs them by default, like the built-in backends.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qc {

struct PeerEntry {
  std::string name;     // the backend's name in reports (what --backend names)
  std::string library;  // the library it runs, for messages
  std::string plugin;   // a plugin's path (absolute), or
  std::string backend;  // an exec:/py: backend spec, with {dir} already replaced
};

// The manifest's peers. A missing file is an empty list; a malformed one an InputError naming the
// file and the entry. Paths and {dir} in commands are relative to the manifest's folder.
std::vector<PeerEntry> load_peer_manifest(const std::filesystem::path& file);

}  // namespace qc
