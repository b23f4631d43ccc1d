// The report set of a run folder (report.json, report.html, report.junit.xml, results.jsonl) changes
// together or not at all: a run that stops on an error found mid-run, one that cannot write (a
// full disk, injected as a file-size limit) and one whose report file is a folder each exit 2
// naming the file, and leave the previous set byte for byte, with no temporary behind.
#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace qc::testing {
namespace {

namespace fs = std::filesystem;

class CliReportSet : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qconform_report_set_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    good_ = (dir_ / "good.json").string();
    std::ofstream(good_) << R"({"suite": "s", "cases": [{"name": "q", "op": "quantize",
      "input": {"dtype": "f32", "shape": [4], "data": [0.5, 1.5, -2.5, 3.0]}, "scale": 1.0, "zero_point": 0,
      "output_dtype": "i8", "spec": "onnx"}]})";
    out_ = dir_ / "out";
    const auto r = run_qconform_output("run " + good_ + " --backend cpu-ref -q -o " + out_.string());
    ASSERT_EQ(r.code, 0) << r.output;
    before_ = snapshot();
    ASSERT_EQ(before_.size(), 4u);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every file of the run folder (not the reproducers) with its bytes.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(out_)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      files[e.path().filename().string()] = s.str();
    }
    return files;
  }

  fs::path dir_, out_;
  std::string good_;
  std::map<std::string, std::string> before_;
};

TEST_F(CliReportSet, AnErrorFoundMidRunLeavesThePreviousSet) {
  // The first case runs; the second's bias has 3 values for 2 columns, which only evaluating it finds.
  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << R"({"suite": "t", "cases": [
    {"name": "fine", "op": "quantize", "input": {"dtype": "f32", "shape": [2], "data": [0.5, 1.5]},
     "scale": 1.0, "zero_point": 0, "output_dtype": "i8", "spec": "onnx"},
    {"name": "bias3", "op": "qgemm", "spec": "onnx",
     "a": {"dtype": "u8", "shape": [1, 2], "data": [1, 2], "scale": 0.5, "zero_point": 0},
     "b": {"dtype": "i8", "shape": [2, 2], "data": [1, 2, 3, 4], "scale": 0.25, "zero_point": 0},
     "bias": {"dtype": "i32", "shape": [3], "data": [1, 2, 3]},
     "output": {"kind": "int32"}}]})";
  const auto r = run_qconform_output("run " + bad + " --backend cpu-ref -q -o " + out_.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bias"), std::string::npos) << r.output;
  auto after = snapshot();
  after.erase("results.partial.jsonl");  // the interrupted run's finished results
  EXPECT_EQ(after, before_);
}

TEST_F(CliReportSet, AWriteThatFailsLeavesThePreviousSetAndNoTemporary) {
  // A full disk, injected: files may not grow past 512 bytes (SIGXFSZ ignored, so writes fail
  // with EFBIG as they would with ENOSPC).
  const auto r = run_shell("trap '' XFSZ; ulimit -f 1; " +
                           qconform_command("run " + good_ + " --backend cpu-ref -q -o " + out_.string()));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot write"), std::string::npos) << r.output;
  auto after = snapshot();
  after.erase("results.partial.jsonl");
  EXPECT_EQ(after, before_);
}

TEST_F(CliReportSet, AReproducerThatCannotBeWrittenLeavesThePreviousSet) {
  // cpu-ref rounds ties to even; this spec rounds them away, so the case fails and wants a
  // reproducer, where reproducers/ is a file.
  const std::string ties = (dir_ / "ties.json").string();
  std::ofstream(ties) << R"({"suite": "s", "cases": [{"name": "away", "op": "quantize",
    "input": {"dtype": "f32", "shape": [2], "data": [0.5, 2.5]}, "scale": 1.0, "zero_point": 0,
    "output_dtype": "i8", "spec": {"preset": "onnx", "rounding": "rna"}}]})";
  { std::ofstream(out_ / "reproducers") << "a file\n"; }
  before_["reproducers"] = "a file\n";
  const auto r = run_qconform_output("run " + ties + " --backend cpu-ref -q -o " + out_.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("reproducers"), std::string::npos) << r.output;
  auto after = snapshot();
  after.erase("results.partial.jsonl");
  EXPECT_EQ(after, before_);
}

TEST_F(CliReportSet, AReportFileThatIsAFolderIsAnInputErrorAndNothingIsReplaced) {
  fs::remove(out_ / "report.junit.xml");
  fs::create_directory(out_ / "report.junit.xml");
  before_.erase("report.junit.xml");
  const auto r = run_qconform_output("run " + good_ + " --backend cpu-ref -q -o " + out_.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("report.junit.xml: is a folder"), std::string::npos) << r.output;
  auto after = snapshot();
  after.erase("results.partial.jsonl");
  EXPECT_EQ(after, before_);
}

TEST_F(CliReportSet, AReportFolderThatIsAFileIsAnInputError) {
  const fs::path file = dir_ / "not-a-folder";
  { std::ofstream(file) << "a file\n"; }
  const auto r = run_qconform_output("run " + good_ + " --backend cpu-ref -q -o " + file.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--report-dir " + file.string()), std::string::npos) << r.output;
  std::ifstream in(file);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "a file");
}

TEST_F(CliReportSet, PathsThatAreNotUtf8StillGetTheirReports) {
  // File names are bytes: a case file and a report folder named in Latin-1 ("\xff") run and write
  // the whole set; the JSON reports show the byte as U+FFFD (JSON text is UTF-8).
  const fs::path cases = dir_ / "caf\xff.json";
  fs::copy_file(good_, cases);
  const fs::path out = dir_ / "out\xff";
  const auto r = run_qconform_output("run '" + cases.string() + "' --backend cpu-ref -q -o '" + out.string() + "'");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* f : {"report.json", "report.html", "report.junit.xml", "results.jsonl"})
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  const nlohmann::json report = read_json(out / "report.json");
  EXPECT_EQ(report["cases"][0]["file"], cases.parent_path().string() + "/caf\xef\xbf\xbd.json");
}

}  // namespace
}  // namespace qc::testing
