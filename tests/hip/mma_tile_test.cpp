// MmaTile's shared-memory traffic (backends/hip/gemm_tile.hpp), checked from the addresses its
// phases compute: what the tile reads and writes is exactly its data, each once, and no access
// waits on a bank conflict. The values themselves are checked end to end by plan_test.cpp (the
// emulated ldmatrix and mma against the oracle); a swizzle that is still a bijection but
// conflicts would pass there and is caught here.
//
// Shared memory has 32 banks of 4 bytes. ldmatrix.x4 is served 8 rows (128 bytes) at a time, so
// one matrix's 8 rows of 16 bytes are conflict-free when they fall in the 8 different 16-byte
// groups of banks; a warp's 32 8-byte stores (256 bytes) need at least two passes, which they
// take when each bank receives exactly 2 words; 32 4-byte reads need every bank once.
#include "backends/hip/gemm_tile.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <set>
#include <vector>

namespace qc::gpu {
namespace {

using T = MmaTile;
constexpr int kWarps = T::kThreads / 32;

int bank_group(int byte_offset) { return (byte_offset / 16) % 8; }

// Row r of a stage's tile holds the logical chunks 0..3 at 4 distinct 16-byte places of its own
// 64 bytes: the swizzle is a permutation within each row, so the copies fill the tile exactly.
TEST(HipMmaTile, SwizzleKeepsEachRowItsOwnBytes) {
  for (int row = 0; row < T::kM; ++row) {
    std::set<int> at;
    for (int chunk = 0; chunk < T::kK / 16; ++chunk) {
      const int o = T::swizzled(row, chunk);
      EXPECT_EQ(o % 16, 0);
      EXPECT_GE(o, row * T::kK);
      EXPECT_LT(o, (row + 1) * T::kK);
      at.insert(o);
    }
    EXPECT_EQ(at.size(), 4u) << "row " << row;
  }
}

// Each warp's ldmatrix addresses over one step: every 8-row matrix conflict-free, and together the
// warp's 64 A rows and 32 B rows of both 32-byte k-halves, each 16-byte piece read exactly once.
TEST(HipMmaTile, LdmatrixReadsEachPieceOnceWithoutBankConflicts) {
  for (int warp = 0; warp < kWarps; ++warp) {
    std::vector<int> a_reads(T::kM * T::kK / 16), b_reads(T::kN * T::kK / 16);
    for (int ks = 0; ks < T::kK / 32; ++ks) {
      for (int i = 0; i < 4; ++i)
        for (int q = 0; q < 4; ++q) {
          std::set<int> groups;
          for (int r = 0; r < 8; ++r) {
            const int o = T::a_row_offset(warp, 8 * q + r, ks, i);
            groups.insert(bank_group(o));
            ++a_reads[static_cast<std::size_t>(o / 16)];
          }
          EXPECT_EQ(groups.size(), 8u) << "A: warp " << warp << " ks " << ks << " tile " << i << " matrix " << q;
        }
      for (int jj = 0; jj < 2; ++jj)
        for (int q = 0; q < 4; ++q) {
          std::set<int> groups;
          for (int r = 0; r < 8; ++r) {
            const int o = T::b_row_offset(warp, 8 * q + r, ks, jj);
            groups.insert(bank_group(o));
            ++b_reads[static_cast<std::size_t>(o / 16)];
          }
          EXPECT_EQ(groups.size(), 8u) << "B: warp " << warp << " ks " << ks << " pair " << jj << " matrix " << q;
        }
    }
    const int wm = (warp / 4) * T::kWarpM, wn = (warp % 4) * T::kWarpN;
    for (int piece = 0; piece < static_cast<int>(a_reads.size()); ++piece) {
      const int row = piece / (T::kK / 16);
      EXPECT_EQ(a_reads[static_cast<std::size_t>(piece)], row >= wm && row < wm + T::kWarpM ? 1 : 0)
          << "A piece " << piece << ", warp " << warp;
    }
    for (int piece = 0; piece < static_cast<int>(b_reads.size()); ++piece) {
      const int row = piece / (T::kK / 16);
      EXPECT_EQ(b_reads[static_cast<std::size_t>(piece)], row >= wn && row < wn + T::kWarpN ? 1 : 0)
          << "B piece " << piece << ", warp " << warp;
    }
  }
}

// The epilogue's staging: every (warp, row, column) has its own word inside the shared memory;
// each 8-byte store of the stash (one per lane and register pair) takes the minimum two passes,
// and each row read of finish() one.
TEST(HipMmaTile, EpilogueStagingIsABijectionWithoutBankConflicts) {
  std::vector<int> owner(kWarps * T::kStagedWords, 0);
  for (int warp = 0; warp < kWarps; ++warp)
    for (int row = 0; row < T::kWarpM; ++row)
      for (int col = 0; col < T::kWarpN; ++col) {
        const int w = T::staged(warp, row, col);
        ASSERT_GE(w, 0);
        ASSERT_LT(w, static_cast<int>(owner.size()));
        ++owner[static_cast<std::size_t>(w)];
      }
  for (std::size_t w = 0; w < owner.size(); ++w) EXPECT_EQ(owner[w], 1) << "word " << w;
  EXPECT_LE(owner.size() * 4, sizeof(T::Shared));

  for (int warp = 0; warp < kWarps; ++warp) {
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        for (int r = 0; r < 4; r += 2) {
          std::array<int, 32> words_per_bank{};
          for (int lane = 0; lane < 32; ++lane) {
            int row, col;
            T::position(lane, i, j, r, row, col);
            int row1, col1;
            T::position(lane, i, j, r + 1, row1, col1);
            const int w = T::staged(warp, row, col);
            ASSERT_EQ(w % 2, 0) << "an 8-byte store must be 8-byte aligned";
            ASSERT_EQ(T::staged(warp, row1, col1), w + 1) << "registers r, r + 1 are adjacent words";
            ++words_per_bank[static_cast<std::size_t>(w % 32)];
            ++words_per_bank[static_cast<std::size_t>((w + 1) % 32)];
          }
          for (int bank = 0; bank < 32; ++bank)
            EXPECT_EQ(words_per_bank[static_cast<std::size_t>(bank)], 2)
                << "stash: warp " << warp << " tile " << i << "," << j << " pair " << r << " bank " << bank;
        }
    for (int row = 0; row < T::kWarpM; ++row) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane) banks.insert(T::staged(warp, row, lane) % 32);
      EXPECT_EQ(banks.size(), 32u) << "finish: warp " << warp << " row " << row;
    }
  }
}

// The stage schedule: the copy issued while step s is multiplied (step s + kStages - 1) never
// lands in the stage step s reads, nor in the stages of the steps still in flight.
TEST(HipMmaTile, PipelineNeverOverwritesAStageInUse) {
  for (std::int64_t s = 0; s < 3 * T::kStages; ++s) {
    const int writing = T::stage_of(s + T::kStages - 1);
    for (std::int64_t live = s; live < s + T::kStages - 1; ++live)
      EXPECT_NE(writing, T::stage_of(live)) << "step " << s << " copies into the stage of step " << live;
  }
}

}  // namespace
}  // namespace qc::gpu
