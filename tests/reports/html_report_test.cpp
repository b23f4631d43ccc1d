// The HTML report in a real browser: a synthetic run with every verdict, causes, per-channel
// counts, integer and float metrics and hostile strings is rendered, loaded in headless Chromium,
// and the DOM Chromium built is checked (matrix, links, drill-downs, histograms, per-channel
// charts, escaping). A run shaped like the default suite (on a machine without a GPU, and on one
// where every backend runs) and one wider than any screen are loaded at 1400 px wide, for
// claim-PASS cells, folded backends and the width of the page. A screenshot goes to
// <build>/artifacts/report.png for people to look at.
//
// Exit code 77 (ctest: skipped) when Chromium is missing and everything else passed.
#include "dom.hpp"
#include "model_report.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using qc::test::Node;

namespace {

const std::string kHostile = "<script>alert(1)</script> \"quoted\" & 'apos'";

// ---- the synthetic run ------------------------------------------------------------------------

qc::Metrics int_metrics(std::int64_t elements, std::array<std::int64_t, 5> hist) {
  qc::Metrics m;
  m.unit = "lsb";
  m.elements = m.compared = elements;
  m.histogram = hist;
  m.exact = hist[0];
  m.label_total = {elements - 40, 8, 24, 6, 2};
  return m;
}

qc::ElementDiff diff(std::int64_t index, std::vector<std::int64_t> coords, std::string input, std::string expected,
                     std::string actual, std::int64_t delta, std::string exact, qc::Label label,
                     std::vector<std::string> causes) {
  qc::ElementDiff d;
  d.index = index;
  d.coords = std::move(coords);
  d.input = std::move(input);
  d.expected = std::move(expected);
  d.actual = std::move(actual);
  d.delta = delta;
  d.exact = std::move(exact);
  d.label = label;
  d.causes = std::move(causes);
  return d;
}

qc::BackendResult result(const std::string& backend, qc::Verdict v, const std::string& reason) {
  qc::BackendResult b;
  b.backend = backend;
  b.claim = backend == "cpu-ref" ? "onnx-reference" : "onnx";
  b.expectation = "exact";
  b.verdict = v;
  b.reason = reason;
  b.seconds = 0.0042;
  return b;
}

qc::CaseResult case_result(const std::string& suite, const std::string& name, const std::string& op,
                           const std::string& spec) {
  qc::CaseResult c;
  c.suite = suite;
  c.name = name;
  c.id = suite + "/" + name;
  c.file = "cases/" + suite + ".json";
  c.line = 12;
  c.op = op;
  c.spec = spec;
  c.spec_description = "the ONNX definition: round(x / s) + zp, ties to even, saturate";
  c.shape = "[4, 64]";
  c.input_dtype = "f32";
  c.output_dtype = "i8";
  c.granularity = "per_axis";
  return c;
}

// Mismatches in every third of 300 channels, more in the later ones: too many channels for a bar
// each.
const std::map<std::int64_t, std::int64_t> kManyChannels = [] {
  std::map<std::int64_t, std::int64_t> m;
  for (std::int64_t ch = 0; ch < 300; ch += 3) m[ch] = 1 + ch / 100;
  return m;
}();

qc::RunReport synthetic_report() {
  using qc::Label;
  using qc::Verdict;
  qc::RunReport r;
  qc::RunMetadata& m = r.meta;
  m.tool_version = "0.1.0";
  m.git_revision = "c0b6867d1e2f";
  m.compiler = "gcc 12.2.0";
  m.host = "ci-runner-7";
  m.cpu = "Intel(R) Xeon(R) Platinum 8480+";
  m.cpu_features = {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "fma", "f16c"};
  m.started_at = "2024-11-22T04:05:06Z";
  m.seconds = 83.4;
  m.command_line = {"build/cli/qconform", "run", "cases/", "--report-dir", "out", "--note", kHostile};
  m.backends = {"cpu-ref", "vnni512", "hip (unavailable: no HIP device found)"};
  m.backend_facts["cpu-ref"] = {{"arch", "x86-64"}, {"flags", "-O3 -ffp-contract=off"}};
  m.backend_facts["vnni512"] = {{"isa", "avx512_vnni"}, {"kernel", "vpdpbusd 16x4 tile"}, {"note", kHostile}};

  // Integer outputs: PASS, FAIL with causes and per-channel counts, SKIP.
  qc::CaseResult q = case_result("quantize", "ties_rne_f32_to_i8", "quantize", "onnx");
  q.description = "exact ties and one ulp either side of them, per-channel scales";
  qc::BackendResult pass = result("cpu-ref", Verdict::pass, "256/256 exact against onnx");
  pass.metrics = int_metrics(256, {256, 0, 0, 0, 0});
  q.backends.push_back(pass);
  qc::BackendResult fail = result("vnni512", Verdict::fail, "237/256 exact, max |delta| 5 LSB against onnx");
  fail.metrics = int_metrics(256, {237, 17, 0, 0, 2});
  fail.metrics.max_abs = 5;
  fail.metrics.signed_sum = 23;
  fail.metrics.label_mismatch = {0, 2, 15, 2, 0};
  fail.metrics.worst = {
      diff(131, {2, 3}, "-130.5 (-0x1.05p+7)", "-128", "123", 251, "-130.5", Label::saturated, {"quantize.clamp=wrap"}),
      diff(7, {0, 7}, "2.5 (0x1.4p+1)", "2", "3", 1, "2.5", Label::tie, {"quantize.rounding=rna"}),
      diff(70, {1, 6}, "-3.5 (-0x1.cp+1)", "-4", "-3", 1, "-3.5", Label::tie, {}),
  };
  fail.causes = {{"quantize.rounding=rna",
                  "quantize rounds ties away from zero (the spec: ties to even)",
                  15,
                  {{0, 4}, {1, 3}, {2, 5}, {3, 3}}},
                 {"quantize.clamp=wrap", "quantize wraps instead of saturating (the spec: saturate)", 2, {{2, 2}}}};
  fail.unexplained = 2;
  fail.fingerprint = "19:9f2c41d07a3be815";
  fail.reproducer = "out/reproducers/quantize__ties_rne_f32_to_i8__vnni512.json";
  fail.reproduce_command = "build/cli/qconform run " + fail.reproducer + " --backend vnni512";
  q.backends.push_back(fail);
  q.backends.push_back(result("hip", Verdict::skip, "no HIP device found"));
  r.cases.push_back(q);

  // Hostile strings everywhere text goes: XFAIL, XPASS, CRASH.
  qc::CaseResult h = case_result("hostile", kHostile, "requantize", "tosa-single");
  h.description = kHostile;
  qc::BackendResult xfail = result("cpu-ref", Verdict::xfail, "3 mismatches, fingerprint unchanged: " + kHostile);
  xfail.metrics = int_metrics(256, {253, 3, 0, 0, 0});
  xfail.metrics.max_abs = 1;
  xfail.metrics.signed_sum = -3;
  xfail.metrics.label_mismatch = {0, 0, 3, 0, 0};
  // The second cause's per-channel counts are no tensor's (a hand-edited report.json): no chart.
  xfail.causes = {{"requantize.rounding=" + kHostile, kHostile, 3, {{0, 2}, {1, 1}}},
                  {"requantize.scheme=ideal", "exact", 1, {{-5, 2}, {std::int64_t{1} << 50, 1}, {3, 0}}}};
  xfail.fingerprint = "3:0b1c";
  h.backends.push_back(xfail);
  qc::BackendResult xpass = result("vnni512", Verdict::xpass, "the baseline recorded 2 mismatches; now bit-exact");
  xpass.metrics = int_metrics(256, {256, 0, 0, 0, 0});
  h.backends.push_back(xpass);
  h.backends.push_back(result("hip", Verdict::crash, "backend threw: " + kHostile));
  r.cases.push_back(h);

  // Float outputs in ULP with the distance to the exact value: PASS, TIMEOUT, FAIL.
  qc::CaseResult d = case_result("dequantize", "per_channel_i8_to_f16", "dequantize", "onnx");
  d.input_dtype = "i8";
  d.output_dtype = "f16";
  qc::BackendResult fpass = result("cpu-ref", Verdict::pass, "1024/1024 exact against onnx");
  fpass.metrics = int_metrics(1024, {1024, 0, 0, 0, 0});
  fpass.metrics.unit = "ulp";
  fpass.metrics.has_to_exact = true;
  fpass.metrics.histogram_to_exact = {1024, 0, 0, 0, 0};
  d.backends.push_back(fpass);
  d.backends.push_back(result("vnni512", Verdict::timeout, "ran past the 30 s limit"));
  qc::BackendResult ffail = result("hip", Verdict::fail, "1000/1024 exact, max |delta| inf ULP against onnx");
  ffail.metrics = int_metrics(1024, {1000, 20, 3, 0, 1});
  ffail.metrics.unit = "ulp";
  ffail.metrics.max_abs = std::int64_t{1} << 62;  // NaN against a number
  ffail.metrics.signed_sum = 26;
  ffail.metrics.signed_zero_mismatches = 1;
  ffail.metrics.has_to_exact = true;
  ffail.metrics.histogram_to_exact = {1010, 13, 0, 0, 1};
  ffail.metrics.max_to_exact = std::int64_t{1} << 62;
  ffail.metrics.label_mismatch = {20, 1, 2, 0, 1};
  ffail.metrics.worst = {diff(513, {8, 1}, "-7", "NaN", "-0x1.8p-1", std::int64_t{1} << 62, "NaN", Label::special, {}),
                         diff(5, {0, 5}, "-77", "-0x1.344p+0", "-0x1.348p+0", -1, "-1.2041015625", Label::clear,
                              {"dequantize.compute_format=f16"})};
  ffail.causes = {{"dequantize.compute_format=f16",
                   "dequantize computes in f16 (the spec: exact)",
                   20,
                   {{0, 2}, {1, 2}, {2, 3}, {3, 1}, {4, 2}, {5, 2}, {6, 2}, {7, 6}}},
                  {"dequantize.order=mul_then_sub", "dequantize multiplies first", 15, kManyChannels}};
  ffail.unexplained = 4;
  ffail.fingerprint = "24:51aa90e0c3d8";
  ffail.reproducer = "out/reproducers/dequantize__per_channel_i8_to_f16__hip.json";
  ffail.reproduce_command = "build/cli/qconform run " + ffail.reproducer + " --backend hip";
  d.backends.push_back(ffail);
  r.cases.push_back(d);

  // A chained case with an agreement statement: it holds on the oracle's and cpu-ref's outputs and
  // breaks on vnni512's; hip did not run it. One producer is in the report, one is not (a shard).
  qc::CaseResult p = case_result("pipelines", "fc_lowered_bias_add", "qgemm", "onnx");
  p.operands_from = {{"a", "quantize/ties_rne_f32_to_i8"}, {"bias", "pipelines/fc_lowered_bias_dequantize"}};
  auto statement = [](qc::AgreementStatus status, std::int64_t differing, std::vector<std::int64_t> first) {
    qc::AgreementCheck a;
    a.assertion = "differs_from";
    a.other = "pipelines/fc_fused";
    a.stated = 3;
    a.status = status;
    a.elements = 12;
    a.differing = differing;
    a.first_differing = std::move(first);
    a.reason = "differs_from " + std::string(qc::name(status)) +
               ": outputs of 'fc_lowered_bias_add' and 'fc_fused' differ in " + std::to_string(differing) +
               " of 12 elements";
    return a;
  };
  p.agreements = {statement(qc::AgreementStatus::holds, 3, {0, 7, 11})};
  qc::BackendResult ppass = result("cpu-ref", Verdict::pass, "12/12 exact against onnx; differs_from 'fc_fused' holds");
  ppass.metrics = int_metrics(12, {12, 0, 0, 0, 0});
  ppass.agreements = {statement(qc::AgreementStatus::holds, 3, {0, 7, 11})};
  p.backends.push_back(ppass);
  qc::BackendResult pfail = result("vnni512", Verdict::fail, "12/12 exact against onnx; differs_from broken");
  pfail.metrics = int_metrics(12, {12, 0, 0, 0, 0});
  pfail.agreements = {statement(qc::AgreementStatus::broken, 10, {0, 1, 2, 3, 4, 5, 6, 7})};
  p.backends.push_back(pfail);
  r.cases.push_back(p);
  return r;
}

// A run shaped like the default suite on a machine without a GPU or AVX-512 (issue #17: 8 of 10
// columns all SKIP): two backends that run, one of them judged against its claim, and nine that
// SKIP every case, by four reasons. It is loaded at 1400 px wide. With `everything`, the machine
// has the GPU and the CPU features: ten backends run, with long cells, and must still fit.
constexpr const char* kNoGpu =
    "no CUDA device: cudaGetDeviceCount returned cudaErrorNoDevice (no CUDA-capable device is detected)";
const std::vector<std::string> kHipVariants = {"hip", "hip-recip", "hip-f16", "hip-fma", "hip-nofma", "hip-roundf"};
const std::string kExec = "exec:./kernels --fast";  // a name with a space
// The per-channel counts of the FAIL on quantize/per_axis1 x avx2-maddubs: channels 1, 2 and 4 have
// none, channel 3 the most.
const std::map<std::int64_t, std::int64_t> kPerChannel = {{0, 2}, {3, 7}, {5, 1}, {6, 4}};

qc::RunReport default_run_report(bool everything) {
  using qc::Verdict;
  qc::RunReport r;
  r.meta.tool_version = "0.1.0";
  r.meta.cpu = "AMD EPYC 7B13";
  r.meta.backends = {"cpu-ref", "avx2-maddubs"};
  r.meta.backends.push_back(everything ? "vnni512" : "vnni512 (unavailable: CPU lacks avx512_vnni)");
  r.meta.backends.push_back(everything ? "avxvnni" : "avxvnni (unavailable: CPU lacks avx_vnni)");
  for (const std::string& h : kHipVariants)
    r.meta.backends.push_back(everything ? h : h + " (unavailable: " + kNoGpu + ")");
  r.meta.backends.push_back(kExec);
  // A result of a backend that runs, the widest cells first: the variety of a real matrix.
  auto ran = [](const std::string& backend, std::size_t i) {
    switch (i % 4) {
      case 0: {
        qc::BackendResult b = result(backend, Verdict::fail, "61441/65536 exact, max |delta| 2147483647 LSB");
        b.metrics = int_metrics(65536, {61441, 0, 0, 0, 4095});
        b.metrics.max_abs = 2147483647;
        return b;
      }
      case 1: {
        qc::BackendResult b = result(backend, Verdict::pass, "0 mismatches against its claim gpu-recip");
        b.expectation = "claim";
        b.claim = "gpu-recip";
        b.metrics = int_metrics(65536, {65000, 536, 0, 0, 0});
        b.metrics.max_abs = 1;
        return b;
      }
      case 2:
        return result(backend, Verdict::timeout, "ran past the 30 s limit");
      default: {
        qc::BackendResult b = result(backend, Verdict::pass, "65536/65536 exact");
        b.metrics = int_metrics(65536, {65536, 0, 0, 0, 0});
        return b;
      }
    }
  };
  auto add_case = [&](const std::string& suite, const std::string& name, const std::string& op, qc::BackendResult cpu,
                      qc::BackendResult avx2) {
    qc::CaseResult c = case_result(suite, name, op, "onnx");
    c.backends.push_back(std::move(cpu));
    c.backends.push_back(std::move(avx2));
    if (everything) {
      std::vector<std::string> names = {"vnni512", "avxvnni"};
      names.insert(names.end(), kHipVariants.begin(), kHipVariants.end());
      for (std::size_t i = 0; i < names.size(); ++i) c.backends.push_back(ran(names[i], r.cases.size() + i));
    } else {
      c.backends.push_back(result("vnni512", Verdict::skip, "CPU lacks avx512_vnni"));
      c.backends.push_back(result("avxvnni", Verdict::skip, "CPU lacks avx_vnni"));
      for (const std::string& h : kHipVariants) c.backends.push_back(result(h, Verdict::skip, kNoGpu));
    }
    c.backends.push_back(result(kExec, Verdict::skip, "the kernel does not implement " + op));
    r.cases.push_back(std::move(c));
  };
  auto exact = [](std::int64_t n) {
    qc::BackendResult b = result("cpu-ref", Verdict::pass, std::to_string(n) + "/" + std::to_string(n) + " exact");
    b.metrics = int_metrics(n, {n, 0, 0, 0, 0});
    return b;
  };
  auto claimed = [](std::int64_t n, std::array<std::int64_t, 5> hist, std::int64_t max_abs) {
    qc::BackendResult b = result("avx2-maddubs", Verdict::pass,
                                 "0 mismatches against its claim x86-avx2-vpmaddubsw; " + std::to_string(hist[0]) +
                                     "/" + std::to_string(n) + " exact against the spec onnx");
    b.claim = "x86-avx2-vpmaddubsw";
    b.expectation = "claim";
    b.claim_mismatches = 0;
    b.metrics = int_metrics(n, hist);
    b.metrics.max_abs = max_abs;
    return b;
  };
  // The issue's cell: "PASS 17 of 48 off, max 10339 LSB", green against the claim.
  add_case("qgemm", "k66400_int16_pair", "qgemm", exact(48), claimed(48, {31, 0, 0, 0, 17}, 10339));
  add_case("qgemm", "small_exact", "qgemm", exact(48), claimed(48, {48, 0, 0, 0, 0}, 0));
  qc::BackendResult fail = result("avx2-maddubs", Verdict::fail, "242/256 exact, max |delta| 1 LSB against onnx");
  fail.metrics = int_metrics(256, {242, 14, 0, 0, 0});
  fail.metrics.max_abs = 1;
  fail.causes = {
      {"quantize.rounding=rna", "quantize rounds ties away from zero (the spec: ties to even)", 14, kPerChannel},
      {"quantize.rounding=rhu", "quantize rounds ties up", 7, {{3, 3}, {6, 4}}},
      {"preset tflite-reference", "TFLite's reference kernels", 14, kPerChannel, "preset"}};
  add_case("quantize", "per_axis1", "quantize", exact(256), fail);
  add_case("quantize", "ties_rne_f32_to_i8", "quantize", exact(256), claimed(256, {256, 0, 0, 0, 0}, 0));
  // avx2-maddubs SKIPs one case, not all: it keeps its column.
  add_case("dequantize", "per_channel_i8_to_f16", "dequantize", exact(1024),
           result("avx2-maddubs", Verdict::skip, "avx2-maddubs does not implement dequantize"));
  // The default suites' longest case name, op and preset name.
  qc::BackendResult wide = ran("avx2-maddubs", 0);
  add_case("weight_only", "accumulator_stress_i16_wrapped_then_requantized", "weight_only_gemm", exact(65536), wide);
  r.cases.back().spec = "onednn@2.6-x86-avx512-core";
  return r;
}

// A run too wide for any screen: 24 backends with long names, every cell a FAIL with counts, a case
// name and worst-element operands with no space to break at. The page must not scroll sideways;
// the matrix scrolls inside its own box.
qc::RunReport wide_report() {
  qc::RunReport r;
  r.meta.tool_version = "0.1.0";
  r.meta.command_line = {"build/cli/qconform", "run", "cases/" + std::string(300, 'x') + ".json"};
  qc::CaseResult c =
      case_result("wide", "a_case_name_with_no_space_to_break_at_" + std::string(90, 'n'), "qgemm", "onnx");
  for (int i = 0; i < 24; ++i) {
    qc::BackendResult b = result("py:vendor_kernels.quantized_linear:Backend" + std::to_string(i), qc::Verdict::fail,
                                 "1234/4096 exact, max |delta| 100000 LSB against onnx");
    b.metrics = int_metrics(4096, {1234, 1000, 1000, 800, 62});
    b.metrics.max_abs = 100000;
    b.metrics.worst = {
        diff(4095, {63, 63}, "a=" + std::string(400, '7'), "-128", "127", 255, "-128.5", qc::Label::saturated, {})};
    c.backends.push_back(std::move(b));
  }
  r.cases.push_back(std::move(c));
  return r;
}

// The copy of a page that the width checks load: a script at the end of the body records the
// layout on <html> as data attributes, which --dump-dom then prints. The report itself has no
// script (IsSelfContained), and must not need one.
std::string with_layout_probe(const std::string& html) {
  const std::string probe =
      "<script>(function(){var d=document.documentElement,w=document.querySelector('.matrix-wrap'),"
      "t=document.getElementById('matrix');d.setAttribute('data-inner-width',innerWidth);"
      "d.setAttribute('data-client-width',d.clientWidth);d.setAttribute('data-scroll-width',d.scrollWidth);"
      "if(w){d.setAttribute('data-wrap-client-width',w.clientWidth);"
      "d.setAttribute('data-wrap-scroll-width',w.scrollWidth);}"
      "if(t)d.setAttribute('data-matrix-right',Math.ceil(t.getBoundingClientRect().right));})();</script>";
  const std::size_t at = html.rfind("</body>");
  if (at == std::string::npos) throw std::runtime_error("no </body> in the report");
  return html.substr(0, at) + probe + html.substr(at);
}

// ---- Chromium ---------------------------------------------------------------------------------

std::string quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// QCONFORM_CHROMIUM, else `chromium` or `chromium-browser` on PATH.
std::string find_chromium() {
  if (const char* env = std::getenv("QCONFORM_CHROMIUM"); env && *env) return fs::exists(env) ? env : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* exe : {"chromium", "chromium-browser"})
      if (!dir.empty() && ::access((fs::path(dir) / exe).c_str(), X_OK) == 0) return (fs::path(dir) / exe).string();
  return "";
}

struct BrowserRun {
  int code = -1;
  std::string out;
};

// Runs Chromium headless on `page` with `args`, offline and bounded in time; stdout is returned,
// stderr goes to artifacts/chromium.log. Output goes through a file, not a pipe: Chromium's helper
// processes inherit the pipe and would hold a reader past the browser's own exit.
BrowserRun chromium(const std::string& exe, const fs::path& page, const std::string& args) {
  const fs::path tmp = fs::temp_directory_path() / ("qconform_chromium_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const fs::path out = tmp / "stdout";
  const std::string cmd = "timeout 30 " + quote(exe) +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                          " --disable-background-networking --disable-component-update --disable-sync"
                          " --user-data-dir=" +
                          quote((tmp / "profile").string()) + " " + args + " " + quote("file://" + page.string()) +
                          " >" + quote(out.string()) + " 2>>" +
                          quote((fs::path(QCONFORM_ARTIFACT_DIR) / "chromium.log").string());
  BrowserRun r;
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out, std::ios::binary);
  r.out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove_all(tmp);
  return r;
}

// ---- the fixture: one render, one DOM dump for every test --------------------------------------

class HtmlReport : public ::testing::Test {
 protected:
  // A report loaded at 1400 px wide with the layout probe: its DOM and its layout.
  struct Page {
    qc::RunReport report;
    std::string html;  // as rendered, without the probe
    BrowserRun dump;
    std::unique_ptr<Node> dom;
  };

  // What every test reads: the report, its HTML and the DOM Chromium built from it.
  struct Shared {
    qc::RunReport report;
    std::string html;
    fs::path page;
    std::string chromium;  // empty when not installed
    BrowserRun dump;       // chromium --dump-dom
    std::unique_ptr<Node> dom;
    Page default_run, everything, wide;
    Page model;  // a model run (qconform model): tests/reports/model_report.hpp
  };

  static void load_at_1400(Shared& s, Page& p, qc::RunReport r, const std::string& file) {
    p.report = std::move(r);
    p.html = qc::render_html(p.report);
    qc::write_file_atomic(fs::path(QCONFORM_ARTIFACT_DIR) / (file + ".html"), p.html);
    if (s.chromium.empty()) return;
    const fs::path probed = fs::path(QCONFORM_ARTIFACT_DIR) / (file + ".probe.html");
    qc::write_file_atomic(probed, with_layout_probe(p.html));
    p.dump = chromium(s.chromium, probed, "--dump-dom --window-size=1400,1800");
    if (p.dump.code == 0) p.dom = qc::test::parse_dom(p.dump.out);
  }

  static void SetUpTestSuite() {
    if (shared_) return;  // once for both suites: Chromium's start is most of the test's time
    shared_ = std::make_unique<Shared>();
    Shared& s = *shared_;
    s.report = synthetic_report();
    s.html = qc::render_html(s.report);
    fs::create_directories(QCONFORM_ARTIFACT_DIR);
    s.page = fs::path(QCONFORM_ARTIFACT_DIR) / "report.html";
    qc::write_file_atomic(s.page, s.html);
    s.chromium = find_chromium();
    if (s.chromium.empty()) return;
    s.dump = chromium(s.chromium, s.page, "--dump-dom");
    if (s.dump.code == 0) s.dom = qc::test::parse_dom(s.dump.out);
    load_at_1400(s, s.default_run, default_run_report(false), "report-default-run");
    load_at_1400(s, s.everything, default_run_report(true), "report-everything");
    load_at_1400(s, s.wide, wide_report(), "report-wide");
    load_at_1400(s, s.model, qc::test::model_report(), "report-model");
  }

  void SetUp() override {
    if (!needs_browser_) return;
    if (shared_->chromium.empty()) GTEST_SKIP() << "chromium not found; run scripts/setup.sh";
    for (const BrowserRun* run : {&shared_->dump, &shared_->default_run.dump, &shared_->everything.dump,
                                  &shared_->wide.dump, &shared_->model.dump})
      ASSERT_EQ(run->code, 0) << "chromium --dump-dom exited " << run->code
                              << (run->code == 124 ? " (timed out: did a script on the page block it?)" : "")
                              << "; see artifacts/chromium.log";
  }

  static const Node& dom() { return *shared_->dom; }
  static const Node& by_id(const std::string& id, const Node* root = nullptr) {
    const Node* n = (root ? root : shared_->dom.get())->find_id(id);
    if (!n) throw std::runtime_error("no element with id " + id);
    return *n;
  }
  static std::vector<const Node*> with_class(const Node& root, const std::string& tag, const std::string& cls) {
    std::vector<const Node*> out;
    for (const Node* n : root.elements(tag))
      if (n->has_class(cls)) out.push_back(n);
    return out;
  }
  static std::string attribute(const Node& n, const std::string& name) {
    const std::string* v = n.attribute(name);
    return v ? *v : "";
  }
  // The drill-down a matrix cell links to.
  static const Node& drill_down(const Node& cell, const Node* root = nullptr) {
    const auto links = cell.elements("a");
    if (links.size() != 1) throw std::runtime_error("a matrix cell must hold one link");
    const std::string href = attribute(*links[0], "href");
    if (href.empty() || href[0] != '#') throw std::runtime_error("cell link is not an anchor: " + href);
    return by_id(href.substr(1), root);
  }
  static const Node& cell(const std::string& case_id, const std::string& backend, const Node* root = nullptr) {
    for (const Node* n : with_class(by_id("matrix", root), "td", "cell"))
      if (attribute(*n, "data-case") == case_id && attribute(*n, "data-backend") == backend) return *n;
    throw std::runtime_error("no matrix cell for " + case_id + " x " + backend);
  }

  // A number the layout probe recorded on a 1400 px page's <html>.
  static std::int64_t layout(const Page& p, const std::string& key) {
    const std::string* v = p.dom->elements("html").at(0)->attribute("data-" + key);
    if (!v) throw std::runtime_error("the layout probe recorded no " + key);
    return std::stoll(*v);
  }

  bool needs_browser_ = true;
  static inline std::unique_ptr<Shared> shared_;
};

// Checks on the file itself, which hold with or without a browser.
class HtmlReportFile : public HtmlReport {
 protected:
  HtmlReportFile() { needs_browser_ = false; }
};

TEST_F(HtmlReportFile, IsSelfContained) {
  const std::string& h = shared_->html;
  for (const char* bad : {"http:", "https:", "//", "<script", "<link", "@import", "<iframe", "<img"})
    EXPECT_EQ(h.find(bad), std::string::npos) << "found '" << bad << "' in the report";
  // Any src=, href= or url() may only point inside the page or at inline data.
  const std::regex ref(R"((src|href)\s*=\s*"([^"]*)\"|url\(\s*['"]?([^'")]*))", std::regex::icase);
  for (auto it = std::sregex_iterator(h.begin(), h.end(), ref); it != std::sregex_iterator(); ++it) {
    const std::string target = (*it)[2].matched ? (*it)[2].str() : (*it)[3].str();
    EXPECT_TRUE(target.starts_with("#") || target.starts_with("data:")) << "external reference: " << it->str();
  }
}

TEST_F(HtmlReportFile, EveryVerdictHasItsOwnColour) {
  const std::regex rule(R"(\.v-([a-z]+)\{background:(#[0-9a-f]+))");
  std::map<std::string, std::string> colour;
  for (auto it = std::sregex_iterator(shared_->html.begin(), shared_->html.end(), rule); it != std::sregex_iterator();
       ++it)
    colour[(*it)[1]] = (*it)[2];
  std::set<std::string> distinct;
  for (const char* v : {"pass", "fail", "xfail", "xpass", "skip", "crash", "timeout"}) {
    ASSERT_TRUE(colour.count(v)) << "no colour for v-" << v;
    distinct.insert(colour[v]);
  }
  EXPECT_EQ(distinct.size(), 7u);
}

TEST_F(HtmlReport, MatrixHasOneCellPerCaseAndBackendWithItsVerdict) {
  const Node& matrix = by_id("matrix");
  EXPECT_EQ(matrix.tag, "table");
  std::size_t expected = 0;
  for (const qc::CaseResult& c : shared_->report.cases) {
    for (const qc::BackendResult& b : c.backends) {
      ++expected;
      SCOPED_TRACE(c.id + " x " + b.backend);
      const Node& td = cell(c.id, b.backend);
      const std::string verdict(qc::name(b.verdict));
      std::string cls = "v-" + verdict;
      std::transform(cls.begin(), cls.end(), cls.begin(), [](char ch) { return static_cast<char>(std::tolower(ch)); });
      EXPECT_TRUE(td.has_class(cls)) << *td.attribute("class");
      EXPECT_TRUE(td.text_content().starts_with(verdict)) << td.text_content();
      EXPECT_EQ(*td.attribute("title"), b.reason);
    }
  }
  EXPECT_EQ(with_class(matrix, "td", "cell").size(), expected);
  EXPECT_EQ(cell("quantize/ties_rne_f32_to_i8", "vnni512").text_content(), "FAIL19 of 256 off, max 5 LSB");
  EXPECT_EQ(cell("dequantize/per_channel_i8_to_f16", "hip").text_content(), "FAIL24 of 1024 off, max \u221e ULP");
}

TEST_F(HtmlReport, CellsLinkToTheirDrillDownsWhichOpenOnlyWhenNotPassOrSkip) {
  for (const qc::CaseResult& c : shared_->report.cases) {
    for (const qc::BackendResult& b : c.backends) {
      SCOPED_TRACE(c.id + " x " + b.backend);
      const Node& d = drill_down(cell(c.id, b.backend));
      EXPECT_EQ(d.tag, "details");
      EXPECT_EQ(*d.attribute("data-backend"), b.backend);
      const auto badges = with_class(*d.elements("summary").at(0), "span", "badge");
      ASSERT_EQ(badges.size(), 1u);
      EXPECT_EQ(badges[0]->text_content(), qc::name(b.verdict));
      const bool open = b.verdict != qc::Verdict::pass && b.verdict != qc::Verdict::skip;
      EXPECT_EQ(d.attribute("open") != nullptr, open);
      // The drill-down sits in its case's section.
      const Node* section = d.parent;
      ASSERT_EQ(section->tag, "section");
      EXPECT_EQ(section->elements("h3").at(0)->text_content(), c.id);
    }
  }
}

TEST_F(HtmlReport, IdsAreUniqueAndEveryInternalLinkResolves) {
  std::set<std::string> ids;
  for (const Node* n : dom().elements())
    if (const std::string* id = n->attribute("id")) {
      EXPECT_TRUE(ids.insert(*id).second) << "duplicate id " << *id;
    }
  std::size_t links = 0;
  for (const Node* a : dom().elements("a")) {
    const std::string* href = a->attribute("href");
    ASSERT_NE(href, nullptr);
    ASSERT_TRUE(href->starts_with("#")) << *href;
    EXPECT_TRUE(ids.count(href->substr(1))) << "dangling link " << *href;
    ++links;
  }
  EXPECT_GE(links, 9u + 3u);  // every cell and every case name
}

TEST_F(HtmlReport, HistogramsAreSvgBarsWithTheirCounts) {
  auto histograms = [&](const std::string& case_id, const std::string& backend) {
    return with_class(drill_down(cell(case_id, backend)), "svg", "hist");
  };
  const auto ints = histograms("quantize/ties_rne_f32_to_i8", "vnni512");
  ASSERT_EQ(ints.size(), 1u);
  EXPECT_EQ(ints[0]->elements("rect").size(), 5u);
  std::string counts;
  for (const Node* t : with_class(*ints[0], "text", "count")) counts += t->text_content() + " ";
  EXPECT_EQ(counts, "237 17 0 0 2 ");
  EXPECT_NE(ints[0]->parent->text_content().find("in LSB"), std::string::npos);

  const auto floats = histograms("dequantize/per_channel_i8_to_f16", "hip");
  ASSERT_EQ(floats.size(), 2u) << "to the spec and to the exact value";
  counts.clear();
  for (const Node* t : with_class(*floats[1], "text", "count")) counts += t->text_content() + " ";
  EXPECT_EQ(counts, "1010 13 0 0 1 ");
  EXPECT_NE(floats[1]->parent->text_content().find("exact value"), std::string::npos);

  EXPECT_TRUE(histograms("hostile/" + kHostile, "hip").empty()) << "a CRASH has no metrics";
}

TEST_F(HtmlReport, LabelsCausesWorstElementsAndReproducerAreShown) {
  const Node& d = drill_down(cell("quantize/ties_rne_f32_to_i8", "vnni512"));
  const auto labels = with_class(d, "table", "labels");
  ASSERT_EQ(labels.size(), 1u);
  const std::string lt = labels[0]->text_content();
  for (const char* l : {"tie", "near tie", "clear", "saturated", "special"})
    EXPECT_NE(lt.find(l), std::string::npos) << l;
  EXPECT_EQ(labels[0]->elements("tr").size(), 1u + 5u);

  const auto causes = with_class(d, "table", "causes");
  ASSERT_EQ(causes.size(), 1u);
  const std::string ct = causes[0]->text_content();
  for (const char* s :
       {"quantize.rounding=rna", "ties away from zero", "quantize.clamp=wrap", "ch 2: 5", "ch 3: 3", "unexplained"})
    EXPECT_NE(ct.find(s), std::string::npos) << s << " in " << ct;
  EXPECT_EQ(with_class(*causes[0], "tr", "unexplained").at(0)->elements("td").at(1)->text_content(), "2");

  const auto worst = with_class(d, "table", "worst");
  ASSERT_EQ(worst.size(), 1u);
  EXPECT_EQ(worst[0]->elements("tr").size(), 1u + 3u);
  const std::string wt = worst[0]->text_content();
  for (const char* s : {"(2, 3)", "-130.5 (-0x1.05p+7)", "+251", "saturated", "quantize.clamp=wrap"})
    EXPECT_NE(wt.find(s), std::string::npos) << s;

  EXPECT_EQ(with_class(d, "code", "fingerprint").at(0)->text_content(), "19:9f2c41d07a3be815");
  EXPECT_EQ(with_class(d, "code", "reproducer").at(0)->text_content(),
            "out/reproducers/quantize__ties_rne_f32_to_i8__vnni512.json");
  const auto cmd = with_class(d, "pre", "cmd");
  ASSERT_EQ(cmd.size(), 1u);
  EXPECT_EQ(cmd[0]->elements("code").at(0)->text_content(),
            "build/cli/qconform run out/reproducers/quantize__ties_rne_f32_to_i8__vnni512.json --backend vnni512");
  // The backend's device facts.
  EXPECT_NE(d.text_content().find("vpdpbusd 16x4 tile"), std::string::npos);
}

TEST_F(HtmlReport, ChainsAndAgreementsAreShownInTheCaseSection) {
  const Node& section = *drill_down(cell("pipelines/fc_lowered_bias_add", "vnni512")).parent;
  // Where the operands come from: a link to a producer in the report, the id of one that is not.
  const auto from = with_class(section, "div", "from");
  ASSERT_EQ(from.size(), 1u);
  const auto links = from[0]->elements("a");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(by_id(attribute(*links[0], "href").substr(1)).elements("h3").at(0)->text_content(),
            "quantize/ties_rne_f32_to_i8");
  EXPECT_NE(from[0]->text_content().find("pipelines/fc_lowered_bias_dequantize"), std::string::npos);
  // The statement: one row for the oracle, one per backend that ran the case.
  const auto table = with_class(section, "table", "agreements");
  ASSERT_EQ(table.size(), 1u);
  const auto rows = table[0]->elements("tbody").at(0)->elements("tr");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(attribute(*rows[0], "data-status"), "holds");
  EXPECT_EQ(attribute(*rows[1], "data-status"), "holds");
  EXPECT_EQ(attribute(*rows[2], "data-status"), "broken");
  const std::string oracle = rows[0]->text_content();
  for (const char* s : {"differs_from", "pipelines/fc_fused", "in 3 elements", "oracle", "3 of 12", "0, 7, 11"})
    EXPECT_NE(oracle.find(s), std::string::npos) << s << " in " << oracle;
  EXPECT_NE(rows[2]->text_content().find("10 of 12"), std::string::npos) << rows[2]->text_content();
  // The backend's drill-down repeats its finding.
  const Node& d = drill_down(cell("pipelines/fc_lowered_bias_add", "vnni512"));
  const auto list = with_class(d, "ul", "agreements");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(with_class(*list[0], "span", "badge").at(0)->text_content(), "broken");
}

TEST_F(HtmlReport, RunHeaderHasMetadataAndVerdictTotals) {
  const std::string meta = by_id("run-metadata").text_content();
  for (const std::string& s :
       {std::string("0.1.0"), std::string("c0b6867d1e2f"), std::string("ci-runner-7"), std::string("Xeon"),
        std::string("avx512_vnni"), std::string("gcc 12.2.0"), std::string("2024-11-22T04:05:06Z"),
        std::string("1 min 23 s"),
        // Shell-quoted, so it can be pasted back.
        std::string(R"(run cases/ --report-dir out --note '<script>alert(1)</script> "quoted" & '\''apos'\''')")})
    EXPECT_NE(meta.find(s), std::string::npos) << s << " in " << meta;
  const std::map<std::string, std::string> totals = {{"PASS", "3"}, {"FAIL", "3"},  {"XFAIL", "1"},  {"XPASS", "1"},
                                                     {"SKIP", "1"}, {"CRASH", "1"}, {"TIMEOUT", "1"}};
  const auto items = by_id("legend").elements("li");
  ASSERT_EQ(items.size(), 7u);
  for (const Node* li : items) {
    const std::string& v = *li->attribute("data-verdict");
    EXPECT_EQ(with_class(*li, "span", "badge").at(0)->text_content(), v);
    EXPECT_EQ(with_class(*li, "span", "n").at(0)->text_content(), totals.at(v)) << v;
  }
  EXPECT_EQ(by_id("outcome").text_content().find("6 of 11 results fail the run"), 0u);
  EXPECT_NE(by_id("backend-facts").text_content().find("hip (unavailable: no HIP device found)"), std::string::npos);
}

TEST_F(HtmlReport, HostileStringsAreTextNotMarkup) {
  for (const char* tag : {"script", "iframe", "object", "embed", "img", "link", "form", "input", "base"})
    EXPECT_TRUE(dom().elements(tag).empty()) << "injected <" << tag << ">";
  for (const Node* n : dom().elements())
    for (const auto& [k, v] : n->attributes) EXPECT_FALSE(k.starts_with("on")) << "event handler " << k << "=" << v;
  // The strings arrive intact where they were put: case name, description, reasons, causes,
  // facts, the command line, and attribute values.
  const std::string id = "hostile/" + kHostile;
  const Node& crash = cell(id, "hip");
  EXPECT_EQ(*crash.attribute("title"), "backend threw: " + kHostile);
  const Node& d = drill_down(crash);
  const Node& section = *d.parent;
  EXPECT_EQ(section.elements("h3").at(0)->text_content(), id);
  EXPECT_EQ(with_class(section, "div", "desc").at(0)->text_content(), kHostile);
  EXPECT_NE(d.elements("summary").at(0)->text_content().find("backend threw: " + kHostile), std::string::npos);
  const std::string causes = with_class(drill_down(cell(id, "cpu-ref")), "table", "causes").at(0)->text_content();
  EXPECT_NE(causes.find("requantize.rounding=" + kHostile), std::string::npos);
  const auto chart = with_class(drill_down(cell(id, "cpu-ref")), "svg", "perch");
  ASSERT_EQ(chart.size(), 1u) << "none for channel numbers no tensor has";
  EXPECT_NE(chart[0]->elements("title").at(0)->text_content().find("requantize.rounding=" + kHostile),
            std::string::npos);
  EXPECT_NE(chart[0]->parent->text_content().find("requantize.rounding=" + kHostile), std::string::npos);
  EXPECT_NE(by_id("backend-facts").text_content().find(kHostile), std::string::npos) << "backend facts";
  // Chromium serializes text with < and > escaped: the raw tag never appears.
  EXPECT_EQ(shared_->dump.out.find("<script"), std::string::npos);
}

// ---- the default-run page: claim-PASS, folded backends, width, per-channel plots ----------------

TEST_F(HtmlReportFile, ClaimPassCellsHaveTheirOwnStyle) {
  EXPECT_TRUE(std::regex_search(shared_->html, std::regex(R"(td\.cell\.claim-pass\.off-spec\{background:)")));
}

TEST_F(HtmlReport, ClaimPassCellsSayTheyPassedAgainstTheClaimNotTheSpec) {
  const HtmlReport::Page& p = shared_->default_run;
  const Node* root = p.dom.get();
  std::int64_t passes = 0, claim_passes = 0, off_spec = 0;
  for (const qc::CaseResult& c : p.report.cases)
    for (const qc::BackendResult& b : c.backends) {
      if (b.verdict != qc::Verdict::pass) continue;
      SCOPED_TRACE(c.id + " x " + b.backend);
      ++passes;
      const bool claim = b.expectation == "claim";
      claim_passes += claim;
      const Node& td = cell(c.id, b.backend, root);
      const Node& d = drill_down(td, root);
      EXPECT_TRUE(td.has_class("v-pass"));
      EXPECT_EQ(td.has_class("claim-pass"), claim) << *td.attribute("class");
      const std::string& title = *td.attribute("title");
      const std::int64_t h1 = b.metrics.histogram[1] + b.metrics.histogram[2] + b.metrics.histogram[3] +
                              b.metrics.histogram[4];  // off the spec, from the input's histogram
      if (!claim) {
        EXPECT_EQ(td.text_content().find("claim"), std::string::npos) << td.text_content();
        EXPECT_TRUE(with_class(d, "p", "claim-note").empty());
        EXPECT_FALSE(td.has_class("off-spec"));
        continue;
      }
      EXPECT_TRUE(td.text_content().starts_with("PASSvs claim")) << td.text_content();
      // Striped where the outputs differ from the spec.
      EXPECT_EQ(td.has_class("off-spec"), h1 > 0) << *td.attribute("class");
      off_spec += h1 > 0;
      const auto note = with_class(d, "p", "claim-note");
      ASSERT_EQ(note.size(), 1u);
      for (const std::string& text : {title, note[0]->text_content()}) {
        EXPECT_NE(text.find("claimed preset " + b.claim), std::string::npos) << text;
        EXPECT_NE(text.find("not the case's spec " + c.spec), std::string::npos) << text;
        if (h1)
          EXPECT_NE(text.find(std::to_string(h1) + " of " + std::to_string(b.metrics.compared) + " elements differ"),
                    std::string::npos)
              << text;
        else
          EXPECT_NE(text.find("bit-exact against the spec too"), std::string::npos) << text;
      }
      EXPECT_NE(title.find(b.reason), std::string::npos) << "the tooltip keeps the reason: " << title;
      EXPECT_EQ(with_class(*d.elements("summary").at(0), "span", "claim-tag").size(), 1u);
    }
  EXPECT_EQ(claim_passes, 3);
  EXPECT_EQ(off_spec, 1);
  // The issue's cell, from the input: 48 - 31 elements off, max 10339 LSB.
  EXPECT_EQ(cell("qgemm/k66400_int16_pair", "avx2-maddubs", root).text_content(),
            "PASSvs claim17 of 48 off, max 10339 LSB");
  const std::string legend = by_id("claim-legend", root).text_content();
  EXPECT_NE(legend.find(std::to_string(claim_passes) + " of the " + std::to_string(passes) + " PASS results"),
            std::string::npos)
      << legend;
  EXPECT_NE(legend.find(std::to_string(off_spec) + " of them (striped) differ"), std::string::npos) << legend;
  EXPECT_EQ(dom().find_id("claim-legend"), nullptr) << "a run without claim-PASS results has no such line";
}

TEST_F(HtmlReport, BackendsThatSkipEveryCaseAreFoldedIntoOneLinePerReason) {
  const HtmlReport::Page& p = shared_->default_run;
  const Node* root = p.dom.get();
  // From the input: every backend's reasons in order of first appearance, with counts, and
  // whether it ran anything.
  std::vector<std::string> backends;
  std::map<std::string, std::vector<std::pair<std::string, int>>> reasons;
  std::set<std::string> ran;
  for (const qc::CaseResult& c : p.report.cases)
    for (const qc::BackendResult& b : c.backends) {
      if (!reasons.count(b.backend)) backends.push_back(b.backend);
      auto& r = reasons[b.backend];
      auto it = std::find_if(r.begin(), r.end(), [&](const auto& x) { return x.first == b.reason; });
      if (it == r.end())
        r.emplace_back(b.reason, 1);
      else
        ++it->second;
      if (b.verdict != qc::Verdict::skip) ran.insert(b.backend);
    }
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> groups;  // folded backends with the same reasons, in order
  for (const std::string& b : backends) {
    if (ran.count(b)) {
      columns.push_back(b);
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return reasons[x[0]] == reasons[b]; });
    if (g == groups.end())
      groups.push_back({b});
    else
      g->push_back(b);
  }
  ASSERT_EQ(columns, (std::vector<std::string>{"cpu-ref", "avx2-maddubs"}));  // SKIPs one case, still a column
  ASSERT_EQ(groups.size(), 4u);                                               // vnni512, avxvnni, hip-*, exec

  // The matrix: a column per backend that ran something, and no cell of the others.
  const Node& matrix = by_id("matrix", root);
  std::vector<std::string> header;
  for (const Node* th : matrix.elements("thead").at(0)->elements("th")) header.push_back(th->text_content());
  ASSERT_EQ(header.size(), 3 + columns.size());
  EXPECT_EQ(std::vector<std::string>(header.begin() + 3, header.end()), columns);
  for (const Node* td : with_class(matrix, "td", "cell"))
    EXPECT_TRUE(ran.count(attribute(*td, "data-backend"))) << attribute(*td, "data-backend");
  // One line per group: its backends and its reasons, with per-reason counts where there are several.
  const auto lines = with_class(by_id("folded", root), "li", "fold");
  ASSERT_EQ(lines.size(), groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    SCOPED_TRACE(groups[i][0]);
    std::vector<std::string> named;
    for (const Node* b : with_class(*lines[i], "b", "fb")) named.push_back(b->text_content());
    EXPECT_EQ(named, groups[i]);
    const auto& expected = reasons[groups[i][0]];
    const auto shown = with_class(*lines[i], "span", "reason");
    ASSERT_EQ(shown.size(), expected.size());
    int cases = 0;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(shown[k]->text_content(), expected[k].first);
      cases += expected[k].second;
      if (expected.size() > 1) {
        EXPECT_NE(
            lines[i]->text_content().find(expected[k].first + " (" + std::to_string(expected[k].second) + " case"),
            std::string::npos)
            << lines[i]->text_content();
      }
    }
    EXPECT_NE(lines[i]->text_content().find("skipped all " + std::to_string(cases) + " cases: "), std::string::npos)
        << lines[i]->text_content();
  }
  EXPECT_NE(lines[2]->text_content().find(kNoGpu), std::string::npos) << "the six HIP variants share one line";
  // No drill-down block of a folded backend in the case sections; the legend still counts its SKIPs.
  for (const Node* d : with_class(*root, "details", "result"))
    EXPECT_TRUE(ran.count(attribute(*d, "data-backend"))) << attribute(*d, "data-backend");
  std::size_t skips = 0;
  for (const qc::CaseResult& c : p.report.cases)
    for (const qc::BackendResult& b : c.backends) skips += b.verdict == qc::Verdict::skip;
  for (const Node* li : by_id("legend", root).elements("li"))
    if (attribute(*li, "data-verdict") == "SKIP") {
      EXPECT_EQ(with_class(*li, "span", "n").at(0)->text_content(), std::to_string(skips));
    }
  EXPECT_EQ(dom().find_id("folded"), nullptr) << "every backend of the main run ran something";
}

TEST_F(HtmlReport, At1400PxThePageNeverScrollsSidewaysAndTheDefaultRunShowsEveryColumn) {
  const HtmlReport::Page &run = shared_->default_run, &all = shared_->everything, &wide = shared_->wide;
  for (const HtmlReport::Page* p : {&run, &all, &wide}) {
    SCOPED_TRACE(p == &run ? "default run" : p == &all ? "every backend runs" : "too wide");
    ASSERT_EQ(layout(*p, "inner-width"), 1400) << "--window-size did not apply";
    EXPECT_LE(layout(*p, "scroll-width"), layout(*p, "client-width")) << "the page scrolls sideways";
    EXPECT_LE(layout(*p, "scroll-width"), 1400);
  }
  // The default run, on this machine and on one where all ten backends run: the whole matrix is
  // on screen, no column hidden behind a scroll bar.
  for (const HtmlReport::Page* p : {&run, &all}) {
    SCOPED_TRACE(p == &run ? "default run" : "every backend runs");
    EXPECT_LE(layout(*p, "matrix-right"), layout(*p, "client-width"));
    EXPECT_LE(layout(*p, "wrap-scroll-width"), layout(*p, "wrap-client-width"));
  }
  EXPECT_EQ(with_class(by_id("matrix", all.dom.get()), "td", "cell").size(), 6u * 10u) << "ten columns";
  // Wider than any screen: the matrix scrolls inside its own box, the page does not.
  EXPECT_GT(layout(wide, "wrap-scroll-width"), layout(wide, "wrap-client-width"));
}

// The bars of a per-channel chart, left to right, with their heights and tooltips.
struct Bar {
  double x, height;
  std::string tooltip;
};
std::vector<Bar> bars_of(const Node& svg) {
  std::vector<Bar> bars;
  for (const Node* r : svg.elements("rect"))
    if (r->has_class("bar"))
      bars.push_back({std::stod(*r->attribute("x")), std::stod(*r->attribute("height")),
                      r->elements("title").at(0)->text_content()});
  std::sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.x < b.x; });
  return bars;
}

TEST_F(HtmlReport, PerChannelMismatchesAreSvgBarsOnePerChannelWithMismatches) {
  const HtmlReport::Page& p = shared_->default_run;
  const qc::CaseResult& c = p.report.cases.at(2);
  const qc::BackendResult& b = c.backends.at(1);
  ASSERT_EQ(c.id + " x " + b.backend, "quantize/per_axis1 x avx2-maddubs");
  const Node& d = drill_down(cell(c.id, b.backend, p.dom.get()), p.dom.get());
  const auto charts = with_class(d, "svg", "perch");
  // A chart per distinct distribution: the preset has the same counts as the first cause.
  ASSERT_EQ(b.causes.size(), 3u);
  ASSERT_EQ(b.causes[2].per_channel, b.causes[0].per_channel);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_NE(charts[0]->parent->text_content().find(b.causes[0].cause + " and 1 more cause with the same counts"),
            std::string::npos)
      << charts[0]->parent->text_content();
  for (std::size_t k = 0; k < charts.size(); ++k) {
    const qc::CauseCount& cause = b.causes[k];
    SCOPED_TRACE(cause.cause);
    // One bar per channel with mismatches, in channel order, each saying its channel and count.
    const std::vector<Bar> bars = bars_of(*charts[k]);
    ASSERT_EQ(bars.size(), cause.per_channel.size());
    std::size_t i = 0;
    for (const auto& [ch, n] : cause.per_channel)
      EXPECT_EQ(bars[i++].tooltip,
                "channel " + std::to_string(ch) + ": " + std::to_string(n) + (n == 1 ? " mismatch" : " mismatches"));
    // Heights ordered as the counts: the tallest bar is the channel with the most.
    std::vector<std::int64_t> counts;
    for (const auto& entry : cause.per_channel) counts.push_back(entry.second);
    for (std::size_t x = 0; x < bars.size(); ++x)
      for (std::size_t y = 0; y < bars.size(); ++y) {
        EXPECT_EQ(bars[x].height < bars[y].height, counts[x] < counts[y]) << x << " vs " << y;
        EXPECT_GT(bars[x].height, 0);
      }
    // A title naming the cause, and both axes labelled.
    EXPECT_NE(charts[k]->elements("title").at(0)->text_content().find(cause.cause), std::string::npos);
    std::set<std::string> labels;
    for (const Node* l : with_class(*charts[k], "text", "axis-label")) labels.insert(l->text_content());
    EXPECT_EQ(labels, (std::set<std::string>{"channel", "mismatches"}));
  }
  // No chart where no cause has per-channel counts.
  EXPECT_TRUE(with_class(drill_down(cell(c.id, "cpu-ref", p.dom.get()), p.dom.get()), "svg", "perch").empty());
}

TEST_F(HtmlReport, PerChannelChartsOfManyChannelsGroupNeighbouringChannels) {
  const qc::BackendResult& b = shared_->report.cases.at(2).backends.at(2);
  ASSERT_EQ(b.causes.at(1).per_channel, kManyChannels);
  const auto charts = with_class(drill_down(cell("dequantize/per_channel_i8_to_f16", "hip")), "svg", "perch");
  ASSERT_EQ(charts.size(), 2u);
  const std::vector<Bar> bars = bars_of(*charts[1]);
  EXPECT_LT(bars.size(), kManyChannels.size()) << "fewer bars than channels with mismatches";
  // Each bar covers a range of channels "channel A–B: N mismatches", left to right, and N sums the
  // counts of the channels in it: every channel with mismatches is in exactly one bar.
  const std::regex tip("channel ([0-9]+)–([0-9]+): ([0-9]+) mismatch(es)?");
  std::int64_t covered = 0, previous_end = -1;
  for (const Bar& bar : bars) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(bar.tooltip, m, tip)) << bar.tooltip;
    const std::int64_t lo = std::stoll(m[1]), hi = std::stoll(m[2]);
    EXPECT_GT(lo, previous_end);
    previous_end = hi;
    std::int64_t sum = 0;
    for (const auto& [ch, n] : kManyChannels)
      if (ch >= lo && ch <= hi) {
        sum += n;
        ++covered;
      }
    EXPECT_EQ(std::stoll(m[3]), sum) << bar.tooltip;
    EXPECT_GT(sum, 0) << "a bar without mismatches";
  }
  EXPECT_EQ(covered, static_cast<std::int64_t>(kManyChannels.size()));
  // The later channels have more: the last bar stands above the first.
  EXPECT_GT(bars.back().height, bars.front().height);
}

// ---- the model view (qconform model): tests/reports/model_report.hpp's hand-built run ---------

TEST_F(HtmlReportFile, AModelRunHasAModelSectionBeforeTheMatrix) {
  const std::string& h = shared_->model.html;
  const std::size_t section = h.find("<section class=\"model\"");
  ASSERT_NE(section, std::string::npos);
  EXPECT_LT(section, h.find("id=\"matrix\"")) << "the model comes before the cases";
  EXPECT_LT(h.find("id=\"run-metadata\""), section) << "and after the run's header";
  for (const char* s : {"Model <code>tiny_qdq</code>", "<code>models/tiny.onnx</code>", "QDQ", "<b>onnx</b>",
                        "hand-written for the tests", "IR 8 &middot; opset 17", "x: f32 [2, 4] generated",
                        "7 of 8 correct (87.5%)", "5 runs: ", "4 steps, ",
                        // The failed run's note, escaped.
                        "its answer could not be read: &lt;script&gt;alert(2)&lt;/script&gt; &amp; &quot;q&quot;"})
    EXPECT_NE(h.find(s), std::string::npos) << s;
  EXPECT_EQ(h.find("<script>alert(2)"), std::string::npos);
  EXPECT_EQ(shared_->html.find("<section class=\"model\""), std::string::npos) << "a run without a model has none";
}

// The model page's tables, found by class, their rows and their header's column names.
struct ModelTables {
  const Node* section = nullptr;
  const Node* runs = nullptr;
  const Node* steps = nullptr;
  std::vector<std::string> step_columns;  // every column's name (the second header row's data-backend or data-run)
};

class HtmlModel : public HtmlReport {
 protected:
  static const Node* root() { return shared_->model.dom.get(); }
  static ModelTables tables() {
    ModelTables t;
    const auto sections = with_class(*root(), "section", "model");
    if (sections.size() != 1) throw std::runtime_error("not one model section");
    t.section = sections[0];
    t.runs = with_class(*t.section, "table", "model-runs").at(0);
    t.steps = with_class(*t.section, "table", "model-steps").at(0);
    t.step_columns = {"step", "op", "kind", "output", "fused"};
    const auto header = t.steps->elements("thead").at(0)->elements("tr").at(1)->elements("th");
    for (const Node* th : header) {
      const std::string* b = th->attribute("data-backend");
      t.step_columns.push_back(b ? "isolated " + *b : "run " + attribute(*th, "data-run"));
    }
    return t;
  }
  static const Node& row(const Node& table, const std::string& key, const std::string& value) {
    for (const Node* tr : table.elements("tbody").at(0)->elements("tr"))
      if (attribute(*tr, key) == value) return *tr;
    throw std::runtime_error("no row with " + key + "=" + value);
  }
  // The cell of a step's row under `column` ("isolated vnni512", "run vnni512 (fused)", "fused").
  static const Node& step_cell(const std::string& step, const std::string& column) {
    const ModelTables t = tables();
    const auto at = std::find(t.step_columns.begin(), t.step_columns.end(), column);
    if (at == t.step_columns.end()) throw std::runtime_error("no column " + column);
    return *row(*t.steps, "data-step", step).elements("td").at(static_cast<std::size_t>(at - t.step_columns.begin()));
  }
};

TEST_F(HtmlModel, RunsTableHasARowPerRunWithItsOutcome) {
  const ModelTables t = tables();
  std::vector<std::string> runs;
  for (const Node* tr : t.runs->elements("tbody").at(0)->elements("tr")) runs.push_back(attribute(*tr, "data-run"));
  EXPECT_EQ(runs, (std::vector<std::string>{"oracle (fused)", "cpu-ref (fused)", "vnni512 (fused)",
                                            "onnxruntime [disabled]", "onnxruntime [all]"}));
  const Node& vnni = row(*t.runs, "data-run", "vnni512 (fused)");
  const auto tds = vnni.elements("td");
  ASSERT_EQ(tds.size(), 14u);
  EXPECT_EQ(tds[1]->text_content(), "propagated");
  EXPECT_EQ(tds[2]->text_content(), "fused");
  EXPECT_EQ(tds[3]->text_content(), "fused");
  EXPECT_EQ(tds[4]->text_content(), "ok");
  // The first divergent step links to its row in the steps table.
  const auto link = tds[5]->elements("a");
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(attribute(by_id(attribute(*link[0], "href").substr(1), root()), "data-step"), "fc_MatMul.fused");
  EXPECT_EQ(tds[5]->text_content(), "fc_MatMul.fusedcause requantize.rounding=rna");
  EXPECT_EQ(tds[6]->text_content(), "none");
  EXPECT_EQ(tds[7]->text_content(), "3 of 40");
  EXPECT_TRUE(tds[7]->has_class("v-fail"));
  EXPECT_EQ(tds[8]->text_content(), "0.5");
  EXPECT_EQ(tds[9]->text_content(), "6 of 8");
  EXPECT_TRUE(tds[9]->has_class("bad")) << "top-1 differs from the oracle's in 2 rows";
  EXPECT_EQ(tds[10]->text_content(), "5 of 8");
  EXPECT_EQ(tds[11]->text_content(), "2");
  EXPECT_EQ(tds[12]->text_content(), "1");
  EXPECT_EQ(tds[13]->text_content(), "3.10 ms");
  const auto cpu = row(*t.runs, "data-run", "cpu-ref (fused)").elements("td");
  EXPECT_EQ(cpu[5]->text_content(), "none");
  EXPECT_EQ(cpu[7]->text_content(), "0 of 40");
  EXPECT_FALSE(cpu[7]->has_class("v-fail"));
  // The first float difference links to its step's row too.
  const auto ort = row(*t.runs, "data-run", "onnxruntime [disabled]").elements("td");
  EXPECT_EQ(ort[5]->text_content(), "none");
  ASSERT_EQ(ort[6]->elements("a").size(), 1u);
  EXPECT_EQ(attribute(by_id(attribute(*ort[6]->elements("a")[0], "href").substr(1), root()), "data-step"), "relu_Relu");
  const Node& oracle = row(*t.runs, "data-run", "oracle (fused)");
  EXPECT_NE(oracle.text_content().find("the fused reading against the QDQ reading"), std::string::npos);
  EXPECT_EQ(oracle.elements("td").at(7)->text_content(), "2 of 40");
  EXPECT_EQ(oracle.elements("td").at(8)->text_content(), "0.125");
  // The failed run: marked, its note intact.
  const Node& failed = row(*t.runs, "data-run", "onnxruntime [all]");
  EXPECT_TRUE(failed.has_class("run-failed"));
  EXPECT_EQ(with_class(failed, "span", "badge").at(0)->text_content(), "failed");
  EXPECT_TRUE(with_class(failed, "span", "badge").at(0)->has_class("v-fail"));
  EXPECT_NE(failed.text_content().find("its answer could not be read: " + qc::test::kModelHostile), std::string::npos);
  EXPECT_EQ(failed.elements("td").at(9)->text_content(), "\u2014") << "no top-1";
  // Text, not markup (the page's one script is the layout probe, at the end of the body).
  EXPECT_TRUE(t.section->elements("script").empty());
  // The model's facts.
  const std::string meta = with_class(*t.section, "dl", "model-meta").at(0)->text_content();
  for (const char* s :
       {"models/tiny.onnx", "QDQ", "onnx", "IR 8 \u00b7 opset 17", "x: f32 [2, 4] generated", "7 of 8 correct (87.5%)"})
    EXPECT_NE(meta.find(s), std::string::npos) << s << " in " << meta;
}

TEST_F(HtmlModel, StepsTableHasTheStepsInGraphOrderWithAColumnPerBackendAndPerRun) {
  const ModelTables t = tables();
  std::vector<std::string> steps;
  for (const Node* tr : t.steps->elements("tbody").at(0)->elements("tr")) steps.push_back(attribute(*tr, "data-step"));
  EXPECT_EQ(steps,
            (std::vector<std::string>{"x_QuantizeLinear", "fc_MatMul.fused", "relu_Relu", "y_DequantizeLinear"}));
  // hip SKIPs every step's case: no column, one line naming it. The runs without a step compared
  // (the oracle's fused reading, the failed run) are named once, not given columns of dashes.
  EXPECT_EQ(t.step_columns,
            (std::vector<std::string>{"step", "op", "kind", "output", "fused", "isolated cpu-ref", "isolated vnni512",
                                      "run cpu-ref (fused)", "run vnni512 (fused)", "run onnxruntime [disabled]"}));
  const std::string notes = t.section->text_content();
  EXPECT_NE(notes.find("Not shown as columns: hip (skipped every step's case)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("Compared at the output only (the runs table): oracle (fused), onnxruntime [all]."),
            std::string::npos);

  const Node& fc = row(*t.steps, "data-step", "fc_MatMul.fused");
  const auto fc_tds = fc.elements("td");
  EXPECT_EQ(fc_tds.at(1)->text_content(), "fused MatMul");
  EXPECT_EQ(fc_tds.at(2)->text_content(), "fused");
  EXPECT_EQ(fc_tds.at(3)->text_content(), "u8 [2, 20]");
  EXPECT_EQ(attribute(*fc_tds.at(3), "title"), "y_q");
  EXPECT_NE(fc_tds.at(0)->text_content().find("covers x_DequantizeLinear, fc_MatMul, y_QuantizeLinear"),
            std::string::npos);
  // The step's name links to its case's section.
  EXPECT_EQ(by_id(attribute(*fc_tds.at(0)->elements("a").at(0), "href").substr(1), root())
                .elements("h3")
                .at(0)
                ->text_content(),
            "tiny_qdq/fc_MatMul.fused");
  EXPECT_EQ(step_cell("fc_MatMul.fused", "fused").text_content(), "2 of 40");
  EXPECT_TRUE(step_cell("fc_MatMul.fused", "fused").has_class("v-fail"));
  EXPECT_EQ(step_cell("x_QuantizeLinear", "fused").text_content(), "\u2014") << "not a fused step";

  // The isolated verdicts: PASS alone; a FAIL with its mismatches and its leading cause only; each
  // linked to the drill-down of that case and backend.
  const Node& pass = step_cell("x_QuantizeLinear", "isolated cpu-ref");
  EXPECT_EQ(pass.text_content(), "PASS");
  EXPECT_TRUE(pass.has_class("v-pass"));
  const Node& fail = step_cell("fc_MatMul.fused", "isolated vnni512");
  EXPECT_TRUE(fail.has_class("v-fail"));
  EXPECT_EQ(fail.text_content(), "FAIL3 of 40 off, max 2 LSBrequantize.rounding=rna");
  EXPECT_EQ(attribute(fail, "title"), "37/40 exact, max |delta| 2 LSB against onnx");
  for (const auto& [step, backend] : std::vector<std::pair<std::string, std::string>>{
           {"fc_MatMul.fused", "vnni512"}, {"x_QuantizeLinear", "cpu-ref"}, {"y_DequantizeLinear", "vnni512"}}) {
    SCOPED_TRACE(step + " x " + backend);
    const Node& d = drill_down(step_cell(step, "isolated " + backend), root());
    EXPECT_EQ(d.tag, "details");
    EXPECT_EQ(attribute(d, "data-backend"), backend);
    EXPECT_EQ(d.parent->elements("h3").at(0)->text_content(), "tiny_qdq/" + step);
  }
  EXPECT_EQ(step_cell("y_DequantizeLinear", "isolated vnni512").text_content(), "CRASH");
  EXPECT_TRUE(step_cell("y_DequantizeLinear", "isolated vnni512").has_class("v-crash"));
  // A float step has no case: dashes.
  EXPECT_EQ(step_cell("relu_Relu", "isolated cpu-ref").text_content(), "\u2014");
  EXPECT_TRUE(step_cell("relu_Relu", "isolated cpu-ref").elements("a").empty());

  // What each run computed at the step: differing of elements, the largest difference and the
  // leading cause where any, "(oracle)" where the oracle computed it for the backend, a dash where
  // the run did not compare it.
  EXPECT_EQ(step_cell("fc_MatMul.fused", "run vnni512 (fused)").text_content(),
            "3 of 40max 2 LSBrequantize.rounding=rna");
  EXPECT_TRUE(step_cell("fc_MatMul.fused", "run vnni512 (fused)").has_class("v-fail"));
  EXPECT_EQ(step_cell("relu_Relu", "run vnni512 (fused)").text_content(), "3 of 40max 0.25");
  const Node& by_oracle = step_cell("y_DequantizeLinear", "run vnni512 (fused)");
  EXPECT_EQ(by_oracle.text_content(), "3 of 40max 0.5 (oracle)");
  EXPECT_EQ(attribute(by_oracle, "title"), "vnni512 does not implement dequantize to f32");
  EXPECT_EQ(step_cell("fc_MatMul.fused", "run cpu-ref (fused)").text_content(), "0 of 40");
  EXPECT_FALSE(step_cell("fc_MatMul.fused", "run cpu-ref (fused)").has_class("v-fail"));
  EXPECT_EQ(step_cell("x_QuantizeLinear", "run onnxruntime [disabled]").text_content(), "0 of 8");
  EXPECT_EQ(step_cell("fc_MatMul.fused", "run onnxruntime [disabled]").text_content(), "\u2014");

  // Rows with a difference anywhere are marked; x_QuantizeLinear has none.
  for (const std::string& step : steps) {
    SCOPED_TRACE(step);
    EXPECT_EQ(row(*t.steps, "data-step", step).has_class("step-differs"), step != "x_QuantizeLinear");
  }
}

TEST_F(HtmlModel, IdsAreUniqueLinksResolveAndThePageDoesNotScrollSideways) {
  std::set<std::string> ids;
  for (const Node* n : root()->elements())
    if (const std::string* id = n->attribute("id")) {
      EXPECT_TRUE(ids.insert(*id).second) << "duplicate id " << *id;
    }
  for (const Node* a : root()->elements("a")) {
    const std::string href = attribute(*a, "href");
    ASSERT_TRUE(href.starts_with("#")) << href;
    EXPECT_TRUE(ids.count(href.substr(1))) << "dangling link " << href;
  }
  const HtmlReport::Page& p = shared_->model;
  ASSERT_EQ(layout(p, "inner-width"), 1400);
  EXPECT_LE(layout(p, "scroll-width"), layout(p, "client-width")) << "the page scrolls sideways";
}

TEST_F(HtmlReport, Screenshot) {
  // The synthetic run, the default run's shape at 1400 px (every column that ran in view), and a
  // model run.
  for (const char* name : {"report", "report-default-run", "report-model"}) {
    SCOPED_TRACE(name);
    const fs::path png = fs::path(QCONFORM_ARTIFACT_DIR) / (std::string(name) + ".png");
    fs::remove(png);
    const BrowserRun r = chromium(shared_->chromium, fs::path(QCONFORM_ARTIFACT_DIR) / (std::string(name) + ".html"),
                                  "--screenshot=" + quote(png.string()) + " --window-size=1400,1800");
    ASSERT_EQ(r.code, 0) << "see artifacts/chromium.log";
    ASSERT_TRUE(fs::exists(png));
    EXPECT_GT(fs::file_size(png), 40'000u) << "a blank page compresses to a few KB";
    std::ifstream in(png, std::ios::binary);
    std::array<char, 8> sig{};
    in.read(sig.data(), sig.size());
    EXPECT_EQ(std::string(sig.data(), 8), std::string("\x89PNG\r\n\x1a\n", 8));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && find_chromium().empty()) {
    std::printf("chromium not found; run scripts/setup.sh\n");
    return 77;  // ctest: skipped
  }
  return rc;
}
