// The x86 VNNI kernels as harness backends: one per ISA (vnni512, avxvnni, avx2-maddubs), each
// SKIPped with the missing CPU feature named where the CPU lacks it.
#pragma once

#include "backends/vnni/vnni.hpp"
#include "qconform/backend.hpp"

namespace qc {

class VnniBackend final : public Backend {
 public:
  explicit VnniBackend(vnni::Isa isa) : isa_(isa) {}
  std::string name() const override;
  std::string description() const override;
  // vnni512/avxvnni: "x86-vnni"; avx2-maddubs: "x86-avx2-vpmaddubsw" (oracles/presets.cpp).
  std::string claim() const override;
  Availability availability() const override;
  Availability supports(const OpRequest& op) const override;
  Tensor run(const OpRequest& op) override;

 private:
  vnni::Isa isa_;
};

}  // namespace qc
