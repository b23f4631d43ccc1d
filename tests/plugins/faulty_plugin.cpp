// Backends with planted faults, for the plugin tests: plugin-FAULT for each fault of
// fault_kernel.hpp (plugin-segv, plugin-hang, ...), all quantize only.
#include "fault_kernel.hpp"
#include "qconform/plugin.hpp"

namespace {

std::vector<std::unique_ptr<qc::Backend>> backends() {
  std::vector<std::unique_ptr<qc::Backend>> v;
  for (const auto& f : qc::testing::kKernelFaults)
    v.push_back(std::make_unique<qc::testing::FaultKernel>("plugin", f.fault));
  return v;
}

}  // namespace

// The plugin declares a preset of its own: onnx with ties away from zero.
QCONFORM_PLUGIN_WITH_PRESETS("qconform-test-faulty", backends,
                             R"([{"preset": "faulty-1.0", "description": "a plugin's own preset",
                                 "spec": {"preset": "onnx", "rounding": "rna"}}])")
