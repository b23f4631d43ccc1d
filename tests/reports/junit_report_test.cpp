// The JUnit XML of a model run (reports/junit_report.cpp): besides a testcase per case and backend,
// one testsuite "model NAME" per model, with a testcase per step (failed where a run computed the
// step otherwise than the oracle's chain, the message naming each such run) and one per run (failed
// where the run failed). The report is tests/reports/model_report.hpp's, built by hand.
#include "model_report.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace qc {
namespace {

// The text of the element <tag ...>...</tag> (or <tag .../>) whose opening tag holds `attribute`.
std::string element_with(const std::string& xml, const std::string& tag, const std::string& attribute) {
  const std::size_t at = xml.find(attribute);
  if (at == std::string::npos) return "";
  const std::size_t open = xml.rfind("<" + tag + " ", at);
  if (open == std::string::npos) return "";
  const std::size_t close = xml.find("</" + tag + ">", at);
  const std::size_t self_close = xml.find("/>", at);
  const std::size_t tag_end = xml.find('>', at);
  if (self_close != std::string::npos && self_close + 1 == tag_end) return xml.substr(open, self_close + 2 - open);
  return close == std::string::npos ? "" : xml.substr(open, close + tag.size() + 3 - open);
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

TEST(JunitModel, OneTestsuitePerModelWithATestcasePerStepAndPerRun) {
  const std::string xml = render_junit(test::model_report());
  const std::string suite = element_with(xml, "testsuite", "name=\"model tiny_qdq\"");
  ASSERT_FALSE(suite.empty()) << xml;
  // 4 steps and 5 runs; failed: the three steps vnni512 (fused) computed otherwise, and the failed run.
  EXPECT_NE(suite.find("tests=\"9\" failures=\"4\" errors=\"0\" skipped=\"0\""), std::string::npos)
      << suite.substr(0, 200);
  EXPECT_EQ(count(suite, "<testcase "), 9u);
  EXPECT_EQ(count(suite, "classname=\"model.tiny_qdq\""), 9u);
  EXPECT_EQ(count(suite, "<failure "), 4u);
  // The steps, in graph order, then the runs.
  std::vector<std::string> names;
  const std::regex name_re(R"re(<testcase classname="model\.tiny_qdq" name="([^"]*)")re");
  for (auto it = std::sregex_iterator(suite.begin(), suite.end(), name_re); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  EXPECT_EQ(names, (std::vector<std::string>{"x_QuantizeLinear", "fc_MatMul.fused", "relu_Relu", "y_DequantizeLinear",
                                             "run oracle (fused)", "run cpu-ref (fused)", "run vnni512 (fused)",
                                             "run onnxruntime [disabled]", "run onnxruntime [all]"}));

  // A step no run computed otherwise passes; one that some run did fails, the message naming the run,
  // the difference and the leading cause.
  EXPECT_EQ(element_with(suite, "testcase", "name=\"x_QuantizeLinear\"").find("<failure"), std::string::npos);
  EXPECT_NE(element_with(suite, "testcase", "name=\"fc_MatMul.fused\"")
                .find("message=\"vnni512 (fused): 3 of 40 differ, max 2 LSB, cause requantize.rounding=rna\""),
            std::string::npos)
      << element_with(suite, "testcase", "name=\"fc_MatMul.fused\"");
  // Real outputs: the difference as a number; a step the oracle computed for the backend says so.
  EXPECT_NE(element_with(suite, "testcase", "name=\"relu_Relu\"")
                .find("message=\"vnni512 (fused): 3 of 40 differ, max 0.25\""),
            std::string::npos);
  EXPECT_NE(element_with(suite, "testcase", "name=\"y_DequantizeLinear\"")
                .find("message=\"vnni512 (fused) (by the oracle): 3 of 40 differ, max 0.5\""),
            std::string::npos)
      << element_with(suite, "testcase", "name=\"y_DequantizeLinear\"");
  // A run fails where its status is "failed" (whatever its output), with its note, escaped.
  EXPECT_EQ(element_with(suite, "testcase", "name=\"run vnni512 (fused)\"").find("<failure"), std::string::npos);
  EXPECT_NE(element_with(suite, "testcase", "name=\"run onnxruntime [all]\"")
                .find("message=\"its answer could not be read: &lt;script&gt;alert(2)&lt;/script&gt; &amp; "
                      "&quot;q&quot;\""),
            std::string::npos)
      << element_with(suite, "testcase", "name=\"run onnxruntime [all]\"");
  EXPECT_NE(element_with(suite, "testcase", "name=\"run onnxruntime [disabled]\"").find("time=\"0.75\""),
            std::string::npos);

  // The totals count the model's testcases with the cases': 3 cases x 3 backends, 1 FAIL, 1 CRASH, 3 SKIP.
  EXPECT_NE(xml.find("<testsuites name=\"qconform\" tests=\"18\" failures=\"5\" errors=\"1\" skipped=\"3\""),
            std::string::npos)
      << xml.substr(0, 300);
  EXPECT_NE(xml.find("<testsuite name=\"tiny_qdq\" tests=\"9\" failures=\"1\" errors=\"1\" skipped=\"3\""),
            std::string::npos);
}

TEST(JunitModel, AReportWithoutAModelHasNoModelSuite) {
  RunReport r = test::model_report();
  r.models.clear();
  const std::string xml = render_junit(r);
  EXPECT_EQ(xml.find("model "), std::string::npos);
  EXPECT_NE(xml.find("<testsuites name=\"qconform\" tests=\"9\" failures=\"1\" errors=\"1\" skipped=\"3\""),
            std::string::npos);
}

// The XML is well formed: Python's XML parser reads it and finds the testcases.
TEST(JunitModel, IsWellFormedXml) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const auto file = std::filesystem::temp_directory_path() / ("qconform-junit-" + std::to_string(::getpid()) + ".xml");
  write_file_atomic(file, render_junit(test::model_report()));
  const std::string check =
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "s = [x for x in r if x.get('name') == 'model tiny_qdq'][0]; "
      "sys.exit(0 if len(s.findall('testcase')) == 9 and len(s.findall('testcase/failure')) == 4 else 3)\" " +
      file.string();
  EXPECT_EQ(std::system(check.c_str()), 0);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace qc
