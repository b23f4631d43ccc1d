#include "backends/backend.hpp"
#include "backends/cpu_ref/cpu_ref.hpp"
#include "backends/vnni/backend.hpp"
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

}  // namespace qc
