#include "harness/reproducer.hpp"

#include "oracles/qadd.hpp"

#include "cases/case_writer.hpp"
#include "harness/compare.hpp"
#include "harness/verdict.hpp"
#include "oracles/int4.hpp"
#include "qconform/error.hpp"
#include "reports/writers.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <set>

namespace qc {
namespace {

// Per dimension: first index and length.
using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

Box full_box(const Shape& s) {
  Box b;
  for (std::int64_t d : s) b.emplace_back(0, d);
  return b;
}

Shape box_shape(const Box& b) {
  Shape s;
  for (const auto& [start, len] : b) s.push_back(len);
  return s;
}

Tensor crop(const Tensor& t, const Box& box) {
  Tensor out(t.dtype(), box_shape(box));
  const Shape& in = t.shape();
  std::vector<std::int64_t> c;
  for (std::int64_t i = 0; i < out.size(); ++i) {
    unravel(i, out.shape(), c);
    std::int64_t src = 0;
    for (std::size_t d = 0; d < in.size(); ++d) src = src * in[d] + box[d].first + c[d];
    if (is_int(t.dtype()))
      out.set_int(i, t.get_int(src));  // by value: sub-byte formats keep their sign
    else
      out.set_bits(i, t.bits(src));
  }
  return out;
}

template <class T>
std::vector<T> crop_flat(const std::vector<T>& v, const Shape& shape, const Box& box) {
  std::vector<T> out;
  if (v.empty()) return out;
  const Shape os = box_shape(box);
  std::vector<std::int64_t> c;
  for (std::int64_t i = 0; i < numel(os); ++i) {
    unravel(i, os, c);
    std::int64_t src = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) src = src * shape[d] + box[d].first + c[d];
    out.push_back(v[static_cast<std::size_t>(src)]);
  }
  return out;
}

// The box of one element: its coordinates, each with length 1.
Box point_box(std::int64_t index, const Shape& shape, std::vector<std::int64_t>& coords) {
  unravel(index, shape, coords);
  Box box;
  for (std::int64_t v : coords) box.emplace_back(v, 1);
  return box;
}

// The parameters of `x[box]`. Blocked parameters need the box to start on a block boundary along
// the blocked axis (or to hold one element there).
QuantParams crop_params(const QuantParams& p, const Shape& x, const Box& box) {
  QuantParams out = p;
  switch (p.granularity()) {
    case Granularity::per_tensor:
      return out;
    case Granularity::per_axis: {
      const auto a = static_cast<std::size_t>(resolve_axis(*p.axis, static_cast<std::int64_t>(x.size())));
      const Box pb{box[a]};
      out.scales = crop_flat(p.scales, {x[a]}, pb);
      out.zero_points = crop_flat(p.zero_points, {x[a]}, pb);
      return out;
    }
    case Granularity::blocked: {
      const auto a = static_cast<std::size_t>(resolve_axis(*p.axis, static_cast<std::int64_t>(x.size())));
      const std::int64_t bs = p.block_size;
      const auto [start, len] = box[a];
      if (len > 1 && start % bs != 0) throw std::logic_error("crop not aligned to the blocks");
      Box pb = box;
      pb[a] = {start / bs, (start + len - 1) / bs - start / bs + 1};
      const Shape ps = p.param_shape(x);
      out.scales = crop_flat(p.scales, ps, pb);
      out.zero_points = crop_flat(p.zero_points, ps, pb);
      return out;
    }
  }
  return out;
}

QWeights crop_weights(const QWeights& w, const Box& box) {
  QWeights out = w;
  if (w.packing) {
    const Tensor logical = unpack_int4(w.values, w.format, w.shape, *w.packing);
    const Tensor part = crop(logical, box);
    try {
      out.values = pack_int4(part, w.format, *w.packing);
      out.shape = part.shape();
    } catch (const InputError&) {
      // The packing cannot hold the crop (an odd length where it rejects odd lengths): the unit
      // carries the nibbles unpacked, one per element.
      out.values = part;
      out.packing.reset();
      out.shape.clear();
    }
    out.params = crop_params(w.params, w.shape, box);
  } else {
    out.values = crop(w.values, box);
    out.params = crop_params(w.params, w.values.shape(), box);
  }
  return out;
}

ActivationOperand crop_activation(const ActivationOperand& a, const Box& box) {
  ActivationOperand out = a;
  out.values = crop(a.values, box);
  if (a.quantization == ActivationQuantization::static_params)
    out.params = crop_params(a.params, a.values.shape(), box);
  return out;
}

std::optional<Tensor> crop_bias(const std::optional<Tensor>& bias, std::int64_t start, std::int64_t len) {
  if (!bias) return std::nullopt;
  return crop(*bias, Box{{start, len}});
}

std::int64_t flat_index(const std::vector<std::int64_t>& c, const Shape& s) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < s.size(); ++d) i = i * s[d] + c[d];
  return i;
}

// GEMM-like ops (qgemm, weight-only): A [batch..., M, K], B [K, N] or [N, K], output [batch..., M, N].
template <class Op, class GetA, class CropA>
OpUnit gemm_unit(const Op& op, std::int64_t index, GetA get_a, CropA crop_a, bool a_whole) {
  const Shape& as = get_a(op).shape();
  const Shape& bs = logical_shape(op.b);
  const GemmShape g = gemm_shape(as, bs, op.b_layout);
  std::vector<std::int64_t> c;
  unravel(index, g.out_shape, c);
  const std::int64_t n = c.back();
  Op u = op;
  Box abox = full_box(as);
  if (!a_whole)
    for (std::size_t d = 0; d + 1 < as.size(); ++d) abox[d] = {c[d], 1};
  crop_a(u, abox);
  Box bbox = full_box(bs);
  bbox[op.b_layout == WeightLayout::k_by_n ? 1 : 0] = {n, 1};
  u.b = crop_weights(op.b, bbox);
  u.bias = crop_bias(op.bias, n, 1);
  std::vector<std::int64_t> uc = c;
  uc.back() = 0;
  if (!a_whole) std::fill(uc.begin(), uc.end(), 0);
  Shape us = box_shape(abox);
  us.back() = 1;
  return {std::move(u), flat_index(uc, us)};
}

// A qgemm with a batched B (batched_gemm_shape): the element's A batch and row, and its B matrix and
// column; a broadcast dimension (extent 1) stays at 0. A dynamic per-tensor A stays whole.
OpUnit batched_gemm_unit(const QGemmOp& op, std::int64_t index) {
  const Shape& as = op.a.values.shape();
  const Shape& bs = logical_shape(op.b);
  const BatchedGemmShape g = batched_gemm_shape(as, bs, op.b_layout);
  std::vector<std::int64_t> c;
  unravel(index, g.out_shape, c);
  const std::size_t rank = g.batch.size();
  const bool a_whole = op.a.quantization == ActivationQuantization::dynamic_per_tensor;
  // The coordinate of output batch dimension i in an operand of shape s (aligned from the right).
  auto batch_box = [&](const Shape& s, Box& box) {
    const std::size_t own = s.size() - 2;
    for (std::size_t j = 0; j < own; ++j) box[j] = {s[j] == 1 ? 0 : c[rank - own + j], 1};
  };
  QGemmOp u = op;
  Box abox = full_box(as);
  if (!a_whole) {
    batch_box(as, abox);
    abox[as.size() - 2] = {c[rank], 1};
  }
  u.a = crop_activation(op.a, abox);
  Box bbox = full_box(bs);
  batch_box(bs, bbox);
  bbox[op.b_layout == WeightLayout::k_by_n ? bs.size() - 1 : bs.size() - 2] = {c.back(), 1};
  u.b = crop_weights(op.b, bbox);
  u.bias = crop_bias(op.bias, c.back(), 1);
  const Shape us = batched_gemm_shape(u.a.values.shape(), logical_shape(u.b), u.b_layout).out_shape;
  std::vector<std::int64_t> uc(us.size(), 0);
  if (a_whole) {
    const std::size_t own = as.size() - 2;
    for (std::size_t i = rank - own; i < rank; ++i) uc[i] = as[i - (rank - own)] == 1 ? 0 : c[i];
    uc[rank] = c[rank];
  }
  return {std::move(u), flat_index(uc, us)};
}

struct ConvDims {
  std::size_t n, c, h, w;
};
ConvDims conv_dims(ConvLayout l) { return l == ConvLayout::nchw ? ConvDims{0, 1, 2, 3} : ConvDims{0, 3, 1, 2}; }

// One spatial dimension of a conv unit: the input rows the output row reads, and the padding
// that keeps the window whole. False when every tap is padding (the crop keeps the dimension).
bool crop_window(std::int64_t o, std::int64_t stride, std::int64_t pad_lo, std::int64_t k, std::int64_t dil,
                 std::int64_t size, std::pair<std::int64_t, std::int64_t>& range, std::int64_t& new_pad_lo,
                 std::int64_t& new_pad_hi) {
  const std::int64_t first = o * stride - pad_lo, last = first + (k - 1) * dil;
  const std::int64_t lo = std::max<std::int64_t>(0, first), hi = std::min(size - 1, last);
  if (lo > hi) return false;
  range = {lo, hi - lo + 1};
  new_pad_lo = lo - first;
  new_pad_hi = (k - 1) * dil + 1 - new_pad_lo - (hi - lo + 1);
  return true;
}

// A convolution's unit (qconv2d and conv2d): `input_of` reads the op's input tensor, `crop_input`
// sets the unit's input to a box of the op's; `whole`: the input stays whole (dynamic parameters).
template <class Op, class InputOf, class CropInput>
OpUnit conv_unit_of(const Op& op, std::int64_t index, bool whole, InputOf input_of, CropInput crop_input) {
  const Conv2dShape s = resolve_conv2d(input_of(op).shape(), op.layout, logical_shape(op.weight), op.geometry);
  if (whole) return {op, index};
  std::vector<std::int64_t> c;
  unravel(index, s.output_shape(), c);
  const ConvDims d = conv_dims(op.layout);
  const std::int64_t oc = c[d.c], oh = c[d.h], ow = c[d.w];
  const std::int64_t g = oc / s.group_out_channels;
  const Conv2dGeometry& geo = op.geometry;
  Box ibox = full_box(input_of(op).shape());
  ibox[d.n] = {c[d.n], 1};
  ibox[d.c] = {g * s.group_in_channels, s.group_in_channels};
  Conv2dGeometry ng = geo;
  ng.groups = 1;
  std::pair<std::int64_t, std::int64_t> hr, wr;
  std::int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  std::vector<std::int64_t> uc(4, 0);
  if (crop_window(oh, geo.stride_h, geo.pad_top, s.kernel_h, geo.dilation_h, s.height, hr, pt, pb) &&
      crop_window(ow, geo.stride_w, geo.pad_left, s.kernel_w, geo.dilation_w, s.width, wr, pl, pr)) {
    ibox[d.h] = hr;
    ibox[d.w] = wr;
    ng.stride_h = ng.stride_w = 1;
    ng.pad_top = pt;
    ng.pad_bottom = pb;
    ng.pad_left = pl;
    ng.pad_right = pr;
  } else {  // an all-padding window: keep the spatial dimensions and the geometry
    uc[d.h] = oh;
    uc[d.w] = ow;
  }
  Op u = op;
  crop_input(u, ibox);
  u.geometry = ng;
  Box wbox = full_box(logical_shape(op.weight));
  wbox[0] = {oc, 1};
  u.weight = crop_weights(op.weight, wbox);
  u.bias = crop_bias(op.bias, oc, 1);
  const Conv2dShape us = resolve_conv2d(input_of(u).shape(), u.layout, logical_shape(u.weight), u.geometry);
  return {std::move(u), flat_index(uc, us.output_shape())};
}

OpUnit conv_unit(const QConv2dOp& op, std::int64_t index) {
  return conv_unit_of(
      op, index, op.input.quantization == ActivationQuantization::dynamic_per_tensor,
      [](const QConv2dOp& o) -> const Tensor& { return o.input.values; },
      [&op](QConv2dOp& u, const Box& b) { u.input = crop_activation(op.input, b); });
}

OpUnit float_conv_unit(const Conv2dOp& op, std::int64_t index) {
  return conv_unit_of(
      op, index, false, [](const Conv2dOp& o) -> const Tensor& { return o.input; },
      [&op](Conv2dOp& u, const Box& b) { u.input = crop(op.input, b); });
}

std::string file_safe(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
  return s;
}

// Candidate boxes halving dimension d of `s` (first and second half; the split on a multiple of
// `align`).
std::vector<Box> halve(const Shape& s, std::size_t d, std::int64_t align = 1) {
  std::vector<Box> out;
  if (s[d] < 2) return out;
  std::int64_t mid = s[d] / 2;
  mid -= mid % align;
  if (mid <= 0) return out;
  Box a = full_box(s), b = full_box(s);
  a[d] = {0, mid};
  b[d] = {mid, s[d] - mid};
  out.push_back(a);
  out.push_back(b);
  return out;
}

// The block size along axis `d` of parameters `p` for a tensor of shape `x` (1 if not blocked there).
std::int64_t block_along(const QuantParams& p, const Shape& x, std::size_t d) {
  if (p.granularity() != Granularity::blocked) return 1;
  return static_cast<std::size_t>(resolve_axis(*p.axis, static_cast<std::int64_t>(x.size()))) == d ? p.block_size : 1;
}

}  // namespace

OpUnit unit_op(const OpRequest& op, std::int64_t index) {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    std::vector<std::int64_t> c;
    const Box box = point_box(index, q->x.shape(), c);
    QuantizeOp u = *q;
    u.x = crop(q->x, box);
    u.params = crop_params(q->params, q->x.shape(), box);
    return {std::move(u), 0};
  }
  if (const auto* dq = std::get_if<DequantizeOp>(&op)) {
    std::vector<std::int64_t> c;
    const Box box = point_box(index, dq->q.shape(), c);
    DequantizeOp u = *dq;
    u.q = crop(dq->q, box);
    u.params = crop_params(dq->params, dq->q.shape(), box);
    return {std::move(u), 0};
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    std::vector<std::int64_t> c;
    const Box box = point_box(index, r->acc.shape(), c);
    RequantizeOp u = *r;
    u.acc = crop(r->acc, box);
    if (r->params.axis) {
      const std::int64_t ch =
          c[static_cast<std::size_t>(resolve_axis(*r->params.axis, static_cast<std::int64_t>(c.size())))];
      if (r->params.weight_scales.size() > 1) u.params.weight_scales = {r->params.weight_scales[ch]};
      if (r->params.output_zero_points.size() > 1) u.params.output_zero_points = {r->params.output_zero_points[ch]};
    }
    return {std::move(u), 0};
  }
  if (const auto* g = std::get_if<QGemmOp>(&op); g && logical_shape(g->b).size() > 2)
    return batched_gemm_unit(*g, index);
  if (const auto* g = std::get_if<QGemmOp>(&op))
    return gemm_unit(
        *g, index, [](const QGemmOp& o) -> const Tensor& { return o.a.values; },
        [g](QGemmOp& u, const Box& b) { u.a = crop_activation(g->a, b); },
        g->a.quantization == ActivationQuantization::dynamic_per_tensor);
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op))
    return gemm_unit(
        *w, index, [](const WeightOnlyGemmOp& o) -> const Tensor& { return o.a; },
        [w](WeightOnlyGemmOp& u, const Box& b) { u.a = crop(w->a, b); }, false);
  // A chosen pair depends on every value of its range: the unit is the op itself.
  if (const auto* c = std::get_if<ChooseQParamsOp>(&op)) return {*c, index};
  if (const auto* f = std::get_if<Conv2dOp>(&op)) return float_conv_unit(*f, index);
  // An MX/NVFP4 element depends on its whole block (and NVFP4's on the tensor's amax): the op as it is.
  if (std::holds_alternative<MxQuantizeOp>(op) || std::holds_alternative<MxDequantizeOp>(op)) return {op, index};
  // An mx_gemm element reads whole rows of blocks (and NVFP4 the operands' amax): the op as it is.
  if (std::holds_alternative<MxGemmOp>(op)) return {op, index};
  // qadd: the element of A and the element of B it reads. A B that ort_mlas_avx2 folds into its
  // constant (qadd_b_folded) stays folded: two copies of the A element over a one-element B.
  if (const auto* a = std::get_if<QAddOp>(&op)) {
    QAddOp u = *a;
    const std::int64_t j = qadd_broadcast_index(a->a.shape(), a->b.shape())[static_cast<std::size_t>(index)];
    const bool scalar_b = qadd_b_folded(a->a.shape(), a->b.shape());
    u.a = Tensor(a->a.dtype(), Shape{scalar_b ? 2 : 1});
    for (std::int64_t k = 0; k < u.a.size(); ++k) u.a.set_int(k, a->a.get_int(index));
    u.b = Tensor(a->b.dtype(), Shape{1});
    u.b.set_int(0, a->b.get_int(j));
    return {std::move(u), 0};
  }
  return conv_unit(std::get<QConv2dOp>(op), index);
}

std::vector<OpRequest> halves(const OpRequest& op) {
  std::vector<OpRequest> out;
  auto add = [&](auto make, const std::vector<Box>& boxes) {
    for (const Box& b : boxes) {
      try {
        out.push_back(make(b));
      } catch (const std::logic_error&) {
        // a crop that parameters cannot follow: not a candidate
      }
    }
  };
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    for (std::size_t d = 0; d < q->x.shape().size(); ++d)
      add(
          [&](const Box& b) {
            QuantizeOp u = *q;
            u.x = crop(q->x, b);
            u.params = crop_params(q->params, q->x.shape(), b);
            return OpRequest(u);
          },
          halve(q->x.shape(), d, block_along(q->params, q->x.shape(), d)));
  } else if (const auto* dq = std::get_if<DequantizeOp>(&op)) {
    for (std::size_t d = 0; d < dq->q.shape().size(); ++d)
      add(
          [&](const Box& b) {
            DequantizeOp u = *dq;
            u.q = crop(dq->q, b);
            u.params = crop_params(dq->params, dq->q.shape(), b);
            return OpRequest(u);
          },
          halve(dq->q.shape(), d, block_along(dq->params, dq->q.shape(), d)));
  } else if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    const std::optional<std::size_t> ch = r->params.axis
                                              ? std::optional(static_cast<std::size_t>(resolve_axis(
                                                    *r->params.axis, static_cast<std::int64_t>(r->acc.shape().size()))))
                                              : std::nullopt;
    for (std::size_t d = 0; d < r->acc.shape().size(); ++d)
      add(
          [&](const Box& b) {
            RequantizeOp u = *r;
            u.acc = crop(r->acc, b);
            if (ch && *ch == d) {
              const auto [start, len] = b[d];
              if (r->params.weight_scales.size() > 1)
                u.params.weight_scales = crop_flat(r->params.weight_scales, {r->acc.shape()[d]}, Box{{start, len}});
              if (r->params.output_zero_points.size() > 1)
                u.params.output_zero_points =
                    crop_flat(r->params.output_zero_points, {r->acc.shape()[d]}, Box{{start, len}});
            }
            return OpRequest(u);
          },
          halve(r->acc.shape(), d));
  } else if (const auto* g = std::get_if<QGemmOp>(&op)) {
    const Shape& as = g->a.values.shape();
    const Shape& bs = logical_shape(g->b);
    // B's N and K axes; a batched B keeps its batch (halving A's batch could break the broadcast).
    const std::size_t bn = bs.size() - (g->b_layout == WeightLayout::k_by_n ? 1 : 2);
    const std::size_t bk = g->b_layout == WeightLayout::k_by_n ? bs.size() - 2 : bs.size() - 1;
    if (g->a.quantization != ActivationQuantization::dynamic_per_tensor)
      for (std::size_t d = bs.size() > 2 ? as.size() - 2 : 0; d + 1 < as.size(); ++d)  // rows (batch and M)
        add(
            [&](const Box& b) {
              QGemmOp u = *g;
              u.a = crop_activation(g->a, b);
              return OpRequest(u);
            },
            halve(as, d));
    add(  // columns
        [&](const Box& b) {
          QGemmOp u = *g;
          u.b = crop_weights(g->b, b);
          u.bias = crop_bias(g->bias, b[bn].first, b[bn].second);
          return OpRequest(u);
        },
        halve(bs, bn));
    const std::int64_t align = std::lcm(block_along(g->a.params, as, as.size() - 1), block_along(g->b.params, bs, bk));
    if (g->a.quantization != ActivationQuantization::dynamic_per_tensor &&
        g->a.quantization != ActivationQuantization::dynamic_per_row)
      add(  // depth: both operands
          [&](const Box& b) {
            QGemmOp u = *g;
            Box ab = full_box(as);
            ab.back() = b[bk];
            u.a = crop_activation(g->a, ab);
            u.b = crop_weights(g->b, b);
            return OpRequest(u);
          },
          halve(bs, bk, align));
  } else if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    const Shape& is = c->input.values.shape();
    const ConvDims d = conv_dims(c->layout);
    if (c->input.quantization != ActivationQuantization::dynamic_per_tensor)
      add(
          [&](const Box& b) {
            QConv2dOp u = *c;
            u.input = crop_activation(c->input, b);
            return OpRequest(u);
          },
          halve(is, d.n));
    if (c->geometry.groups == 1) {
      add(  // output channels
          [&](const Box& b) {
            QConv2dOp u = *c;
            u.weight = crop_weights(c->weight, b);
            u.bias = crop_bias(c->bias, b[0].first, b[0].second);
            return OpRequest(u);
          },
          halve(logical_shape(c->weight), 0));
      const Shape& ws = logical_shape(c->weight);  // [out channels, in channels, kh, kw]
      add(  // input channels: the input's and the weights' together (part of every dot product's depth)
          [&](const Box& b) {
            QConv2dOp u = *c;
            Box ib = full_box(is);
            ib[d.c] = b[1];
            u.input = crop_activation(c->input, ib);
            u.weight = crop_weights(c->weight, b);
            return OpRequest(u);
          },
          halve(ws, 1, std::lcm(block_along(c->input.params, is, d.c), block_along(c->weight.params, ws, 1))));
    }
    // The kernel window, where the output is one row (one column) high, as a unit is: half of the
    // taps, and the input cropped to the rows the remaining taps read (crop_window, with the
    // padding they still need), so the dot product's depth halves and the output stays one element.
    const Conv2dShape s = resolve_conv2d(is, c->layout, logical_shape(c->weight), c->geometry);
    for (const bool rows : {true, false}) {
      if ((rows ? s.out_height : s.out_width) != 1 || (rows ? s.kernel_h : s.kernel_w) < 2) continue;
      const std::size_t wd = rows ? 2 : 3, id = rows ? d.h : d.w;
      add(
          [&](const Box& b) {
            const auto [start, len] = b[wd];
            const std::int64_t dil = rows ? c->geometry.dilation_h : c->geometry.dilation_w;
            const std::int64_t pad = rows ? c->geometry.pad_top : c->geometry.pad_left;
            std::pair<std::int64_t, std::int64_t> range;
            std::int64_t lo = 0, hi = 0;
            if (!crop_window(0, 1, pad - start * dil, len, dil, rows ? s.height : s.width, range, lo, hi))
              throw std::logic_error("every remaining tap is padding");
            QConv2dOp u = *c;
            Box ib = full_box(is);
            ib[id] = range;
            u.input = crop_activation(c->input, ib);
            u.weight = crop_weights(c->weight, b);
            (rows ? u.geometry.pad_top : u.geometry.pad_left) = lo;
            (rows ? u.geometry.pad_bottom : u.geometry.pad_right) = hi;
            (rows ? u.geometry.stride_h : u.geometry.stride_w) = 1;
            return OpRequest(u);
          },
          halve(logical_shape(c->weight), wd));
    }
  } else if (const auto* f = std::get_if<Conv2dOp>(&op)) {
    // conv2d: the batch, and (without groups) the output channels; its kernel window is not halved.
    add(
        [&](const Box& b) {
          Conv2dOp u = *f;
          u.input = crop(f->input, b);
          return OpRequest(u);
        },
        halve(f->input.shape(), conv_dims(f->layout).n));
    if (f->geometry.groups == 1)
      add(
          [&](const Box& b) {
            Conv2dOp u = *f;
            u.weight = crop_weights(f->weight, b);
            u.bias = crop_bias(f->bias, b[0].first, b[0].second);
            return OpRequest(u);
          },
          halve(logical_shape(f->weight), 0));
  }
  return out;
}

bool still_fails(const Case& c, const OpRequest& op, Backend& backend, const CallPolicy& call) {
  if (!backend.supports(op).available) return false;
  Reference ref;
  try {
    ref = evaluate(op, c.spec);
  } catch (const InputError&) {
    return false;
  }
  const CallResult result = call_backend(backend, op, call);
  if (!result.out) return true;  // a crash or a timeout is a failure too
  const Tensor& out = *result.out;
  // The runner's own rule (harness/verdict.hpp), so a unit fails exactly when the runner would say so.
  return !judge_output(c.expectation_for(backend.name()), c.spec.name, backend.claim(), op, ref, out, 0).pass;
}

namespace {

// <suite>__<case>__<backend>.json, each part in letters, digits, '-', '_' and '.'. Where that is not
// a faithful spelling of the names (a character replaced, a part cut to its bound, a "__" inside a
// part, which the separator makes ambiguous), a hash of the full names follows, so every (case,
// backend) has its own file ("a/b" and "a_b" no longer share one) and no name passes the 255 bytes
// a file name may have.
std::filesystem::path reproducer_path(const Case& c, const Backend& b, const std::string& dir) {
  const std::string backend = b.name();
  bool faithful = true;
  const auto part = [&](const std::string& s, std::size_t bound) {
    std::string p = file_safe(s);
    if (p != s || p.find("__") != std::string::npos || p.empty()) faithful = false;
    if (p.size() > bound) {
      p.resize(bound);
      faithful = false;
    }
    return p;
  };
  std::string name = part(c.suite, 60) + "__" + part(c.name, 100) + "__" + part(backend, 40);
  if (!faithful) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the three names, each ended by a NUL
    for (const std::string* s : {&c.suite, &c.name, &backend})
      for (std::size_t i = 0; i <= s->size(); ++i)
        h = (h ^ static_cast<unsigned char>(i < s->size() ? (*s)[i] : '\0')) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    name += "__" + std::string(hex, 12);
  }
  return std::filesystem::path(dir) / (name + ".json");
}

// canonical_nans: a NaN payload the format cannot spell is written as the loader's NaN rather than
// aborting the run (the element's value is unchanged for every spec but NaN-payload ones).
nlohmann::json reproducer_case(const Case& c, const std::string& backend) {
  nlohmann::json jc = case_to_json(c, WriteOptions{true});
  jc["expect"] = {{backend, expectation_to_json(c.expectation_for(backend))}};
  return jc;
}

void save_reproducer(const std::string& suite, const std::string& description, nlohmann::json cases,
                     const std::filesystem::path& path) {
  const nlohmann::json file = {{"suite", suite + "-repro"}, {"description", description}, {"cases", std::move(cases)}};
  write_file_atomic(path, json_file_text(file, 1));
}

}  // namespace

void save_single_case(const Case& c, const std::string& backend, const std::filesystem::path& path) {
  if (!c.links.empty())
    throw InputError("case '" + c.name + "' takes its " + c.links.front().field + " from '" + c.links.front().producer +
                     "': a single-case file cannot hold it (standalone_case binds it)");
  Case alone = c;
  alone.agreements.clear();  // the other case is not in the file
  save_reproducer(c.suite, "A reproducer written by qconform for " + c.id() + " on " + backend,
                  nlohmann::json::array({reproducer_case(alone, backend)}), path);
}

std::string write_chain_reproducer(const std::vector<Case>& cases, const Case& c, Backend& b, const std::string& dir,
                                   const std::string& description, BackendResult& r) {
  std::set<std::string> names;
  for (const Case& x : cases) names.insert(x.name);
  nlohmann::json list = nlohmann::json::array();
  for (Case x : cases) {
    if (x.name != c.name) x.agreements.clear();
    std::erase_if(x.agreements, [&](const Agreement& a) { return !names.contains(a.other); });
    list.push_back(reproducer_case(x, b.name()));
  }
  const std::filesystem::path path = reproducer_path(c, b, dir);
  save_reproducer(c.suite, "A reproducer written by qconform for " + c.id() + " on " + b.name() + ". " + description,
                  std::move(list), path);
  r.reproducer = path.string();
  r.reproduce_command = "qconform run " + path.string() + " --backend " + b.name();
  return path.string();
}

bool write_reproducer(const Case& c, Backend& b, const std::vector<std::int64_t>& deciding, const std::string& dir,
                      BackendResult& r, const CallPolicy& call) {
  if (deciding.empty()) return false;
  // The deciding element with the largest |delta| (the worst list is sorted that way).
  std::int64_t index = deciding.front();
  for (const ElementDiff& d : r.metrics.worst)
    if (std::binary_search(deciding.begin(), deciding.end(), d.index)) {
      index = d.index;
      break;
    }
  Case unit = c;
  try {
    OpUnit u = unit_op(c.op, index);
    unit.op = std::move(u.op);
    unit.name = c.name + "-element-" + std::to_string(index);
    unit.description = "The unit of element " + std::to_string(index) + " of " + c.id() + " (element " +
                       std::to_string(u.index) + " here), where " + b.name() + " failed.";
  } catch (const std::exception& e) {
    r.reason += "; no reproducer: " + std::string(e.what());
    return false;
  }
  bool fails = still_fails(unit, unit.op, b, call);
  if (!fails) {
    unit = c;  // the unit passes on its own (a tiling or blocking effect): keep the whole case
    unit.description = "The whole case " + c.id() + ": its smallest unit passes on " + b.name() + " alone.";
    fails = still_fails(unit, unit.op, b, call);
  }
  const std::filesystem::path path = reproducer_path(c, b, dir);
  save_single_case(unit, b.name(), path);
  r.reproducer = path.string();
  r.reproduce_command = "qconform run " + path.string() + " --backend " + b.name();
  return fails;
}

Case shrink_case(const Case& c, Backend& backend, int max_steps, const CallPolicy& call) {
  if (!still_fails(c, c.op, backend, call)) return c;
  Case best = c;
  // First the unit of each failing element: usually one element or one dot product. (A call that
  // crashes or times out has no elements to look at; halving still applies.)
  const Reference ref = evaluate(c.op, c.spec);
  const CallResult whole = call_backend(backend, c.op, call);
  if (whole.out && whole.out->dtype() == ref.expected.dtype() && whole.out->shape() == ref.expected.shape()) {
    for (std::int64_t i : mismatch_indices(ref.expected, *whole.out, ref.specified)) {
      if (--max_steps < 0) break;
      try {
        OpUnit u = unit_op(c.op, i);
        if (still_fails(c, u.op, backend, call)) {
          best.op = std::move(u.op);
          best.name = c.name + "-element-" + std::to_string(i);
          break;  // and on to halving the unit itself: its depth, its channels
        }
      } catch (const std::exception&) {
      }
    }
  }
  // Then halving, greedily: keep any half that still fails, until none does. A one-element unit
  // shrinks further along its depth (a dot product of K = 66400 that fails already at K = 2) and a
  // convolution's along its input channels.
  const std::string unit_name = best.name;
  for (bool progress = true; progress && max_steps > 0;) {
    progress = false;
    for (OpRequest& h : halves(best.op)) {
      if (--max_steps < 0) break;
      if (still_fails(c, h, backend, call)) {
        best.op = std::move(h);
        best.name = unit_name == c.name ? c.name + "-shrunk" : unit_name + "-shrunk";
        progress = true;
        break;
      }
    }
  }
  return best;
}

}  // namespace qc
