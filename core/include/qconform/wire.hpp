// The wire form of an op request: JSON metadata plus a list of tensors, the one encoding that both
// out-of-binary routes use (docs/integrate.md): the plugin ABI passes the JSON text and the tensors'
// buffers through plain C structs (qconform/plugin.h), the exec protocol writes the JSON on a pipe and
// the tensors as .npy files. Every field of every op is written explicitly (no defaults are implied),
// so a runner in any language reads exactly what an in-process backend would be given.
//
// A tensor is referenced from the JSON as {"tensor": i, "dtype": "f32", "shape": [2, 3]}: index i into
// the message's tensors; dtype and shape repeat the tensor's own, for readers and for the check on
// decode. Doubles (scales) are written as the shortest text that reads back as the same double.
#pragma once

#include "qconform/ops.hpp"
#include "qconform/tensor.hpp"

#include <string>
#include <vector>

namespace qc::wire {

// The version of this encoding. A reader refuses a message of another version.
inline constexpr int kVersion = 1;

struct Message {
  std::string json;             // one JSON object, on one line (no raw newlines)
  std::vector<Tensor> tensors;  // referenced by index from `json`
};

// The op as {"op": "qgemm", ...} plus its tensors.
Message encode_op(const OpRequest& op);
// The inverse. Throws InputError naming the field for a malformed object, an unknown name, or a
// tensor whose dtype or shape differs from what the JSON says.
OpRequest decode_op(const std::string& json, std::vector<Tensor> tensors);

}  // namespace qc::wire
