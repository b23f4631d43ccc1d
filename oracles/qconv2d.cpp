#include "oracles/qconv2d.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <string>

namespace qc {

namespace {

void require_per_tensor_input(const QuantizedOperand& x) {
  if (x.params.granularity() != Granularity::per_tensor)
    throw InputError("qconv2d: the input takes one scale and zero point (per tensor), got " +
                     std::string(name(x.params.granularity())));
}

void require_per_output_channel_weights(const QuantizedOperand& w) {
  const Granularity g = w.params.granularity();
  if (g == Granularity::per_tensor) return;
  if (g == Granularity::per_axis && (*w.params.axis == 0 || *w.params.axis == -4)) return;
  throw InputError("qconv2d: weight parameters are per tensor or per output channel (axis 0 of OIHW)");
}

// The OIHW depth index k = (ic * KH + kh) * KW + kw of each position of the dot product in `order`.
std::vector<std::int64_t> depth_positions(const Conv2dShape& cs, ConvDepthOrder order) {
  const std::int64_t K = cs.depth(), taps = cs.kernel_h * cs.kernel_w, C = cs.group_in_channels;
  std::vector<std::int64_t> k_of(static_cast<std::size_t>(K));
  for (std::int64_t j = 0; j < K; ++j)
    k_of[static_cast<std::size_t>(j)] = order == ConvDepthOrder::c_kh_kw ? j : (j % C) * taps + j / C;
  return k_of;
}

// One group's im2col rows [N*OH*OW, K] of raw quantized input values in the order `k_of`, padded
// taps holding `pad`.
std::vector<std::int32_t> im2col(const Tensor& x, const Conv2dShape& cs, std::int64_t g, std::int32_t pad,
                                 const std::vector<std::int64_t>& k_of) {
  std::vector<std::int32_t> rows(static_cast<std::size_t>(cs.batch * cs.out_height * cs.out_width) * k_of.size());
  std::size_t i = 0;
  for (std::int64_t n = 0; n < cs.batch; ++n)
    for (std::int64_t oh = 0; oh < cs.out_height; ++oh)
      for (std::int64_t ow = 0; ow < cs.out_width; ++ow)
        for (const std::int64_t k : k_of) {
          const std::int64_t src = cs.tap_source(n, g, oh, ow, k);
          rows[i++] = src < 0 ? pad : static_cast<std::int32_t>(x.get_int(src));
        }
  return rows;
}

// One group's filters [OC / groups, K] in the order `k_of` (OIHW rows are contiguous in OIHW order).
std::vector<std::int32_t> group_filters(const Tensor& w, const Conv2dShape& cs, std::int64_t g,
                                        const std::vector<std::int64_t>& k_of) {
  const std::int64_t K = cs.depth(), oc0 = g * cs.group_out_channels;
  std::vector<std::int32_t> f(static_cast<std::size_t>(cs.group_out_channels * K));
  std::size_t i = 0;
  for (std::int64_t j = 0; j < cs.group_out_channels; ++j)
    for (const std::int64_t k : k_of) f[i++] = static_cast<std::int32_t>(w.get_int((oc0 + j) * K + k));
  return f;
}

// Where output element e (flat, in the output's layout) is: its im2col row (n * OH * OW + pixel)
// and output channel.
struct OutputPosition {
  std::int64_t n = 0, oc = 0, oh = 0, ow = 0, row = 0;
};
OutputPosition output_position(const Conv2dShape& cs, std::int64_t e) {
  const bool nchw = cs.layout == ConvLayout::nchw;
  const std::int64_t pixels = cs.out_height * cs.out_width;
  OutputPosition p;
  p.oc = nchw ? (e / pixels) % cs.out_channels : e % cs.out_channels;
  p.n = e / (pixels * cs.out_channels);
  const std::int64_t pixel = nchw ? e % pixels : (e / cs.out_channels) % pixels;
  p.oh = pixel / cs.out_width;
  p.ow = pixel % cs.out_width;
  p.row = p.n * pixels + pixel;
  return p;
}

}  // namespace

namespace {

// The accumulators of every output element, or of `only`'s, with the operands' parameters.
LinearAccumulators conv_accumulators(const QConv2dOp& op, const QConv2dPolicy& policy,
                                     const std::vector<std::int64_t>* only) {
  if (op.input.quantization == ActivationQuantization::dynamic_per_row)
    throw InputError("qconv2d: the input is quantized per tensor (static or dynamic), not per row");
  const QuantizedOperand qx = quantize_activation(op.input, policy.quantize);
  const QuantizedOperand qw = quantize_weights(op.weight, policy.quantize);
  require_per_tensor_input(qx);
  require_per_output_channel_weights(qw);
  const Conv2dShape cs = resolve_conv2d(qx.q.shape(), op.layout, qw.q.shape(), op.geometry);
  const std::int64_t zx = qx.params.zero_point(0);
  const auto pad = static_cast<std::int32_t>(op.padding == ConvPadding::real_zero ? zx : 0);
  const ParamIndexer w_param(qw.params, qw.q.shape());
  const std::int64_t K = cs.depth(), R = cs.batch * cs.out_height * cs.out_width, OCg = cs.group_out_channels;

  const std::vector<std::int64_t> k_of = depth_positions(cs, policy.conv_depth_order);
  bool zero_points = zx != 0;
  for (std::int64_t oc = 0; oc < cs.out_channels && !zero_points; ++oc)
    zero_points = qw.params.zero_point(w_param(oc * K)) != 0;
  const auto [accumulation, shift] =
      paired_accumulation(policy.accumulation, policy.pair_rule, qx.q.dtype(), qw.q.dtype(), zero_points);

  // With `only`: element j of the result is output only[j], at row only_row[j] (a pixel) and
  // output channel only_oc[j]; each group computes the rows its selected elements need.
  std::vector<std::int64_t> only_row, only_oc;
  if (only) {
    for (const std::int64_t e : *only) {
      const OutputPosition at = output_position(cs, e);
      only_row.push_back(at.row);
      only_oc.push_back(at.oc);
    }
  }
  ScaledAccumulators sa;
  sa.shape = only ? Shape{static_cast<std::int64_t>(only->size())} : cs.output_shape();
  sa.channels = cs.out_channels;
  sa.segments = 1;
  const auto E = static_cast<std::size_t>(numel(sa.shape));
  sa.value.resize(E);
  sa.a_index.assign(E, 0);
  sa.b_index.resize(E);
  sa.channel.resize(E);
  bool first_proof = true;
  for (std::int64_t g = 0; g < op.geometry.groups; ++g) {
    std::vector<std::int32_t> a = im2col(qx.q, cs, g, pad, k_of);
    const std::vector<std::int32_t> bt = group_filters(qw.q, cs, g, k_of);
    IntGemmProblem p;
    p.rows = R;
    p.cols = OCg;
    p.depth = K;
    p.a = a;
    p.bt = bt;
    p.a_zero_points.assign(static_cast<std::size_t>(R), zx);
    p.b_zero_points.resize(static_cast<std::size_t>(OCg));
    for (std::int64_t j = 0; j < OCg; ++j)
      p.b_zero_points[static_cast<std::size_t>(j)] = qw.params.zero_point(w_param((g * OCg + j) * K));
    if (shift) {
      shift_signed_activations(a, p.a_zero_points);  // in place: p.a still views a
    }
    if (only) {
      std::vector<std::int64_t> e_rows, e_cols;  // this group's selected outputs (accumulate_elements)
      for (std::size_t i = 0; i < only->size(); ++i)
        if (only_oc[i] / OCg == g) {
          e_rows.push_back(only_row[i]);
          e_cols.push_back(only_oc[i] % OCg);
        }
      if (e_rows.empty()) continue;
      const IntGemmAccumulators acc =
          accumulate_elements(p, e_rows, e_cols, accumulation, policy.zero_points, policy.pair_rule);
      merge_proof(sa.proof, acc.proof, first_proof);
      first_proof = false;
      std::int64_t next = 0;  // this group's elements, in e_rows order
      for (std::size_t i = 0; i < only->size(); ++i) {
        if (only_oc[i] / OCg != g) continue;
        sa.value[i] = acc.at(next, 0, 0);
        if (acc.overflowed(next, 0))
          sa.exact_where_different.emplace(static_cast<std::int64_t>(i), acc.exact(next, 0, 0));
        ++next;
        sa.b_index[i] = static_cast<std::int32_t>(w_param(only_oc[i] * K));
        sa.channel[i] = static_cast<std::int32_t>(only_oc[i]);
      }
      continue;
    }
    IntGemmAccumulators acc = accumulate_gemm(p, accumulation, policy.zero_points, policy.pair_rule);
    merge_proof(sa.proof, acc.proof, g == 0);
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t ow = r % cs.out_width, oh = (r / cs.out_width) % cs.out_height,
                         n = r / (cs.out_width * cs.out_height);
      for (std::int64_t j = 0; j < OCg; ++j) {
        const std::int64_t oc = g * OCg + j;
        const std::int64_t e = cs.output_index(n, oc, oh, ow);
        const auto ei = static_cast<std::size_t>(e);
        sa.value[ei] = acc.at(r, j, 0);
        if (acc.overflowed(r, j)) sa.exact_where_different.emplace(e, acc.exact(r, j, 0));
        sa.b_index[ei] = static_cast<std::int32_t>(w_param(oc * K));
        sa.channel[ei] = static_cast<std::int32_t>(oc);
      }
    }
  }
  return {std::move(sa), qx.params, qw.params};
}

}  // namespace

LinearAccumulators qconv2d_accumulators(const QConv2dOp& op, const QConv2dPolicy& policy,
                                        const std::vector<std::int64_t>& only) {
  return conv_accumulators(op, policy, &only);
}

QLinearResult qconv2d(const QConv2dOp& op, const QConv2dPolicy& policy, const std::vector<std::int64_t>* only) {
  return finish_output(conv_accumulators(op, policy, only), op.bias, op.output, policy);
}

DotTerms qconv2d_terms(const QConv2dOp& op, const QConv2dPolicy& policy, std::int64_t e) {
  const QuantizedOperand qx = quantize_activation(op.input, policy.quantize);
  const QuantizedOperand qw = quantize_weights(op.weight, policy.quantize);
  require_per_tensor_input(qx);
  require_per_output_channel_weights(qw);
  const Conv2dShape cs = resolve_conv2d(qx.q.shape(), op.layout, qw.q.shape(), op.geometry);
  if (e < 0 || e >= numel(cs.output_shape()))
    throw InputError("qconv2d: element " + std::to_string(e) + " is outside the output " +
                     shape_str(cs.output_shape()));
  const OutputPosition at = output_position(cs, e);
  const std::int64_t zx = qx.params.zero_point(0), K = cs.depth();
  const std::int64_t pad = op.padding == ConvPadding::real_zero ? zx : 0;
  const ParamIndexer w_param(qw.params, qw.q.shape());
  const std::int64_t zw = qw.params.zero_point(w_param(at.oc * K));
  DotTerms t;
  t.bias_channel = at.oc;
  t.a_scale = {qx.params.scales[0]};
  t.b_scale = {qw.params.scales[static_cast<std::size_t>(w_param(at.oc * K))]};
  for (const std::int64_t k : depth_positions(cs, policy.conv_depth_order)) {
    const std::int64_t src = cs.tap_source(at.n, at.oc / cs.group_out_channels, at.oh, at.ow, k);
    t.a.push_back(src < 0 ? pad : qx.q.get_int(src));
    t.za.push_back(zx);
    t.a_source.push_back(src);
    t.b.push_back(qw.q.get_int(at.oc * K + k));
    t.zb.push_back(zw);
    t.b_source.push_back(at.oc * K + k);
  }
  return t;
}

}  // namespace qc
