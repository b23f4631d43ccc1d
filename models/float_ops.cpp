#include "models/float_ops.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qc::onnx {

namespace {

constexpr std::string_view kFloatOps[] = {"Relu",    "Clip",      "MaxPool", "Reshape",
                                          "Flatten", "Transpose", "Concat",  "Identity"};

const Tensor& numbers(const Value* v, const std::string& where, const char* what) {
  if (!v) throw InputError(where + ": input '" + what + "' is missing");
  if (!v->numbers) throw InputError(where + ": input '" + what + "' is an int64 tensor, not numbers");
  return *v->numbers;
}

Value wrap(Tensor t, int elem_type) {
  Value v;
  v.elem_type = elem_type;
  v.shape = t.shape();
  v.numbers = std::move(t);
  return v;
}

std::vector<std::int64_t> ints_attr(const Node& n, std::string_view name, std::vector<std::int64_t> fallback) {
  const Attribute* a = n.attr(name);
  return a ? a->ints : fallback;
}
std::int64_t int_attr(const Node& n, std::string_view name, std::int64_t fallback) {
  const Attribute* a = n.attr(name);
  return a ? a->i : fallback;
}

// Elements keep their bits: every op here moves values or picks one of them.
Tensor gather(const Tensor& x, const Shape& shape, const std::vector<std::int64_t>& from) {
  Tensor out(x.dtype(), shape);
  for (std::int64_t i = 0; i < out.size(); ++i) out.set_bits(i, x.bits(from[static_cast<std::size_t>(i)]));
  return out;
}

// NaN compares as the larger value (ONNX Max/MaxPool propagate NaN; ORT's pooling does).
bool greater(double a, double b) { return std::isnan(a) || (!std::isnan(b) && a > b); }

Value relu_or_clip(const Node& n, const std::vector<const Value*>& in, const std::string& where) {
  const Tensor& x = numbers(in.at(0), where, "X");
  double lo = 0, hi = std::numeric_limits<double>::infinity();
  if (n.op_type == "Clip") {
    lo = -std::numeric_limits<double>::infinity();
    if (const Attribute* a = n.attr("min")) lo = a->f;  // opset < 11
    if (const Attribute* a = n.attr("max")) hi = a->f;
    if (in.size() > 1 && in[1]) lo = numbers(in[1], where, "min").get_double(0);
    if (in.size() > 2 && in[2]) hi = numbers(in[2], where, "max").get_double(0);
  }
  Tensor out(x.dtype(), x.shape());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const double v = x.get_double(i);
    if (std::isnan(v) || (v >= lo && v <= hi)) {
      out.set_bits(i, x.bits(i));
    } else {
      // Min(max, Max(x, min)) (Clip-13): with min > max every value becomes max.
      const double c = std::min(std::max(v, lo), hi);
      if (is_float(x.dtype()))
        out.set_double(i, round_into(x.dtype(), c));
      else
        out.set_int(i, static_cast<std::int64_t>(c));
    }
  }
  return wrap(std::move(out), in[0]->elem_type);
}

Value max_pool(const Node& n, const std::vector<const Value*>& in, const std::string& where) {
  const Tensor& x = numbers(in.at(0), where, "X");
  if (x.rank() != 4) throw InputError(where + ": MaxPool takes a 4-D NCHW input here, not " + shape_str(x.shape()));
  const Attribute* ap = n.attr("auto_pad");
  if (ap && ap->s != "NOTSET" && ap->s != "VALID")
    throw InputError(where + ": MaxPool auto_pad=" + ap->s + " is not supported (give explicit pads)");
  if (n.outputs.size() > 1 && !n.outputs[1].empty())
    throw InputError(where + ": MaxPool's Indices output is not supported");
  const auto k = ints_attr(n, "kernel_shape", {});
  if (k.size() != 2) throw InputError(where + ": MaxPool needs a 2-D kernel_shape");
  const auto s = ints_attr(n, "strides", {1, 1});
  const auto d = ints_attr(n, "dilations", {1, 1});
  const auto p = ints_attr(n, "pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4)
    throw InputError(where + ": MaxPool needs 2 strides, 2 dilations and 4 pads for a 2-D kernel");
  for (int i = 0; i < 2; ++i)
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0 || p[i + 2] < 0)
      throw InputError(where +
                       ": MaxPool's kernel_shape, strides and dilations must be positive and its pads not negative");
  const bool ceil_mode = int_attr(n, "ceil_mode", 0) != 0;
  const std::int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  auto out_dim = [&](std::int64_t in_dim, int i) {
    const std::int64_t span = in_dim + p[i] + p[i + 2] - ((k[i] - 1) * d[i] + 1);
    if (span < 0) throw InputError(where + ": MaxPool's window is larger than its padded input");
    std::int64_t o = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
    // ONNX: with ceil_mode, a last window that starts in the right padding is dropped.
    if (ceil_mode && (o - 1) * s[i] >= in_dim + p[i]) --o;
    return o;
  };
  const std::int64_t OH = out_dim(H, 0), OW = out_dim(W, 1);
  Tensor out(x.dtype(), {N, C, OH, OW});
  std::int64_t o = 0;
  for (std::int64_t nc = 0; nc < N * C; ++nc)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow, ++o) {
        std::int64_t best = -1;
        for (std::int64_t kh = 0; kh < k[0]; ++kh)
          for (std::int64_t kw = 0; kw < k[1]; ++kw) {
            const std::int64_t h = oh * s[0] - p[0] + kh * d[0], w = ow * s[1] - p[1] + kw * d[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;  // padding never wins (ONNX: -inf)
            const std::int64_t i = (nc * H + h) * W + w;
            if (best < 0 || greater(x.get_double(i), x.get_double(best))) best = i;
          }
        if (best < 0) throw InputError(where + ": a MaxPool window covers only padding");
        out.set_bits(o, x.bits(best));
      }
  return wrap(std::move(out), in[0]->elem_type);
}

Value reshape(const Node& n, const std::vector<const Value*>& in, const std::string& where) {
  const Tensor& x = numbers(in.at(0), where, "data");
  Shape target;
  if (n.op_type == "Flatten") {
    std::int64_t axis = int_attr(n, "axis", 1);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis > x.rank()) throw InputError(where + ": Flatten axis out of range");
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.shape()[static_cast<std::size_t>(i)];
    target = {outer, inner};
  } else if (n.op_type == "Identity") {
    target = x.shape();
  } else {
    if (in.size() < 2 || !in[1] || !in[1]->is_int64())
      throw InputError(where + ": Reshape's shape must be an int64 tensor");
    const bool allowzero = int_attr(n, "allowzero", 0) != 0;
    target = in[1]->ints;
    std::int64_t known = 1, infer = -1;
    for (std::size_t i = 0; i < target.size(); ++i) {
      if (target[i] < -1)
        throw InputError(where + ": Reshape's shape " + shape_str(in[1]->ints) + " holds " + std::to_string(target[i]));
      if (target[i] == 0 && !allowzero) {
        if (i >= x.shape().size()) throw InputError(where + ": Reshape copies a dimension the input lacks");
        target[i] = x.shape()[i];
      }
      if (target[i] == -1) {
        if (infer >= 0) throw InputError(where + ": Reshape's shape has two -1");
        infer = static_cast<std::int64_t>(i);
      } else {
        known *= target[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || x.size() % known != 0)
        throw InputError(where + ": Reshape cannot infer a dimension of " + shape_str(in[1]->ints));
      target[static_cast<std::size_t>(infer)] = x.size() / known;
    }
  }
  if (numel(target) != x.size())
    throw InputError(where + ": cannot reshape " + shape_str(x.shape()) + " into " + shape_str(target));
  Tensor out(x.dtype(), target);
  std::copy(x.bytes().begin(), x.bytes().end(), out.bytes().begin());
  return wrap(std::move(out), in[0]->elem_type);
}

Value transpose(const Node& n, const std::vector<const Value*>& in, const std::string& where) {
  const Tensor& x = numbers(in.at(0), where, "data");
  std::vector<std::int64_t> perm = ints_attr(n, "perm", {});
  if (perm.empty())
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != x.rank()) throw InputError(where + ": Transpose's perm has the wrong length");
  Shape shape;
  std::vector<bool> seen(static_cast<std::size_t>(x.rank()), false);
  for (auto p : perm) {
    if (p < 0 || p >= x.rank()) throw InputError(where + ": Transpose's perm is out of range");
    if (seen[static_cast<std::size_t>(p)])
      throw InputError(where + ": Transpose's perm repeats axis " + std::to_string(p));
    seen[static_cast<std::size_t>(p)] = true;
    shape.push_back(x.shape()[static_cast<std::size_t>(p)]);
  }
  std::vector<std::int64_t> in_strides(static_cast<std::size_t>(x.rank()), 1);
  for (int i = x.rank() - 2; i >= 0; --i)
    in_strides[static_cast<std::size_t>(i)] =
        in_strides[static_cast<std::size_t>(i) + 1] * x.shape()[static_cast<std::size_t>(i) + 1];
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.size())), coords;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    unravel(i, shape, coords);
    std::int64_t src = 0;
    for (std::size_t j = 0; j < coords.size(); ++j) src += coords[j] * in_strides[static_cast<std::size_t>(perm[j])];
    from[static_cast<std::size_t>(i)] = src;
  }
  return wrap(gather(x, shape, from), in[0]->elem_type);
}

Value concat(const Node& n, const std::vector<const Value*>& in, const std::string& where) {
  const Tensor& first = numbers(in.at(0), where, "inputs");
  std::int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += first.rank();
  if (axis < 0 || axis >= first.rank()) throw InputError(where + ": Concat axis out of range");
  Shape shape = first.shape();
  shape[static_cast<std::size_t>(axis)] = 0;
  for (const Value* v : in) {
    const Tensor& t = numbers(v, where, "inputs");
    if (t.dtype() != first.dtype() || t.rank() != first.rank())
      throw InputError(where + ": Concat's inputs differ in type or rank");
    for (int i = 0; i < t.rank(); ++i)
      if (i != axis && t.shape()[static_cast<std::size_t>(i)] != first.shape()[static_cast<std::size_t>(i)])
        throw InputError(where + ": Concat's inputs differ outside the axis");
    shape[static_cast<std::size_t>(axis)] += t.shape()[static_cast<std::size_t>(axis)];
  }
  Tensor out(first.dtype(), shape);
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= shape[static_cast<std::size_t>(i)];
  for (std::int64_t i = axis + 1; i < first.rank(); ++i) inner *= shape[static_cast<std::size_t>(i)];
  std::int64_t o = 0;
  for (std::int64_t b = 0; b < outer; ++b)
    for (const Value* v : in) {
      const Tensor& t = *v->numbers;
      const std::int64_t chunk = t.shape()[static_cast<std::size_t>(axis)] * inner;
      for (std::int64_t j = 0; j < chunk; ++j) out.set_bits(o++, t.bits(b * chunk + j));
    }
  return wrap(std::move(out), in[0]->elem_type);
}

}  // namespace

std::span<const std::string_view> float_op_types() { return kFloatOps; }

bool is_float_op(std::string_view op_type) {
  return std::find(std::begin(kFloatOps), std::end(kFloatOps), op_type) != std::end(kFloatOps);
}

Value run_float_op(const Node& n, const std::vector<const Value*>& inputs, const std::string& where) {
  if (n.op_type == "Relu" || n.op_type == "Clip") return relu_or_clip(n, inputs, where);
  if (n.op_type == "MaxPool") return max_pool(n, inputs, where);
  if (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Identity") return reshape(n, inputs, where);
  if (n.op_type == "Transpose") return transpose(n, inputs, where);
  if (n.op_type == "Concat") return concat(n, inputs, where);
  throw InputError(where + ": the float executor does not run " + n.op_type);
}

}  // namespace qc::onnx
