// The fuzz targets' checked-in corpus (fuzz/corpus/TARGET: seeds and fixed findings) replayed in
// every build, so a finding that was fixed stays fixed without clang: each input reads or is an
// input error (fuzz/targets.hpp), never another exception.
#include "fuzz/targets.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

void replay(const std::string& target, const std::function<void(std::string_view)>& f) {
  const fs::path dir = fs::path(QCONFORM_SOURCE_DIR) / "fuzz/corpus" / target;
  int inputs = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream b;
    b << in.rdbuf();
    EXPECT_NO_THROW(f(b.str())) << e.path();
    ++inputs;
  }
  EXPECT_GT(inputs, 0) << dir;
}

TEST(FuzzCorpus, CaseLoader) { replay("cases", qc::fuzz::load_cases); }
TEST(FuzzCorpus, NpyReader) { replay("npy", qc::fuzz::read_npy); }
TEST(FuzzCorpus, ReportReader) { replay("report", qc::fuzz::read_report); }

}  // namespace
