// Internal: the contract between the blocking driver (gemm.cpp, plain C++) and the per-ISA
// micro-kernels (kernel_*.cpp, each function compiled with its own target attribute). Only plain
// structs cross it, so no template or inline function is ever compiled for two targets.
#pragma once

#include <cstdint>

namespace qc::vnni::detail {

enum class Store : std::uint8_t { int32, f32, u8, s8 };

// One MR x NR tile over one K block.
struct TileArgs {
  const std::uint8_t* a = nullptr;  // A rows (u8, already shifted): row r, group g at a + r*a_stride + 4g
  std::int64_t a_stride = 0;
  const std::int8_t* b = nullptr;  // packed B panel slice: [kgroups][nr][4] bytes
  std::int64_t kgroups = 0;
  // K blocking: the int32 tile is started from `partial` (load_partial) and, unless `final`,
  // written back there; rows ld_partial int32 apart.
  std::int32_t* partial = nullptr;
  std::int64_t ld_partial = 0;
  bool load_partial = false;
  bool final = true;
  // Epilogue (final only). Per-column arrays point at this panel's nr entries.
  int n_valid = 0;  // columns of the tile that exist (1..nr)
  const std::int32_t* col_term = nullptr;
  const std::int32_t* row_sum = nullptr;  // mr entries, or null (all weight zero points zero)
  const std::int32_t* w_zp = nullptr;
  const float* scale = nullptr;
  const float* bias_f = nullptr;  // f32 output with an f32 bias, else null
  float lo = 0, hi = 0;           // u8/s8: the clamp bounds minus the output zero point
  std::int32_t out_zp = 0;
  Store store = Store::int32;
  void* out = nullptr;      // element (row 0, column 0) of the tile
  std::int64_t ld_out = 0;  // in elements
};

using TileFn = void (*)(const TileArgs&);

inline constexpr int kMaxMr = 12;

// One ISA's micro-kernels and blocking. tiles[r - 1] handles r rows (1 <= r <= mr), so an M tail
// runs a kernel of its own height instead of computing padding rows.
// The A operand is row-major (each row's K bytes in groups of four, zero beyond K); the weights
// are pack_weights's panels (vnni.hpp).
struct KernelSet {
  int mr = 0;                  // rows per micro-tile
  int nr = 0;                  // columns per panel
  std::int64_t kc_groups = 0;  // K block, in groups of four: the B slice kc_groups*4*nr stays in L1
  std::int64_t mc = 0;         // M block (a multiple of mr): the packed A block mc*kc stays in L2
  TileFn tiles[kMaxMr] = {};
};

const KernelSet& scalar_kernels();
const KernelSet& avx2_maddubs_kernels();
const KernelSet& avxvnni_kernels();
const KernelSet& vnni512_kernels();

}  // namespace qc::vnni::detail
