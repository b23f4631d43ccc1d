// Internal: the cache-blocking GEMM driver that gemm() and conv2d() share. It differs between them
// only in where the rows of A come from (a matrix, or gathered from an image: implicit GEMM).
#pragma once

#include "backends/vnni/kernels.hpp"
#include "backends/vnni/vnni.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace qc::vnni::detail {

// Row `row` of A, activation bytes [k0, k0 + len) in the GEMM's K order, as stored (u8 or s8 bits,
// before the +128 shift). `fetch` returns a pointer to them: into the matrix itself, or into
// `scratch` (at least len bytes) after gathering.
struct RowSource {
  const void* context = nullptr;
  const std::uint8_t* (*fetch)(const void* context, std::int64_t row, std::int64_t k0, std::int64_t len,
                               std::uint8_t* scratch) = nullptr;
  // When the rows lie in memory at rows + row·row_stride (a matrix, a pointwise convolution), the
  // micro-kernel may read them in place; null for gathered rows.
  const std::uint8_t* rows = nullptr;
  std::int64_t row_stride = 0;
};

// out: element (0, 0) of an [m, N] output with rows ldo elements apart, of the packed output kind.
void run_gemm(const PackedWeights& w, std::int64_t m, const RowSource& a, void* out, std::int64_t ldo);

// The checks of a QuantSpec for n output columns that do not depend on the weight values (pack.cpp).
void validate_quant_spec(const QuantSpec& q, std::int64_t n);
// 4-bit values packed two per byte (element 2i low), sign- or zero-extended; InputError on a bad size.
std::vector<std::int8_t> unpack_int4(std::span<const std::uint8_t> packed, std::int64_t count, WeightType type,
                                     const char* where);
const KernelSet& kernels_for(Isa isa);

// Throws InputError unless A and Out are the activation and output types `w` was packed for
// (explicitly instantiated in gemm.cpp for the eight combinations).
template <class A, class Out>
void check_types(const PackedWeights& w, const char* where);

// Throws InputError unless `w` was packed for an ISA this CPU runs.
void check_runnable(const PackedWeights& w);

}  // namespace qc::vnni::detail
