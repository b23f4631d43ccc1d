// The hip backend: the HIP kernels of backends/hip as harness backends, one per numerics variant
// (docs/hip.md). Each variant runs the same kernels with another numerics recipe
// (numerics.hpp) and claims the preset that defines that recipe (oracles/presets.cpp, gpu-*):
//
//   hip         f32 division x / s, __float2int_rn (ties to even)       claims gpu-div
//   hip-recip   x * __frcp_rn(s)                                         claims gpu-recip
//   hip-f16     binary16 arithmetic where the scale is f16               claims gpu-f16
//   hip-fma     round(fma(x, 1/s, zp)), fma(q, s, -(zp*s))               claims gpu-fma
//   hip-nofma   the same forms with a separate multiply and add          claims gpu-nofma
//   hip-roundf  roundf (ties away) in quantize and requantize            claims gpu-roundf
//
// Without a usable GPU every variant is unavailable (SKIP) with the runtime's reason. Asking
// availability() or facts() never initialises the GPU runtime in the calling process; run() does,
// lazily, so `qconform run --isolate` runs each call in a child that initialises its own.
#pragma once

#include "backends/hip/numerics.hpp"
#include "qconform/backend.hpp"

#include <map>
#include <string>
#include <vector>

namespace qc {

enum class HipVariant : std::uint8_t { div, recip, f16, fma, nofma, roundf };

std::vector<HipVariant> all_hip_variants();
std::string hip_variant_name(HipVariant v);   // "hip", "hip-recip", ...
std::string hip_variant_claim(HipVariant v);  // "gpu-div", "gpu-recip", ...
gpu::Recipe hip_recipe(HipVariant v);         // what the variant's kernels compute

// Whether a GPU is usable here, and why not (the runtime's error, a device too old for the
// compiled kernels). Probed once per process, in a forked child: this process does not initialise
// the GPU runtime for it, so that the runner's --isolate children can (backend.cpp, "The device").
Availability hip_device_availability();
// Whether this process has called the GPU runtime through the backend: only run() does, and the
// first availability() after it. For the fork-safety tests.
bool hip_runtime_used_in_this_process();

class HipBackend final : public Backend {
 public:
  explicit HipBackend(HipVariant v) : v_(v) {}
  std::string name() const override { return hip_variant_name(v_); }
  std::string description() const override;
  std::string claim() const override { return hip_variant_claim(v_); }
  Availability availability() const override { return hip_device_availability(); }
  // Device (name, compute capability, driver and runtime versions) and the build's numerics flags;
  // the device part from the same forked probe as availability().
  std::map<std::string, std::string> facts() const override;
  Availability supports(const OpRequest& op) const override;
  Tensor run(const OpRequest& op) override;

 private:
  HipVariant v_;
};

}  // namespace qc
