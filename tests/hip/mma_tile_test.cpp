// MmaTile's shared-memory traffic (backends/hip/gemm_tile.hpp), checked from the addresses its
// phases compute: what the tile reads and writes is exactly its data, each once, and no access
// waits on a bank conflict. The values themselves are checked end to end by plan_test.cpp (the
// emulated ldmatrix and mma against the oracle); a swizzle that is still a bijection but
// conflicts would pass there and is caught here.
//
// Shared memory has 32 banks of 4 bytes. ldmatrix.x4 is served 8 rows (128 bytes) at a time, so
// one matrix's 8 rows of 16 bytes are conflict-free when they fall in the 8 different 16-byte
// groups of banks; a warp's 32 8-byte stores are served a half-warp (128 bytes) at a time,
// conflict-free when each half-warp's 16 stores meet every bank once; 32 4-byte reads need every
// bank once.
#include "backends/hip/gemm_tile.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
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
      for (int i = 0; i < T::kWarpM / 16; ++i)
        for (int q = 0; q < 4; ++q) {
          std::set<int> groups;
          for (int r = 0; r < 8; ++r) {
            const int o = T::a_row_offset(warp, 8 * q + r, ks, i);
            groups.insert(bank_group(o));
            ++a_reads[static_cast<std::size_t>(o / 16)];
          }
          EXPECT_EQ(groups.size(), 8u) << "A: warp " << warp << " ks " << ks << " tile " << i << " matrix " << q;
        }
      for (int jj = 0; jj < T::kWarpN / 16; ++jj)
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

// The epilogue's staging: every (warp, row, column) of a pass has its own word inside the shared
// memory; each half-warp's 8-byte stores of the stash (one per lane and register pair) meet every
// bank once, and each row read of finish() does too.
TEST(HipMmaTile, EpilogueStagingIsABijectionWithoutBankConflicts) {
  std::vector<int> owner(kWarps * T::kStagedWords, 0);
  for (int warp = 0; warp < kWarps; ++warp)
    for (int row = 0; row < T::kWarpM; ++row)
      for (int col = 0; col < T::kStagedCols; ++col) {
        const int w = T::staged(warp, row, col);
        ASSERT_GE(w, 0);
        ASSERT_LT(w, static_cast<int>(owner.size()));
        ++owner[static_cast<std::size_t>(w)];
      }
  for (std::size_t w = 0; w < owner.size(); ++w) EXPECT_EQ(owner[w], 1) << "word " << w;
  EXPECT_LE(owner.size() * 4, sizeof(T::Shared));

  for (int warp = 0; warp < kWarps; ++warp) {
    for (int i = 0; i < 4; ++i)
      for (int jh = 0; jh < 4; ++jh)
        for (int r = 0; r < 4; r += 2)
          for (int half_warp = 0; half_warp < 2; ++half_warp) {
            std::array<int, 32> words_per_bank{};
            for (int lane = 16 * half_warp; lane < 16 * half_warp + 16; ++lane) {
              int row, col, row1, col1;
              T::position(lane, i, jh, r, row, col);
              T::position(lane, i, jh, r + 1, row1, col1);
              ASSERT_LT(col1, T::kStagedCols);
              const int w = T::staged(warp, row, col);
              ASSERT_EQ(w % 2, 0) << "an 8-byte store must be 8-byte aligned";
              ASSERT_EQ(T::staged(warp, row1, col1), w + 1) << "registers r, r + 1 are adjacent words";
              ++words_per_bank[static_cast<std::size_t>(w % 32)];
              ++words_per_bank[static_cast<std::size_t>((w + 1) % 32)];
            }
            for (int bank = 0; bank < 32; ++bank)
              EXPECT_EQ(words_per_bank[static_cast<std::size_t>(bank)], 1)
                  << "stash: warp " << warp << " tile " << i << "," << jh << " pair " << r << " half-warp " << half_warp
                  << " bank " << bank;
          }
    for (int row = 0; row < T::kWarpM; ++row) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane) banks.insert(T::staged(warp, row, lane) % 32);
      EXPECT_EQ(banks.size(), 32u) << "finish: warp " << warp << " row " << row;
    }
  }
}

// Each thread's copies of one step: together the block's threads fill every 16-byte piece of the
// stage's A and B tiles exactly once, each from its own row and chunk of the operand (or zeros
// past M and N), on a partial tile.
TEST(HipMmaTile, CopiesFillEachPieceOnceFromItsOwnRow) {
  const std::int64_t M = 100, N = 200, Kp = 128, m0 = 0, n0 = 0;
  std::vector<std::int8_t> a(static_cast<std::size_t>(M * Kp)), b(static_cast<std::size_t>(N * Kp));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int8_t>(i * 7 + 1);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int8_t>(i * 13 + 5);
  GemmArgs p;
  p.M = M;
  p.N = N;
  p.K = Kp;
  p.Kp = Kp;
  p.b = b.data();
  const DenseA A{a.data(), Kp};
  auto sh = std::make_unique<T::Shared>();
  for (std::int64_t step = 0; step < Kp / T::kK; ++step) {
    std::memset(sh.get(), 0x77, sizeof(T::Shared));
    for (int tid = 0; tid < T::kThreads; ++tid) T::load(T::copies(A, p, 0, m0, n0, tid), step, *sh);
    const int stage = T::stage_of(step);
    for (int row = 0; row < T::kN; ++row)
      for (int chunk = 0; chunk < T::kK / 16; ++chunk)
        for (int byte = 0; byte < 16; ++byte) {
          const std::int64_t k = step * T::kK + 16 * chunk + byte;
          const int at = T::swizzled(row, chunk) + byte;
          if (row < T::kM) {
            const std::int8_t want = row < M ? a[static_cast<std::size_t>(row * Kp + k)] : 0;
            ASSERT_EQ(sh->a[stage][at], want) << "A row " << row << " k " << k;
          }
          const std::int8_t want = row < N ? b[static_cast<std::size_t>(row * Kp + k)] : 0;
          ASSERT_EQ(sh->b[stage][at], want) << "B row " << row << " k " << k;
        }
  }
}

// launch_gemm's preconditions (HostExec checks the same): K in whole 64-byte steps, rows as long as
// Kp, and 16-byte aligned rows for the tensor-core tile's copies (4-byte words for dp4a).
TEST(HipMmaTile, LaunchRefusesWhatTheLoopsCannotCopy) {
  alignas(16) static std::int8_t bytes[4096];
  GemmArgs p;
  p.M = p.N = 1;
  p.K = 100;
  p.Kp = 128;
  p.b = bytes;
  EXPECT_TRUE(gemm_launchable(DenseA{bytes, 128}, p, GemmPath::mma));
  EXPECT_TRUE(gemm_launchable(DenseA{bytes + 4, 132}, p, GemmPath::dp4a));
  EXPECT_FALSE(gemm_launchable(DenseA{bytes + 4, 132}, p, GemmPath::mma));  // rows 4-byte aligned only
  EXPECT_FALSE(gemm_launchable(DenseA{bytes, 120}, p, GemmPath::mma));      // rows shorter than Kp
  p.Kp = 96;                                                                // not whole 64-byte steps
  EXPECT_FALSE(gemm_launchable(DenseA{bytes, 96}, p, GemmPath::dp4a));
  p.Kp = 64;  // shorter than K
  EXPECT_FALSE(gemm_launchable(DenseA{bytes, 64}, p, GemmPath::mma));
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
