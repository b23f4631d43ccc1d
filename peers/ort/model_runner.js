#!/usr/bin/env node
// ONNX Runtime running a whole model (qconform model, docs/models.md "Whole-model runs"): one
// InferenceSession on the CPU execution provider, one thread, at one graph optimization level.
//
//   node model_runner.js MODEL.onnx LEVEL OUT_DIR [--capture NAME:TYPE,...] INPUT=FILE.npy...
//
// LEVEL is ORT's graphOptimizationLevel ('disabled', 'basic', 'extended', 'all'). --capture makes
// the named intermediate values graph outputs too (TYPE: onnx.proto's element type number) so their
// values come back; qconform asks for it only at 'disabled', where no fusion can change with the
// graph's outputs (an extra output stops ORT from fusing the node that computes it, as Polygraphy's
// users found). Writes OUT_DIR/v<i>.npy for the i-th value of the answer and prints one JSON line:
// {"ort_version": ..., "values": [{"name": ..., "file": ...}, ...]}. A failure prints the error on
// stderr and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');

const { readNpy, writeNpy } = require('./npy.js');

// ---- appending graph outputs to a serialized model ------------------------------------------------
// Protobuf lets a message grow by appending fields: the model's graph (ModelProto field 7) is copied
// with ValueInfoProto entries appended as GraphProto.output (field 12), and written back with its new
// length. Every other field is kept byte for byte.

function readVarint(buf, pos) {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('model: truncated varint');
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
    shift += 7n;
  }
}

function varint(v) {
  let x = BigInt(v);
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x !== 0n) b |= 0x80;
    out.push(b);
  } while (x !== 0n);
  return Buffer.from(out);
}

function field(number, bytes) {
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

// ValueInfoProto {name = 1, type = 2 {tensor_type = 1 {elem_type = 1}}}: the type without a shape.
function valueInfo(name, elemType) {
  const tensor = Buffer.concat([varint(1 << 3), varint(elemType)]);
  return field(12, Buffer.concat([field(1, Buffer.from(name, 'utf8')), field(2, field(1, tensor))]));
}

function withOutputs(model, extra) {
  const parts = [];
  let pos = 0;
  let found = false;
  while (pos < model.length) {
    const start = pos;
    let key;
    [key, pos] = readVarint(model, pos);
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      [, pos] = readVarint(model, pos);
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(model, pos);
      const body = model.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (number === 7) {
        found = true;
        parts.push(field(7, Buffer.concat([body, ...extra.map(([n, t]) => valueInfo(n, t))])));
        continue;
      }
    } else {
      throw new Error('model: wire type ' + wire + ' is not protobuf');
    }
    parts.push(model.subarray(start, pos));
  }
  if (!found) throw new Error('model: no graph');
  return Buffer.concat(parts);
}

// ---- tensors ----------------------------------------------------------------------------------------

const TYPED = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '|u1': ['uint8', Uint8Array],
  '<u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '<i1': ['int8', Int8Array],
  '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array],
};
const DESCR = { float32: '<f4', float64: '<f8', uint8: '|u1', int8: '|i1', int16: '<i2', uint16: '<u2', int32: '<i4', int64: '<i8' };

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 3) throw new Error('usage: model_runner.js MODEL LEVEL OUT_DIR [--capture N:T,...] INPUT=FILE.npy...');
  const [modelPath, level, outDir] = args;
  let capture = [];
  const feeds = {};
  const dir = process.env.QCONFORM_ORT_NODE_MODULES;
  const ort = require(dir ? path.join(dir, 'onnxruntime-node') : 'onnxruntime-node');
  for (let i = 3; i < args.length; ++i) {
    if (args[i] === '--capture') {
      capture = args[++i].split(',').filter((s) => s).map((s) => {
        const k = s.lastIndexOf(':');
        return [s.slice(0, k), Number(s.slice(k + 1))];
      });
      continue;
    }
    const eq = args[i].indexOf('=');
    const npy = readNpy(args[i].slice(eq + 1));
    const kind = TYPED[npy.descr];
    if (!kind) throw new Error('input ' + args[i] + ': unsupported dtype ' + npy.descr);
    feeds[args[i].slice(0, eq)] = new ort.Tensor(kind[0], npy.data, npy.shape);
  }
  let model = fs.readFileSync(modelPath);
  if (capture.length) model = withOutputs(model, capture);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: level,
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const result = await session.run(feeds);
  const values = [];
  let i = 0;
  for (const name of session.outputNames) {
    const t = result[name];
    const descr = DESCR[t.type];
    if (!descr) throw new Error('output ' + name + ': unsupported type ' + t.type);
    const file = path.join(outDir, 'v' + i++ + '.npy');
    writeNpy(file, descr, t.dims, t.data);
    values.push({ name, file });
  }
  const version = require(dir ? path.join(dir, 'onnxruntime-node', 'package.json') : 'onnxruntime-node/package.json').version;
  process.stdout.write(JSON.stringify({ ort_version: version, values }) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.message ? e.message : e) + '\n');
  process.exit(1);
});
