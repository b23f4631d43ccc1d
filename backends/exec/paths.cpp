#include "backends/exec/paths.hpp"

#include <cstdlib>
#include <system_error>

#ifndef QCONFORM_PYTHON_EXECUTABLE
#define QCONFORM_PYTHON_EXECUTABLE "/usr/bin/python3"
#endif
#ifndef QCONFORM_BUILD_PYTHON_DIR
#define QCONFORM_BUILD_PYTHON_DIR "python"
#endif
#ifndef QCONFORM_BUILD_PEERS_MANIFEST
#define QCONFORM_BUILD_PEERS_MANIFEST "peers/peers.json"
#endif
#ifndef QCONFORM_SOURCE_CASES_DIR
#define QCONFORM_SOURCE_CASES_DIR "cases"
#endif

namespace qc {
namespace fs = std::filesystem;

namespace {
fs::path exe_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}
}  // namespace

fs::path python_package_dir() {
  if (const char* env = std::getenv("QCONFORM_PYTHONPATH"); env && *env) return env;
  const fs::path dir = exe_dir();
  std::error_code ec;
  if (!dir.empty() && fs::is_regular_file(dir / ".." / "python" / "qconform" / "__init__.py", ec))
    return (dir / ".." / "python").lexically_normal();
  return QCONFORM_BUILD_PYTHON_DIR;
}

fs::path default_cases_dir() {
  const fs::path dir = exe_dir();
  std::error_code ec;
  if (!dir.empty() && fs::is_directory(dir / ".." / "share" / "qconform" / "cases", ec))
    return (dir / ".." / "share" / "qconform" / "cases").lexically_normal();
  return QCONFORM_SOURCE_CASES_DIR;
}

fs::path peers_manifest() {
  if (const char* env = std::getenv("QCONFORM_PEERS")) return env;
  const fs::path dir = exe_dir();
  std::error_code ec;
  if (!dir.empty() && fs::is_regular_file(dir / ".." / "share" / "qconform" / "peers.json", ec))
    return (dir / ".." / "share" / "qconform" / "peers.json").lexically_normal();
  return QCONFORM_BUILD_PEERS_MANIFEST;
}

std::string python_executable() { return QCONFORM_PYTHON_EXECUTABLE; }

}  // namespace qc
