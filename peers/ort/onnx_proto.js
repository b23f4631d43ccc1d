// A minimal protobuf writer for the ONNX messages a one-op model needs (onnx/onnx.proto3:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto, TypeProto,
// TensorShapeProto, OperatorSetIdProto). Field numbers are onnx.proto's; only what the runner
// writes is here, so that no npm package beyond onnxruntime-node is needed.
'use strict';

// onnx.proto TensorProto.DataType
const DataType = {
  f32: 1, u8: 2, i8: 3, u16: 4, i16: 5, i32: 6, i64: 7, f16: 10, f64: 11, bf16: 16,
  f8e4m3fn: 17, f8e5m2: 19, u4: 21, i4: 22,
};

// ---- wire format --------------------------------------------------------------------------------

class Writer {
  constructor() {
    this.parts = [];
  }
  varint(v) {
    // Two's complement in 64 bits for negative values (int64 fields), as protobuf writes them.
    let x = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
      let b = Number(x & 0x7fn);
      x >>= 7n;
      if (x !== 0n) b |= 0x80;
      out.push(b);
    } while (x !== 0n);
    this.parts.push(Uint8Array.from(out));
    return this;
  }
  tag(field, wire) {
    return this.varint((field << 3) | wire);
  }
  int(field, v) {
    return this.tag(field, 0).varint(v);
  }
  bytes(field, data) {
    this.tag(field, 2).varint(data.length);
    this.parts.push(data);
    return this;
  }
  string(field, s) {
    return this.bytes(field, new TextEncoder().encode(s));
  }
  message(field, w) {
    return this.bytes(field, w.finish());
  }
  float(field, f) {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, f, true);
    this.parts.push(b);
    return this;
  }
  finish() {
    const n = this.parts.reduce((a, p) => a + p.length, 0);
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

// ---- messages -----------------------------------------------------------------------------------

// TensorProto {dims = 1, data_type = 2, name = 8, raw_data = 9}; raw_data little-endian.
function tensorProto(name, dtype, shape, raw) {
  const w = new Writer();
  for (const d of shape) w.int(1, d);
  w.int(2, DataType[dtype]);
  w.string(8, name);
  w.bytes(9, new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength));
  return w;
}

// ValueInfoProto {name = 1, type = 2}; TypeProto {tensor_type = 1}; TypeProto.Tensor {elem_type = 1,
// shape = 2}; TensorShapeProto {dim = 1}; Dimension {dim_value = 1}. shape null: rank unknown.
function valueInfo(name, dtype, shape) {
  const t = new Writer().int(1, DataType[dtype]);
  if (shape) {
    const s = new Writer();
    for (const d of shape) s.message(1, new Writer().int(1, d));
    t.message(2, s);
  }
  return new Writer().string(1, name).message(2, new Writer().message(1, t));
}

// AttributeProto {name = 1, i = 3, s = 4, ints = 8, type = 20}; AttributeType INT = 2, STRING = 3,
// INTS = 7.
function attribute(name, value) {
  const w = new Writer().string(1, name);
  if (Array.isArray(value)) {
    for (const v of value) w.int(8, v);
    w.int(20, 7);
  } else if (typeof value === 'string') {
    w.string(4, value).int(20, 3);
  } else {
    w.int(3, value).int(20, 2);
  }
  return w;
}

// NodeProto {input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7}.
function nodeProto(n, index) {
  const w = new Writer();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.opType + '_' + index);
  w.string(4, n.opType);
  for (const [k, v] of Object.entries(n.attrs || {})) w.message(5, attribute(k, v));
  if (n.domain) w.string(7, n.domain);
  return w;
}

// A graph under construction: nodes, initializers, inputs (with the data fed to the session) and
// outputs.
class Graph {
  constructor() {
    this.nodes = [];
    this.initializers = [];
    this.inputs = [];
    this.outputs = [];
    this.feeds = {};
    this.counter = 0;
  }
  fresh(prefix) {
    return prefix + '_' + this.counter++;
  }
  // A constant: raw is a typed array holding the little-endian elements.
  init(dtype, shape, raw, prefix = 'c') {
    const name = this.fresh(prefix);
    this.initializers.push(tensorProto(name, dtype, shape, raw));
    return name;
  }
  // A graph input, fed with `tensor` (an onnxruntime Tensor) when the session runs.
  input(dtype, shape, tensor, prefix = 'x') {
    const name = this.fresh(prefix);
    this.inputs.push(valueInfo(name, dtype, shape));
    this.feeds[name] = tensor;
    return name;
  }
  node(opType, inputs, attrs = {}, nOutputs = 1, domain = '') {
    const outputs = [];
    for (let i = 0; i < nOutputs; i++) outputs.push(this.fresh(opType));
    this.nodes.push({ opType, inputs, outputs, attrs, domain });
    return nOutputs === 1 ? outputs[0] : outputs;
  }
  output(name, dtype) {
    this.outputs.push(valueInfo(name, dtype, null));
  }

  // ModelProto {ir_version = 1, producer_name = 2, graph = 7, opset_import = 8};
  // GraphProto {node = 1, name = 2, initializer = 5, input = 11, output = 12};
  // OperatorSetIdProto {domain = 1, version = 2}.
  serialize(irVersion, opsets) {
    const g = new Writer();
    this.nodes.forEach((n, i) => g.message(1, nodeProto(n, i)));
    g.string(2, 'qconform_ort');
    for (const t of this.initializers) g.message(5, t);
    for (const v of this.inputs) g.message(11, v);
    for (const v of this.outputs) g.message(12, v);
    const m = new Writer().int(1, irVersion).string(2, 'qconform peers/ort');
    m.message(7, g);
    for (const [domain, version] of Object.entries(opsets)) {
      const o = new Writer();
      if (domain) o.string(1, domain);
      m.message(8, o.int(2, version));
    }
    return m.finish();
  }
}

module.exports = { Graph, DataType };
