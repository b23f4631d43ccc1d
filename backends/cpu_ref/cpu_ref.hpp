// cpu-ref: the plain C++ reference a client team would keep. It is written the way such code
// is written (float arithmetic, std::nearbyint, a clamp; an Eigen integer GEMM and a direct
// convolution for the quantized paths, linear.hpp) and deliberately does not call the oracle, so
// the harness checks it rather than itself. It claims the `onnx` preset.
#pragma once

#include "backends/backend.hpp"

namespace qc {

class CpuRefBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-ref"; }
  std::string description() const override {
    return "plain C++ reference (float arithmetic, nearbyint, clamp; Eigen int32 GEMM, direct conv)";
  }
  std::string claim() const override { return "onnx"; }
  Availability supports(const OpRequest& op) const override;
  Tensor run(const OpRequest& op) override;
};

}  // namespace qc
