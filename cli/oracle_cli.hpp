// `qconform oracle` (evaluate one op elementwise, for scripting) and `qconform explain` (one
// element, every step of the exact derivation, under one policy or two side by side).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace qc {

struct OracleOptions {
  std::string op;             // quantize | dequantize | requantize
  std::string spec = "onnx";  // --spec: a preset, or a JSON spec {"preset": ..., overrides}
  std::string vs;             // explain, oracle --sweep: a second spec to compare with
  // Quantize-policy overrides (as in a case file's "spec").
  std::string order, compute, rounding, clamp, nan;
  bool narrow_range = false;
  // Requantize-policy overrides.
  std::string scheme, derivation;
  // Parameters.
  std::vector<double> scale{1.0};
  std::string scale_type = "f32";
  std::vector<std::int64_t> zero_point{0};
  std::optional<int> axis;
  std::int64_t block_size = 0;
  std::string from, to;
  double input_scale = 1.0, output_scale = 1.0;
  std::vector<double> weight_scale{1.0};
  std::optional<std::int64_t> multiplier;  // explicit fixed-point multiplier M (real = M * 2^-shift)
  std::optional<int> shift;
  // Data.
  std::string input;   // .npy or .json file
  std::string values;  // an inline JSON list
  std::string at;      // explain: the one input element
  std::string output;  // .npy file; JSON on stdout otherwise
  bool labels = false;
  bool sweep = false;  // quantize every value of the --from format (streamed), print a summary
  int threads = 0;     // --sweep: worker threads (0: every core)
};

// Adds the shared options to a subcommand.
void add_oracle_options(CLI::App* cmd, OracleOptions& o, bool explain);
int cmd_oracle(const OracleOptions& o);
int cmd_explain(const OracleOptions& o);

}  // namespace qc
