// The catalogue of bad inputs (tests/harness/bad_inputs.json): one row per kind of bad input to
// the CLI (malformed case files, impossible parameters, out-of-range numbers, bad options, bad
// reports and .npy files). Each row runs qconform once and checks that it exits with the row's
// code (2, an input error, unless the row says otherwise; never 3, an internal error), that the
// message names what is wrong (the row's needles), and that the report set an earlier run left in
// the report folder is byte-identical afterwards. The file's own description says how a row is
// written.
#include "cli_run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;
using qc::testing::CliResult;
using qc::testing::run_qconform_output;

namespace {

const json& catalogue() {
  static const json c = [] {
    std::ifstream in(fs::path(QCONFORM_SOURCE_DIR) / "tests/harness/bad_inputs.json");
    return json::parse(in);
  }();
  return c;
}

std::vector<std::string> row_ids() {
  std::vector<std::string> ids;
  for (const json& r : catalogue()["rows"]) ids.push_back(r["id"].get<std::string>());
  return ids;
}

const json& row(const std::string& id) {
  for (const json& r : catalogue()["rows"])
    if (r["id"] == id) return r;
  throw std::runtime_error("no row " + id);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t k = s.find(from); k != std::string::npos; k = s.find(from, k + to.size()))
    s.replace(k, from.size(), to);
  return s;
}

// The text's escapes: "__NEST_n__" (n nested empty lists) and <XX> (the byte 0xXX).
std::string expand(std::string text) {
  static const std::regex nest("__NEST_([0-9]+)__");
  std::smatch m;
  while (std::regex_search(text, m, nest)) {
    const auto n = static_cast<std::size_t>(std::stoul(m[1].str()));
    text.replace(static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)),
                 std::string(n, '[') + std::string(n, ']'));
  }
  static const std::regex byte("<([0-9A-F]{2})>");
  std::string out;
  auto it = text.cbegin();
  for (std::sregex_iterator b(text.begin(), text.end(), byte), e; b != e; ++b) {
    out.append(it, text.cbegin() + b->position(0));
    out.push_back(static_cast<char>(std::stoi((*b)[1].str(), nullptr, 16)));
    it = text.cbegin() + b->position(0) + b->length(0);
  }
  out.append(it, text.cend());
  return out;
}

json with_patch(const std::string& base, const json& patch) {
  json c = catalogue()["bases"].at(base);
  c.merge_patch(patch);
  return c;
}

// The case file of a row, as text.
std::string case_file(const json& r) {
  if (r.contains("text")) return expand(r["text"].get<std::string>());
  json cases = json::array();
  if (r.contains("case")) {
    cases.push_back(with_patch(r["case"].get<std::string>(), r["patch"]));
  } else if (r.contains("cases")) {
    for (const json& c : r["cases"]) cases.push_back(c.is_array() ? with_patch(c[0].get<std::string>(), c[1]) : c);
  } else {
    cases.push_back(catalogue()["bases"]["quantize"]);
  }
  json suite = {{"suite", "catalogue"}, {"cases", cases}};
  if (r.contains("suite")) suite.merge_patch(r["suite"]);
  return expand(replace_all(suite.dump(), "\"__1e999__\"", "1e999"));
}

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return out;
}

class BadInput : public qc::testing::TempDirTest, public ::testing::WithParamInterface<std::string> {
 protected:
  // A real report of the base quantize case, for rows that hand a report to merge/report/baseline.
  fs::path real_report() {
    const fs::path dir = dir_ / "base";
    write(dir_ / "base.json", json({{"suite", "catalogue"}, {"cases", {catalogue()["bases"]["quantize"]}}}).dump());
    const CliResult r =
        run_qconform_output("run " + (dir_ / "base.json").string() + " --backend cpu-ref -q -o " + dir.string());
    EXPECT_EQ(r.code, 0) << r.output;
    return dir / "report.json";
  }
};

TEST_P(BadInput, IsAnInputErrorThatNamesItAndKeepsTheEarlierReports) {
  const json& r = row(GetParam());
  const fs::path out = dir_ / "out";
  // The earlier report set: what a bad run must leave alone, byte for byte.
  for (const char* f : {"report.json", "report.html", "report.junit.xml", "results.jsonl"})
    write(out / f, std::string("earlier ") + f + "\n");
  const auto before = folder_bytes(out);

  write(dir_ / "case.json", case_file(r));
  std::string args = r.value("args", std::string("run {case} --backend cpu-ref -q -o {out}"));
  if (args.find("{base}") != std::string::npos)
    args = replace_all(args, "{base}", real_report().parent_path().string());
  if (r.contains("files")) {
    for (const auto& [name, content] : r["files"].items()) {
      std::string text = content.get<std::string>();
      if (text.rfind("__REPORT__", 0) == 0) {
        const auto eq = text.find('=');
        json report = json::parse(slurp(real_report()));
        report[json::json_pointer(text.substr(10, eq - 10))] = json::parse(text.substr(eq + 1));
        text = report.dump();
      }
      write(dir_ / name, expand(text));
    }
  }
  args = replace_all(replace_all(replace_all(args, "{case}", (dir_ / "case.json").string()), "{out}", out.string()),
                     "{dir}", dir_.string());
  const std::string env = replace_all(r.value("env", std::string()), "{dir}", dir_.string());

  const CliResult got = run_qconform_output(args, env);
  EXPECT_EQ(got.code, r.value("code", 2)) << "qconform " << args << "\n" << got.output;
  for (const json& needle : r["needles"])
    EXPECT_NE(got.output.find(needle.get<std::string>()), std::string::npos)
        << "the message does not name '" << needle.get<std::string>() << "':\n"
        << got.output;
  // Finished results may be kept beside the report set (results.partial.jsonl); nothing else changes.
  auto after = folder_bytes(out);
  after.erase("results.partial.jsonl");
  EXPECT_EQ(after, before) << "the earlier report set in " << out << " changed";
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(row_ids()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(BadInputCatalogue, HoldsAtLeast150KindsWithUniqueIds) {
  std::set<std::string> ids;
  for (const json& r : catalogue()["rows"]) {
    EXPECT_TRUE(ids.insert(r["id"].get<std::string>()).second) << r["id"];
    EXPECT_FALSE(r["needles"].empty()) << r["id"] << ": a row must say what the message names";
  }
  EXPECT_GE(ids.size(), 150u);
}

}  // namespace
