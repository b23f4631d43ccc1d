// Requests for the hip backend's tests, shared by the host tests (the plan on the CPU executor)
// and the GPU tests (the backend on a device): quantized GEMMs of odd shapes (M, N, K not multiples
// of either tile, K = 1, K in the thousands, batched), convolutions of every geometry feature, and
// the elementwise ops. The data come from the project's seeded generator (qc::SplitMix64), the
// expected values from the oracle (qc::evaluate under the variant's claimed preset), never from
// the kernels.
#pragma once

#include "backends/hip/backend.hpp"
#include "cases/case.hpp"
#include "cases/generators.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/int4.hpp"
#include "oracles/presets.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/requantize.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/ops.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace qc::gpu::test {

// The seeded generator with the two draws the tests take: an integer in [lo, hi], a real in [0, 1).
struct Rng {
  SplitMix64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  std::uint64_t next() { return g.next(); }
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  double unit() { return g.uniform01(); }
};

inline Tensor random_ints(DType t, const Shape& shape, Rng& r, std::int64_t lo, std::int64_t hi) {
  Tensor x(t, shape);
  for (std::int64_t i = 0; i < x.size(); ++i) x.set_int(i, r.uniform(lo, hi));
  return x;
}

// f32 values: a third exact ties (k + 1/2) * s, a third within a few ulps of one, the rest uniform
// in [lo, hi]; every value a float.
inline Tensor random_floats(const Shape& shape, Rng& r, double lo, double hi, float s) {
  Tensor x(DType::f32, shape);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    float v;
    const auto k = static_cast<float>(r.uniform(static_cast<std::int64_t>(lo / s), static_cast<std::int64_t>(hi / s)));
    switch (r.uniform(0, 2)) {
      case 0:
        v = (k + 0.5f) * s;
        break;
      case 1:
        v = std::nextafter((k + 0.5f) * s, r.uniform(0, 1) ? INFINITY : -INFINITY);
        break;
      default:
        v = static_cast<float>(lo + (hi - lo) * r.unit());
    }
    x.set_double(i, v);
  }
  return x;
}

inline QuantParams per_tensor(double scale, std::int64_t zp) {
  QuantParams p;
  p.scales = {static_cast<float>(scale)};
  p.zero_points = {zp};
  return p;
}
inline QuantParams per_channel(std::int64_t n, int axis, Rng& r, std::int64_t zp_lo, std::int64_t zp_hi) {
  QuantParams p;
  p.axis = axis;
  for (std::int64_t i = 0; i < n; ++i) {
    p.scales.push_back(static_cast<float>(0.001 + 0.02 * r.unit()));
    p.zero_points.push_back(r.uniform(zp_lo, zp_hi));
  }
  return p;
}

struct NamedOp {
  std::string name;
  OpRequest op;
};
// GoogleTest prints a parameter by its name (not its bytes).
inline void PrintTo(const NamedOp& c, std::ostream* os) { *os << c.name; }

// ---- GEMM ---------------------------------------------------------------------------------------

struct GemmSpec {
  std::int64_t M = 1, K = 1, N = 1;
  Shape batch{};            // leading dimensions of A
  DType a = DType::u8;      // the activation's quantized format
  bool a_float = true;      // float values quantized by the kernels, or integers given
  DType b = DType::i8;      // i8, u8, i4, u4
  bool b_packed = false;    // int4 packed two per byte (ONNX order)
  bool b_float = false;     // float weights quantized by the kernels (i8/u8 only)
  bool k_by_n = true;       // B is [K, N], else [N, K]
  bool per_channel = true;  // weight scales and zero points per output column
  qc::OutputKind out = qc::OutputKind::requantized;
  DType out_format = DType::u8;
  bool bias_i32 = false, bias_f32 = false;
  FusedActivation activation = FusedActivation::none;
};

inline QGemmOp make_gemm(const GemmSpec& g, std::uint64_t seed) {
  Rng r(seed);
  QGemmOp op;
  Shape as = g.batch;
  as.push_back(g.M);
  as.push_back(g.K);
  const std::int64_t za = g.a == DType::u8 ? 128 + r.uniform(-3, 3) : r.uniform(-3, 3);
  const float sa = 0.05f;
  op.a.format = g.a;
  op.a.params = per_tensor(sa, za);
  op.a.values = g.a_float ? random_floats(as, r, -6.0, 6.0, sa) : random_ints(g.a, as, r, int_min(g.a), int_max(g.a));
  const Shape bs = g.k_by_n ? Shape{g.K, g.N} : Shape{g.N, g.K};
  const int n_axis = g.k_by_n ? 1 : 0;
  const std::int64_t mid = g.b == DType::u8 ? 128 : g.b == DType::u4 ? 8 : 0;
  op.b.format = g.b;
  op.b.params = g.per_channel ? per_channel(g.N, n_axis, r, mid - 3, mid + 3) : per_tensor(0.01, mid + 1);
  if (g.b_float) {
    op.b.values = random_floats(bs, r, -1.0, 1.0, 0.01f);
  } else {
    Tensor v = random_ints(g.b, bs, r, int_min(g.b), int_max(g.b));
    if (g.b_packed) {
      op.b.packing = onnx_int4_packing();
      op.b.shape = bs;
      op.b.values = pack_int4(v, g.b, *op.b.packing);
    } else {
      op.b.values = v;
    }
  }
  op.b_layout = g.k_by_n ? WeightLayout::k_by_n : WeightLayout::n_by_k;
  if (g.bias_i32) op.bias = random_ints(DType::i32, {g.N}, r, -5000, 5000);
  if (g.bias_f32) {
    Tensor b(DType::f32, {g.N});
    for (std::int64_t i = 0; i < g.N; ++i) b.set_double(i, static_cast<float>(r.unit() * 4 - 2));
    op.bias = b;
  }
  op.output.kind = g.out;
  op.output.format = g.out == qc::OutputKind::int32 ? DType::i32 : g.out_format;
  if (g.out == qc::OutputKind::requantized) {
    op.output.scale = static_cast<float>(0.1);
    op.output.zero_point = g.out_format == DType::u8 ? 100 : 3;
    if (g.activation != FusedActivation::none)
      op.output.clamp = fused_activation_range(g.activation, 0.1f, op.output.zero_point, g.out_format);
  }
  return op;
}

// GEMMs whose shapes miss both tiles (dp4a 64 x 64 x 32, mma 128 x 128 x 64) in every way.
inline std::vector<NamedOp> gemm_cases() {
  std::vector<NamedOp> v;
  auto add = [&](std::string name, GemmSpec g) { v.push_back({std::move(name), make_gemm(g, 1000 + v.size())}); };
  add("1x1x1", {.M = 1, .K = 1, .N = 1});
  add("K1_int32", {.M = 5, .K = 1, .N = 9, .out = qc::OutputKind::int32});
  add("odd_3x7x5_s8_nk", {.M = 3, .K = 7, .N = 5, .a = DType::i8, .k_by_n = false, .out_format = DType::i8});
  add("65x33x67_f32_bias",
      {.M = 65, .K = 33, .N = 67, .out = qc::OutputKind::dequantized, .out_format = DType::f32, .bias_f32 = true});
  add("130x65x129_relu6", {.M = 130, .K = 65, .N = 129, .bias_i32 = true, .activation = FusedActivation::relu6});
  add("129x127x131_f16",
      {.M = 129, .K = 127, .N = 131, .k_by_n = false, .out = qc::OutputKind::dequantized, .out_format = DType::f16});
  add("large_K_4099", {.M = 2, .K = 4099, .N = 3, .out = qc::OutputKind::int32});
  // 2 x 2 mma tiles (128 x 256) with 5 K steps: every stage of the 4-deep pipeline reused, partial tiles.
  add("200x300x260_pipeline", {.M = 200, .K = 300, .N = 260, .bias_i32 = true});
  add("batched_2x3", {.M = 3, .K = 10, .N = 4, .batch = {2}, .out_format = DType::i8});
  add("u8_weights_ints", {.M = 66, .K = 70, .N = 64, .a_float = false, .b = DType::u8, .out = qc::OutputKind::int32});
  add("packed_i4", {.M = 7, .K = 9, .N = 6, .b = DType::i4, .b_packed = true});
  add("packed_u4_nk", {.M = 8,
                       .K = 12,
                       .N = 5,
                       .b = DType::u4,
                       .b_packed = true,
                       .k_by_n = false,
                       .out = qc::OutputKind::dequantized,
                       .out_format = DType::f32});
  add("float_weights", {.M = 9,
                        .K = 40,
                        .N = 11,
                        .b_float = true,
                        .per_channel = false,
                        .out = qc::OutputKind::dequantized,
                        .out_format = DType::f32});
  add("i16_output", {.M = 64, .K = 64, .N = 64, .a = DType::i8, .out_format = DType::i16});
  return v;
}

// Accumulators that leave int32: K = 70000 products of 255 * (-128) sum to -2.28e9, which the
// int32 accumulator wraps (ONNX: "accumulation may overflow if and only if in 32 bits").
inline NamedOp int32_wrap_case() {
  QGemmOp op;
  const std::int64_t K = 70000;
  op.a.values = Tensor(DType::u8, {2, K});
  op.a.params = per_tensor(1.0, 0);
  for (std::int64_t i = 0; i < op.a.values.size(); ++i) op.a.values.set_int(i, i < K ? 255 : 200);
  op.b.values = Tensor(DType::i8, {K, 2});
  op.b.format = DType::i8;
  op.b.params = per_tensor(1.0, 0);
  for (std::int64_t i = 0; i < op.b.values.size(); ++i) op.b.values.set_int(i, i % 2 == 0 ? -128 : 127);
  op.output.kind = qc::OutputKind::int32;
  op.output.format = DType::i32;
  return {"int32_wrap_K70000", op};
}

// ---- Convolution ------------------------------------------------------------------------------

struct ConvSpec {
  std::int64_t n = 1, c = 3, h = 7, w = 6, oc = 4, kh = 3, kw = 3;
  Conv2dGeometry geometry{};
  ConvLayout layout = ConvLayout::nhwc;
  ConvPadding padding = ConvPadding::real_zero;
  DType a = DType::u8;
  bool per_channel = true;
  qc::OutputKind out = qc::OutputKind::requantized;
  DType out_format = DType::u8;
  bool bias_i32 = true;
};

inline QConv2dOp make_conv(const ConvSpec& c, std::uint64_t seed) {
  Rng r(seed);
  QConv2dOp op;
  op.layout = c.layout;
  op.padding = c.padding;
  op.geometry = c.geometry;
  const Shape is = c.layout == ConvLayout::nhwc ? Shape{c.n, c.h, c.w, c.c} : Shape{c.n, c.c, c.h, c.w};
  const float sa = 0.05f;
  op.input.format = c.a;
  op.input.params = per_tensor(sa, c.a == DType::u8 ? 121 : -4);
  op.input.values = random_floats(is, r, -5.0, 5.0, sa);
  const Shape ws{c.oc, c.c / c.geometry.groups, c.kh, c.kw};
  op.weight.format = DType::i8;
  op.weight.params = c.per_channel ? per_channel(c.oc, 0, r, -2, 2) : per_tensor(0.01, 1);
  op.weight.values = random_ints(DType::i8, ws, r, -128, 127);
  if (c.bias_i32) op.bias = random_ints(DType::i32, {c.oc}, r, -3000, 3000);
  op.output.kind = c.out;
  op.output.format = c.out == qc::OutputKind::int32 ? DType::i32 : c.out_format;
  if (c.out == qc::OutputKind::requantized) {
    op.output.scale = static_cast<float>(0.25);
    op.output.zero_point = c.out_format == DType::u8 ? 90 : -2;
  }
  return op;
}

inline std::vector<NamedOp> conv_cases() {
  std::vector<NamedOp> v;
  auto add = [&](std::string name, ConvSpec c) { v.push_back({std::move(name), make_conv(c, 2000 + v.size())}); };
  add("nhwc_3x3_pad1", {.geometry = {.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1}});
  add("nchw_stride2_asym_pad",
      {.h = 9,
       .w = 8,
       .geometry = {.stride_h = 2, .stride_w = 2, .pad_top = 0, .pad_left = 1, .pad_bottom = 2, .pad_right = 0},
       .layout = ConvLayout::nchw,
       .out = qc::OutputKind::int32});
  add("dilation2_quantized_zero_pad",
      {.h = 8,
       .w = 8,
       .geometry = {.pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2, .dilation_h = 2, .dilation_w = 2},
       .padding = ConvPadding::quantized_zero,
       .out = qc::OutputKind::dequantized,
       .out_format = DType::f32});
  add("groups2_s8", {.c = 4,
                     .oc = 6,
                     .geometry = {.pad_top = 1, .pad_left = 1, .groups = 2},
                     .a = DType::i8,
                     .out_format = DType::i8});
  add("depthwise_nchw", {.n = 2,
                         .c = 5,
                         .oc = 5,
                         .geometry = {.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .groups = 5},
                         .layout = ConvLayout::nchw,
                         .per_channel = false,
                         .out = qc::OutputKind::dequantized,
                         .out_format = DType::f16});
  add("1x1_many_pixels", {.n = 2, .c = 70, .h = 11, .w = 13, .oc = 67, .kh = 1, .kw = 1});
  return v;
}

// ---- Elementwise ------------------------------------------------------------------------------

inline std::vector<NamedOp> elementwise_cases() {
  std::vector<NamedOp> v;
  Rng r(77);
  {  // per-axis f32 quantize to i8 (axis 1 of [3, 5, 7])
    QuantizeOp q;
    q.x = random_floats({3, 5, 7}, r, -3.0, 3.0, 0.02f);
    q.params = per_channel(5, 1, r, -4, 4);
    q.out = DType::i8;
    v.push_back({"quantize_per_axis", q});
  }
  {  // blocked f16 quantize to u4 (blocks of 4 along the last axis of [6, 10], the last block short)
    QuantizeOp q;
    Tensor x(DType::f16, {6, 10});
    for (std::int64_t i = 0; i < x.size(); ++i)
      x.set_bits(i, double_to_float_bits(DType::f16, (r.unit() * 2 - 1) * 0.2));
    q.x = x;
    q.params.axis = 1;
    q.params.block_size = 4;
    q.params.scale_dtype = DType::f16;
    for (int i = 0; i < 18; ++i) {
      q.params.scales.push_back(
          float_bits_to_double(DType::f16, double_to_float_bits(DType::f16, 0.01 + 0.02 * r.unit())));
      q.params.zero_points.push_back(r.uniform(5, 10));
    }
    q.out = DType::u4;
    v.push_back({"quantize_blocked_f16", q});
  }
  {  // specials and saturation
    QuantizeOp q;
    q.x = Tensor(DType::f32, {8});
    const double xs[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 0.0, -0.0, 1e-40};
    for (int i = 0; i < 8; ++i) q.x.set_double(i, xs[i]);
    q.params = per_tensor(0.1, 7);
    q.out = DType::i8;
    v.push_back({"quantize_specials", q});
  }
  {  // per-axis dequantize of every i8 value, f16 output
    DequantizeOp d;
    d.q = Tensor(DType::i8, {256, 2});
    for (std::int64_t i = 0; i < d.q.size(); ++i) d.q.set_int(i, -128 + i / 2);
    d.params = per_channel(2, 1, r, -5, 5);
    d.out = DType::f16;
    v.push_back({"dequantize_per_axis_f16", d});
  }
  {  // f16 scale, f32 output
    DequantizeOp d;
    d.q = Tensor(DType::u8, {256});
    for (std::int64_t i = 0; i < 256; ++i) d.q.set_int(i, i);
    d.params.scale_dtype = DType::f16;
    d.params.scales = {0.0999755859375};
    d.params.zero_points = {131};
    d.out = DType::f32;
    v.push_back({"dequantize_f16_scale", d});
  }
  {  // per-channel requantize with per-channel zero points, near ties
    RequantizeOp rq;
    rq.acc = random_ints(DType::i32, {4, 64}, r, -20000, 20000);
    rq.params.input_scale = static_cast<float>(0.05);
    rq.params.weight_scales = {static_cast<float>(0.01), static_cast<float>(0.02), static_cast<float>(0.005),
                               static_cast<float>(0.013)};
    rq.params.axis = 0;
    rq.params.output_scale = static_cast<float>(0.1);
    rq.params.output_zero_points = {0, 5, -5, 10};
    rq.out = DType::i8;
    v.push_back({"requantize_per_channel", rq});
  }
  return v;
}

// ---- Comparison ---------------------------------------------------------------------------------

// The elements where `out` differs from the oracle's value under `preset` (elements the preset
// leaves open are not compared); the first few for the message.
struct Mismatches {
  std::int64_t count = 0;
  std::string first;
};
inline Mismatches compare_to_claim(const OpRequest& op, const Tensor& out, const std::string& preset) {
  Mismatches m;
  const Reference ref = evaluate(op, *find_preset(preset));
  if (out.dtype() != ref.expected.dtype() || out.shape() != ref.expected.shape()) {
    m.count = -1;
    m.first = "dtype/shape differ";
    return m;
  }
  for (std::int64_t i = 0; i < out.size(); ++i) {
    if (!ref.specified[static_cast<std::size_t>(i)]) continue;
    if (out.bits(i) != ref.expected.bits(i)) {
      if (++m.count <= 3)
        m.first += " [" + std::to_string(i) + "] got bits " + std::to_string(out.bits(i)) + " expected " +
                   std::to_string(ref.expected.bits(i));
    }
  }
  return m;
}

// ---- The default suites --------------------------------------------------------------------------

// The default suites (cases/*.json of the source tree) through the runner, with one `Standin(v)`
// backend per variant: what `qconform run` reports for the variants if they compute as the
// stand-in does (the claimed preset, or the kernels' code on the CPU executor).
template <class Standin>
RunReport run_default_suites_as(const std::filesystem::path& source_dir) {
  const std::vector<Suite> suites = load_suites({source_dir / "cases"});
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<Backend*> backends;
  for (HipVariant v : all_hip_variants()) {
    owned.push_back(std::make_unique<Standin>(v));
    backends.push_back(owned.back().get());
  }
  return run_cases(suites, backends, RunOptions{});
}

}  // namespace qc::gpu::test
