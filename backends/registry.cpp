#include "backends/backend.hpp"
#include "backends/cpu_ref/cpu_ref.hpp"

namespace qc {

std::vector<std::unique_ptr<Backend>> make_builtin_backends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<CpuRefBackend>());
  return v;
}

}  // namespace qc
