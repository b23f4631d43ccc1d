// docs/seeds/*.md: each page's command, run as written from a folder with the built binary at
// build/cli/qconform and the suites beside it, exits 0, and every row of its table of statements
// (| `case` | statement | `other case` | differing elements |) is what the oracle's outputs of that
// run show: the statement holds, with that many differing elements. The answers the pages give stay
// true as the code changes.
#include "cli_run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace qc {
namespace seed_docs_test {

namespace fs = std::filesystem;

struct Statement {
  std::string name, assertion, other;
  std::int64_t differing = 0;
};

std::string read_page(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SeedDocs, EveryPagesCommandRunsAndItsStatementsHold) {
  const fs::path source = QCONFORM_SOURCE_DIR;
  const fs::path dir = fs::temp_directory_path() / ("qconform-seed-docs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "build" / "cli");
  fs::create_symlink(QCONFORM_BIN, dir / "build" / "cli" / "qconform");
  fs::create_directory_symlink(source / "cases", dir / "cases");
  const std::regex command(R"(\n(build/cli/qconform run (\S+) --backend cpu-ref -q -o (\S+))\n)");
  const std::regex row(R"(\n\| `([^`]+)` \| (same_outputs_as|differs_from) \| `([^`]+)` \| (\d+) \|)");
  int pages = 0;
  for (const auto& entry : fs::directory_iterator(source / "docs" / "seeds")) {
    if (entry.path().filename() == "README.md") continue;
    ++pages;
    const std::string page = read_page(entry.path());
    std::smatch m;
    ASSERT_TRUE(std::regex_search(page, m, command)) << entry.path() << " shows no run command";
    const std::string out = m[3];
    // As written, without the shard variables this test binary may run under.
    const auto r = testing::run_shell("cd " + dir.string() +
                                      " && env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u TEST_SHARD_INDEX "
                                      "-u TEST_TOTAL_SHARDS -u TEST_SHARD_STATUS_FILE " +
                                      std::string(m[1]));
    ASSERT_EQ(r.code, 0) << m[1] << "\n" << r.output;
    const nlohmann::json report = nlohmann::json::parse(std::ifstream(dir / out / "report.json"));
    std::vector<Statement> rows;
    for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator(); ++it)
      rows.push_back({(*it)[1], (*it)[2], (*it)[3], std::stoll((*it)[4])});
    ASSERT_FALSE(rows.empty()) << entry.path() << " has no table of statements";
    for (const Statement& s : rows) {
      bool found = false;
      for (const auto& c : report["cases"]) {
        if (c["name"] != s.name) continue;
        for (const auto& a : c["agreements"]) {
          const std::string other = a["other"];
          if (a["assertion"] != s.assertion || other.substr(other.rfind('/') + 1) != s.other) continue;
          found = true;
          EXPECT_EQ(a["status"], "holds") << entry.path() << ": " << s.name << " " << s.assertion << " " << s.other;
          EXPECT_EQ(a["differing"], s.differing) << entry.path() << ": " << s.name << " " << s.other;
        }
      }
      EXPECT_TRUE(found) << entry.path() << ": the run has no statement " << s.name << " " << s.assertion << " "
                         << s.other;
    }
  }
  EXPECT_GE(pages, 5);
  fs::remove_all(dir);
}

}  // namespace seed_docs_test
}  // namespace qc
