// cpu-ref: the plain C++ reference a client team would keep. It is written the way such code
// is written (float arithmetic, a rounding call, a clamp; an Eigen integer GEMM and a direct
// convolution for the quantized paths, linear.hpp) and deliberately does not call the oracle, so
// the harness checks it rather than itself. It claims the `onnx` preset by default; another
// preset it implements (numerics.hpp) is selected by name, e.g. `cpu-ref:tflite-reference`.
#pragma once

#include "backends/cpu_ref/numerics.hpp"
#include "qconform/backend.hpp"

#include <string_view>

namespace qc {

class CpuRefBackend final : public Backend {
 public:
  // Throws InputError when cpu-ref does not implement `preset`.
  explicit CpuRefBackend(std::string_view preset = "onnx");
  // "cpu-ref" for the default claim, "cpu-ref:<preset>" otherwise.
  std::string name() const override;
  std::string description() const override;
  std::string claim() const override;
  Availability supports(const OpRequest& op) const override;
  Tensor run(const OpRequest& op) override;

 private:
  const cpu_ref::Numerics* numerics_;
};

}  // namespace qc
