#include "models/model_plan.hpp"

#include "harness/evaluate.hpp"
#include "models/float_ops.hpp"
#include "oracles/qlinear.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

namespace qc::onnx {

namespace {

// The ops lowered to op requests (QOperator nodes and the float compute nodes of QDQ models).
constexpr std::string_view kQuantizedOps[] = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                                              "ConvInteger",    "MatMulInteger",    "QLinearAdd"};
constexpr std::string_view kQdqComputeOps[] = {"Conv", "MatMul", "Gemm"};

bool one_of(std::string_view s, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

Value tensor_value(Tensor t, int elem_type) {
  Value v;
  v.elem_type = elem_type;
  v.shape = t.shape();
  v.numbers = std::move(t);
  return v;
}

int elem_type_of(DType t) {
  for (int e = 0; e <= static_cast<int>(ElemType::f4e2m1); ++e)
    if (to_dtype(e) == t) return e;
  return 0;
}

// Reading a node: its inputs by position, its attributes, and messages that name it.
class NodeView {
 public:
  NodeView(const Node& n, const std::string& model)
      : n_(n), where_(model + ": node '" + n.label() + "' (" + n.op_type + ")") {}
  const std::string& where() const { return where_; }
  const Node& node() const { return n_; }
  bool has(std::size_t i) const { return i < n_.inputs.size() && !n_.inputs[i].empty(); }
  const std::string& input(std::size_t i) const {
    if (!has(i)) fail("input " + std::to_string(i) + " is missing");
    return n_.inputs[i];
  }
  std::int64_t int_attr(std::string_view name, std::int64_t fallback) const {
    const Attribute* a = n_.attr(name);
    return a ? a->i : fallback;
  }
  std::vector<std::int64_t> ints_attr(std::string_view name, std::vector<std::int64_t> fallback) const {
    const Attribute* a = n_.attr(name);
    return a ? a->ints : fallback;
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(where_ + ": " + what); }

 private:
  const Node& n_;
  std::string where_;
};

const Value& lookup(const Env& env, const std::string& name, const NodeView& v) {
  const auto it = env.find(name);
  if (it == env.end()) v.fail("value '" + name + "' has not been computed");
  return it->second;
}
const Tensor& numbers_of(const Value& val, const std::string& name, const NodeView& v) {
  if (!val.numbers) v.fail("'" + name + "' is an int64 tensor, where numbers are needed");
  return *val.numbers;
}

// Scale and zero point of a quantize/dequantize/QLinear operand, from constants (ONNX
// QuantizeLinear/DequantizeLinear: y_scale a scalar or a 1-D tensor along `axis`, or blocked with
// block_size; the zero point of the same shape, its type the quantized type).
QuantParams qparams(const Env& constants, const NodeView& v, std::size_t scale_in, std::size_t zp_in, const Shape& x,
                    std::int64_t axis, std::int64_t block_size) {
  const std::string& sname = v.input(scale_in);
  const auto sit = constants.find(sname);
  if (sit == constants.end())
    v.fail("its scale '" + sname +
           "' is not a constant (qconform judges quantized nodes whose parameters are "
           "initializers or Constant nodes)");
  const Tensor& s = numbers_of(sit->second, sname, v);
  if (s.dtype() != DType::f32 && s.dtype() != DType::f16 && s.dtype() != DType::bf16)
    v.fail("its scale '" + sname + "' is " + std::string(name(s.dtype())) + ", not float, float16 or bfloat16");
  QuantParams p;
  p.scale_dtype = s.dtype();
  for (std::int64_t i = 0; i < s.size(); ++i) {
    const double x = s.get_double(i);
    if (!(x > 0) || !std::isfinite(x))
      v.fail("its scale '" + sname + "' holds " + describe_value(x) + " at " + std::to_string(i) +
             ": a scale is positive and finite");
    p.scales.push_back(x);
  }
  if (v.has(zp_in)) {
    const std::string& zname = v.input(zp_in);
    const auto zit = constants.find(zname);
    if (zit == constants.end()) v.fail("its zero point '" + zname + "' is not a constant");
    const Tensor& z = numbers_of(zit->second, zname, v);
    if (z.size() != s.size())
      v.fail("its zero point '" + zname + "' has " + std::to_string(z.size()) + " values and its scale " +
             std::to_string(s.size()));
    if (is_int(z.dtype()))
      for (std::int64_t i = 0; i < z.size(); ++i) p.zero_points.push_back(z.get_int(i));
  }
  const bool scalar = s.rank() == 0 || (s.size() == 1 && block_size == 0);
  if (!scalar) {
    p.axis = static_cast<int>(axis);
    p.block_size = block_size;
    if (block_size == 0 && s.rank() != 1) v.fail("a per-axis scale must be 1-D, not " + shape_str(s.shape()));
    if (x.empty()) return p;  // checked against the operand's shape when the op is made
    const int ax = resolve_axis(static_cast<int>(axis), static_cast<std::int64_t>(x.size()));
    if (ax < 0 || ax >= static_cast<int>(x.size())) v.fail("axis " + std::to_string(axis) + " is out of range");
    const std::int64_t extent = x[static_cast<std::size_t>(ax)];
    const std::int64_t want = block_size > 0 ? (extent + block_size - 1) / block_size : extent;
    if (block_size == 0 && s.size() != want)
      v.fail("its scale '" + sname + "' has " + std::to_string(s.size()) + " values for axis " + std::to_string(axis) +
             " of extent " + std::to_string(extent) + " (input shape " + shape_str(x) + ")");
  }
  return p;
}

DType zero_point_type(const Env& constants, const NodeView& v, std::size_t zp_in, DType fallback) {
  if (!v.has(zp_in)) return fallback;
  const auto it = constants.find(v.input(zp_in));
  if (it == constants.end() || !it->second.numbers) v.fail("its zero point '" + v.input(zp_in) + "' is not a constant");
  return it->second.numbers->dtype();
}

// QuantizeLinear's output type: its zero point's, else the output_dtype attribute (opset 21), else uint8.
DType quantize_output_type(const Env& constants, const NodeView& v) {
  DType out = DType::u8;
  if (const Attribute* a = v.node().attr("output_dtype"); a && a->i != 0) {
    const auto t = to_dtype(static_cast<int>(a->i));
    if (!t) v.fail("output_dtype " + elem_type_name(static_cast<int>(a->i)) + " is not supported");
    out = *t;
  }
  return zero_point_type(constants, v, 2, out);
}

Conv2dGeometry conv_geometry(const NodeView& v) {
  const Attribute* ap = v.node().attr("auto_pad");
  if (ap && ap->s != "NOTSET" && ap->s != "VALID")
    v.fail("auto_pad=" + ap->s + " is not supported (give explicit pads)");
  Conv2dGeometry g;
  const auto s = v.ints_attr("strides", {1, 1});
  const auto d = v.ints_attr("dilations", {1, 1});
  const auto p = v.ints_attr("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4) v.fail("only 2-D convolutions are supported");
  g.stride_h = s[0];
  g.stride_w = s[1];
  g.dilation_h = d[0];
  g.dilation_w = d[1];
  // ONNX pads: [x1_begin, x2_begin, x1_end, x2_end].
  g.pad_top = p[0];
  g.pad_left = p[1];
  g.pad_bottom = p[2];
  g.pad_right = p[3];
  g.groups = v.int_attr("group", 1);
  return g;
}

std::optional<Tensor> constant_tensor(const Env& constants, const std::string& name) {
  const auto it = constants.find(name);
  if (it == constants.end() || !it->second.numbers) return std::nullopt;
  return *it->second.numbers;
}

// What a folded DequantizeLinear of a constant was made from, and the integer operand a DQ step
// dequantizes: the fused readings take the integers and parameters back.
struct Dequantized {
  std::string source;  // the quantized value's name
  QuantParams params;
  DType format = DType::u8;
};

Tensor reshaped(const Tensor& t, Shape shape) {
  Tensor out(t.dtype(), std::move(shape));
  std::copy(t.bytes().begin(), t.bytes().end(), out.bytes().begin());
  return out;
}

// [K, N] -> [N, K, 1, 1] (the weights of the 1x1 convolution a MatMul equals), or [N, K] -> the same.
Tensor as_conv_weights(const Tensor& b, bool n_by_k) {
  const std::int64_t K = n_by_k ? b.shape()[1] : b.shape()[0], N = n_by_k ? b.shape()[0] : b.shape()[1];
  Tensor w(b.dtype(), {N, K, 1, 1});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) w.set_bits(n * K + k, b.bits(n_by_k ? n * K + k : k * N + n));
  return w;
}

class Lowering {
 public:
  Lowering(Model m, const std::string& where, const Spec& spec) : spec_(spec) {
    plan_.where = where;
    plan_.model = std::move(m);
    const Graph& g = plan_.model.graph;
    for (const auto& [name, value] : g.initializers) plan_.constants[name] = value;
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs) {
        if (o.empty()) continue;
        const NodeView v(n, where);
        if (const auto it = producer_.find(o); it != producer_.end())
          v.fail("writes '" + o + "', which node '" + g.nodes[static_cast<std::size_t>(it->second)].label() +
                 "' writes too (a value has one producer)");
        if (g.initializers.count(o)) v.fail("writes '" + o + "', which is an initializer");
        if (std::any_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& i) { return i.name == o; }))
          v.fail("writes '" + o + "', which is a graph input");
        producer_[o] = n.index;
      }
    for (const auto& n : g.nodes)
      for (const auto& i : n.inputs)
        if (!i.empty()) consumers_[i].push_back(n.index);
  }

  Plan run() {
    check_ops();
    const std::vector<int> order = topological_order();
    // Constants first (the dequantized weights and biases), so a node sees every constant it reads
    // whatever the file's order (a MatMul's bias DQ may come after it).
    for (int i : order) {
      const Node& n = plan_.model.graph.nodes[static_cast<std::size_t>(i)];
      if (n.op_type == "DequantizeLinear" && !n.inputs.empty() && is_constant(n.inputs[0])) {
        lower(n);
        absorbed_.insert(i);
      }
    }
    for (int i : order) lower(plan_.model.graph.nodes[static_cast<std::size_t>(i)]);
    add_fused_readings();
    const bool qop = std::any_of(plan_.steps.begin(), plan_.steps.end(), [](const Step& s) {
      return s.op_type.starts_with("QLinear") || s.op_type.ends_with("Integer");
    });
    const bool qdq = std::any_of(plan_.steps.begin(), plan_.steps.end(),
                                 [](const Step& s) { return one_of(s.op_type, kQdqComputeOps); });
    plan_.format = qop && qdq ? "QDQ+QOperator" : qop ? "QOperator" : "QDQ";
    return std::move(plan_);
  }

 private:
  void check_ops() const {
    for (const auto& n : plan_.model.graph.nodes) {
      const NodeView v(n, plan_.where);
      if (n.domain != "" && n.domain != "com.microsoft")
        v.fail("domain '" + n.domain + "' is not supported (qconform reads the default domain and com.microsoft)");
      if (n.op_type == "Constant" || one_of(n.op_type, kQuantizedOps) || one_of(n.op_type, kQdqComputeOps) ||
          is_float_op(n.op_type) || n.op_type == "Add")
        continue;
      std::string list;
      for (const auto& s : supported_op_types()) list += (list.empty() ? "" : ", ") + s;
      v.fail("op " + n.op_type + " is not supported; qconform runs " + list);
    }
  }

  // Kahn's order, stable in the file's order; names what is missing or cyclic.
  std::vector<int> topological_order() {
    const Graph& g = plan_.model.graph;
    std::set<std::string> known;
    for (const auto& [name, _] : plan_.constants) known.insert(name);
    for (const auto& in : g.inputs) known.insert(in.name);
    std::vector<int> order, pending(g.nodes.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i) pending[i] = static_cast<int>(i);
    while (!pending.empty()) {
      bool moved = false;
      for (auto it = pending.begin(); it != pending.end();) {
        const Node& n = g.nodes[static_cast<std::size_t>(*it)];
        const bool ready = std::all_of(n.inputs.begin(), n.inputs.end(),
                                       [&](const std::string& i) { return i.empty() || known.count(i); });
        if (!ready) {
          ++it;
          continue;
        }
        if (n.op_type == "Constant") fold_constant(n);
        for (const auto& o : n.outputs) known.insert(o);
        if (n.op_type != "Constant") order.push_back(*it);
        it = pending.erase(it);
        moved = true;
      }
      if (moved) continue;
      const Node& n = g.nodes[static_cast<std::size_t>(pending.front())];
      for (const auto& i : n.inputs)
        if (!i.empty() && !known.count(i) && !producer_.count(i))
          NodeView(n, plan_.where)
              .fail("input '" + i +
                    "' is not a graph input, an initializer or any node's output (a missing initializer?)");
      NodeView(n, plan_.where).fail("the graph has a cycle through this node");
    }
    for (const auto& o : g.outputs)
      if (!known.count(o.name))
        throw InputError(plan_.where + ": graph output '" + o.name + "' is not computed by any node");
    return order;
  }

  void fold_constant(const Node& n) {
    const NodeView v(n, plan_.where);
    const Attribute* a = n.attr("value");
    if (!a || !a->t) v.fail("only Constant nodes with a tensor 'value' are supported");
    plan_.constants[n.outputs.at(0)] = *a->t;
  }

  bool is_constant(const std::string& name) const { return plan_.constants.count(name) > 0; }

  // A quantized node's scales and zero points (inputs `params`, where given) are constants: the
  // case records them as parameters, and the fused readings need them to lower a pattern. Each scale
  // (the first of each (scale, zero point) pair) is checked now, so a bad one is named before anything runs.
  void require_constant_params(const NodeView& v, std::initializer_list<std::pair<std::size_t, std::size_t>> params) {
    for (const auto& [scale, zp] : params) {
      for (const std::size_t i : {scale, zp}) {
        if (!v.has(i)) continue;
        if (!is_constant(v.input(i)))
          v.fail(std::string(i == scale ? "its scale '" : "its zero point '") + v.input(i) +
                 "' is not a constant (qconform judges quantized nodes whose parameters are initializers or Constant "
                 "nodes)");
      }
      (void)qparams(plan_.constants, v, scale, zp, {}, 0, 0);  // positive, finite scales; matching zero points
    }
  }

  Step& add_step(const Node& n, Step::Kind kind, const std::string& writes) {
    Step s;
    s.kind = kind;
    s.name = n.label();
    s.op_type = n.op_type;
    s.node = n.index;
    for (const auto& i : n.inputs)
      if (!i.empty() && !is_constant(i)) s.reads.push_back(i);
    s.writes = writes;
    plan_.steps.push_back(std::move(s));
    step_of_[writes] = plan_.steps.size() - 1;
    return plan_.steps.back();
  }

  void lower(const Node& n) {
    if (absorbed_.count(n.index)) return;
    const NodeView v(n, plan_.where);
    const std::string& out = n.outputs.at(0);
    if (is_float_op(n.op_type)) {
      add_step(n, Step::Kind::float_op, out);
      return;
    }
    if (n.op_type == "QuantizeLinear") return quantize(n, v);
    if (n.op_type == "DequantizeLinear") return dequantize(n, v);
    if (n.op_type == "QLinearConv" || n.op_type == "ConvInteger") return qconv(n, v);
    if (n.op_type == "QLinearMatMul" || n.op_type == "MatMulInteger") return qmatmul(n, v);
    if (n.op_type == "QLinearAdd") return qadd(n, v);
    if (n.op_type == "Conv") return float_conv(n, v);
    if (n.op_type == "MatMul" || n.op_type == "Gemm") return float_matmul(n, v);
    v.fail("an Add is supported only as the constant bias of a MatMul (DQ -> MatMul -> Add -> Q)");
  }

  void quantize(const Node& n, const NodeView& v) {
    const Env& c = plan_.constants;
    const std::int64_t axis = v.int_attr("axis", 1), block = v.int_attr("block_size", 0);
    const DType out = quantize_output_type(c, v);
    require_constant_params(v, {{1, 2}});
    const bool saturate = v.int_attr("saturate", 1) != 0;
    const std::string x = v.input(0);
    if (is_constant(x)) v.fail("quantizes a constant; qconform expects weights stored quantized");
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = [=](const Env& env) {
      QuantizeOp op;
      op.x = numbers_of(lookup(env, x, v), x, v);
      op.params = qparams(env, v, 1, 2, op.x.shape(), axis, block);
      op.out = out;
      op.saturate = saturate;
      return MadeOp{op, op.x.shape(), elem_type_of(out)};
    };
  }

  void dequantize(const Node& n, const NodeView& v) {
    const std::int64_t axis = v.int_attr("axis", 1), block = v.int_attr("block_size", 0);
    require_constant_params(v, {{1, 2}});
    const std::string x = v.input(0);
    auto make = [=](const Env& env) {
      DequantizeOp op;
      op.q = numbers_of(lookup(env, x, v), x, v);
      op.params = qparams(env, v, 1, 2, op.q.shape(), axis, block);
      // The output has the scale's type (DequantizeLinear-19 and later; float before).
      op.out = op.params.scale_dtype;
      return MadeOp{op, op.q.shape(), elem_type_of(op.out)};
    };
    Dequantized d;
    d.source = x;
    if (is_constant(x)) {
      const MadeOp m = make(plan_.constants);
      const Tensor q = std::get<DequantizeOp>(m.op).q;
      d.params = std::get<DequantizeOp>(m.op).params;
      d.format = q.dtype();
      plan_.constants[n.outputs.at(0)] = tensor_value(evaluate(m.op, spec_).expected, m.elem_type);
      dequantized_[n.outputs.at(0)] = d;
      return;
    }
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = make;
    dequantized_[n.outputs.at(0)] = d;  // params filled when a fused reading needs them
  }

  void qconv(const Node& n, const NodeView& v) {
    const Env& c = plan_.constants;
    const bool qlinear = n.op_type == "QLinearConv";
    // QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B. ConvInteger: x, w, x_zp, w_zp.
    const std::size_t w_in = qlinear ? 3 : 1;
    if (qlinear) require_constant_params(v, {{1, 2}, {4, 5}, {6, 7}});
    const std::string x = v.input(0), w = v.input(w_in);
    const auto weights = constant_tensor(c, w);
    if (!weights) v.fail("its weights '" + w + "' are not a constant");
    if (weights->rank() != 4)
      v.fail("only 2-D convolutions are supported (weights " + shape_str(weights->shape()) + ")");
    const Conv2dGeometry g = conv_geometry(v);
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = [=](const Env& env) {
      QConv2dOp op;
      op.input.values = numbers_of(lookup(env, x, v), x, v);
      op.input.format = op.input.values.dtype();
      op.weight.values = *weights;
      op.weight.format = weights->dtype();
      op.geometry = g;
      if (qlinear) {
        op.input.params = qparams(env, v, 1, 2, op.input.values.shape(), 0, 0);
        op.weight.params = qparams(env, v, 4, 5, weights->shape(), 0, 0);
        op.output.kind = OutputKind::requantized;
        const QuantParams y = qparams(env, v, 6, 7, {}, 0, 0);
        op.output.format = zero_point_type(env, v, 7, DType::u8);
        op.output.scale = y.scales.at(0);
        op.output.zero_point = y.zero_point(0);
        if (v.has(8)) op.bias = constant_tensor(env, v.input(8));
      } else {
        op.input.params.scales = {1.0};
        op.weight.params.scales = std::vector<double>(1, 1.0);
        if (v.has(2)) op.input.params.zero_points = {numbers_of(lookup(env, v.input(2), v), v.input(2), v).get_int(0)};
        if (v.has(3)) {
          const Tensor& z = numbers_of(lookup(env, v.input(3), v), v.input(3), v);
          for (std::int64_t i = 0; i < z.size(); ++i) op.weight.params.zero_points.push_back(z.get_int(i));
          if (z.size() > 1) {
            op.weight.params.scales.assign(static_cast<std::size_t>(z.size()), 1.0);
            op.weight.params.axis = 0;
          }
        }
        op.output.kind = OutputKind::int32;
        op.output.format = DType::i32;
      }
      const Shape shape = op_output_shape(op);
      return MadeOp{op, shape, elem_type_of(op.output.format)};
    };
  }

  void qmatmul(const Node& n, const NodeView& v) {
    const bool qlinear = n.op_type == "QLinearMatMul";
    // QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp. MatMulInteger: A, B, a_zp, b_zp.
    if (qlinear) require_constant_params(v, {{1, 2}, {4, 5}, {6, 7}});
    const std::string a = v.input(0), b = v.input(qlinear ? 3 : 1);
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = [=](const Env& env) {
      QGemmOp op;
      op.a.values = numbers_of(lookup(env, a, v), a, v);
      op.a.format = op.a.values.dtype();
      op.b.values = numbers_of(lookup(env, b, v), b, v);
      op.b.format = op.b.values.dtype();
      if (qlinear) {
        op.a.params = qparams(env, v, 1, 2, op.a.values.shape(), 0, 0);
        op.b.params = qparams(env, v, 4, 5, op.b.values.shape(), -1, 0);  // per column of [K, N]
        op.output.kind = OutputKind::requantized;
        const QuantParams y = qparams(env, v, 6, 7, {}, 0, 0);
        op.output.format = zero_point_type(env, v, 7, DType::u8);
        op.output.scale = y.scales.at(0);
        op.output.zero_point = y.zero_point(0);
      } else {
        op.a.params.scales = {1.0};
        op.b.params.scales = {1.0};
        if (v.has(2)) op.a.params.zero_points = {numbers_of(lookup(env, v.input(2), v), v.input(2), v).get_int(0)};
        if (v.has(3)) {
          const Tensor& z = numbers_of(lookup(env, v.input(3), v), v.input(3), v);
          for (std::int64_t i = 0; i < z.size(); ++i) op.b.params.zero_points.push_back(z.get_int(i));
          if (z.size() > 1) {
            op.b.params.scales.assign(static_cast<std::size_t>(z.size()), 1.0);
            op.b.params.axis = -1;
          }
        }
        op.output.kind = OutputKind::int32;
        op.output.format = DType::i32;
      }
      const Shape shape = op_output_shape(op);
      return MadeOp{op, shape, elem_type_of(op.output.format)};
    };
  }

  void qadd(const Node& n, const NodeView& v) {
    if (n.domain != "com.microsoft") v.fail("QLinearAdd is a com.microsoft op");
    require_constant_params(v, {{1, 2}, {4, 5}, {6, 7}});
    const std::string a = v.input(0), b = v.input(3);
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = [=](const Env& env) {
      QAddOp op;
      op.a = numbers_of(lookup(env, a, v), a, v);
      op.a_params = qparams(env, v, 1, 2, op.a.shape(), 0, 0);
      op.b = numbers_of(lookup(env, b, v), b, v);
      op.b_params = qparams(env, v, 4, 5, op.b.shape(), 0, 0);
      const QuantParams y = qparams(env, v, 6, 7, {}, 0, 0);
      op.output.kind = OutputKind::requantized;
      op.output.format = zero_point_type(env, v, 7, op.a.dtype());
      op.output.scale = y.scales.at(0);
      op.output.zero_point = y.zero_point(0);
      return MadeOp{op, op.a.shape(), elem_type_of(op.output.format)};
    };
  }

  // A float convolution of a QDQ model: weights and bias are constants (dequantized when folded).
  void float_conv(const Node& n, const NodeView& v) {
    const std::string x = v.input(0), w = v.input(1);
    const auto weights = constant_tensor(plan_.constants, w);
    if (!weights) v.fail("its weights '" + w + "' are not a constant");
    if (weights->rank() != 4)
      v.fail("only 2-D convolutions are supported (weights " + shape_str(weights->shape()) + ")");
    std::optional<Tensor> bias;
    if (v.has(2)) {
      bias = constant_tensor(plan_.constants, v.input(2));
      if (!bias) v.fail("its bias '" + v.input(2) + "' is not a constant");
    }
    const Conv2dGeometry g = conv_geometry(v);
    add_step(n, Step::Kind::op, n.outputs.at(0)).make = [=](const Env& env) {
      Conv2dOp op;
      op.input = numbers_of(lookup(env, x, v), x, v);
      op.weight.values = *weights;
      op.weight.format = weights->dtype();
      op.bias = bias;
      op.geometry = g;
      op.out = op.input.dtype();
      const Shape shape = op_output_shape(op);
      return MadeOp{op, shape, elem_type_of(op.out)};
    };
  }

  // A float MatMul (with a constant bias Add after it) or Gemm of a QDQ model, as the 1x1 convolution
  // it equals: A [..., K] -> [M, K, 1, 1], B -> [N, K, 1, 1]; the exact sum is rounded once.
  void float_matmul(const Node& n, const NodeView& v) {
    const bool gemm = n.op_type == "Gemm";
    bool n_by_k = false;
    if (gemm) {
      if (v.int_attr("transA", 0) != 0) v.fail("transA=1 is not supported");
      const Attribute* alpha = n.attr("alpha");
      const Attribute* beta = n.attr("beta");
      if ((alpha && alpha->f != 1.0f) || (beta && beta->f != 1.0f))
        v.fail("alpha and beta other than 1 are not supported");
      n_by_k = v.int_attr("transB", 0) != 0;
    }
    const std::string a = v.input(0), b = v.input(1);
    const auto weights = constant_tensor(plan_.constants, b);
    if (!weights || weights->rank() != 2) v.fail("its B '" + b + "' is not a constant matrix");
    std::optional<Tensor> bias;
    std::string writes = n.outputs.at(0);
    const std::int64_t N = n_by_k ? weights->shape()[0] : weights->shape()[1];
    if (gemm && v.has(2)) {
      bias = constant_tensor(plan_.constants, v.input(2));
      if (!bias || bias->size() != N) v.fail("its C must be a constant of " + std::to_string(N) + " values");
    }
    // MatMul -> Add(constant [N]): the Add joins the MatMul (QDQ's MatMul with bias).
    const auto cons = consumers_.find(writes);
    if (!gemm && cons != consumers_.end() && cons->second.size() == 1) {
      const Node& next = plan_.model.graph.nodes[static_cast<std::size_t>(cons->second[0])];
      if (next.op_type == "Add" && next.inputs.size() == 2) {
        const std::string& other = next.inputs[0] == writes ? next.inputs[1] : next.inputs[0];
        const auto c = constant_tensor(plan_.constants, other);
        if (c && c->size() == N) {
          bias = reshaped(*c, {N});
          writes = next.outputs.at(0);
          absorbed_.insert(next.index);
        }
      }
    }
    if (bias) *bias = reshaped(*bias, {N});
    const Tensor w = as_conv_weights(*weights, n_by_k);
    Step& s = add_step(n, Step::Kind::op, writes);
    s.make = [=](const Env& env) {
      const Tensor& x = numbers_of(lookup(env, a, v), a, v);
      if (x.rank() < 1 || x.shape().back() != w.shape()[1])
        v.fail("A of shape " + shape_str(x.shape()) + " does not match B's K " + std::to_string(w.shape()[1]));
      Conv2dOp op;
      const std::int64_t K = x.shape().back(), M = x.size() / std::max<std::int64_t>(K, 1);
      op.input = reshaped(x, {M, K, 1, 1});
      op.weight.values = w;
      op.weight.format = w.dtype();
      op.bias = bias;
      op.out = x.dtype();
      Shape shape = x.shape();
      shape.back() = N;
      return MadeOp{op, shape, elem_type_of(op.out)};
    };
  }

  // ---- fused readings ----------------------------------------------------------------------------

  const Step* step_writing(const std::string& value) const {
    const auto it = step_of_.find(value);
    return it == step_of_.end() ? nullptr : &plan_.steps[it->second];
  }
  bool single_consumer(const std::string& value) const {
    const auto it = consumers_.find(value);
    return it != consumers_.end() && it->second.size() == 1;
  }

  void add_fused_readings() {
    std::vector<Step> fused;
    for (const Step& q : plan_.steps) {
      if (q.op_type != "QuantizeLinear") continue;
      if (auto f = fused_reading(q)) fused.push_back(std::move(*f));
    }
    // Each after the last step it covers (the Q).
    for (Step& f : fused) {
      const auto it = std::find_if(plan_.steps.begin(), plan_.steps.end(),
                                   [&](const Step& s) { return s.name == f.covers.back(); });
      plan_.steps.insert(it + 1, std::move(f));
    }
  }

  std::optional<Step> fused_reading(const Step& q) const {
    const Graph& g = plan_.model.graph;
    const Node& qn = g.nodes[static_cast<std::size_t>(q.node)];
    const NodeView qv(qn, plan_.where);
    std::vector<std::string> covers;
    const Step* prev = step_writing(qn.inputs.at(0));
    std::optional<FusedActivation> act = FusedActivation::none;
    if (prev && prev->op_type == "Relu" && single_consumer(prev->writes)) {
      act = FusedActivation::relu;
      covers.push_back(prev->name);
      prev = step_writing(prev->reads.at(0));
    }
    if (!prev || !one_of(prev->op_type, kQdqComputeOps) || !single_consumer(prev->writes)) return std::nullopt;
    const Node& cn = g.nodes[static_cast<std::size_t>(prev->node)];
    covers.insert(covers.begin(), prev->name);
    covers.push_back(q.name);
    // The activation: a DQ step of an integer value; the weights and bias: folded DQs of constants.
    const auto xd = dequantized_.find(cn.inputs.at(0));
    const auto wd = dequantized_.find(cn.inputs.at(1));
    if (xd == dequantized_.end() || wd == dequantized_.end() || is_constant(xd->second.source) ||
        !is_constant(wd->second.source))
      return std::nullopt;
    const Step* xdq = step_writing(cn.inputs.at(0));
    if (!xdq) return std::nullopt;
    if (single_consumer(xdq->writes)) covers.insert(covers.begin(), xdq->name);
    const Node& xdn = g.nodes[static_cast<std::size_t>(xdq->node)];
    const NodeView xv(xdn, plan_.where);
    const Env& c = plan_.constants;
    // Per-tensor activation and output parameters only (what the fused kernels take).
    const auto scalar = [&](const Node& n) {
      const auto s = constant_tensor(c, n.inputs.at(1));
      return s && s->size() == 1;
    };
    if (!scalar(xdn) || !scalar(qn)) return std::nullopt;
    const QuantParams xp = qparams(c, xv, 1, 2, {1}, 1, 0);
    const Dequantized& w = wd->second;
    const Tensor weights = *constant_tensor(c, w.source);
    QuantParams wp = w.params;
    // The bias: a folded DQ of int32 values with zero point 0 and scale s_x * s_w (in the scales'
    // format), as the fused kernel adds it to the accumulator; otherwise no fused reading.
    std::optional<Tensor> bias;
    std::string bias_name;
    if (cn.op_type == "Conv" && cn.inputs.size() > 2 && !cn.inputs[2].empty()) bias_name = cn.inputs[2];
    if (cn.op_type == "Gemm" && cn.inputs.size() > 2 && !cn.inputs[2].empty()) bias_name = cn.inputs[2];
    if (cn.op_type == "MatMul" && prev->writes != cn.outputs.at(0)) {
      const Node& add = g.nodes[static_cast<std::size_t>(consumers_.at(cn.outputs.at(0)).at(0))];
      bias_name = add.inputs[0] == cn.outputs.at(0) ? add.inputs[1] : add.inputs[0];
    }
    if (!bias_name.empty()) {
      const auto bd = dequantized_.find(bias_name);
      if (bd == dequantized_.end() || bd->second.format != DType::i32) return std::nullopt;
      const QuantParams& bp = bd->second.params;
      for (std::size_t i = 0; i < bp.scales.size(); ++i) {
        const double sw = wp.scales[wp.scales.size() == 1 ? 0 : i];
        if (bp.zero_point(static_cast<std::int64_t>(i)) != 0 ||
            bp.scales[i] != round_into(xp.scale_dtype, xp.scales[0] * sw))
          return std::nullopt;
      }
      bias = reshaped(*constant_tensor(c, bd->second.source), {numel(constant_tensor(c, bd->second.source)->shape())});
    }
    const QuantParams yp = qparams(c, qv, 1, 2, {1}, 1, 0);
    OutputStage output;
    output.kind = OutputKind::requantized;
    output.format = quantize_output_type(c, qv);
    output.scale = yp.scales[0];
    output.zero_point = yp.zero_point(0);
    if (act == FusedActivation::relu)
      output.clamp = fused_activation_range(*act, static_cast<float>(output.scale), output.zero_point, output.format);
    const std::string x = xd->second.source;
    Step s;
    s.kind = Step::Kind::fused;
    s.name = cn.label() + ".fused";
    s.op_type = "fused " + cn.op_type;
    s.node = q.node;
    s.reads = {x};
    s.writes = q.writes;
    s.covers = covers;
    const bool conv = cn.op_type == "Conv";
    const bool n_by_k = cn.op_type == "Gemm" && NodeView(cn, plan_.where).int_attr("transB", 0) != 0;
    const Conv2dGeometry geometry = conv ? conv_geometry(NodeView(cn, plan_.where)) : Conv2dGeometry{};
    const std::string where = plan_.where;
    s.make = [=](const Env& env) {
      const Tensor& xv = numbers_of(lookup(env, x, qv), x, qv);
      ActivationOperand in;
      in.values = xv;
      in.format = xv.dtype();
      in.params = xp;
      QWeights qw;
      qw.values = weights;
      qw.format = weights.dtype();
      qw.params = wp;
      if (conv) {
        QConv2dOp op;
        op.input = in;
        op.weight = qw;
        op.bias = bias;
        op.geometry = geometry;
        op.output = output;
        const Shape shape = op_output_shape(op);
        return MadeOp{op, shape, elem_type_of(output.format)};
      }
      QGemmOp op;
      op.a = in;
      op.b = qw;
      op.b_layout = n_by_k ? WeightLayout::n_by_k : WeightLayout::k_by_n;
      op.bias = bias;
      op.output = output;
      const Shape shape = op_output_shape(op);
      return MadeOp{op, shape, elem_type_of(output.format)};
    };
    return s;
  }

  const Spec& spec_;
  Plan plan_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, std::size_t> step_of_;
  std::map<std::string, Dequantized> dequantized_;
  std::set<int> absorbed_;
};

}  // namespace

std::vector<std::string> supported_op_types() {
  std::vector<std::string> out;
  for (auto s : kQuantizedOps) out.emplace_back(s);
  for (auto s : kQdqComputeOps) out.emplace_back(s);
  out.emplace_back("Add (a MatMul's constant bias)");
  for (auto s : float_op_types()) out.emplace_back(s);
  out.emplace_back("Constant");
  return out;
}

Plan plan_model(Model model, const std::string& where, const Spec& spec) {
  return Lowering(std::move(model), where, spec).run();
}

}  // namespace qc::onnx
