// oneDNN 2.6 (the library itself, libdnnl) as a qconform peer backend, through the C ABI plugin route:
// `qconform run --plugin libqconform_onednn.so --backend onednn`.
//
// Each request is mapped to the oneDNN 2.x primitives a oneDNN user would call, with the scales formed
// the way the 2.x API asks for them (an "output scale" the user multiplies together in f32):
//   quantize     reorder f32 -> s8/u8 with output scales alpha = 1.0f / s and a dst zero point
//   dequantize   reorder s8/u8/s32 -> f32 with output scales s and a src zero point
//   requantize   reorder s32 -> s8/u8 with output scales m = (s_in * s_w) / s_out (f32) and a dst zero point
//   qgemm        matmul u8/s8 x s8 (src/weights/dst zero points, per-N output scales), an f32 A or B first
//                quantized by the quantize reorder above
//   qconv2d      convolution u8/s8 x s8 (src/dst zero points, per-OC output scales)
// What oneDNN 2.6 then computes, with the source of each step, is written out in docs/peers.md
// and next to the code that depends on it. Requests 2.6 cannot express are refused by supports() with
// the reason (oneDNN's own "could not create a primitive descriptor" included), never run approximately.
#include <qconform/error.hpp>
#include <qconform/plugin.hpp>

#include <dnnl.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using mdt = dnnl::memory::data_type;
using mtag = dnnl::memory::format_tag;
using qc::DType;

// A request oneDNN 2.6 cannot express (the message is supports()' reason).
struct Unsupported {
  std::string reason;
};

[[noreturn]] void refuse(const std::string& why) { throw Unsupported{why}; }

std::string dname(DType t) { return std::string(qc::name(t)); }

// qconform formats as oneDNN 2.6 data types (dnnl_types.h, dnnl_data_type_t): 2.6 has no 16-bit or
// 4-bit integers, no f64 and no f8.
std::optional<mdt> to_dnnl(DType t) {
  switch (t) {
    case DType::f32:
      return mdt::f32;
    case DType::f16:
      return mdt::f16;
    case DType::bf16:
      return mdt::bf16;
    case DType::i32:
      return mdt::s32;
    case DType::i8:
      return mdt::s8;
    case DType::u8:
      return mdt::u8;
    default:
      return std::nullopt;
  }
}

mdt need_dnnl(DType t, const std::string& what) {
  if (auto d = to_dnnl(t)) return *d;
  refuse(what + ": oneDNN 2.6 has no " + dname(t) + " data type (dnnl_data_type_t: f16, bf16, f32, s32, s8, u8)");
}

// oneDNN 2.x scales are f32 (primitive_attr::set_output_scales takes std::vector<float>): a scale that is
// not an f32 value cannot be handed over.
float f32_scale(double s, const std::string& what) {
  const auto f = static_cast<float>(s);
  if (static_cast<double>(f) != s)
    refuse(what + ": oneDNN 2.x scales are f32; " + std::to_string(s) + " is not an f32 value");
  return f;
}

// oneDNN 2.6 zero points of reorders, matmul and convolution are one value per tensor in practice (the
// reorders and brgemm/jit kernels read DEFINE_ZERO_POINT_VALUE, a single value): a per-channel list is
// accepted only when all its values agree.
std::int32_t common_zero_point(const qc::QuantParams& p, const std::string& what) {
  if (p.zero_points.empty()) return 0;
  for (auto z : p.zero_points)
    if (z != p.zero_points[0])
      refuse(what +
             ": per-channel zero points; oneDNN 2.6 takes one zero point per tensor (primitive_attr::"
             "set_zero_points with a constant list and a mask other than 0 fails: \"could not set zero points "
             "primitive attribute\")");
  return static_cast<std::int32_t>(p.zero_points[0]);
}

int norm_axis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// The failure of a primitive-descriptor creation as a reason: oneDNN found no implementation.
[[noreturn]] void refuse_dnnl(const std::string& what, const dnnl::error& e) {
  refuse(what + ": oneDNN 2.6 has no implementation (" + e.what() + ")");
}

class Engine {
 public:
  Engine() : eng(dnnl::engine::kind::cpu, 0), strm(eng) {}
  dnnl::engine eng;
  mutable dnnl::stream strm;  // wait() is non-const in dnnl.hpp; a stream is a handle
};

// Tensor storage handed to oneDNN as a memory object. qc::Tensor stores every 8/16/32-bit format in
// its natural width, row-major, which is oneDNN's plain layout for the same dims.
memory wrap(const Engine& e, const memory::desc& md, qc::Tensor& t) { return memory(md, e.eng, t.bytes().data()); }

// ---- Reorders: quantize, dequantize, requantize --------------------------------------------------

// One reorder src -> dst over `x` viewed as [outer, C, inner] (C the parameters' axis) or [n]: scales
// per C (mask 1 << 1) or common (mask 0), and an optional src or dst zero point (one per tensor).
//
// What oneDNN 2.6 computes (x64, the jit:uni reorder it picks for these plain layouts; src/cpu/x64/
// jit_uni_reorder.cpp, jit_single_blk_kernel_t / jit_uni_reorder_kernel_f32_t::process_unroll_tr8x8 and
// process_direct_copy... here the generic process_unroll path): convert src to f32, subtract the src
// zero point in f32 (uni_vsubps), multiply by the scale (uni_vmulps), add the dst zero point in f32
// (uni_vaddps), saturate in f32 (jit_generator::saturate_f32: vmaxps(x, 0) for u8, then
// vminps(x, qmax); no lower clamp for s8: vcvtps2dq's 0x80000000 saturates in vpmovsdb), vcvtps2dq
// (MXCSR round to nearest even), vpmovsdb / vpmaxsd+vpmovusdb. The reference simple:any reorder
// (src/cpu/reorder/simple_reorder.hpp, spec::reference) does the same in C: f = scale * ((float)i - i0)
// + o0, then cpu/simple_q10n.hpp saturate_and_round (mxcsr_cvt, ties to even).
struct ReorderSpec {
  DType src, dst;
  qc::Shape shape;
  std::optional<int> axis;    // normalised; nullopt: common scale
  std::vector<float> scales;  // one, or one per channel along axis
  std::int32_t src_zp = 0, dst_zp = 0;
};

memory::dims reorder_dims(const ReorderSpec& r) {
  const std::int64_t n = qc::numel(r.shape);
  if (!r.axis) return {n};
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < static_cast<int>(r.shape.size()); ++i) {
    if (i < *r.axis) outer *= r.shape[i];
    if (i > *r.axis) inner *= r.shape[i];
  }
  return {outer, r.shape[*r.axis], inner};
}

dnnl::reorder::primitive_desc reorder_pd(const Engine& e, const ReorderSpec& r, const std::string& what) {
  const mdt s = need_dnnl(r.src, what), d = need_dnnl(r.dst, what);
  const memory::dims dims = reorder_dims(r);
  const mtag tag = dims.size() == 1 ? mtag::a : mtag::abc;
  dnnl::primitive_attr attr;
  attr.set_output_scales(r.axis ? 1 << 1 : 0, r.scales);
  if (r.src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {r.src_zp});
  if (r.dst_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {r.dst_zp});
  try {
    return dnnl::reorder::primitive_desc(e.eng, memory::desc(dims, s, tag), e.eng, memory::desc(dims, d, tag), attr);
  } catch (const dnnl::error& err) {
    refuse_dnnl(what + " (reorder " + dname(r.src) + " -> " + dname(r.dst) + ")", err);
  }
}

qc::Tensor run_reorder(const Engine& e, const ReorderSpec& r, const qc::Tensor& x, const std::string& what) {
  const auto pd = reorder_pd(e, r, what);
  qc::Tensor in = x, out(r.dst, r.shape);
  if (qc::numel(r.shape) == 0) return out;  // oneDNN rejects zero-sized reorders; there is nothing to convert
  memory src = wrap(e, pd.src_desc(), in), dst = wrap(e, pd.dst_desc(), out);
  dnnl::reorder(pd).execute(e.strm, src, dst);
  e.strm.wait();
  return out;
}

// The scale layout of QuantParams for a reorder: per tensor or per axis (blocked is not expressible:
// a 2.x output-scale mask selects whole dimensions).
void set_scale_axis(ReorderSpec& r, const qc::QuantParams& p, const std::string& what) {
  switch (p.granularity()) {
    case qc::Granularity::per_tensor:
      break;
    case qc::Granularity::per_axis:
      r.axis = norm_axis(*p.axis, static_cast<int>(r.shape.size()));
      break;
    case qc::Granularity::blocked:
      refuse(what + ": blocked scales; oneDNN 2.x output scales vary along whole dimensions (a mask), not blocks");
  }
}

// Quantize x with p into `out`: the 2.x user passes alpha = 1.0f / s, computed in f32 (the API has no
// division: the reorder multiplies by its output scale).
ReorderSpec quantize_spec(const qc::Tensor& x, const qc::QuantParams& p, DType out, const std::string& what) {
  ReorderSpec r{x.dtype(), out, x.shape(), std::nullopt, {}, 0, 0};
  need_dnnl(x.dtype(), what);
  if (out != DType::i8 && out != DType::u8 && out != DType::i32)
    refuse(what + ": oneDNN 2.6 has no " + dname(out) + " integer data type (s8, u8, s32)");
  set_scale_axis(r, p, what);
  for (double s : p.scales) r.scales.push_back(1.0f / f32_scale(s, what));
  r.dst_zp = common_zero_point(p, what);
  return r;
}

ReorderSpec dequantize_spec(const qc::DequantizeOp& d) {
  const std::string what = "dequantize";
  ReorderSpec r{d.q.dtype(), d.out, d.q.shape(), std::nullopt, {}, 0, 0};
  if (!qc::is_float(d.out)) refuse(what + ": the output is a float format");
  set_scale_axis(r, d.params, what);
  for (double s : d.params.scales) r.scales.push_back(f32_scale(s, what));
  r.src_zp = common_zero_point(d.params, what);
  return r;
}

// The requantize multiplier as a 2.x user forms it for the reorder's output scale: (s_in * s_w) / s_out,
// each operation in f32 (as for ONNX Runtime's ComputeOutputScale; oneDNN 2.x leaves it to the user).
float requantize_multiplier(float s_in, float s_w, float s_out) {
  const float prod = s_in * s_w;
  return prod / s_out;
}

ReorderSpec requantize_spec(const qc::RequantizeOp& q) {
  const std::string what = "requantize";
  const auto& p = q.params;
  ReorderSpec r{q.acc.dtype(), q.out, q.acc.shape(), std::nullopt, {}, 0, 0};
  if (q.out != DType::i8 && q.out != DType::u8 && q.out != DType::i32)
    refuse(what + ": oneDNN 2.6 has no " + dname(q.out) + " integer data type (s8, u8, s32)");
  if (p.weight_scales.size() > 1 || p.output_zero_points.size() > 1) {
    if (!p.axis) refuse(what + ": per-channel parameters without an axis");
    r.axis = norm_axis(*p.axis, static_cast<int>(r.shape.size()));
  }
  const float s_in = f32_scale(p.input_scale, what), s_out = f32_scale(p.output_scale, what);
  for (double s : p.weight_scales) r.scales.push_back(requantize_multiplier(s_in, f32_scale(s, what), s_out));
  qc::QuantParams zps;
  zps.zero_points = p.output_zero_points;
  r.dst_zp = common_zero_point(zps, what);
  if (r.axis && p.weight_scales.size() == 1)  // one multiplier broadcast over the channels
    r.axis.reset();
  return r;
}

// ---- Matmul and convolution ---------------------------------------------------------------------

// An integer operand ready for oneDNN: the values (quantized by the quantize reorder when they came as
// floats) with one zero point.
struct IntOperand {
  qc::Tensor q;
  std::int32_t zp = 0;
};

// `execute` false (supports()): only check that the reorder exists.
IntOperand int_operand(const Engine& e, bool execute, const qc::Tensor& values, DType format, const qc::QuantParams& p,
                       const std::string& what) {
  IntOperand o;
  if (qc::is_float(values.dtype())) {
    if (format != DType::i8 && format != DType::u8)
      refuse(what + ": quantizes to " + dname(format) + "; oneDNN 2.6 int8 primitives take s8/u8");
    const ReorderSpec r = quantize_spec(values, p, format, what + " quantize");
    if (execute)
      o.q = run_reorder(e, r, values, what + " quantize");
    else {
      reorder_pd(e, r, what + " quantize");
      o.q = qc::Tensor(format, values.shape());
    }
  } else {
    if (values.dtype() != DType::i8 && values.dtype() != DType::u8)
      refuse(what + ": " + dname(values.dtype()) + " values; oneDNN 2.6 int8 primitives take s8/u8");
    o.q = values;
  }
  o.zp = common_zero_point(p, what);
  return o;
}

// The output stage shared by matmul and convolution, as 2.x primitive attributes. oneDNN 2.6 computes
// (src/cpu/x64/brgemm/jit_brgemm_kernel.cpp, store_accumulators_apply_post_ops; the jit x8s8s32x
// convolution kernels and ref_matmul_int8.cpp / ref_convolution_int8.cpp the same):
//   int32 acc (zero-point compensation added in int32) -> vcvtdq2ps -> + bias (f32) -> * output scale
//   -> post-ops -> + dst zero point (f32) -> saturate_f32 -> vcvtps2dq (ties to even) -> s8/u8.
// So a requantized output needs the multiplier m = s_a * s_b / s_out formed by the user, and a fused
// clamp [lo, hi] becomes an eltwise clip post-op on [lo - zp, hi - zp] (before the zero point is added).
struct OutputAttr {
  dnnl::primitive_attr attr;
  mdt dst;
  bool float_bias_post_op = false;
};

OutputAttr output_attr(const qc::OutputStage& out, float s_a, const std::vector<float>& s_b, std::int64_t channels,
                       int scale_mask, bool has_bias, DType bias_type, const std::string& what) {
  OutputAttr o;
  const bool float_bias = has_bias && qc::is_float(bias_type);
  if (has_bias && !float_bias && bias_type != DType::i32)
    refuse(what + ": bias of " + dname(bias_type) + "; oneDNN 2.6 takes an s32 or float bias");
  std::vector<float> m;
  switch (out.kind) {
    case qc::OutputKind::int32:
      if (float_bias) refuse(what + ": a float bias on an int32 output");
      o.dst = mdt::s32;
      return o;  // no scales: the accumulator (+ bias) is stored as s32
    case qc::OutputKind::dequantized: {
      o.dst = need_dnnl(out.format, what + " output");
      if (!qc::is_float(out.format)) refuse(what + ": a dequantized output is a float format");
      for (float sb : s_b) m.push_back(s_a * sb);
      // 2.x adds its bias before the output scale; a float bias added to the dequantized value is a
      // binary add post-op (applied after the scale, in f32).
      o.float_bias_post_op = float_bias;
      break;
    }
    case qc::OutputKind::requantized: {
      o.dst = need_dnnl(out.format, what + " output");
      if (out.format != DType::i8 && out.format != DType::u8)
        refuse(what + ": requantizes to " + dname(out.format) + "; oneDNN 2.6 has s8/u8");
      if (float_bias)
        refuse(what +
               ": a float bias added to the real value before requantizing (2.x adds it before the output scale)");
      const float s_out = f32_scale(out.scale, what + " output scale");
      for (float sb : s_b) m.push_back(requantize_multiplier(s_a, sb, s_out));
      const auto zp = static_cast<std::int32_t>(out.zero_point);
      if (out.clamp) {
        dnnl::post_ops po;
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(out.clamp->lo - zp),
                          static_cast<float>(out.clamp->hi - zp));
        o.attr.set_post_ops(po);
      }
      if (zp != 0) o.attr.set_zero_points(DNNL_ARG_DST, 0, {zp});
      break;
    }
  }
  if (m.size() == 1)
    o.attr.set_output_scales(0, m);
  else {
    if (static_cast<std::int64_t>(m.size()) != channels) refuse(what + ": weight scales do not match the channels");
    o.attr.set_output_scales(scale_mask, m);
  }
  return o;
}

std::vector<float> weight_scales(const qc::QuantParams& p, const std::string& what) {
  std::vector<float> v;
  for (double s : p.scales) v.push_back(f32_scale(s, what));
  return v;
}

// ---- qgemm ----

struct GemmPlan {
  IntOperand a, b;
  qc::GemmShape shape;
  dnnl::matmul::primitive_desc pd;
  std::optional<qc::Tensor> bias;
  bool bias_post_op = false;
  DType out = DType::i32;
};

GemmPlan plan_gemm(const qc::QGemmOp& g, const Engine& e, bool execute) {
  const std::string what = "qgemm";
  if (g.a.quantization != qc::ActivationQuantization::static_params)
    refuse(what + ": dynamic quantization of A; oneDNN 2.6 takes quantized (or statically quantized) operands only");
  if (g.a.params.granularity() != qc::Granularity::per_tensor)
    refuse(what +
           ": A's parameters vary; oneDNN 2.x matmul has one src scale and zero point (its output scales vary along N "
           "only)");
  if (g.b.packing) refuse(what + ": packed int4 weights; oneDNN 2.6 has no int4 data type");
  const int n_axis = g.b_layout == qc::WeightLayout::k_by_n ? 1 : 0;
  switch (g.b.params.granularity()) {
    case qc::Granularity::per_tensor:
      break;
    case qc::Granularity::per_axis:
      if (norm_axis(*g.b.params.axis, 2) != n_axis)
        refuse(what + ": B's scales vary along K; oneDNN 2.x output scales vary along N only");
      break;
    case qc::Granularity::blocked:
      refuse(what + ": blocked weight scales; oneDNN 2.6 output scales vary along N only (no K groups)");
  }
  if (g.b.values.rank() != 2) refuse(what + ": B is a matrix");

  GemmPlan p{};
  p.shape = qc::gemm_shape(g.a.values.shape(), g.b.values.shape(), g.b_layout);
  p.a = int_operand(e, execute, g.a.values, g.a.format, g.a.params, what + " A");
  p.b = int_operand(e, execute, g.b.values, g.b.format, g.b.params, what + " B");
  if (p.b.q.dtype() != DType::i8)
    refuse(what + ": " + dname(p.b.q.dtype()) +
           " weights; oneDNN 2.6 int8 matmul takes s8 weights (src u8/s8, weights s8)");

  const float s_a = f32_scale(g.a.params.scales.at(0), what + " A scale");
  const auto out_attr = output_attr(g.output, s_a, weight_scales(g.b.params, what + " B scale"), p.shape.cols, 1 << 1,
                                    g.bias.has_value(), g.bias ? g.bias->dtype() : DType::i32, what);
  dnnl::primitive_attr attr = out_attr.attr;
  if (p.a.zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {p.a.zp});
  if (p.b.zp != 0) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {p.b.zp});
  p.out = g.output.kind == qc::OutputKind::int32 ? DType::i32 : g.output.format;

  // A is flattened to [R, K] (rows = batch * M: a 2-D matmul is the same dot products); B is [K, N]
  // plain, or [N, K] given to oneDNN as [K, N] with transposed strides (format tag ba).
  const memory::dims a_dims{p.shape.rows, p.shape.depth}, b_dims{p.shape.depth, p.shape.cols},
      c_dims{p.shape.rows, p.shape.cols};
  const memory::desc a_md(a_dims, *to_dnnl(p.a.q.dtype()), mtag::ab);
  const memory::desc b_md(b_dims, mdt::s8, g.b_layout == qc::WeightLayout::k_by_n ? mtag::ab : mtag::ba);
  const memory::desc c_md(c_dims, out_attr.dst, mtag::ab);
  memory::desc bias_md;
  if (g.bias) {
    const memory::desc md({1, p.shape.cols}, need_dnnl(g.bias->dtype(), what + " bias"), mtag::ab);
    if (out_attr.float_bias_post_op) {
      dnnl::post_ops po;
      po.append_binary(dnnl::algorithm::binary_add, md);
      attr.set_post_ops(po);
      p.bias_post_op = true;
    } else {
      bias_md = md;
    }
    p.bias = *g.bias;
  }
  try {
    const auto desc = p.bias && !p.bias_post_op ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                                                : dnnl::matmul::desc(a_md, b_md, c_md);
    p.pd = dnnl::matmul::primitive_desc(desc, attr, e.eng);
  } catch (const dnnl::error& err) {
    refuse_dnnl(what + " (matmul " + dname(p.a.q.dtype()) + " x s8 -> " + dname(p.out) + ")", err);
  }
  return p;
}

qc::Tensor run_gemm(const Engine& e, const qc::QGemmOp& g) {
  GemmPlan p = plan_gemm(g, e, true);
  qc::Tensor out(p.out, p.shape.out_shape);
  if (qc::numel(p.shape.out_shape) == 0) return out;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(e, p.pd.src_desc(), p.a.q)},
                                       {DNNL_ARG_WEIGHTS, wrap(e, p.pd.weights_desc(), p.b.q)},
                                       {DNNL_ARG_DST, wrap(e, p.pd.dst_desc(), out)}};
  if (p.bias) {
    const memory::desc md({1, p.shape.cols}, *to_dnnl(p.bias->dtype()), mtag::ab);
    args.emplace(p.bias_post_op ? DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1 : DNNL_ARG_BIAS,
                 wrap(e, md, *p.bias));
  }
  dnnl::matmul(p.pd).execute(e.strm, args);
  e.strm.wait();
  return out;
}

// ---- qconv2d ----

struct ConvPlan {
  IntOperand x, w;
  qc::Conv2dShape shape;
  dnnl::convolution_forward::primitive_desc pd;
  std::optional<qc::Tensor> bias;
  bool bias_post_op = false;
  DType out = DType::i32;
};

ConvPlan plan_conv(const qc::QConv2dOp& c, const Engine& e, bool execute) {
  const std::string what = "qconv2d";
  if (c.input.quantization != qc::ActivationQuantization::static_params)
    refuse(what + ": dynamic quantization of the input; oneDNN 2.6 takes quantized operands only");
  if (c.input.params.granularity() != qc::Granularity::per_tensor)
    refuse(what + ": the input's parameters vary; oneDNN 2.x has one src scale (output scales vary along OC only)");
  if (c.weight.packing) refuse(what + ": packed int4 weights; oneDNN 2.6 has no int4 data type");
  switch (c.weight.params.granularity()) {
    case qc::Granularity::per_tensor:
      break;
    case qc::Granularity::per_axis:
      if (norm_axis(*c.weight.params.axis, 4) != 0)
        refuse(what + ": weight scales vary along another axis than OC; oneDNN 2.x output scales vary along OC only");
      break;
    case qc::Granularity::blocked:
      refuse(what + ": blocked weight scales; oneDNN 2.6 output scales vary along OC only");
  }
  ConvPlan p{};
  p.shape = qc::resolve_conv2d(c.input.values.shape(), c.layout, c.weight.values.shape(), c.geometry);
  p.x = int_operand(e, execute, c.input.values, c.input.format, c.input.params, what + " input");
  p.w = int_operand(e, execute, c.weight.values, c.weight.format, c.weight.params, what + " weight");
  if (p.w.q.dtype() != DType::i8)
    refuse(what + ": " + dname(p.w.q.dtype()) + " weights; oneDNN 2.6 int8 convolution takes s8 weights");
  if (p.w.zp != 0)
    refuse(what +
           ": a weight zero point; oneDNN 2.6 convolution supports src and dst zero points only "
           "(primitive_attr zero points: weights must be 0)");
  // Padded taps are skipped in the zero-point-shifted domain (ref_convolution_int8.cpp: `continue` for
  // an out-of-range tap, d += (s - src_zp) * w otherwise; the jit kernels' zp_pad compensation matches),
  // i.e. the padding is a real zero. A quantized-zero padding (q = 0, worth -zp) is expressible only
  // when the zero point is 0, where both are the same.
  if (c.padding == qc::ConvPadding::quantized_zero && p.x.zp != 0)
    refuse(what +
           ": padding with quantized 0 under a nonzero input zero point; oneDNN pads with the real zero "
           "(padded taps contribute nothing after the src zero point is subtracted)");

  const float s_a = f32_scale(c.input.params.scales.at(0), what + " input scale");
  const auto out_attr =
      output_attr(c.output, s_a, weight_scales(c.weight.params, what + " weight scale"), p.shape.out_channels, 1 << 1,
                  c.bias.has_value(), c.bias ? c.bias->dtype() : DType::i32, what);
  dnnl::primitive_attr attr = out_attr.attr;
  if (out_attr.float_bias_post_op) {  // added to the dequantized value: a binary add post-op, [1, OC, 1, 1]
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_add, memory::desc({1, p.shape.out_channels, 1, 1},
                                                               need_dnnl(c.bias->dtype(), what + " bias"), mtag::nchw));
    attr.set_post_ops(po);
    p.bias_post_op = true;
  }
  if (p.x.zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {p.x.zp});
  p.out = c.output.kind == qc::OutputKind::int32 ? DType::i32 : c.output.format;

  const auto& s = p.shape;
  const auto& g = s.geometry;
  const mtag act = c.layout == qc::ConvLayout::nchw ? mtag::nchw : mtag::nhwc;
  const memory::desc x_md({s.batch, s.channels, s.height, s.width}, *to_dnnl(p.x.q.dtype()), act);
  // OIHW with O = G * OC/G is goihw's memory order.
  const memory::desc w_md({g.groups, s.group_out_channels, s.group_in_channels, s.kernel_h, s.kernel_w}, mdt::s8,
                          mtag::goihw);
  const memory::desc y_md({s.batch, s.out_channels, s.out_height, s.out_width}, out_attr.dst, act);
  const memory::dims strides{g.stride_h, g.stride_w}, dil{g.dilation_h - 1, g.dilation_w - 1},
      pad_l{g.pad_top, g.pad_left}, pad_r{g.pad_bottom, g.pad_right};
  try {
    const auto algo = dnnl::algorithm::convolution_direct;
    const auto kind = dnnl::prop_kind::forward_inference;
    const auto desc = c.bias && !p.bias_post_op
                          ? dnnl::convolution_forward::desc(
                                kind, algo, x_md, w_md,
                                memory::desc({s.out_channels}, need_dnnl(c.bias->dtype(), what + " bias"), mtag::a),
                                y_md, strides, dil, pad_l, pad_r)
                          : dnnl::convolution_forward::desc(kind, algo, x_md, w_md, y_md, strides, dil, pad_l, pad_r);
    p.pd = dnnl::convolution_forward::primitive_desc(desc, attr, e.eng);
  } catch (const dnnl::error& err) {
    refuse_dnnl(what + " (convolution " + dname(p.x.q.dtype()) + " x s8 -> " + dname(p.out) + ")", err);
  }
  if (c.bias) p.bias = *c.bias;
  return p;
}

qc::Tensor run_conv(const Engine& e, const qc::QConv2dOp& c) {
  ConvPlan p = plan_conv(c, e, true);
  qc::Tensor out(p.out, p.shape.output_shape());
  if (qc::numel(out.shape()) == 0) return out;
  // The primitive may want blocked layouts (the jit int8 kernels): reorder plain <-> its layouts, the
  // s8 reorders being exact copies.
  qc::Tensor x = p.x.q, w = p.w.q;
  const auto& s = p.shape;
  const mtag act = c.layout == qc::ConvLayout::nchw ? mtag::nchw : mtag::nhwc;
  const memory::desc x_plain({s.batch, s.channels, s.height, s.width}, *to_dnnl(x.dtype()), act);
  const memory::desc w_plain({s.geometry.groups, s.group_out_channels, s.group_in_channels, s.kernel_h, s.kernel_w},
                             mdt::s8, mtag::goihw);
  const memory::desc y_plain({s.batch, s.out_channels, s.out_height, s.out_width}, p.pd.dst_desc().data_type(), act);
  auto to_prim = [&](const memory::desc& plain, qc::Tensor& t, const memory::desc& want) {
    memory m = wrap(e, plain, t);
    if (want == plain) return m;
    memory r(want, e.eng);
    dnnl::reorder(m, r).execute(e.strm, m, r);
    return r;
  };
  memory xm = to_prim(x_plain, x, p.pd.src_desc()), wm = to_prim(w_plain, w, p.pd.weights_desc());
  memory ym_plain = wrap(e, y_plain, out);
  memory ym = p.pd.dst_desc() == y_plain ? ym_plain : memory(p.pd.dst_desc(), e.eng);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}};
  if (p.bias && p.bias_post_op)
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 wrap(e, memory::desc({1, s.out_channels, 1, 1}, *to_dnnl(p.bias->dtype()), mtag::nchw), *p.bias));
  else if (p.bias)
    args.emplace(DNNL_ARG_BIAS, wrap(e, p.pd.bias_desc(), *p.bias));
  dnnl::convolution_forward(p.pd).execute(e.strm, args);
  if (!(p.pd.dst_desc() == y_plain)) dnnl::reorder(ym, ym_plain).execute(e.strm, ym, ym_plain);
  e.strm.wait();
  return out;
}

// ---- Facts ---------------------------------------------------------------------------------------

std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_all:
      return "all";
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
  }
  return "unknown (" + std::to_string(static_cast<int>(isa)) + ")";
}

// The host's numerics-relevant CPU flags, from /proc/cpuinfo (what oneDNN's cpuid dispatch sees).
std::string host_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  const std::set<std::string> wanted{"sse4_1",      "avx",      "avx2",     "fma",         "f16c",
                                     "avx512f",     "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
                                     "avx512_bf16", "amx_int8", "amx_bf16", "amx_tile"};
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w, out;
    while (words >> w)
      if (wanted.count(w)) out += (out.empty() ? "" : " ") + w;
    return out;
  }
  return "unknown (no /proc/cpuinfo flags)";
}

// Which int8 kernel family oneDNN dispatches to on this host (dnnl_get_effective_cpu_isa, so
// ONEDNN_MAX_CPU_ISA counts): VNNI's vpdpbusd (exact quads, int32 wrap), or vpmaddubsw's int16 pairs
// in the GEMM driver, whose K blocking differs between AVX2 and AVX-512 (gemm_info.cpp).
enum class Int8Kernels { vnni, avx2_pairs, avx512_pairs, other };

Int8Kernels int8_kernels() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_vnni:
    case dnnl_cpu_isa_avx512_core_bf16:
    case dnnl_cpu_isa_avx512_core_amx:
    case dnnl_cpu_isa_avx2_vnni:
      return Int8Kernels::vnni;
    case dnnl_cpu_isa_avx2:
      return Int8Kernels::avx2_pairs;
    case dnnl_cpu_isa_avx512_core:
      return Int8Kernels::avx512_pairs;
    default:
      return Int8Kernels::other;
  }
}

class OneDnnBackend : public qc::Backend {
 public:
  std::string name() const override { return "onednn"; }
  std::string description() const override {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (libdnnl): reorders with output scales for quantize (alpha = 1/s), dequantize and requantize; "
           "int8 matmul and convolution";
  }
  // The presets are oracles/presets.cpp's onednn@2.6 family; the host's int8 kernels pick one.
  std::string claim() const override {
    switch (int8_kernels()) {
      case Int8Kernels::avx2_pairs:
        return "onednn@2.6-x86-avx2";
      case Int8Kernels::avx512_pairs:
        return "onednn@2.6-x86-avx512-core";
      case Int8Kernels::vnni:
      case Int8Kernels::other:
        break;
    }
    return "onednn@2.6";
  }

  std::map<std::string, std::string> facts() const override {
    const dnnl_version_t* v = dnnl_version();
    std::map<std::string, std::string> f;
    f["library"] = "oneDNN";
    f["version"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    f["git_hash"] = v->hash ? v->hash : "";
    f["cpu_runtime"] = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                       : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                       : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                            : std::to_string(v->cpu_runtime);
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    f["isa"] = isa_name(isa);  // what oneDNN dispatches to (dnnl_get_effective_cpu_isa)
    f["host_flags"] = host_flags();
    // The implementations oneDNN picks for representative requests (they decide NaN handling and the
    // int8 dot product): dnnl primitive_desc::impl_info_str.
    try {
      const Engine e;
      ReorderSpec q{DType::f32, DType::i8, {64}, std::nullopt, {1.0f}, 0, 1};
      f["impl_quantize"] = reorder_pd(e, q, "facts").impl_info_str();
      const memory::desc a({4, 64}, mdt::u8, mtag::ab), b({64, 16}, mdt::s8, mtag::ab), c({4, 16}, mdt::s32, mtag::ab);
      f["impl_qgemm"] = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), e.eng).impl_info_str();
    } catch (const Unsupported& u) {
      f["impl_error"] = u.reason;
    } catch (const dnnl::error& err) {
      f["impl_error"] = err.what();
    }
    f["int8_dot_product"] =
        int8_kernels() == Int8Kernels::vnni
            ? "vpdpbusd (u8 x s8 quads into int32, wrapping)"
            : "vpmaddubsw + vpmaddwd (u8 x s8 pairs saturate to int16, in the GEMM driver's K blocks)";
    f["scales"] = "2.x output scales formed by this plugin in f32: quantize 1/s, requantize (s_in*s_w)/s_out";
    return f;
  }

  qc::Availability supports(const qc::OpRequest& op) const override {
    try {
      std::visit([&](const auto& o) { check(o); }, op);
      return {};
    } catch (const Unsupported& u) {
      return {false, u.reason};
    }
  }

  qc::Tensor run(const qc::OpRequest& op) override {
    try {
      return std::visit([&](const auto& o) { return execute(o); }, op);
    } catch (const Unsupported& u) {
      throw std::runtime_error(u.reason);
    }
  }

 private:
  void check(const qc::QuantizeOp& q) const {
    reorder_pd(engine_, quantize_spec(q.x, q.params, q.out, "quantize"), "quantize");
  }
  void check(const qc::DequantizeOp& d) const { reorder_pd(engine_, dequantize_spec(d), "dequantize"); }
  void check(const qc::RequantizeOp& r) const { reorder_pd(engine_, requantize_spec(r), "requantize"); }
  void check(const qc::QGemmOp& g) const {
    if (qc::logical_shape(g.b).size() != 2) refuse("qgemm: this peer runs one 2-D B (no batched B)");
    refuse_unmodelled_int8_isa("qgemm");
    refuse_int32_bias(g.output, g.bias.has_value(), "qgemm");
    const GemmPlan p = plan_gemm(g, engine_, false);
    // Without VNNI the claim describes gemm_s8u8s32's pairs (impl gemm:jit); an output oneDNN routes
    // elsewhere (a bf16 destination runs ref_int8, exact) is not what the claim says.
    if (int8_kernels() != Int8Kernels::vnni && std::string(p.pd.impl_info_str()) != "gemm:jit")
      refuse(std::string("qgemm: without VNNI oneDNN runs this matmul with ") + p.pd.impl_info_str() +
             ", not the vpmaddubsw GEMM (gemm:jit) that " + claim() + " describes");
  }
  void check(const qc::QConv2dOp& c) const {
    refuse_unmodelled_int8_isa("qconv2d");
    refuse_int32_bias(c.output, c.bias.has_value(), "qconv2d");
    const ConvPlan p = plan_conv(c, engine_, false);
    // Plain OIHW weights keep oneDNN on ref_int8 (exact) without VNNI: its jit convolutions want
    // blocked weights and the GEMM convolution HWIO ones (gemm_convolution_utils.cpp). Anything else
    // would pair products the claim does not describe.
    if (int8_kernels() != Int8Kernels::vnni && std::string(p.pd.impl_info_str()) != "ref_int8:any")
      refuse(std::string("qconv2d: without VNNI oneDNN runs this convolution with ") + p.pd.impl_info_str() +
             ", not the exact ref_int8 that " + claim() + " describes");
  }
  // An int32 output with a bias: brgemm adds the bias in f32, fl(f32(acc) + bias), which rounds past
  // 2^24 (measured: acc 19463385 + 1 gives 19463384). No preset models a float bias add on an int32
  // output yet (docs/peers.md).
  static void refuse_int32_bias(const qc::OutputStage& out, bool has_bias, const char* what) {
    if (has_bias && out.kind == qc::OutputKind::int32)
      refuse(std::string(what) +
             ": an int32 output with a bias: oneDNN 2.6 adds the bias in f32 (rounding past "
             "2^24), which no preset models yet");
  }
  // Below AVX2 (SSE4.1, AVX) the GEMM driver blocks K by 256 with kernels no measurement here has
  // covered: refused rather than reported as a false FAIL.
  static void refuse_unmodelled_int8_isa(const char* what) {
    if (int8_kernels() == Int8Kernels::other)
      refuse(std::string(what) + ": oneDNN dispatches to " + isa_name(dnnl_get_effective_cpu_isa()) +
             ", whose int8 kernels no preset models (measured: AVX2, AVX-512 and VNNI)");
  }
  void check(const qc::WeightOnlyGemmOp&) const {
    refuse(
        "weight_only_gemm: oneDNN 2.6 has no weight-only matmul (float src with int8 weights decompressed in the "
        "kernel arrives in 3.x); its int8 matmul needs int8 activations");
  }

  void check(const qc::MxQuantizeOp&) const {
    refuse("mx_quantize: oneDNN 2.6 has no MX/NVFP4 block-scaled data types (f4/f8 arrive in 3.x)");
  }
  void check(const qc::MxDequantizeOp&) const {
    refuse("mx_dequantize: oneDNN 2.6 has no MX/NVFP4 block-scaled data types (f4/f8 arrive in 3.x)");
  }
  void check(const qc::MxGemmOp&) const {
    refuse("mx_gemm: oneDNN 2.6 has no MX/NVFP4 block-scaled data types (f4/f8 arrive in 3.x)");
  }
  void check(const qc::QAddOp&) const {
    refuse(
        "qadd: this peer does not drive oneDNN's binary add with per-operand int8 scales (its rounding of the "
        "scaled sum is not modelled by any add scheme)");
  }

  qc::Tensor execute(const qc::QuantizeOp& q) {
    return run_reorder(engine_, quantize_spec(q.x, q.params, q.out, "quantize"), q.x, "quantize");
  }
  qc::Tensor execute(const qc::DequantizeOp& d) { return run_reorder(engine_, dequantize_spec(d), d.q, "dequantize"); }
  qc::Tensor execute(const qc::RequantizeOp& r) {
    return run_reorder(engine_, requantize_spec(r), r.acc, "requantize");
  }
  qc::Tensor execute(const qc::QGemmOp& g) { return run_gemm(engine_, g); }
  qc::Tensor execute(const qc::QConv2dOp& c) { return run_conv(engine_, c); }
  qc::Tensor execute(const qc::WeightOnlyGemmOp& w) {
    check(w);  // always refuses
    throw std::logic_error("unreachable");
  }
  void check(const qc::ChooseQParamsOp&) const {
    refuse("choose_qparams: oneDNN takes quantization parameters as given; it has no parameter choice");
  }
  qc::Tensor execute(const qc::ChooseQParamsOp& c) {
    check(c);  // always refuses
    throw std::logic_error("unreachable");
  }
  void check(const qc::Conv2dOp&) const {
    refuse("conv2d: this peer runs oneDNN's int8 primitives; a float or weight-only convolution is not among them");
  }
  qc::Tensor execute(const qc::Conv2dOp& c) {
    check(c);  // always refuses
    throw std::logic_error("unreachable");
  }
  qc::Tensor execute(const qc::MxQuantizeOp& m) {
    check(m);  // always refuses
    throw std::logic_error("unreachable");
  }
  qc::Tensor execute(const qc::MxDequantizeOp& m) {
    check(m);  // always refuses
    throw std::logic_error("unreachable");
  }
  qc::Tensor execute(const qc::MxGemmOp& m) {
    check(m);  // always refuses
    throw std::logic_error("unreachable");
  }
  qc::Tensor execute(const qc::QAddOp& a) {
    check(a);  // always refuses
    throw std::logic_error("unreachable");
  }

  Engine engine_;
};

// The claim, onednn@2.6, is a built-in preset (oracles/presets.cpp): quantize rne(fl(fl(x * fl(1/s)) + zp))
// saturated in f32 (NaN: s8 -> 127, u8 -> 0); dequantize fl((q - zp) * s); requantize fl(fl(fl(acc) * m) + zp)
// with m = fl(fl(s_in*s_w)/s_out), rne, clamp in f32; vpdpbusd int32 accumulation (wraps), zero points by
// compensation in int32 (equal mod 2^32).

}  // namespace

QCONFORM_PLUGIN("onednn", qc::plugin::one_backend<OneDnnBackend>)
