// libFuzzer entry for qc::fuzz::read_report (fuzz/targets.hpp).
#include "fuzz/targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qc::fuzz::read_report(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
