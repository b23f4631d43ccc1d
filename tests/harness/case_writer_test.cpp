// The case writer: load_suite(save_cases(c)) gives back the same request, bit for bit, and the oracle
// evaluates it identically, for every op kind the loader supports; what the format cannot express is
// an InputError rather than a different file.
#include "cases/case_writer.hpp"

#include "cases/case.hpp"
#include "cases/generators.hpp"
#include "cases/spec_fields.hpp"
#include "harness/evaluate.hpp"
#include "oracles/int4.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

namespace qc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("qconform_case_writer_" + std::to_string(::getpid()) + "_" + name);
}

Tensor ints(DType t, Shape shape, const std::vector<std::int64_t>& v) {
  Tensor x(t, std::move(shape));
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_int(i, v[static_cast<std::size_t>(i)]);
  return x;
}

Tensor floats(DType t, Shape shape, const std::vector<double>& v) {
  Tensor x(t, std::move(shape));
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_double(i, v[static_cast<std::size_t>(i)]);
  return x;
}

Tensor bits(DType t, Shape shape, const std::vector<std::uint64_t>& v) {
  Tensor x(t, std::move(shape));
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_bits(i, v[static_cast<std::size_t>(i)]);
  return x;
}

Case make_case(const std::string& name, OpRequest op, const Spec& spec) {
  Case c;
  c.suite = "writer";
  c.name = name;
  c.op = std::move(op);
  c.spec = spec;
  return c;
}

Spec preset(const char* name) { return *find_preset(name); }

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

// Saves, loads and checks that every case reads back as the same numerics and evaluates identically:
// the same output bits and labels, and (floats) the same correctly rounded values.
std::vector<Case> round_trip(const std::vector<Case>& cases, const std::string& file) {
  const fs::path path = temp_file(file);
  save_cases(path, "writer", cases);
  const Suite s = load_suite(path);
  fs::remove(path);
  EXPECT_EQ(s.name, "writer");
  EXPECT_EQ(s.cases.size(), cases.size());
  for (std::size_t i = 0; i < std::min(s.cases.size(), cases.size()); ++i) {
    const Case& a = cases[i];
    const Case& b = s.cases[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.description, a.description);
    EXPECT_EQ(b.op.index(), a.op.index());
    EXPECT_TRUE(same_numerics(a.spec, b.spec));
    EXPECT_EQ(b.expect.size(), a.expect.size());
    for (const auto& [backend, e] : a.expect) {
      EXPECT_EQ(b.expectation_for(backend).str(), e.str());
    }
    EXPECT_TRUE(same_bits(op_input(a.op), op_input(b.op)));
    const Reference ra = evaluate(a.op, a.spec), rb = evaluate(b.op, b.spec);
    EXPECT_TRUE(same_bits(ra.expected, rb.expected));
    EXPECT_EQ(ra.labels, rb.labels);
    EXPECT_EQ(ra.specified, rb.specified);
    EXPECT_EQ(ra.correctly_rounded.has_value(), rb.correctly_rounded.has_value());
    if (ra.correctly_rounded && rb.correctly_rounded) {
      EXPECT_TRUE(same_bits(*ra.correctly_rounded, *rb.correctly_rounded));
    }
    // Writing the loaded case again gives the same JSON: nothing drifts on a second trip.
    EXPECT_EQ(case_to_json(b), case_to_json(a));
  }
  return s.cases;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CaseWriter, QuantizeF32SpecialsRoundTripBitForBit) {
  // -0, +-inf, the smallest subnormal, the largest finite, a tie, quiet NaNs with sign and payload.
  const std::vector<std::uint64_t> f32 = {0x80000000u, 0x7F800000u,           0xFF800000u, 0x00000001u,
                                          0x7F7FFFFFu, 0x3FC00000u /* 1.5 */, 0x7FC00000u, 0xFFC00000u,
                                          0x7FC00123u, 0xFFFFFFFFu,           0x3DCCCCCDu /* 0.1f */};
  QuantizeOp q;
  q.x = bits(DType::f32, {11}, f32);
  q.params.scales = {1.0};
  q.params.zero_points = {3};
  q.out = DType::u8;
  Spec spec = preset("onnx");
  spec.quantize.nan = NanRule::to_zero_point;  // a spec built from overrides: written explicitly
  spec.quantize.rounding = RoundingMode::rna;
  Case c = make_case("f32_specials", q, spec);
  c.description = "every kind of f32 value";
  c.expect["*"] = {Expectation::Kind::max_lsb, 1};
  c.expect["cpu-ref"] = {Expectation::Kind::claim, 0};
  const auto back = round_trip({c}, "f32.json");
  // The NaN payloads survive (glibc strtod reads "nan(0x...)"), not only the NaN-ness.
  const Tensor& x = std::get<QuantizeOp>(back.at(0).op).x;
  EXPECT_EQ(x.bits(8), 0x7FC00123u);
  EXPECT_EQ(x.bits(9), 0xFFFFFFFFu);
  EXPECT_EQ(x.bits(0), 0x80000000u);
}

TEST(CaseWriter, QuantizeHalfFormatsPerAxisAndBlocked) {
  QuantizeOp h;  // f16: -0, subnormals, the largest finite, inf, the canonical NaN; per axis
  h.x = bits(DType::f16, {2, 4}, {0x8000, 0x0001, 0x03FF, 0x7BFF, 0xFC00, 0x7E00, 0x3C00, 0xBC01});
  h.params.scales = {0.5, 0.25};
  h.params.zero_points = {-1, 2};
  h.params.axis = 0;
  h.out = DType::i8;
  QuantizeOp b;  // bf16, blocked along the last axis with a short last block, f16 scales
  b.x = bits(DType::bf16, {1, 5}, {0x8000, 0x3F80, 0x4049, 0xC2F7, 0x0001});
  b.params.scale_dtype = DType::f16;
  b.params.scales = {0.125, 3.0};
  b.params.zero_points = {0, 5};
  b.params.axis = 1;
  b.params.block_size = 3;
  b.out = DType::i4;
  round_trip({make_case("f16_per_axis", h, preset("onnx")), make_case("bf16_blocked", b, preset("onnx"))}, "half.json");
}

TEST(CaseWriter, DequantizeInt4BlockedToF16) {
  DequantizeOp d;
  d.q = ints(DType::i4, {2, 3}, {-8, 7, 0, 1, -1, 5});
  d.params.scales = {0.1f, 0.2f, 0.3f, 0.4f};
  d.params.zero_points = {1, -2, 0, 3};
  d.params.axis = 1;
  d.params.block_size = 2;
  d.out = DType::f16;
  Spec spec = preset("onnx");
  spec.dequantize = {DequantizeOrder::sub_float_then_mul, ComputeFormat{ComputeFormat::Kind::f32, 0}};
  round_trip({make_case("int4_blocked", d, spec)}, "deq.json");
}

TEST(CaseWriter, RequantizePerChannelWithASchemeAndClip) {
  RequantizeOp r;
  r.acc = ints(DType::i32, {2, 3}, {1000, -2047, 5, std::numeric_limits<std::int32_t>::max(), 0, -7});
  r.params.input_scale = 0.5;
  r.params.weight_scales = {0.25, 0.125, 0.0625};
  r.params.output_scale = 3.0;
  r.params.output_zero_points = {1, 2, 3};
  r.params.axis = 1;
  r.out = DType::i8;
  Spec spec = preset("onnx");
  spec.requantize = requantize_policy_for(RequantizeScheme::gemmlowp_double);
  spec.requantize.clip = std::pair<std::int64_t, std::int64_t>{-100, 100};
  spec.requantize.narrow_range = true;
  round_trip({make_case("per_channel_gemmlowp", r, spec)}, "req.json");
}

TEST(CaseWriter, QGemmPackedInt4BlockedPerChannelAndDynamic) {
  // f32 activations quantized statically; i4 weights packed (ONNX nibble order), blocked along K
  // (K = 5, block 2: a short last block), requantized output with a fused relu6 and an i32 bias.
  QGemmOp g;
  g.a.values = floats(DType::f32, {2, 5}, {0.5, -1.0, 2.0, 0.25, 1.5, 0.0, -0.75, 1.0, 3.0, -2.5});
  g.a.format = DType::u8;
  g.a.params.scales = {0.25};
  g.a.params.zero_points = {128};
  const Tensor w = ints(DType::i4, {5, 3}, {1, -2, 3, 4, -5, 6, 7, -8, 0, -1, 2, -3, 5, 6, -7});
  g.b.format = DType::i4;
  g.b.packing = onnx_int4_packing();
  g.b.shape = w.shape();
  g.b.values = pack_int4(w, DType::i4, *g.b.packing);
  g.b.params.scales = {0.5, 0.25, 0.125, 0.5, 0.25, 0.125, 1.0, 2.0, 4.0};
  g.b.params.zero_points = {0, 1, -1, 0, 1, -1, 2, 0, 0};
  g.b.params.axis = 0;
  g.b.params.block_size = 2;
  g.output.kind = OutputKind::dequantized;
  g.output.format = DType::f32;

  QGemmOp pc;  // per-channel i8 weights [N, K], u8 activations, requantized with relu6
  pc.a.values = ints(DType::u8, {3, 4}, {0, 255, 128, 7, 1, 2, 3, 4, 200, 100, 50, 25});
  pc.a.format = DType::u8;
  pc.a.params.scales = {0.5};
  pc.a.params.zero_points = {128};
  pc.b.values = ints(DType::i8, {2, 4}, {-128, 127, 3, -4, 5, -6, 7, -8});
  pc.b.format = DType::i8;
  pc.b.shape = pc.b.values.shape();
  pc.b.params.scales = {0.25, 0.125};
  pc.b.params.axis = 0;
  pc.b_layout = WeightLayout::n_by_k;
  pc.bias = ints(DType::i32, {2}, {100, -100});
  pc.output.kind = OutputKind::requantized;
  pc.output.format = DType::i8;
  pc.output.scale = 0.5;
  pc.output.zero_point = -3;
  pc.output.clamp = fused_activation_range(FusedActivation::relu6, 0.5f, -3, DType::i8);

  QGemmOp dyn;  // dynamic per-row f16 activations, torchao-packed u4 weights, int32 output
  dyn.a.values = floats(DType::f16, {2, 4}, {0.5, -1.0, 2.0, 0.25, -0.0, 1.0, 3.0, -2.5});
  dyn.a.format = DType::u8;
  dyn.a.quantization = ActivationQuantization::dynamic_per_row;
  const Spec onnx = preset("onnx");
  dyn.a.rule = *find_qparams_preset(onnx.qparams);
  const Tensor u = ints(DType::u4, {4, 2}, {0, 15, 7, 8, 1, 2, 3, 4});
  dyn.b.format = DType::u4;
  dyn.b.packing = torchao_uint4_packing();
  dyn.b.shape = u.shape();
  dyn.b.values = pack_int4(u, DType::u4, *dyn.b.packing);
  dyn.b.params.scales = {0.5};
  dyn.b.params.zero_points = {8};
  round_trip({make_case("int4_blocked", g, onnx), make_case("per_channel_relu6", pc, onnx),
              make_case("dynamic_per_row", dyn, onnx)},
             "qgemm.json");
}

// ORT's packing (ONNX's nibble order, values clipped before packing) has a name in the case format
// too: a case built with it (in Python, packing="ort") can be saved and loaded back.
TEST(CaseWriter, OrtPackedWeightsRoundTrip) {
  QGemmOp g;
  g.a.values = ints(DType::u8, {1, 3}, {1, 2, 3});
  g.a.format = DType::u8;
  g.a.params.scales = {1.0};
  const Tensor w = ints(DType::i4, {3, 1}, {-8, 7, 1});
  g.b.format = DType::i4;
  g.b.packing = ort_int4_packing();
  g.b.shape = w.shape();
  g.b.values = pack_int4(w, DType::i4, *g.b.packing);
  g.b.params.scales = {1.0};
  g.output.kind = OutputKind::int32;
  g.output.format = DType::i32;
  round_trip({make_case("ort_packed", g, preset("onnx"))}, "int4.json");
  EXPECT_EQ(case_to_json(make_case("ort_packed", g, preset("onnx")), WriteOptions{})["b"]["packing"], "ort");
}

// The schema's packing names are the oracle's list (oracles/int4.hpp named_int4_packings).
TEST(CaseWriter, TheSchemaNamesEveryInt4Packing) {
  std::ifstream f(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "case.schema.json");
  const json schema = json::parse(f);
  std::vector<std::string> in_schema;
  const std::function<void(const json&)> find = [&](const json& j) {
    if (j.is_object()) {
      if (j.contains("packing") && j["packing"].is_object() && j["packing"].contains("enum"))
        for (const json& n : j["packing"]["enum"]) in_schema.push_back(n.get<std::string>());
      for (const auto& [k, v] : j.items()) find(v);
    } else if (j.is_array()) {
      for (const json& v : j) find(v);
    }
  };
  find(schema);
  std::vector<std::string> named;
  for (const NamedInt4Packing& n : named_int4_packings()) named.emplace_back(n.name);
  ASSERT_FALSE(in_schema.empty());
  EXPECT_EQ(in_schema, named);
}

// The schema's lists of a spec's choices are the enums' tables (qconform/enum_table.hpp), in order.
template <class E>
std::vector<std::string> names_in_table() {
  std::vector<std::string> v;
  for (const EnumEntry<E>& e : enum_table(E{})) v.emplace_back(e.name);
  return v;
}

TEST(CaseWriter, TheSchemaListsEachSpecChoiceFromItsTable) {
  std::ifstream f(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "case.schema.json");
  const json schema = json::parse(f);
  const json& spec = schema["$defs"]["spec"]["oneOf"][1]["properties"];
  const auto listed = [&](const json& property) { return property["enum"].get<std::vector<std::string>>(); };
  EXPECT_EQ(listed(spec["order"]), names_in_table<QuantizeOrder>());
  EXPECT_EQ(listed(spec["rounding"]), names_in_table<RoundingMode>());
  EXPECT_EQ(listed(spec["clamp"]), names_in_table<Clamp>());
  EXPECT_EQ(listed(spec["nan"]), names_in_table<NanRule>());
  EXPECT_EQ(listed(spec["cast"]), names_in_table<IntCast>());
  EXPECT_EQ(listed(spec["dequantize"]["properties"]["order"]), names_in_table<DequantizeOrder>());
  EXPECT_EQ(listed(spec["accumulation"]), names_in_table<Accumulation>());
  EXPECT_EQ(listed(spec["add"]["properties"]["scheme"]), names_in_table<AddScheme>());
  EXPECT_EQ(listed(spec["add"]["properties"]["rounding"]), names_in_table<RoundingMode>());
}

// The schema's spec fields are the field tables' (cases/spec_fields.hpp), which the loader and the
// writer both use.
TEST(CaseWriter, TheSchemaListsEachSpecFieldFromItsTable) {
  std::ifstream f(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "case.schema.json");
  const json spec = json::parse(f)["$defs"]["spec"]["oneOf"][1]["properties"];
  const auto keys = [](const json& properties) {
    std::set<std::string> k;
    for (const auto& [key, _] : properties.items()) k.insert(key);
    return k;
  };
  const auto names = [](auto fields) {
    std::set<std::string> n;
    for (const auto& field : fields) n.emplace(field.name);
    return n;
  };
  std::set<std::string> top = names(quantize_fields());
  top.insert({"preset", "dequantize", "requantize", "accumulation", "qparams", "add"});
  EXPECT_EQ(keys(spec), top);
  EXPECT_EQ(keys(spec["dequantize"]["properties"]), names(dequantize_fields()));
  EXPECT_EQ(keys(spec["requantize"]["properties"]), names(requantize_fields()));
}

TEST(CaseWriter, TheSchemaListsEachOpChoiceFromItsTable) {
  std::ifstream f(fs::path(QCONFORM_SOURCE_DIR) / "cases" / "case.schema.json");
  const json defs = json::parse(f)["$defs"];
  const auto listed = [&](const json& property) { return property["enum"].get<std::vector<std::string>>(); };
  EXPECT_EQ(listed(defs["case"]["properties"]["padding_value"]), names_in_table<ConvPadding>());
  EXPECT_EQ(listed(defs["operand"]["properties"]["quantize"]), names_in_table<ActivationQuantization>());
  std::vector<std::string> layouts = names_in_table<WeightLayout>();  // one "layout" for weights and inputs
  for (const std::string& l : names_in_table<ConvLayout>()) layouts.push_back(l);
  EXPECT_EQ(listed(defs["operand"]["properties"]["layout"]), layouts);
  EXPECT_EQ(listed(defs["output_stage"]["properties"]["kind"]), names_in_table<OutputKind>());
  EXPECT_EQ(listed(defs["output_stage"]["properties"]["activation"]), names_in_table<FusedActivation>());
}

TEST(CaseWriter, QConv2dNhwcGroupsPaddingAndBias) {
  QConv2dOp c;
  std::vector<double> x(1 * 4 * 4 * 2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
  c.input.values = floats(DType::f32, {1, 4, 4, 2}, x);
  c.input.format = DType::u8;
  c.input.params.scales = {0.25};
  c.input.params.zero_points = {10};
  c.layout = ConvLayout::nhwc;
  c.weight.values = ints(DType::i8, {4, 1, 2, 2}, {1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8});
  c.weight.format = DType::i8;
  c.weight.shape = c.weight.values.shape();
  c.weight.params.scales = {0.5, 0.25, 0.125, 1.0};
  c.weight.params.axis = 0;
  c.bias = floats(DType::f32, {4}, {0.5, -0.25, 1.0, 0.0});
  c.geometry = Conv2dGeometry{2, 1, 1, 0, 1, 1, 1, 2, 2};
  c.padding = ConvPadding::quantized_zero;
  c.output.kind = OutputKind::dequantized;
  c.output.format = DType::f32;
  round_trip({make_case("nhwc_groups", c, preset("onnx"))}, "conv.json");
}

TEST(CaseWriter, WeightOnlyGemmWithMigraphxPackingAndBias) {
  WeightOnlyGemmOp w;
  w.a = floats(DType::f16, {2, 4}, {0.5, -1.0, 2.0, 0.25, 65504.0, -0.0, 1.0 / 1024, 3.0});
  const Tensor q = ints(DType::i4, {4, 2}, {1, -2, 3, -4, 5, -6, 7, -8});
  w.b.format = DType::i4;
  w.b.packing = migraphx_int4_packing();
  w.b.shape = q.shape();
  w.b.values = pack_int4(q, DType::i4, *w.b.packing);
  w.b.params.scales = {0.5, 0.25};
  w.b.params.zero_points = {0, 1};
  w.b.params.axis = 1;
  w.bias = floats(DType::f32, {2}, {1.0, -1.0});
  w.out = DType::f32;
  Case c = make_case("int4_migraphx", w, preset("onnx"));
  c.expect["*"] = {Expectation::Kind::dot_product, 0};
  round_trip({c}, "wo.json");
}

TEST(CaseWriter, Conv2dFloatAndWeightOnlyRoundTrip) {
  Conv2dOp f;
  f.input = floats(DType::f16, {1, 2, 3, 3}, {0.5, -1, 2, 0.25, 3, -0.0, 1.5, 4, -2, 1, 1, 1, 2, 2, 2, 3, 3, 3});
  f.layout = ConvLayout::nhwc;  // [1, 2, 3, 3] read as N, H, W, C: 3 channels
  f.weight.values = floats(DType::f32, {2, 3, 1, 2}, {1, -1, 0.5, 2, 0.25, -4, 1, 1, 2, 2, 3, 3});
  f.weight.shape = f.weight.values.shape();
  f.bias = floats(DType::f32, {2}, {0.5, -0.5});
  f.geometry = Conv2dGeometry{1, 2, 1, 0, 0, 1, 1, 1, 1};
  f.out = DType::f16;
  Conv2dOp w = f;  // the weight-only form: i4 weights packed, per output channel
  const Tensor q = ints(DType::i4, {2, 3, 1, 2}, {1, -2, 3, -4, 5, -6, 7, -8, 0, 1, 2, 3});
  w.weight.format = DType::i4;
  w.weight.packing = migraphx_int4_packing();
  w.weight.shape = q.shape();
  w.weight.values = pack_int4(q, DType::i4, *w.weight.packing);
  w.weight.params.scales = {0.5, 0.25};
  w.weight.params.zero_points = {0, 1};
  w.weight.params.axis = 0;
  Case cf = make_case("float_conv", f, preset("onnx")), cw = make_case("weight_only_conv", w, preset("onnx"));
  cf.expect["*"] = {Expectation::Kind::dot_product, 0};
  cw.expect["*"] = {Expectation::Kind::dot_product, 0};
  round_trip({cf, cw}, "conv2d.json");
}

TEST(CaseWriter, EveryPresetRoundTripsAsItsName) {
  for (const Spec& s : presets()) {
    SCOPED_TRACE(s.name);
    const json j = spec_to_json(s);
    ASSERT_TRUE(j.is_string());
    EXPECT_TRUE(same_numerics(parse_spec(j.get<std::string>(), "test"), s));
  }
}

TEST(CaseWriter, OverriddenPresetsWithAHalfInputPathRoundTrip) {
  // A preset with its own half-input quantize path: an override must change both paths alike, as
  // the loader applies it; the writer finds the object that reproduces both.
  int with_half_path = 0;
  for (const Spec& p : presets()) {
    if (!p.quantize_half_input) continue;
    ++with_half_path;
    SCOPED_TRACE(p.name);
    const Spec s = parse_spec(json{{"preset", p.name}, {"rounding", "rtz"}, {"accumulation", "int64"}}.dump(), "test");
    EXPECT_TRUE(same_numerics(parse_spec(spec_to_json(s).dump(), "test"), s));
  }
  EXPECT_GT(with_half_path, 0);  // ort-cpu has one
}

TEST(CaseWriter, WhatTheFormatCannotExpressIsAnError) {
  QuantizeOp q;
  q.x = bits(DType::f16, {2}, {0x3C00, 0xFE01});  // a negative f16 NaN with a payload
  q.params.scales = {1.0};
  q.out = DType::i8;
  const Case c = make_case("f16_nan_payload", q, preset("onnx"));
  EXPECT_THROW(case_to_json(c), InputError);
  // The escape hatch writes the loader's NaN: the oracle gives the same answer either way.
  const json j = case_to_json(c, WriteOptions{true});
  EXPECT_EQ(j["input"]["data"][1], "nan");

  QuantizeOp s;
  s.x = bits(DType::f32, {1}, {0x7F800001u});  // signalling
  s.params.scales = {1.0};
  EXPECT_THROW(case_to_json(make_case("snan", s, preset("onnx"))), InputError);

  const Case dup = make_case("same", QuantizeOp{floats(DType::f32, {1}, {1.0}), s.params, DType::i8}, preset("onnx"));
  EXPECT_THROW(save_cases(temp_file("dup.json"), "s", {dup, dup}), InputError);
  EXPECT_FALSE(fs::exists(temp_file("dup.json")));

  QGemmOp g;  // high nibble first, wrapping out-of-range values: no library packs so, no name
  g.a.values = ints(DType::u8, {1, 2}, {1, 2});
  g.a.params.scales = {1.0};
  const Tensor w = ints(DType::i4, {2, 1}, {1, -1});
  g.b.format = DType::i4;
  g.b.packing = Int4Packing{NibbleOrder::high_first, std::nullopt, OddLength::pad, OutOfRange::wrap};
  g.b.shape = w.shape();
  g.b.values = pack_int4(w, DType::i4, *g.b.packing);
  g.b.params.scales = {1.0};
  try {
    case_to_json(make_case("ort_packing", g, preset("onnx")));
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.packing"), std::string::npos) << e.what();
  }
}

TEST(CaseWriter, FiniteValuesAreJsonNumbersAndSpecialsAreStrings) {
  const json t = tensor_to_json(bits(DType::f32, {4}, {0x3F000000u, 0x80000000u, 0xFF800000u, 0xFFC00000u}), "x");
  EXPECT_EQ(t["dtype"], "f32");
  EXPECT_EQ(t["shape"], json::array({4}));
  EXPECT_EQ(t["data"][0].get<double>(), 0.5);
  EXPECT_TRUE(std::signbit(t["data"][1].get<double>()));
  EXPECT_EQ(t["data"][2], "-inf");
  EXPECT_EQ(t["data"][3], "-nan");
}

// The same bits, except that any NaN matches any NaN (the suites' exhaustive f16/bf16 inputs hold
// NaN patterns the format can only write as the loader's NaN).
bool same_bits_up_to_nan(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const bool nan = is_float(a.dtype()) && std::isnan(a.get_double(i));
    if (nan ? !std::isnan(b.get_double(i)) : a.bits(i) != b.bits(i)) return false;
  }
  return true;
}

// Every default suite file reads back identically after writing it: real cases, every generator,
// sweeps, file-level expectations (now per case), presets and explicit specs.
TEST(CaseWriter, DefaultSuitesRoundTrip) {
  for (const auto& entry : fs::directory_iterator(fs::path(QCONFORM_SOURCE_DIR) / "cases")) {
    const fs::path p = entry.path();
    if (p.extension() != ".json" || p.filename().string().find(".schema.") != std::string::npos) continue;
    SCOPED_TRACE(p.filename().string());
    const Suite s = load_suite(p);
    const fs::path out = temp_file(p.filename().string());
    save_cases(out, s.name, s.cases, WriteOptions{true});
    const Suite back = load_suite(out);
    fs::remove(out);
    ASSERT_EQ(back.cases.size(), s.cases.size());
    for (std::size_t i = 0; i < s.cases.size(); ++i) {
      SCOPED_TRACE(s.cases[i].name);
      EXPECT_TRUE(same_bits_up_to_nan(op_input(s.cases[i].op), op_input(back.cases[i].op)));
      EXPECT_TRUE(same_numerics(s.cases[i].spec, back.cases[i].spec));
      EXPECT_EQ(case_to_json(back.cases[i], WriteOptions{true}), case_to_json(s.cases[i], WriteOptions{true}));
      // Generated operands are written as their generators, so they load as generated again.
      EXPECT_EQ(back.cases[i].generated.size(), s.cases[i].generated.size());
    }
  }
}

// ---- The file's layout -------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(CaseWriter, CaseFileTextRunsArraysOfNumbersOnLinesAndParsesBack) {
  json data = json::array();
  for (int i = 0; i < 256; ++i) data.push_back(i % 3 == 0 ? json(i * 0.125 - 16) : json(i - 128));
  data[7] = "nan(0x123)";
  data[8] = "-inf";
  data[9] = -0.0;
  const json c = {{"name", "x"},
                  {"op", "quantize"},
                  {"input", {{"dtype", "f32"}, {"shape", {16, 16}}, {"data", data}}},
                  {"scale", {0.5, 0.25}},
                  {"expect", {{"*", "exact"}}},
                  {"a", {{"generator", {{"kind", "uniform"}, {"seed", 3}}}}}};
  const json j = {{"suite", "s"}, {"cases", {c}}};
  const std::string text = case_file_text(j);
  const json back = json::parse(text);
  EXPECT_EQ(back, j);
  EXPECT_TRUE(std::signbit(back["cases"][0]["input"]["data"][9].get<double>()));
  const std::vector<std::string> lines = lines_of(text);
  for (const std::string& l : lines) EXPECT_LE(l.size(), 100u) << l;
  // 256 numbers of up to 6 characters and ", ": about 8 per 100 columns, not one a line.
  EXPECT_LT(lines.size(), 50u) << text;
  EXPECT_NE(text.find("\"scale\": [0.5, 0.25]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"expect\": {\"*\": \"exact\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"generator\": {\"kind\": \"uniform\", \"seed\": 3}"), std::string::npos) << text;
  // What a case is comes before its data; the suite before its cases.
  EXPECT_LT(text.find("\"suite\""), text.find("\"cases\""));
  EXPECT_LT(text.find("\"name\""), text.find("\"input\""));
  EXPECT_LT(text.find("\"shape\""), text.find("\"data\""));
}

// Every tensor format through save_cases' text and back: the bits given here, unchanged.
TEST(CaseWriter, EveryFormatRoundTripsBitForBit) {
  struct Values {
    DType t;
    std::vector<std::uint64_t> bits;
  };
  // -0, +-inf, the smallest and largest subnormal, the largest finite, a value, and NaNs the format
  // can write: f32/f64 quiet NaNs with sign and payload; narrower formats' canonical quiet NaN.
  const std::vector<Values> floats_ = {
      {DType::f64,
       {0x8000000000000000ull, 0x7FF0000000000000ull, 0xFFF0000000000000ull, 0x0000000000000001ull,
        0x000FFFFFFFFFFFFFull, 0x7FEFFFFFFFFFFFFFull, 0x3FB999999999999Aull, 0x7FF8000000000123ull,
        0xFFF8000000000000ull}},
      {DType::f32,
       {0x80000000u, 0x7F800000u, 0xFF800000u, 0x1u, 0x7FFFFFu, 0x7F7FFFFFu, 0x3DCCCCCDu, 0x7FC00001u, 0xFFC00000u}},
      {DType::f16, {0x8000, 0x7C00, 0xFC00, 0x0001, 0x03FF, 0x7BFF, 0x3555, 0x7E00}},
      {DType::bf16, {0x8000, 0x7F80, 0xFF80, 0x0001, 0x007F, 0x7F7F, 0x3DCD, 0x7FC0}},
      {DType::f8e4m3fn, {0x80, 0x01, 0x07, 0x7E, 0xFE, 0x33, 0x7F}},  // no inf; NaN S.1111.111
      {DType::f8e5m2, {0x80, 0x7C, 0xFC, 0x01, 0x03, 0x7B, 0x35, 0x7E}},
  };
  std::vector<Case> cases;
  for (const Values& v : floats_) {
    QuantizeOp q;
    q.x = bits(v.t, {static_cast<std::int64_t>(v.bits.size())}, v.bits);
    q.params.scales = {0.5};
    q.out = DType::i8;
    cases.push_back(make_case("quantize_" + std::string(name(v.t)), q, preset("onnx")));
  }
  struct Ints {
    DType t;
    std::vector<std::int64_t> v;
  };
  const std::vector<Ints> ints_ = {{DType::i8, {-128, 127, 0, -1}},
                                   {DType::u8, {0, 255, 128, 1}},
                                   {DType::i16, {-32768, 32767, 0, -1}},
                                   {DType::u16, {0, 65535, 1, 2}},
                                   {DType::i32, {INT32_MIN, INT32_MAX, 0, -1}},
                                   {DType::i4, {-8, 7, 0, -1}},
                                   {DType::u4, {0, 15, 8, 1}}};
  for (const Ints& i : ints_) {
    DequantizeOp d;
    d.q = ints(i.t, {4}, i.v);
    d.params.scales = {0.5};
    d.params.zero_points = {0};
    d.out = DType::f32;
    cases.push_back(make_case("dequantize_" + std::string(name(i.t)), d, preset("onnx")));
  }
  const std::vector<Case> back = round_trip(cases, "formats.json");
  ASSERT_EQ(back.size(), cases.size());
  for (std::size_t k = 0; k < floats_.size(); ++k) {
    SCOPED_TRACE(name(floats_[k].t));
    const Tensor& x = std::get<QuantizeOp>(back[k].op).x;
    for (std::size_t e = 0; e < floats_[k].bits.size(); ++e)
      EXPECT_EQ(x.bits(static_cast<std::int64_t>(e)), floats_[k].bits[e]);
  }
  for (std::size_t k = 0; k < ints_.size(); ++k) {
    SCOPED_TRACE(name(ints_[k].t));
    const Tensor& q = std::get<DequantizeOp>(back[floats_.size() + k].op).q;
    for (std::size_t e = 0; e < ints_[k].v.size(); ++e)
      EXPECT_EQ(q.get_int(static_cast<std::int64_t>(e)), ints_[k].v[e]);
  }
}

// ---- .npy side files -----------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(temp_file(name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(CaseWriter, LargeArraysGoToNpySideFilesBitForBit) {
  const TempDir dir("npy");
  // NaNs the inline format cannot hold (an f16 payload, a signalling f32 NaN, a negative bf16
  // NaN) travel as bits in a side file.
  const std::vector<std::uint64_t> f16 = {0xFE01, 0x7C01, 0x8000, 0x0001, 0x7BFF, 0x3C00};
  QuantizeOp h;
  h.x = bits(DType::f16, {2, 3}, f16);
  h.params.scales = {1.0};
  h.out = DType::i8;
  const std::vector<std::uint64_t> f32 = {0x7F800001u, 0xFFC00001u, 0x80000000u, 0x00000001u};
  QuantizeOp s;
  s.x = bits(DType::f32, {4}, f32);
  s.params.scales = {1.0};
  s.out = DType::u8;
  const std::vector<std::uint64_t> b16 = {0xFFC1, 0x3F80, 0x0001, 0x8000};
  QuantizeOp b;
  b.x = bits(DType::bf16, {4}, b16);
  b.params.scales = {1.0};
  b.out = DType::i8;
  QGemmOp g;  // packed int4 weights go out as their logical values; the 2-element bias stays inline
  g.a.values = ints(DType::u8, {1, 4}, {1, 2, 3, 4});
  g.a.params.scales = {1.0};
  const std::vector<std::int64_t> w = {-8, 7, 1, -1, 0, 3, -3, 5};
  g.b.format = DType::i4;
  g.b.packing = onnx_int4_packing();
  g.b.shape = {4, 2};
  g.b.values = pack_int4(ints(DType::i4, {4, 2}, w), DType::i4, *g.b.packing);
  g.b.params.scales = {1.0};
  g.bias = ints(DType::i32, {2}, {5, -5});
  g.output.kind = OutputKind::int32;
  g.output.format = DType::i32;
  // Names with characters a file name should not have, and two that become the same.
  const std::vector<Case> cases = {make_case("f16/nans[x=1]", h, preset("onnx")),
                                   make_case("f32 snan", s, preset("onnx")), make_case("f32_snan", s, preset("onnx")),
                                   make_case("bf16", b, preset("onnx")), make_case("gemm", g, preset("onnx"))};
  EXPECT_THROW(save_cases(dir.path / "inline.json", "writer", cases), InputError);  // the NaNs above
  const fs::path file = dir.path / "big.json";
  save_cases(file, "writer", cases, WriteOptions{false, 4});
  const json j = json::parse(read_text(file));
  EXPECT_EQ(j["cases"][0]["input"]["data"], json({{"npy", "big.f16_nans_x=1_.input.npy"}}));
  EXPECT_EQ(j["cases"][1]["input"]["data"], json({{"npy", "big.f32_snan.input.npy"}}));
  EXPECT_EQ(j["cases"][2]["input"]["data"], json({{"npy", "big.f32_snan.input.2.npy"}}));
  EXPECT_EQ(j["cases"][4]["b"]["data"], json({{"npy", "big.gemm.b.npy"}}));
  EXPECT_EQ(j["cases"][4]["bias"]["data"], json({5, -5}));
  // The side file is a plain .npy of the values: NumPy's f2, bf16 as u2 bit patterns, i4 as i1.
  const Tensor side = read_npy(dir.path / "big.f16_nans_x=1_.input.npy");
  EXPECT_EQ(side.dtype(), DType::f16);
  EXPECT_EQ(side.shape(), (Shape{2, 3}));
  for (std::size_t e = 0; e < f16.size(); ++e) EXPECT_EQ(side.bits(static_cast<std::int64_t>(e)), f16[e]);
  EXPECT_EQ(read_npy(dir.path / "big.bf16.input.npy").dtype(), DType::u16);
  EXPECT_EQ(read_npy(dir.path / "big.gemm.b.npy").dtype(), DType::i8);

  // Loaded from another working directory: the references are relative to the case file.
  const Suite back = load_suite(file);
  ASSERT_EQ(back.cases.size(), cases.size());
  const auto expect_bits = [](const Tensor& t, const std::vector<std::uint64_t>& v) {
    ASSERT_EQ(t.size(), static_cast<std::int64_t>(v.size()));
    for (std::size_t e = 0; e < v.size(); ++e) EXPECT_EQ(t.bits(static_cast<std::int64_t>(e)), v[e]) << e;
  };
  expect_bits(std::get<QuantizeOp>(back.cases[0].op).x, f16);
  EXPECT_EQ(std::get<QuantizeOp>(back.cases[0].op).x.shape(), (Shape{2, 3}));
  expect_bits(std::get<QuantizeOp>(back.cases[1].op).x, f32);
  expect_bits(std::get<QuantizeOp>(back.cases[2].op).x, f32);
  expect_bits(std::get<QuantizeOp>(back.cases[3].op).x, b16);
  const QGemmOp& gb = std::get<QGemmOp>(back.cases[4].op);
  EXPECT_TRUE(gb.b.packing.has_value());
  const Tensor logical = unpack_int4(gb.b.values, gb.b.format, gb.b.shape, *gb.b.packing);
  for (std::size_t e = 0; e < w.size(); ++e) EXPECT_EQ(logical.get_int(static_cast<std::int64_t>(e)), w[e]);
  EXPECT_EQ(gb.bias->get_int(1), -5);
}

// A case file's own {"npy": ...} data: the file must exist and hold the operand's format and shape.
TEST(CaseWriter, NpyDataIsCheckedAgainstTheOperand) {
  const TempDir dir("npy_errors");
  write_npy(dir.path / "f64.npy", floats(DType::f64, {2}, {1.0, 2.0}));
  write_npy(dir.path / "f32.npy", floats(DType::f32, {2}, {1.0, 2.0}));
  write_npy(dir.path / "nine.npy", ints(DType::i8, {2}, {9, 1}));
  const auto load = [&](const std::string& input, const std::string& op = "quantize") {
    std::ofstream(dir.path / "c.json") << R"({"suite": "s", "cases": [{"name": "c", "op": ")" << op
                                       << R"(", "scale": 1.0, "output_dtype": "i8", "input": )" << input << "}]}";
    return load_suite(dir.path / "c.json");
  };
  const auto error = [&](const std::string& input, const std::string& op = "quantize") {
    try {
      load(input, op);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(std::get<QuantizeOp>(load(R"({"dtype": "f32", "shape": [2], "data": {"npy": "f32.npy"}})").cases[0].op)
                .x.get_double(1),
            2.0);
  const std::string absolute = (dir.path / "f32.npy").string();
  EXPECT_EQ(load(R"({"dtype": "f32", "shape": [2], "data": {"npy": ")" + absolute + R"("}})").cases.size(), 1u);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [2], "data": {"npy": "none.npy"}})").find("input.data.npy"),
            std::string::npos);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [2], "data": {"npy": "f64.npy"}})").find("not the operand's f32"),
            std::string::npos);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [1, 2], "data": {"npy": "f32.npy"}})").find("not the operand's shape"),
            std::string::npos);
  EXPECT_NE(error(R"({"dtype": "i4", "shape": [2], "data": {"npy": "nine.npy"}})", "dequantize").find("outside i4"),
            std::string::npos);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [2], "data": {"npy": "f32.npy", "x": 1}})").find("input.data.x"),
            std::string::npos);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [2], "data": {"npy": 3}})").find("input.data"), std::string::npos);
  EXPECT_NE(error(R"({"dtype": "f32", "shape": [2], "data": {"npy": "."}})").find("not a regular file"),
            std::string::npos);
}

// ---- Generators kept -------------------------------------------------------------------------------

TEST(CaseWriter, GeneratedOperandsAreWrittenAsTheirGeneratorsUntilTheirValuesChange) {
  const TempDir dir("generators");
  std::ofstream(dir.path / "gen.json") << R"({"suite": "gen", "cases": [
    {"name": "uniform", "op": "quantize", "scale": 0.015625, "zero_point": 5, "output_dtype": "i8",
     "input": {"dtype": "f32", "shape": [16, 16], "generator": {"kind": "uniform", "seed": 7, "low": -2.0, "high": 2.0}}},
    {"name": "saturation", "op": "quantize", "scale": [0.25], "zero_point": -3, "output_dtype": "i8",
     "input": {"dtype": "f32", "shape": [64], "generator": {"kind": "saturation", "seed": 3}}},
    {"name": "gemm", "op": "qgemm",
     "a": {"dtype": "u8", "shape": [4, 8], "generator": {"kind": "uniform", "seed": 1, "low": 0, "high": 256},
           "scale": 0.05, "zero_point": 128},
     "b": {"dtype": "i4", "shape": [8, 3], "generator": {"kind": "uniform", "seed": 2, "low": -8, "high": 8},
           "scale": 0.5, "packing": "onnx"},
     "bias": {"dtype": "i32", "shape": [3], "data": [1, -2, 3]},
     "output": {"kind": "int32"}}]})";
  const Suite s = load_suite(dir.path / "gen.json");
  // The values, made here by the generators themselves.
  Tensor uniform(DType::f32, {16, 16});
  fill_uniform(uniform, 7, -2.0, 2.0);
  Tensor saturation(DType::f32, {64});
  fill_saturation_edges(saturation, 3, 0.25, -3, DType::i8);
  Tensor a(DType::u8, {4, 8}), b(DType::i4, {8, 3});
  fill_uniform(a, 1, 0, 256);
  fill_uniform(b, 2, -8, 8);

  const fs::path saved = dir.path / "saved.json";
  save_cases(saved, s.name, s.cases);
  const json j = json::parse(read_text(saved));
  const json& in0 = j["cases"][0]["input"];
  EXPECT_FALSE(in0.contains("data"));
  EXPECT_EQ(in0["generator"], json({{"kind", "uniform"}, {"seed", 7}, {"low", -2.0}, {"high", 2.0}}));
  // A generator's defaults from the case are written into it.
  EXPECT_EQ(j["cases"][1]["input"]["generator"],
            json({{"kind", "saturation"}, {"seed", 3}, {"scale", 0.25}, {"zero_point", -3}, {"output_dtype", "i8"}}));
  EXPECT_TRUE(j["cases"][2]["a"].contains("generator"));
  EXPECT_TRUE(j["cases"][2]["b"].contains("generator"));
  EXPECT_EQ(j["cases"][2]["bias"]["data"], json({1, -2, 3}));
  EXPECT_LT(read_text(saved).size(), 2000u);  // 256 + 64 + 32 + 24 values are not in it

  const Suite back = load_suite(saved);
  ASSERT_EQ(back.cases.size(), 3u);
  EXPECT_TRUE(same_bits(std::get<QuantizeOp>(back.cases[0].op).x, uniform));
  EXPECT_TRUE(same_bits(std::get<QuantizeOp>(back.cases[1].op).x, saturation));
  const QGemmOp& g = std::get<QGemmOp>(back.cases[2].op);
  EXPECT_TRUE(same_bits(g.a.values, a));
  EXPECT_TRUE(same_bits(unpack_int4(g.b.values, g.b.format, g.b.shape, *g.b.packing), b));

  // Changed parameters do not change what the generator makes: its defaults are its own now.
  Case rescaled = s.cases[1];
  std::get<QuantizeOp>(rescaled.op).params.scales = {0.5};
  // Changed values are written as values: one element, a gathered subset (as shrink makes), and
  // only the operand that changed.
  Case one = s.cases[0];
  Tensor& x = std::get<QuantizeOp>(one.op).x;
  x.set_double(5, x.get_double(5) == 1.5 ? 1.25 : 1.5);
  Tensor changed = x;
  Case gathered = s.cases[0];
  gathered.name = "gathered";
  Tensor sub(DType::f32, {4});
  for (std::int64_t i = 0; i < 4; ++i) sub.set_bits(i, uniform.bits(i * 3));
  std::get<QuantizeOp>(gathered.op).x = sub;
  Case gemm = s.cases[2];
  std::get<QGemmOp>(gemm.op).a.values.set_int(0, a.get_int(0) == 9 ? 10 : 9);
  const Tensor a_changed = std::get<QGemmOp>(gemm.op).a.values;
  save_cases(saved, s.name, {one, rescaled, gemm, gathered});
  const json k = json::parse(read_text(saved));
  EXPECT_FALSE(k["cases"][0]["input"].contains("generator"));
  EXPECT_TRUE(k["cases"][1]["input"].contains("generator"));
  EXPECT_FALSE(k["cases"][2]["a"].contains("generator"));
  EXPECT_TRUE(k["cases"][2]["b"].contains("generator"));
  EXPECT_FALSE(k["cases"][3]["input"].contains("generator"));
  const Suite again = load_suite(saved);
  EXPECT_TRUE(same_bits(std::get<QuantizeOp>(again.cases[0].op).x, changed));
  EXPECT_TRUE(same_bits(std::get<QuantizeOp>(again.cases[1].op).x, saturation));
  EXPECT_EQ(std::get<QuantizeOp>(again.cases[1].op).params.scales, std::vector<double>{0.5});
  EXPECT_TRUE(same_bits(std::get<QGemmOp>(again.cases[2].op).a.values, a_changed));
  EXPECT_TRUE(same_bits(std::get<QuantizeOp>(again.cases[3].op).x, sub));
}

TEST(CaseWriter, TensorDigestSeesEveryElementFormatAndShape) {
  Tensor x(DType::f16, {4, 4});
  fill_uniform(x, 1, -1.0, 1.0);
  const std::uint64_t d = tensor_digest(x);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    Tensor y = x;
    y.set_bits(i, y.bits(i) ^ 0x8000);  // the sign of one element
    EXPECT_NE(tensor_digest(y), d) << i;
  }
  Tensor reshaped(DType::f16, {2, 8});
  std::memcpy(reshaped.bytes().data(), x.bytes().data(), x.bytes().size());
  EXPECT_NE(tensor_digest(reshaped), d);
  Tensor as_bf16(DType::bf16, {4, 4});
  std::memcpy(as_bf16.bytes().data(), x.bytes().data(), x.bytes().size());
  EXPECT_NE(tensor_digest(as_bf16), d);
  EXPECT_EQ(tensor_digest(Tensor(x)), d);
}

}  // namespace
}  // namespace qc
