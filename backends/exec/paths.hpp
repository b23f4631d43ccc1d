// Where this installation's parts are: the qconform Python package (for the py: route, whose runner
// is `python -m qconform.exec`), the built-in case suites and the peer manifest. Both work from the build tree and from
// an install (bin/qconform next to python/qconform and share/qconform/cases).
#pragma once

#include <filesystem>
#include <string>

namespace qc {

// The folder that holds the qconform Python package (the one to put on PYTHONPATH): $QCONFORM_PYTHONPATH
// when set, else <dir of this executable>/../python when it holds qconform/__init__.py (the installed
// layout), else the build tree's python folder.
std::filesystem::path python_package_dir();
// The built-in suites: <dir of this executable>/../share/qconform/cases when it exists, else the
// source tree's cases/.
std::filesystem::path default_cases_dir();
// The peer manifest (docs/peers.md): $QCONFORM_PEERS when set (empty: no peers), else
// <dir of this executable>/../share/qconform/peers.json when it exists, else the build tree's
// peers/peers.json. The file may not exist: then this build has no peers.
std::filesystem::path peers_manifest();
// The Python interpreter the qconform module was built for.
std::string python_executable();

}  // namespace qc
