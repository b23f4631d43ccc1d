// Policy inference: which presets and which single policy choices reproduce everything a
// backend outputs on discriminating inputs (ties, near ties, reciprocal-sensitive values,
// saturation, NaN and infinities, accumulator stress).
#pragma once

#include "qconform/backend.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace qc {

struct InferOptions {
  std::uint64_t seed = 1;
  std::int64_t elements = 4096;  // probe elements per op and output type
};

// One policy dimension ("rounding", "order", "compute", "clamp", "nan", "accumulation",
// "multiplier") and the values of it that reproduce every probed output.
struct InferFinding {
  std::string op;  // "quantize", "requantize", "qgemm"
  std::string dimension;
  // As people read them: order formulas ("round(x/s) + zp"), compute formats ("f32"), rounding
  // descriptions ("round to nearest, ties to even"), clamp, NaN rule and accumulation names.
  // Empty: no single value reproduces the outputs.
  std::vector<std::string> values;
  std::string description;  // human words for the values ("ties to even")
};

struct InferReport {
  std::string backend;
  std::vector<std::string> ops;      // ops probed (the backend supports them)
  std::vector<std::string> skipped;  // ops not probed, with the reason
  std::int64_t probes = 0;           // elements probed in all
  std::vector<std::string> presets;  // presets that reproduce every probed output bit for bit
  std::vector<InferFinding> findings;
  std::string summary;  // "behaves like: x*(1/s), f32, ties to even, NaN -> qmin"
};

InferReport infer(Backend& backend, const InferOptions& options = {});

}  // namespace qc
