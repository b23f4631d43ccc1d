// The exec protocol (docs/integrate.md, "Protocol reference (exec, version 1)"): a backend in its own
// long-lived process, driven by qconform over newline-delimited JSON on its stdin and stdout, with
// tensors as .npy files in a per-call folder. This header is the runner's side (serve) and the
// request helpers both sides share; the host's side is backends/exec (ExecBackend).
#pragma once

#include "qconform/backend.hpp"
#include "qconform/wire.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace qc::exec {

// The version of the exec protocol. A host refuses a runner that answers hello with another.
inline constexpr int kVersion = 1;

// Serves `backend` on this process's stdin/stdout until "bye" or the end of stdin; returns the exit
// status (0). The protocol is kept on a private duplicate of fd 1, and fd 1 then points at fd 2, so
// a kernel that prints (printf, std::cout, Python's print) writes to stderr and cannot corrupt the
// protocol. A backend exception in run() is answered {"ok": false, "error": ...}.
int serve(Backend& backend);

// Writes a request's tensors into `dir` as t0.npy, t1.npy, ... (index = the wire tensor index).
void write_tensors(const std::filesystem::path& dir, const std::vector<Tensor>& tensors);
// Reads the op of a request: `op_json` is the wire op object's text, its tensors are read from
// `dir` (t<i>.npy, in the dtype the object names for tensor i). Throws InputError naming what is
// wrong.
OpRequest read_op(const std::string& op_json, const std::filesystem::path& dir);

}  // namespace qc::exec
