// libFuzzer entry for qc::fuzz::load_cases (fuzz/targets.hpp).
#include "fuzz/targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qc::fuzz::load_cases(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
