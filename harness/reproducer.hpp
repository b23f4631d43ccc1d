// Reproducers and shrinking: the smallest failing unit of a case, as a standalone case file.
//
// The unit of an output element is what it depends on: one input element (quantize, dequantize,
// requantize); one row of A and one column of B with their parameters (GEMM: the operands of the
// element's dot product); the receptive field of one output channel, cropped so the output is
// 1x1 with the padding it needs (conv). Dynamic per-tensor quantization depends on the whole
// activation, which the unit then keeps.
#pragma once

#include "cases/case.hpp"
#include "harness/evaluate.hpp"
#include "harness/isolation.hpp"
#include "qconform/backend.hpp"
#include "reports/result.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace qc {

// An op cropped to a box: per dimension of the op's main input (and its output), a start and a
// length. Parameters, packed int4 weights and biases are cropped to match.
struct OpUnit {
  OpRequest op;
  std::int64_t index = 0;  // the element of the unit's output that corresponds to the original element
};

// The smallest unit of `op` that output element `index` depends on.
OpUnit unit_op(const OpRequest& op, std::int64_t index);

// Smaller ops derived from `op` (halves along each shrinkable dimension), for shrinking.
std::vector<OpRequest> halves(const OpRequest& op);

// Whether `backend` fails case `c` (with op replaced) under the case's expectation for it; the
// backend is called as `call` says (a crash or a timeout there is a failure too).
bool still_fails(const Case& c, const OpRequest& op, Backend& backend, const CallPolicy& call = {});

// Writes DIR/<suite>__<case>__<backend>.json with the unit of the deciding element with the
// largest |delta| (or, when that unit passes alone, the whole case), and fills r.reproducer and
// r.reproduce_command. Returns whether the file fails on its own. `c` must stand alone (no links).
bool write_reproducer(const Case& c, Backend& b, const std::vector<std::int64_t>& deciding, const std::string& dir,
                      BackendResult& r, const CallPolicy& call = {});

// For what no single case reproduces (a failure that comes through an earlier case of a chain, an
// agreement between two cases that breaks): writes the same path with `cases` (a chain of the
// suite: each case with its links and data, in order), each expecting for `b` what it expects in
// the suite, and only `c`'s agreements with cases in the file. Fills r.reproducer and
// r.reproduce_command and returns the path.
std::string write_chain_reproducer(const std::vector<Case>& cases, const Case& c, Backend& b, const std::string& dir,
                                   const std::string& description, BackendResult& r);

// Shrinks a failing case: first the unit of each failing element, then halving every dimension
// while the backend keeps failing. Returns the smallest failing case found (`c` if none). Every
// backend call goes through `call` (qconform shrink --isolate / --timeout).
Case shrink_case(const Case& c, Backend& backend, int max_steps = 200, const CallPolicy& call = {});

// A case file holding one case (inline data), as `qconform run` reads it.
void save_single_case(const Case& c, const std::string& backend, const std::filesystem::path& path);

}  // namespace qc
