// Reproducers, shrinking, shards and baselines from the command line.
//
// The unit of an output element must compute that element exactly as the whole op does: checked
// for sampled elements of every case in the built-in suites, the oracle evaluating both (the
// oracle knows nothing of the cropping, so it is an independent check of it).
#include "cli_run.hpp"
#include "faulty_backend.hpp"

#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/reproducer.hpp"
#include "harness/runner.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace qc {
namespace {

namespace fs = std::filesystem;
using testing::Fault;
using testing::FaultyBackend;

TEST(Reproducer, TheUnitOfAnElementComputesThatElement) {
  int checked = 0;
  for (const char* file : {"qgemm.json", "qconv2d.json", "int4.json", "drq.json", "weight_only.json",
                           "quantize_linear.json", "dequantize_linear.json", "requantize.json", "vnni.json"}) {
    for (const Suite& s : load_suites({fs::path(QCONFORM_SOURCE_DIR) / "cases" / file})) {
      for (const Case& c : s.cases) {
        const Reference ref = evaluate(c.op, c.spec);
        const std::int64_t n = ref.expected.size();
        if (n > 100000) continue;
        const std::int64_t step = std::max<std::int64_t>(1, n / 7);
        for (std::int64_t i = 0; i < n; i += step) {
          if (!ref.specified[static_cast<std::size_t>(i)]) continue;
          const OpUnit u = unit_op(c.op, i);
          const Reference ur = evaluate(u.op, c.spec);
          ASSERT_LT(u.index, ur.expected.size()) << c.id() << " element " << i;
          Tensor a(ref.expected.dtype(), {1}), b(ref.expected.dtype(), {1});
          if (is_int(a.dtype())) {
            a.set_int(0, ref.expected.get_int(i));
            b.set_int(0, ur.expected.get_int(u.index));
          } else {
            a.set_bits(0, ref.expected.bits(i));
            b.set_bits(0, ur.expected.bits(u.index));
          }
          EXPECT_TRUE(same_element(a, b, 0))
              << c.id() << " element " << i << ": whole op " << a.get_double(0) << ", unit " << b.get_double(0);
          EXPECT_LE(ur.expected.size(), n);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

Case ties_case(std::int64_t n) {
  QuantizeOp op;
  op.x = Tensor(DType::f32, {n});
  for (std::int64_t i = 0; i < n; ++i) op.x.set_double(i, static_cast<double>(i % 40 - 20) + 0.5);
  op.params.scales = {1.0};
  op.params.zero_points = {0};
  op.out = DType::i8;
  Case c;
  c.suite = "planted";
  c.name = "ties";
  c.op = op;
  c.spec = *find_preset("onnx");
  return c;
}

TEST(Reproducer, AFailingCaseGetsAOneElementFileThatFailsAgain) {
  const fs::path dir = fs::temp_directory_path() / ("qconform-repro-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  FaultyBackend b(Fault::ties_away);
  RunOptions opt;
  opt.reproducer_dir = dir.string();
  const RunReport r = run_cases({Suite{"planted", "", "", {ties_case(1000)}, {}}}, {&b}, opt);
  const BackendResult& br = r.cases[0].backends[0];
  ASSERT_EQ(br.verdict, Verdict::fail);
  ASSERT_FALSE(br.reproducer.empty());
  EXPECT_EQ(br.reproduce_command, "qconform run " + br.reproducer + " --backend faulty-ties-away");
  const Suite back = load_suite(br.reproducer);
  ASSERT_EQ(back.cases.size(), 1u);
  EXPECT_EQ(op_input(back.cases[0].op).size(), 1);
  EXPECT_TRUE(still_fails(back.cases[0], back.cases[0].op, b));
  fs::remove_all(dir);
}

// Reproducer files are named after the case, one per (case, backend) and within a file name's 255
// bytes: "a/b" and "a_b" used to share a file, and a 240-character name aborted the run.
TEST(Reproducer, EveryFailingPairGetsItsOwnFileWhateverItsName) {
  const fs::path dir = fs::temp_directory_path() / ("qconform-repro-names-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  FaultyBackend b(Fault::ties_away);
  RunOptions opt;
  opt.reproducer_dir = dir.string();
  std::vector<Case> cases;
  for (const std::string& name :
       std::vector<std::string>{"a/b", "a_b", "a__b", std::string(240, 'x'), std::string(240, 'x') + "y", "ties"}) {
    cases.push_back(ties_case(8));
    cases.back().name = name;
  }
  const RunReport r = run_cases({Suite{"planted", "", "", cases, {}}}, {&b}, opt);
  std::set<std::string> files;
  for (const CaseResult& c : r.cases) {
    const BackendResult& br = c.backends.at(0);
    ASSERT_EQ(br.verdict, Verdict::fail) << c.id;
    ASSERT_TRUE(fs::exists(br.reproducer)) << c.id;
    const std::string file = fs::path(br.reproducer).filename().string();
    EXPECT_LE(file.size(), 255u) << c.id;
    EXPECT_TRUE(files.insert(file).second) << c.id << " shares " << file;
    // The file holds this case's one-element unit ("<name>-element-<i>").
    EXPECT_EQ(load_suite(br.reproducer).cases.at(0).name.rfind(c.name + "-element-", 0), 0u) << file;
  }
  // A name that is already a file name stays readable.
  EXPECT_TRUE(files.contains("planted__ties__faulty-ties-away.json"));
  EXPECT_TRUE(files.contains("planted__a_b__faulty-ties-away.json"));
  fs::remove_all(dir);
}

TEST(Reproducer, ShrinkFindsOneFailingElement) {
  FaultyBackend b(Fault::ties_away);
  const Case c = ties_case(4096);
  const Case small = shrink_case(c, b);
  EXPECT_EQ(op_input(small.op).size(), 1);
  EXPECT_TRUE(still_fails(small, small.op, b));
  // A case that passes stays as it is.
  FaultyBackend good(Fault::none);
  EXPECT_EQ(op_input(shrink_case(c, good).op).size(), 4096);
}

// u8 [3, 66400] x i8 [66400, 2] into int32. Row 1 starts with a = 255, 255 against b = 127, 127 in
// column 0: that pair sums to 64770, which a vpmaddubsw kernel saturates to 32767 (every other
// product is 0 or too small to saturate), so the int32 output (1, 0) is 32767 instead of 64770.
// The shrinker cuts the case to that one dot product, then halves its depth while it still fails:
// the pair sits at the start of every first half, so it ends at K <= 4.
TEST(Reproducer, ShrinkReducesTheDepthOfAFailingDotProduct) {
  constexpr std::int64_t M = 3, K = 66400, N = 2;
  QGemmOp op;
  op.a.values = Tensor(DType::u8, {M, K});
  op.a.format = DType::u8;
  op.a.params.scales = {1.0};
  op.a.params.zero_points = {0};
  op.b.values = Tensor(DType::i8, {K, N});
  op.b.format = DType::i8;
  op.b.shape = op.b.values.shape();
  op.b.params.scales = {1.0};
  op.b.params.zero_points = {0};
  for (std::int64_t k = 0; k < K; ++k) {
    op.a.values.set_int(0 * K + k, k % 3);
    op.a.values.set_int(1 * K + k, k < 2 ? 255 : 0);
    op.a.values.set_int(2 * K + k, 1);
    op.b.values.set_int(k * N + 0, k < 2 ? 127 : 1);
    op.b.values.set_int(k * N + 1, -1);
  }
  op.output.kind = OutputKind::int32;
  op.output.format = DType::i32;
  Case c;
  c.suite = "planted";
  c.name = "pairs";
  c.op = op;
  c.spec = *find_preset("onnx");
  FaultyBackend b(Fault::int16_pairs);
  ASSERT_TRUE(still_fails(c, c.op, b));
  const Case small = shrink_case(c, b);
  const auto& g = std::get<QGemmOp>(small.op);
  EXPECT_EQ(g.a.values.shape(), (Shape{1, g.a.values.shape()[1]}));
  EXPECT_LE(g.a.values.shape()[1], 4);
  EXPECT_EQ(logical_shape(g.b)[1], 1);
  EXPECT_TRUE(still_fails(small, small.op, b));
  EXPECT_NE(small.name.find("-shrunk"), std::string::npos) << small.name;
}

// A convolution with one tap that matters: input [1, 4, 5, 5] at its zero point 128 (real 0) but
// for x[0, 0, 2, 2] = 181, weights [2, 4, 3, 3] all 1, scales 0.25 and 0.5, output scale 0.5: a
// multiplier of 1/4. Every output whose window holds (2, 2) has acc = 53, which the spec rounds
// once to 13 and the TFLite reference rounds twice (26.5 -> 27, 13.5 -> 14). Any half of the input
// channels or of the kernel window that keeps that tap still fails; the other half is all zeros
// and passes. So the shrinker ends at one input channel and a 1 x 1 kernel.
TEST(Reproducer, ShrinkReducesAConvolutionsChannelsAndKernelWindow) {
  QConv2dOp op;
  op.input.values = Tensor(DType::u8, {1, 4, 5, 5});
  for (std::int64_t i = 0; i < op.input.values.size(); ++i) op.input.values.set_int(i, 128);
  op.input.values.set_int(2 * 5 + 2, 181);
  op.input.params.scales = {0.25};
  op.input.params.zero_points = {128};
  op.weight.values = Tensor(DType::i8, {2, 4, 3, 3});
  for (std::int64_t i = 0; i < op.weight.values.size(); ++i) op.weight.values.set_int(i, 1);
  op.weight.params.scales = {0.5};
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = 0.5;
  Case c;
  c.suite = "planted";
  c.name = "conv_tap";
  c.op = op;
  c.spec = *find_preset("onnx");
  const std::unique_ptr<Backend> b = make_backend("cpu-ref:tflite-reference");
  ASSERT_TRUE(still_fails(c, c.op, *b));
  const Case small = shrink_case(c, *b);
  const auto& u = std::get<QConv2dOp>(small.op);
  EXPECT_EQ(logical_shape(u.weight), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(u.input.values.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(u.input.values.get_int(0), 181);
  EXPECT_TRUE(still_fails(small, small.op, *b));
}

// ---- From the command line ------------------------------------------------------------------

using testing::drop_timing;
using testing::read_json;
int run(const std::string& args) { return testing::run_qconform(args); }

TEST(CliRuns, ThreeShardsMergedEqualTheUnshardedRun) {
  const fs::path dir = fs::temp_directory_path() / ("qconform-shards-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string cases = std::string(QCONFORM_SOURCE_DIR) + "/cases/quantize_linear.json " + QCONFORM_SOURCE_DIR +
                            "/cases/qgemm.json " + QCONFORM_SOURCE_DIR + "/cases/vnni.json";
  ASSERT_EQ(run("run " + cases + " -q -o " + (dir / "all").string()), 0);
  std::string merged_inputs;
  for (int i = 1; i <= 3; ++i) {
    const fs::path d = dir / ("shard" + std::to_string(i));
    ASSERT_EQ(run("run " + cases + " -q --shard " + std::to_string(i) + "/3 -o " + d.string()), 0);
    merged_inputs += " " + (d / "report.json").string();
  }
  ASSERT_EQ(run("merge" + merged_inputs + " -o " + (dir / "merged").string()), 0);
  nlohmann::json all = read_json(dir / "all" / "report.json"), merged = read_json(dir / "merged" / "report.json");
  drop_timing(all);
  drop_timing(merged);
  EXPECT_GT(all["cases"].size(), 10u);
  EXPECT_EQ(all["cases"], merged["cases"]);
  EXPECT_EQ(all["summary"], merged["summary"]);
  all["metadata"].erase("command_line");
  merged["metadata"].erase("command_line");
  EXPECT_EQ(all["metadata"], merged["metadata"]);
  EXPECT_TRUE(fs::exists(dir / "merged" / "report.html"));
  EXPECT_EQ(run("run " + cases + " --shard 4/3 -o " + (dir / "bad").string()), 2);
  fs::remove_all(dir);
}

TEST(CliRuns, BaselineAndGateFromTheCommandLine) {
  const fs::path dir = fs::temp_directory_path() / ("qconform-gate-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // A case expected exact against tflite-reference that cpu-ref (claiming onnx) misses at ties.
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "known.json");
    f << R"({"suite": "known", "cases": [{"name": "ties", "op": "quantize", "spec": "tflite-reference",
        "input": {"dtype": "f32", "shape": [6], "data": [0.5, 1.5, 2.5, -0.5, -1.5, -2.5]},
        "scale": 1.0, "zero_point": 0, "output_dtype": "i8"}]})";
  }
  const std::string known = (dir / "known.json").string();
  EXPECT_EQ(run("run " + known + " -b cpu-ref -q -o " + (dir / "r1").string()), 1);
  EXPECT_EQ(run("baseline " + (dir / "r1" / "report.json").string() + " -o " + (dir / "base.json").string()), 0);
  const nlohmann::json base = read_json(dir / "base.json");
  ASSERT_EQ(base["entries"].size(), 1u);
  // 0.5, 2.5, -0.5, -2.5 round differently (ties away versus to even): 4 mismatches.
  EXPECT_EQ(base["entries"][0]["fingerprint"].get<std::string>().substr(0, 2), "4:");
  EXPECT_EQ(run("run " + known + " -b cpu-ref -q --gate --baseline " + (dir / "base.json").string() + " -o " +
                (dir / "r2").string()),
            0);
  const nlohmann::json r2 = read_json(dir / "r2" / "report.json");
  EXPECT_EQ(r2["cases"][0]["backends"][0]["verdict"], "XFAIL");
  EXPECT_EQ(run("run " + known + " -b cpu-ref -q --gate -o " + (dir / "r3").string()), 2);  // --gate needs a baseline
  fs::remove_all(dir);
}

// docs/ci.md's --ignore-magnitude commands: a baseline of cpu-ref:tflite-reference's known
// mismatches on the quantize suite, and a gated run against it that passes.
TEST(CliRuns, TheDocsIgnoreMagnitudeCommands) {
  const fs::path dir = fs::temp_directory_path() / ("qconform-magnitude-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string suite = std::string(QCONFORM_SOURCE_DIR) + "/cases/quantize_linear.json";
  EXPECT_EQ(run("run " + suite + " -b cpu-ref:tflite-reference -q -o " + (dir / "out-known").string()), 1);
  EXPECT_EQ(run("baseline " + (dir / "out-known" / "report.json").string() + " -o " + (dir / "known.json").string()),
            0);
  EXPECT_EQ(run("run " + suite + " -b cpu-ref:tflite-reference -q -o " + (dir / "out-now").string() + " --baseline " +
                (dir / "known.json").string() + " --gate --ignore-magnitude"),
            0);
  const nlohmann::json now = read_json(dir / "out-now" / "report.json");
  int xfail = 0;
  for (const auto& c : now["cases"])
    for (const auto& b : c["backends"]) xfail += b["verdict"] == "XFAIL" ? 1 : 0;
  EXPECT_GT(xfail, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qc
