// The peer manifest (backends/peers.hpp, docs/peers.md): how it is read, and how the CLI offers its
// peers: plugins and exec runners by name, in the default backend set, left out with --no-peers,
// and refused with exit 2 when an entry is malformed or a peer answers to another name.
#include "backends/peers.hpp"
#include "cli_run.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace qc::testing {
namespace {

namespace fs = std::filesystem;

const std::string kPeersSrc = QCONFORM_SOURCE_DIR;

class PeerManifest : public TempDirTest {
 protected:
  fs::path write(const std::string& peers, const std::string& folder = "") {
    const fs::path d = folder.empty() ? dir_ : dir_ / folder;
    fs::create_directories(d);
    std::ofstream(d / "peers.json") << "{\"qconform_peers\": 1, \"peers\": [" << peers << "]}";
    return d / "peers.json";
  }
};

TEST_F(PeerManifest, MissingFileMeansNoPeers) {
  EXPECT_TRUE(load_peer_manifest(dir_ / "none.json").empty());
  EXPECT_TRUE(load_peer_manifest("").empty());
}

TEST_F(PeerManifest, PluginPathsAndDirAreRelativeToTheManifest) {
  // A folder with a space and a quote: {dir} must reach /bin/sh as one word.
  const fs::path f = write(R"({"name": "p", "library": "L", "plugin": "lib/libp.so"},
                              {"name": "r", "backend": "exec:node {dir}/ort/runner.js --x"})",
                           "it's here");
  const auto peers = load_peer_manifest(f);
  ASSERT_EQ(peers.size(), 2u);
  const fs::path d = fs::absolute(dir_ / "it's here").lexically_normal();
  EXPECT_EQ(peers[0].name, "p");
  EXPECT_EQ(peers[0].library, "L");
  EXPECT_EQ(peers[0].plugin, (d / "lib/libp.so").string());
  EXPECT_TRUE(peers[0].backend.empty());
  EXPECT_EQ(peers[1].library, "r");  // defaults to the name
  EXPECT_EQ(peers[1].backend, "exec:node '" + (dir_ / "it'\\''s here").string() + "'/ort/runner.js --x");
}

TEST_F(PeerManifest, MalformedEntriesNameTheFileAndTheEntry) {
  const auto error_of = [&](const std::string& peers) {
    try {
      load_peer_manifest(write(peers));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string both =
      error_of(R"({"name": "a", "plugin": "x.so"}, {"name": "b", "plugin": "y", "backend": "py:m:C"})");
  EXPECT_NE(both.find((dir_ / "peers.json").string()), std::string::npos) << both;
  EXPECT_NE(both.find("peers[1]"), std::string::npos) << both;
  EXPECT_NE(both.find("exactly one of"), std::string::npos) << both;
  EXPECT_NE(error_of(R"({"plugin": "x.so"})").find("needs a non-empty \"name\""), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "a", "backend": "cpu-ref"})").find("exec:CMD or py:MODULE:CLASS"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "a", "plugin": "x"}, {"name": "a", "plugin": "y"})").find("listed twice"),
            std::string::npos);
  std::ofstream(dir_ / "bad.json") << "{\"qconform_peers\": 1, \"peers\": [";
  EXPECT_THROW(load_peer_manifest(dir_ / "bad.json"), InputError);
  std::ofstream(dir_ / "v2.json") << "{\"qconform_peers\": 2, \"peers\": []}";
  EXPECT_THROW(load_peer_manifest(dir_ / "v2.json"), InputError);
}

// A manifest with the test plugin (cpu-ref behind the C ABI) and the numpy example runner.
class PeerCli : public PeerManifest {
 protected:
  std::string env(const std::string& runner_name = "recip-quantize") {
    const fs::path f = write(std::string(R"({"name": "plugin-cpu-ref", "library": "test plugin", "plugin": ")") +
                             QCONFORM_TEST_PLUGIN_CPUREF + R"("}, {"name": ")" + runner_name +
                             R"(", "library": "numpy", "backend": "exec:/usr/bin/python3 )" + kPeersSrc +
                             R"(/python/examples/recip_quantize.py"})");
    return "QCONFORM_PEERS=" + f.string() + " PYTHONPATH=" + std::string(QCONFORM_BUILD_DIR) + "/python";
  }
};

TEST_F(PeerCli, ListOffersThePeersAndNoPeersLeavesThemOut) {
  const auto r = run_qconform_output("list backends", env());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plugin-cpu-ref  claims onnx"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recip-quantize  claims onnx"), std::string::npos) << r.output;
  const auto without = run_qconform_output("list backends --no-peers", env());
  ASSERT_EQ(without.code, 0) << without.output;
  EXPECT_EQ(without.output.find("plugin-cpu-ref"), std::string::npos) << without.output;
  EXPECT_EQ(without.output.find("recip-quantize"), std::string::npos) << without.output;
}

TEST_F(PeerCli, ARunRunsThePeersByNameAndByDefault) {
  const std::string cases = kPeersSrc + "/cases/quantize_linear.json";
  // Named: only those run.
  ASSERT_EQ(
      run_qconform("run " + cases + " --backend recip-quantize --no-reproducers -q -o " + (dir_ / "named").string(),
                   env()),
      1);  // the example rounds ties away: FAIL on the ties cases
  auto named = read_json(dir_ / "named" / "report.json");
  std::set<std::string> seen;
  for (const auto& c : named["cases"])
    for (const auto& b : c["backends"]) seen.insert(b["backend"].get<std::string>());
  EXPECT_EQ(seen, (std::set<std::string>{"recip-quantize"}));
  // Default: the built-in backends and both peers.
  run_qconform("run " + cases + " --no-reproducers -q -o " + (dir_ / "all").string(), env());
  auto all = read_json(dir_ / "all" / "report.json");
  seen.clear();
  for (const auto& b : all["cases"][0]["backends"]) seen.insert(b["backend"].get<std::string>());
  EXPECT_TRUE(seen.contains("cpu-ref") && seen.contains("plugin-cpu-ref") && seen.contains("recip-quantize"));
}

TEST_F(PeerCli, APeerIsHeldToItsClaimUnlessACaseNamesIt) {
  // Ties under a tflite-reference spec (ties away): the cpu-ref plugin claims onnx (ties to even).
  std::ofstream(dir_ / "ties.json") << R"({"suite": "ties", "cases": [
    {"name": "spec", "op": "quantize", "spec": "tflite-reference", "scale": 1, "zero_point": 0,
     "output_dtype": "i8", "input": {"dtype": "f32", "shape": [2], "data": [0.5, 2.5]}},
    {"name": "named", "op": "quantize", "spec": "tflite-reference", "scale": 1, "zero_point": 0,
     "output_dtype": "i8", "input": {"dtype": "f32", "shape": [2], "data": [0.5, 2.5]},
     "expect": {"plugin-cpu-ref": "exact"}}]})";
  const auto verdicts = [&](const std::string& out) {
    std::map<std::string, std::string> v;
    const nlohmann::json report = read_json(dir_ / out / "report.json");  // kept alive for the loop
    for (const auto& c : report["cases"])
      v[c["id"].get<std::string>()] =
          c["backends"][0]["verdict"].get<std::string>() + " " + c["backends"][0]["expectation"].get<std::string>();
    return v;
  };
  // As a peer: held to its claim (onnx), so PASS, unless the case names it.
  const auto peer = run_qconform_output(
      "run " + (dir_ / "ties.json").string() + " --backend plugin-cpu-ref -q -o " + (dir_ / "peer").string(), env());
  ASSERT_EQ(peer.code, 1) << peer.output;  // the named case fails
  EXPECT_EQ(verdicts("peer"),
            (std::map<std::string, std::string>{{"ties/named", "FAIL exact"}, {"ties/spec", "PASS claim"}}));
  // Loaded as a plain plugin: the case's spec judges it.
  const auto plain =
      run_qconform_output("run " + (dir_ / "ties.json").string() + " --plugin " + QCONFORM_TEST_PLUGIN_CPUREF +
                          " --backend plugin-cpu-ref -q -o " + (dir_ / "plain").string());
  ASSERT_EQ(plain.code, 1) << plain.output;
  EXPECT_EQ(verdicts("plain"),
            (std::map<std::string, std::string>{{"ties/named", "FAIL exact"}, {"ties/spec", "FAIL exact"}}));
}

TEST_F(PeerCli, APeerThatAnswersToAnotherNameIsRefused) {
  const auto r = run_qconform_output(
      "run " + kPeersSrc + "/cases/quantize_linear.json --backend other -q -o " + (dir_ / "out").string(),
      env("other"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("says its name is 'recip-quantize', the manifest says 'other'"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "report.json"));
}

}  // namespace
}  // namespace qc::testing
