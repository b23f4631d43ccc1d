// Policy inference: which presets and which policy choices reproduce what a backend outputs on
// discriminating inputs (ties, near ties, reciprocal-sensitive values, saturation, NaN and
// infinities, accumulator stress), for quantize, dequantize, requantize and the GEMM output stage.
// Each op's candidates are ranked by how many probe elements they get wrong; the best are reported
// when they miss at most 1 in 50 elements, and the elements they miss are listed as outliers, so
// one odd element does not hide everything else the probes showed.
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

// One policy dimension ("rounding", "order", "compute", "clamp", "nan", "accumulation", "scheme",
// "multiplier", "requantize.scheme", ...) and the values of it the best candidates take.
struct InferFinding {
  std::string op;  // "quantize", "dequantize", "requantize", "qgemm"
  std::string dimension;
  // As people read them: order formulas ("round(x/s) + zp"), compute formats ("f32"), rounding
  // descriptions ("round to nearest, ties to even"), clamp, NaN rule and accumulation names.
  // Empty: no candidate comes within the allowance of outliers (1 in 50 probe elements).
  std::vector<std::string> values;
  std::string description;  // human words for the values ("ties to even")
  // Probe elements the values leave unexplained: the best candidates' mismatches (outliers, such as
  // one element a kernel gets wrong), of `probes` elements probed for this op.
  std::int64_t unexplained = 0;
  std::int64_t probes = 0;
};

struct InferReport {
  std::string backend;
  std::vector<std::string> ops;      // ops probed (the backend supports them)
  std::vector<std::string> skipped;  // ops not probed, with the reason
  std::int64_t probes = 0;           // elements probed in all
  std::vector<std::string> presets;  // presets that reproduce every probed output bit for bit
  std::vector<InferFinding> findings;
  // The elements the best policy of each op does not reproduce (the first few of each): "requantize
  // acc 53 (s_in 0.25, s_w 0.5, s_out 0.5, zp 0): backend 14, policy 13".
  std::vector<std::string> outliers;
  std::string summary;  // "behaves like: x*(1/s), f32, ties to even, NaN -> qmin"
};

InferReport infer(Backend& backend, const InferOptions& options = {});

}  // namespace qc
