// cpu-ref's qadd: the exact value (sA·(a − zA) + sB·(b − zB)) / sC in 128-bit integers (each scale
// an integer significand times a power of two, as a binary float is), one floor division, ties to
// even, + zC, saturated. It shares no code with the oracle (oracles/qadd.hpp, exact rationals).
#pragma once

#include "qconform/backend.hpp"
#include "qconform/ops.hpp"

namespace qc::cpu_ref {

Availability supports_qadd(const QAddOp& op);
Tensor run_qadd(const QAddOp& op);

}  // namespace qc::cpu_ref
