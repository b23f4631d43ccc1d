#include "backends/registry.hpp"
#include "backends/cpu_ref/cpu_ref.hpp"
#include "backends/exec/exec_backend.hpp"
#include "backends/exec/paths.hpp"
#include "backends/vnni/backend.hpp"
#include "qconform/error.hpp"
#if defined(QCONFORM_HAVE_HIP)
#include "backends/hip/backend.hpp"
#endif

namespace qc {

std::vector<std::unique_ptr<Backend>> make_builtin_backends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<CpuRefBackend>());
  for (vnni::Isa isa : {vnni::Isa::vnni512, vnni::Isa::avxvnni, vnni::Isa::avx2_maddubs})
    v.push_back(std::make_unique<VnniBackend>(isa));
#if defined(QCONFORM_HAVE_HIP)
  for (HipVariant h : all_hip_variants()) v.push_back(std::make_unique<HipBackend>(h));
#endif
  return v;
}

std::vector<std::string> backend_variants() {
  std::vector<std::string> v;
  for (const cpu_ref::Numerics& n : cpu_ref::claimable())
    if (n.preset != cpu_ref::claimable().front().preset) v.push_back("cpu-ref:" + std::string(n.preset));
  return v;
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  constexpr std::string_view kExec = "exec:", kPy = "py:";
  if (name.starts_with(kExec)) {
    const std::string cmd = name.substr(kExec.size());
    if (cmd.find_first_not_of(" \t") == std::string::npos)
      throw InputError("backend '" + name + "': exec: needs a command (exec:CMD ARGS)");
    return std::make_unique<ExecBackend>(cmd, options.timeout_seconds);
  }
  if (name.starts_with(kPy)) {
    const std::string target = name.substr(kPy.size());
    const std::size_t colon = target.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == target.size() ||
        target.find_first_of(" \t'\"") != std::string::npos)
      throw InputError("backend '" + name + "': py: takes MODULE:CLASS (e.g. py:my_kernels:MyBackend)");
    const std::string cmd = sh_quote(python_executable()) + " -m qconform.exec " + sh_quote(target);
    return std::make_unique<ExecBackend>(cmd, options.timeout_seconds, python_package_dir().string());
  }
  constexpr std::string_view kCpuRef = "cpu-ref:";
  if (name.starts_with(kCpuRef)) {
    const std::string preset = name.substr(kCpuRef.size());
    if (!cpu_ref::find_numerics(preset))
      throw InputError("unknown backend '" + name + "': cpu-ref can claim " + cpu_ref::claimable_list() + ", not '" +
                       preset + "'");
    return std::make_unique<CpuRefBackend>(preset);
  }
  std::string known;
  for (auto& b : make_builtin_backends()) {
    if (b->name() == name) return std::move(b);
    known += (known.empty() ? "" : ", ") + b->name();
  }
  for (const std::string& v : backend_variants()) known += ", " + v;
  throw InputError("unknown backend '" + name + "' (known: " + known + ")");
}

}  // namespace qc
