#!/usr/bin/env node
// ONNX Runtime (CPU execution provider, through the npm package onnxruntime-node) as a qconform
// peer backend: an exec runner (docs/integrate.md, "Protocol reference (exec, version 1)").
//
// Each request becomes a small ONNX model built in memory (onnx_proto.js) around the ONNX or
// com.microsoft operator that computes it in ORT -- QuantizeLinear, DequantizeLinear, MatMulInteger,
// QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul, ConvInteger, QLinearConv,
// DynamicQuantizeLinear -- run by an InferenceSession on the CPU EP with graph optimizations off
// and one thread, so no fusion or partitioning changes what runs. What an operator's type rules or
// ORT's kernels cannot express is answered supports=false with the rule (docs/peers.md lists them).
//
// The package is found in $QCONFORM_ORT_NODE_MODULES (a node_modules folder), else by normal
// require resolution; without it the hello says available=false and why.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

const { Graph } = require('./onnx_proto.js');
const { readNpy, writeNpy } = require('./npy.js');

const PROTOCOL_VERSION = 1;
const NAME = 'onnxruntime-cpu';
const CLAIM = 'ort-cpu';
// IR version 10 / opset 21: QuantizeLinear and DequantizeLinear with 16-bit, 4-bit and blocked
// parameters (ONNX Operators.md, QuantizeLinear-21), the newest set every op here is registered at
// in ORT's CPU EP. com.microsoft 1: MatMulIntegerToFloat, DynamicQuantizeMatMul, QLinearConv.
const IR_VERSION = 10;
const OPSETS = { '': 21, 'com.microsoft': 1 };

// ---- the library ----------------------------------------------------------------------------------

function loadOrt() {
  const tried = [];
  const dir = process.env.QCONFORM_ORT_NODE_MODULES;
  if (dir) {
    const p = path.join(dir, 'onnxruntime-node');
    try {
      return { ort: require(p), from: p };
    } catch (e) {
      tried.push(p + ' (QCONFORM_ORT_NODE_MODULES): ' + firstLine(e.message));
    }
  }
  try {
    return { ort: require('onnxruntime-node'), from: require.resolve('onnxruntime-node') };
  } catch (e) {
    tried.push('require("onnxruntime-node"): ' + firstLine(e.message));
  }
  return {
    ort: null,
    reason:
      'onnxruntime-node is not installed: set QCONFORM_ORT_NODE_MODULES to a node_modules folder holding it ' +
      '(npm install --ignore-scripts onnxruntime-node@1.30.0); tried ' + tried.join('; '),
  };
}

function firstLine(s) {
  return String(s).split('\n')[0];
}

// ---- host facts -----------------------------------------------------------------------------------

// QCONFORM_ORT_CPU_FLAGS (space-separated /proc/cpuinfo flags) replaces the host's: an emulator
// such as qemu-user reports the emulated CPU through CPUID, which MLAS reads, but passes the host's
// /proc/cpuinfo through.
function cpuFlags() {
  if (process.env.QCONFORM_ORT_CPU_FLAGS !== undefined)
    return { flags: new Set(process.env.QCONFORM_ORT_CPU_FLAGS.trim().split(/\s+/)), model: 'as QCONFORM_ORT_CPU_FLAGS says' };
  try {
    const text = fs.readFileSync('/proc/cpuinfo', 'utf8');
    const m = /^(?:flags|Features)\s*:\s*(.*)$/m.exec(text);
    const model = /^model name\s*:\s*(.*)$/m.exec(text);
    return { flags: new Set(m ? m[1].trim().split(/\s+/) : []), model: model ? model[1].trim() : os.arch() };
  } catch (e) {
    return { flags: new Set(), model: os.arch() };
  }
}

// The u8 x s8 GEMM kernel MLAS selects on this CPU, in the order of
// onnxruntime/core/mlas/lib/platform.cpp::MLAS_PLATFORM::MLAS_PLATFORM (x86-64): AVX2+FMA ->
// MlasGemmU8S8KernelAvx2; AVX-VNNI -> ...AvxVnni; AVX512F+BW+DQ+VL -> ...Avx512Core; and
// AVX512-VNNI -> ...Avx512Vnni; AMX-INT8 replaces the dispatch with MlasGemmU8S8DispatchAmx.
// The Avx2 and Avx512Core kernels multiply with vpmaddubsw, which adds adjacent u8*s8 products with
// int16 saturation (qgemm_kernel_avx2.cpp, qgemm_kernel_avx512core.cpp); the VNNI kernels use
// vpdpbusd (exact products, int32 accumulation). The u8 x u8 kernels widen to int16 and use
// vpmaddwd, exact on every level (qgemm_kernel_avx2.cpp MlasGemmU8U8KernelAvx2).
function mlasU8S8Kernel(flags) {
  if (os.arch() !== 'x64') return { kernel: 'non-x86 (' + os.arch() + ')', saturates: 'unknown' };
  let kernel = 'sse41';
  let saturates = 'no';
  if (flags.has('avx2') && flags.has('fma')) [kernel, saturates] = ['Avx2 (vpmaddubsw)', 'yes'];
  if (kernel.startsWith('Avx2') && flags.has('avx_vnni')) [kernel, saturates] = ['AvxVnni (vpdpbusd)', 'no'];
  const core = ['avx512f', 'avx512bw', 'avx512dq', 'avx512vl'].every((f) => flags.has(f));
  if (kernel !== 'sse41' && core) {
    [kernel, saturates] = ['Avx512Core (vpmaddubsw)', 'yes'];
    if (flags.has('avx512_vnni')) [kernel, saturates] = ['Avx512Vnni (vpdpbusd)', 'no'];
  }
  if (kernel !== 'sse41' && flags.has('amx_int8') && flags.has('amx_tile')) [kernel, saturates] = ['Amx', 'no'];
  return { kernel, saturates };
}

// The preset ORT CPU reproduces on this host. Where MLAS multiplies u8 x s8 with vpmaddubsw (AVX2,
// AVX-512 without VNNI), two adjacent products of the raw bytes saturate to int16 before the int32
// accumulation, pairs running along K of MatMulInteger/QLinearMatMul and along (kh, kw, c) of
// QLinearConv: ort-cpu@x86-vpmaddubsw (measured under qemu-x86_64 -cpu max, an AVX2 CPU without
// VNNI; docs/peers.md).
function claimFor(flags) {
  return mlasU8S8Kernel(flags).saturates === 'yes' ? 'ort-cpu@x86-vpmaddubsw' : CLAIM;
}

function hostIsa(flags) {
  if (os.arch() !== 'x64') return os.arch();
  if (flags.has('amx_int8')) return 'amx-int8';
  if (flags.has('avx512_vnni')) return 'avx512_vnni';
  if (flags.has('avx_vnni')) return 'avx_vnni';
  if (flags.has('avx512bw')) return 'avx512 (no vnni)';
  if (flags.has('avx2')) return 'avx2 (no vnni)';
  return 'sse (no avx2)';
}

// ---- tensors --------------------------------------------------------------------------------------

const ORT_TYPE = {
  f32: 'float32', f16: 'float16', f64: 'float64', i32: 'int32', i16: 'int16', u16: 'uint16', i8: 'int8', u8: 'uint8',
};
const TYPED = {
  f32: Float32Array, f16: Uint16Array, f64: Float64Array, i32: Int32Array, i16: Int16Array, u16: Uint16Array,
  i8: Int8Array, u8: Uint8Array,
};
// The .npy storage of each output format (core: npy_storage_dtype).
const NPY = { f32: '<f4', f16: '<f2', f64: '<f8', i32: '<i4', i16: '<i2', u16: '<u2', i8: '|i1', u8: '|u1' };
const INT_RANGE = { i8: [-128, 127], u8: [0, 255], i16: [-32768, 32767], u16: [0, 65535], i32: [-(2 ** 31), 2 ** 31 - 1] };

const isInt = (t) => t in INT_RANGE || t === 'i4' || t === 'u4';
const isFloat = (t) => ['f64', 'f32', 'f16', 'bf16', 'f8e4m3fn', 'f8e5m2'].includes(t);
const product = (shape) => shape.reduce((a, b) => a * b, 1);

// An onnxruntime Tensor from a loaded .npy (the storage type is the format's for every format here).
function ortTensor(ort, dtype, arr) {
  return new ort.Tensor(ORT_TYPE[dtype], new TYPED[dtype](arr.data.buffer, arr.data.byteOffset, arr.data.length),
                        arr.shape);
}

// f64 -> f16 bits, round to nearest even (scales are exact in their format, so this is only their
// re-encoding).
function f16Bits(v) {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return sign | h;
}

function scaleArray(dtype, values) {
  if (dtype === 'f32') return Float32Array.from(values);
  if (dtype === 'f16') return Uint16Array.from(values.map(f16Bits));
  throw new Error('scale format ' + dtype);
}

// ---- requests -------------------------------------------------------------------------------------

class Unsupported extends Error {}
function refuse(reason) {
  throw new Unsupported(reason);
}

function normAxis(axis, rank) {
  return axis < 0 ? axis + rank : axis;
}

function granularity(p) {
  if (p.block_size > 0) return 'blocked';
  if (p.axis !== null && p.axis !== undefined) return 'per_axis';
  return 'per_tensor';
}

// The scale / zero-point tensor shape ONNX wants for parameters `p` of a tensor of `shape`
// (QuantizeLinear-21: a scalar per tensor, 1-D [D_axis] per axis, x's rank with ceil(D/B) blocked).
function paramShape(p, shape) {
  const g = granularity(p);
  if (g === 'per_tensor') return [];
  const axis = normAxis(p.axis, shape.length);
  if (g === 'per_axis') return [shape[axis]];
  return shape.map((d, i) => (i === axis ? Math.ceil(d / p.block_size) : d));
}

// Scale and zero-point initializers (the zero point always present: it fixes the output type).
function paramInits(g, p, shape, zpType) {
  const pshape = paramShape(p, shape);
  const n = product(pshape);
  const scale = g.init(p.scale_dtype, pshape, scaleArray(p.scale_dtype, p.scales), 'scale');
  const zps = p.zero_points.length ? p.zero_points : new Array(n).fill(0);
  const zp = g.init(zpType, pshape, TYPED[zpType].from(zps), 'zp');
  return { scale, zp };
}

// Reads every tensor a request refers to from its folder: tensor i is dir/t<i>.npy.
function loader(dir) {
  return (ref) => {
    const arr = readNpy(path.join(dir, 't' + ref.tensor + '.npy'));
    if (arr.shape.join(',') !== ref.shape.join(','))
      throw new Error('tensor ' + ref.tensor + ' has shape [' + arr.shape + '], the request says [' + ref.shape + ']');
    return arr;
  };
}

const QUANT_OUT = ['i8', 'u8', 'i16', 'u16'];  // QuantizeLinear-21 T2 without float8 and int4 (below)
const DEQUANT_IN = ['i8', 'u8', 'i16', 'u16', 'i32'];

const NO_FLOAT8 = 'onnxruntime-node has no float8 tensor type (onnxruntime-common Tensor types), so an f8 ' +
                  'tensor can neither be fed nor returned';
const NO_INT4 = 'int4 travels packed two per byte (ONNX INT4/UINT4); this runner does not pack or unpack it';

// quantize -> QuantizeLinear-21 (x, y_scale, y_zero_point; axis, block_size).
function buildQuantize(ort, op, load) {
  const x = op.x;
  const p = op.params;
  if (x.dtype === 'bf16') refuse('ORT CPU QuantizeLinear registers float and float16 inputs only (T1), not bfloat16');
  if (x.dtype !== 'f32' && x.dtype !== 'f16')
    refuse('ORT CPU QuantizeLinear registers float and float16 inputs only (T1), not ' + x.dtype);
  if (p.scale_dtype !== x.dtype)
    // Opsets 23-25 let y_scale's type differ from x's in the schema, but ORT 1.30's CPU kernel reads
    // y_scale as x's type (measured: "Tensor type mismatch" at run time), so no opset runs it.
    refuse('ONNX QuantizeLinear-21 types y_scale as T1, the type of x, and ORT 1.30\'s CPU kernel reads y_scale as ' +
           'x\'s type at every opset (23-25 fail with "Tensor type mismatch"): an ' + p.scale_dtype + ' scale with ' +
           x.dtype + ' input is not expressible');
  if (op.out === 'f8e4m3fn' || op.out === 'f8e5m2') refuse(NO_FLOAT8);
  if (op.out === 'i4' || op.out === 'u4') refuse(NO_INT4);
  if (!QUANT_OUT.includes(op.out)) refuse('QuantizeLinear-21 has no ' + op.out + ' output');
  const g = new Graph();
  const xin = g.input(x.dtype, x.shape, ortTensor(ort, x.dtype, load(x)));
  const { scale, zp } = paramInits(g, p, x.shape, op.out);
  const attrs = {};
  if (granularity(p) !== 'per_tensor') attrs.axis = normAxis(p.axis, x.shape.length);
  if (granularity(p) === 'blocked') attrs.block_size = p.block_size;
  const y = g.node('QuantizeLinear', [xin, scale, zp], attrs);
  g.output(y, op.out);
  return { graph: g, output: y, dtype: op.out };
}

// dequantize -> DequantizeLinear-21 (x, x_scale, x_zero_point; axis, block_size); y has x_scale's type.
function buildDequantize(ort, op, load) {
  const q = op.q;
  const p = op.params;
  if (q.dtype === 'f8e4m3fn' || q.dtype === 'f8e5m2') refuse(NO_FLOAT8);
  if (q.dtype === 'i4' || q.dtype === 'u4') refuse(NO_INT4);
  if (!DEQUANT_IN.includes(q.dtype)) refuse('DequantizeLinear-21 has no ' + q.dtype + ' input');
  if (op.out !== p.scale_dtype)
    refuse('ONNX DequantizeLinear-21 gives y the type of x_scale: an ' + op.out + ' output needs an ' + op.out +
           ' scale, not ' + p.scale_dtype);
  if (op.out !== 'f32' && op.out !== 'f16')
    refuse('ORT CPU DequantizeLinear outputs float and float16 only (bfloat16: "not implemented yet")');
  if (q.dtype === 'i32' && p.zero_points.some((z) => z !== 0))
    refuse('ORT CPU DequantizeLinear enforces a zero point of 0 for int32 input (quantize_linear.cc)');
  const g = new Graph();
  const xin = g.input(q.dtype, q.shape, ortTensor(ort, q.dtype, load(q)));
  const { scale, zp } = paramInits(g, p, q.shape, q.dtype);
  const attrs = {};
  if (granularity(p) !== 'per_tensor') attrs.axis = normAxis(p.axis, q.shape.length);
  if (granularity(p) === 'blocked') attrs.block_size = p.block_size;
  const y = g.node('DequantizeLinear', [xin, scale, zp], attrs);
  g.output(y, op.out);
  return { graph: g, output: y, dtype: op.out };
}

// The default rule of the wire (ops.hpp QParamsRule{}): ONNX DynamicQuantizeLinear / ORT
// GetQuantizationParameter, the only recipe DynamicQuantizeLinear computes.
const ONNX_RULE = {
  recipe: 'onnx_ort', scheme: 'asymmetric', include_zero: true, zero_point: 'from_min', nudge: 'rne',
  reduce_range: 'none', narrow_range: false, scale_floor: 0, arithmetic: 'f32',
};

function checkScalesF32(p, what) {
  if (p.scale_dtype !== 'f32')
    refuse('ORT CPU ' + what + ' takes float (f32) scales only, not ' + p.scale_dtype);
  if (p.block_size > 0) refuse(what + ': blocked parameters are not expressible (per tensor or per channel only)');
}

// The activation of a GEMM or convolution as a quantized tensor in the graph: integer values fed
// as they are; float values quantized by QuantizeLinear with the static parameters, or by
// DynamicQuantizeLinear (whose scale and zero point are graph values then).
// The activation's quantized format, refusing what ORT cannot take.
function activationFormat(a, what) {
  const v = a.values;
  const fmt = isInt(v.dtype) ? v.dtype : a.format;
  if (fmt !== 'u8' && fmt !== 'i8') refuse(what + ' takes 8-bit activations (u8 or i8), not ' + fmt);
  if (a.quantization === 'dynamic_per_row')
    refuse('ONNX DynamicQuantizeLinear (and ORT DynamicQuantizeMatMul) quantize the whole tensor: per-row dynamic ' +
           'parameters are not expressible');
  if (a.quantization === 'dynamic_per_tensor') {
    if (fmt !== 'u8') refuse('ONNX DynamicQuantizeLinear produces uint8 only, not ' + fmt);
    for (const [k, want] of Object.entries(ONNX_RULE))
      if (a.rule[k] !== want)
        refuse('ONNX DynamicQuantizeLinear computes its parameters one way (ONNX/ORT from min and max); the request ' +
               'asks for ' + k + ' = ' + JSON.stringify(a.rule[k]));
  }
  return fmt;
}

function activation(ort, g, a, load, what) {
  const v = a.values;
  const fmt = activationFormat(a, what);
  if (a.quantization === 'dynamic_per_tensor') {
    const x = g.input(v.dtype, v.shape, ortTensor(ort, v.dtype, loadFloat(v, load)));
    const [q, scale, zp] = g.node('DynamicQuantizeLinear', [x], {}, 3);
    return { q, scale, zp, fmt, float: x, dynamic: true };
  }
  const p = a.params;
  checkScalesF32(p, what);
  if (granularity(p) !== 'per_tensor')
    refuse(what + ': ORT takes one activation scale and zero point (per tensor); per-axis activation parameters ' +
           'are not expressible');
  const scale = g.init('f32', [], Float32Array.from(p.scales), 'a_scale');
  const zp = g.init(fmt, [], TYPED[fmt].from(p.zero_points.length ? p.zero_points : [0]), 'a_zp');
  if (isInt(v.dtype)) return { q: g.input(v.dtype, v.shape, ortTensor(ort, v.dtype, load(v))), scale, zp, fmt };
  const x = g.input(v.dtype, v.shape, ortTensor(ort, v.dtype, loadFloat(v, load)));
  return { q: g.node('QuantizeLinear', [x, scale, zp]), scale, zp, fmt, float: x };
}

function loadFloat(ref, load) {
  if (ref.dtype !== 'f32') refuse('float activations and weights must be f32 here (the quantizing op takes T1 = the ' +
                                  'scale type, float), not ' + ref.dtype);
  return load(ref);
}

// Host-side transpose of a 2-D array (moves elements only; exact).
function transpose2d(arr, rows, cols) {
  const out = new arr.data.constructor(arr.data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = arr.data[r * cols + c];
  return { shape: [cols, rows], data: out };
}

// GEMM weights as a [K, N] integer initializer with per-tensor or per-column (N) parameters.
function gemmWeights(g, op, load) {
  const b = op.b;
  const v = b.values;
  if (b.packing) refuse(NO_INT4 + ' (packed weights)');
  const fmt = isInt(v.dtype) ? v.dtype : b.format;
  if (fmt !== 'u8' && fmt !== 'i8') refuse('ORT integer GEMMs take 8-bit weights (u8 or i8), not ' + fmt);
  const p = b.params;
  checkScalesF32(p, 'quantized GEMM');
  if (v.shape.length !== 2) refuse('weights must be 2-D');
  const nk = op.b_layout === 'n_by_k';
  let perColumn = false;
  if (granularity(p) === 'per_axis') {
    const axis = normAxis(p.axis, 2);
    if (axis !== (nk ? 0 : 1))
      refuse('ONNX QLinearMatMul / MatMulInteger take per-tensor or per-column (N) weight parameters; parameters ' +
             'along K are not expressible');
    perColumn = true;
  }
  let arr = load(v);
  if (nk) arr = transpose2d(arr, v.shape[0], v.shape[1]);  // ONNX MatMul's B is [K, N]
  const n = arr.shape[1];
  const pshape = perColumn ? [n] : [];
  const scale = g.init('f32', pshape, Float32Array.from(p.scales), 'b_scale');
  const zp = g.init(fmt, pshape, TYPED[fmt].from(p.zero_points.length ? p.zero_points : new Array(product(pshape)).fill(0)), 'b_zp');
  let q;
  if (isInt(v.dtype)) {
    q = g.init(fmt, arr.shape, arr.data, 'b');
  } else {
    if (v.dtype !== 'f32') refuse('float weights must be f32 here, not ' + v.dtype);
    const wf = g.init('f32', arr.shape, arr.data, 'b_float');
    q = g.node('QuantizeLinear', [wf, scale, zp], perColumn ? { axis: 1 } : {});
  }
  return { q, scale, zp, fmt, n, perColumn };
}

function fullRange(clamp, fmt) {
  return !clamp || (clamp[0] <= INT_RANGE[fmt][0] && clamp[1] >= INT_RANGE[fmt][1]);
}

// qgemm -> MatMulInteger (int32), MatMulIntegerToFloat / DynamicQuantizeMatMul (dequantized f32),
// QLinearMatMul (requantized).
function buildQGemm(ort, op, load) {
  const out = op.output;
  const g = new Graph();
  if (out.kind === 'int32') {
    if (op.bias && op.bias.dtype !== 'i32') refuse('an int32 output takes an int32 bias only');
    const a = activation(ort, g, op.a, load, 'MatMulInteger');
    const b = gemmWeights(g, op, load);
    let y = g.node('MatMulInteger', [a.q, b.q, a.zp, b.zp]);
    if (op.bias) y = g.node('Add', [y, g.init('i32', op.bias.shape, load(op.bias).data, 'bias')]);
    g.output(y, 'i32');
    return { graph: g, output: y, dtype: 'i32' };
  }
  if (out.kind === 'dequantized') {
    if (out.format !== 'f32')
      refuse('ORT MatMulIntegerToFloat / DynamicQuantizeMatMul output float (f32) here, not ' + out.format);
    if (op.bias && op.bias.dtype === 'i32') {
      // An int32 bias adds to the accumulator: com.microsoft QGemm with a float output (no y_scale),
      // MLAS_QGEMM_SCALE_BIAS_OUTPUT_PROCESSOR with the scale a_scale * b_scale (quant_gemm.cc).
      if (op.a.quantization !== 'static') refuse('QGemm takes a statically quantized A');
      const a = activation(ort, g, op.a, load, 'com.microsoft QGemm');
      const b = gemmWeights(g, op, load);
      return qgemmWithBias(g, op, a, b, load, [], 'f32');
    }
    if (op.bias && op.bias.dtype !== 'f32')
      refuse('MatMulIntegerToFloat / DynamicQuantizeMatMul take a float bias, not ' + op.bias.dtype);
    const bias = op.bias ? g.init('f32', op.bias.shape, load(op.bias).data, 'bias') : '';
    if (op.a.quantization === 'dynamic_per_tensor') {
      // com.microsoft DynamicQuantizeMatMul (contrib_ops/cpu/quantization/dynamic_quantize_matmul.cc):
      // A quantized by GetQuantizationParameter (the DynamicQuantizeLinear rule), then the MLAS GEMM
      // with a scale-and-bias output processor. It takes A as float only.
      activationFormat(op.a, 'DynamicQuantizeMatMul');
      const b = gemmWeights(g, op, load);
      const x = g.input('f32', op.a.values.shape, ortTensor(ort, 'f32', loadFloat(op.a.values, load)));
      const y = g.node('DynamicQuantizeMatMul', [x, b.q, b.scale, b.zp, bias], {}, 1, 'com.microsoft');
      g.output(y, 'f32');
      return { graph: g, output: y, dtype: 'f32' };
    }
    // com.microsoft MatMulIntegerToFloat (contrib_ops/cpu/quantization/matmul_integer_to_float.cc).
    const a = activation(ort, g, op.a, load, 'MatMulIntegerToFloat');
    const b = gemmWeights(g, op, load);
    const y = g.node('MatMulIntegerToFloat', [a.q, b.q, a.scale, b.scale, a.zp, b.zp, bias], {}, 1, 'com.microsoft');
    g.output(y, 'f32');
    return { graph: g, output: y, dtype: 'f32' };
  }
  // requantized: ONNX QLinearMatMul; with an int32 bias com.microsoft QGemm
  // (contrib_ops/cpu/quantization/quant_gemm.cc: the bias initializes the accumulator, then
  // MlasGemm with MLAS_QGEMM_REQUANT_OUTPUT_PROCESSOR, multiplier alpha * a_scale * b_scale / y_scale in f32).
  const name = op.bias ? 'com.microsoft QGemm' : 'QLinearMatMul';
  if (op.bias && op.bias.dtype !== 'i32') refuse('QGemm takes an int32 bias (scale a_scale * b_scale) only');
  if (!['u8', 'i8'].includes(out.format)) refuse(name + ' outputs u8 or i8, not ' + out.format);
  if (!fullRange(out.clamp, out.format))
    refuse('ONNX QLinearMatMul and ORT QGemm have no fused activation: a clamp narrower than the output type is not ' +
           'expressible');
  if (op.a.quantization !== 'static')
    refuse(name + ' takes a statically quantized A (a dynamic A with a requantized output has no single ORT operator)');
  const a = activation(ort, g, op.a, load, name);
  const b = gemmWeights(g, op, load);
  const ys = g.init('f32', [], Float32Array.from([out.scale]), 'y_scale');
  const yz = g.init(out.format, [], TYPED[out.format].from([out.zero_point]), 'y_zp');
  if (!op.bias) {
    const y = g.node('QLinearMatMul', [a.q, a.scale, a.zp, b.q, b.scale, b.zp, ys, yz]);
    g.output(y, out.format);
    return { graph: g, output: y, dtype: out.format };
  }
  return qgemmWithBias(g, op, a, b, load, [ys, yz], out.format);
}

// com.microsoft QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp) with an int32 bias C [N]:
// A must be 2-D, so batched A is flattened to [rows, K] and the output reshaped back (layout only).
function qgemmWithBias(g, op, a, b, load, yParams, outType) {
  const shape = op.a.values.shape;
  let aq = a.q;
  if (shape.length !== 2) {
    const rows = product(shape.slice(0, -1));
    aq = g.node('Reshape', [aq, g.init('i64', [2], BigInt64Array.from([BigInt(rows), BigInt(shape[shape.length - 1])]), 'shape')]);
  }
  const c = g.init('i32', op.bias.shape, load(op.bias).data, 'bias');
  let y = g.node('QGemm', [aq, a.scale, a.zp, b.q, b.scale, b.zp, c, ...yParams], {}, 1, 'com.microsoft');
  if (shape.length !== 2) {
    const outShape = [...shape.slice(0, -1), b.n].map(BigInt);
    y = g.node('Reshape', [y, g.init('i64', [outShape.length], BigInt64Array.from(outShape), 'shape')]);
  }
  g.output(y, outType);
  return { graph: g, output: y, dtype: outType };
}

// qconv2d -> ConvInteger (int32; with Cast/Mul/Add for a dequantized output, the pattern ORT's
// quantize_dynamic emits) or QLinearConv (requantized). NHWC requests run the com.microsoft
// QLinearConv with channels_last = 1 (the kernel ORT's NHWC transformer uses).
function buildQConv(ort, op, load) {
  const out = op.output;
  const geo = op.geometry;
  const g = new Graph();
  const nhwc = op.layout === 'nhwc';
  if (nhwc && out.kind !== 'requantized')
    refuse('ConvInteger takes NCHW input only (the NHWC kernel is com.microsoft QLinearConv, requantized outputs)');
  if (op.input.values.shape.length !== 4) refuse('input must be 4-D');
  const a = activation(ort, g, op.input, load, nhwc ? 'com.microsoft QLinearConv' : 'QLinearConv/ConvInteger');
  const pz = op.input.params.zero_points.length ? op.input.params.zero_points[0] : 0;
  if (op.padding === 'quantized_zero' && (a.dynamic || pz !== 0))
    refuse('ONNX QLinearConv and ConvInteger pad with the input zero point (the real value 0); padding with the ' +
           'quantized value 0 is not expressible when the zero point is not 0');
  // Weights OIHW, per tensor or per output channel (axis 0).
  const w = op.weight;
  if (w.packing) refuse(NO_INT4 + ' (packed weights)');
  const wfmt = isInt(w.values.dtype) ? w.values.dtype : w.format;
  if (wfmt !== 'u8' && wfmt !== 'i8') refuse('ORT quantized convolutions take 8-bit weights, not ' + wfmt);
  const xfmt = isInt(op.input.values.dtype) ? op.input.values.dtype : op.input.format;
  const flags = cpuFlags().flags;
  if (out.kind !== 'requantized' && xfmt === 'u8' && wfmt === 'i8' && mlasU8S8Kernel(flags).saturates === 'yes')
    refuse('on this host (' + hostIsa(flags) + ') ORT\'s ConvInteger is exact (conv_integer.cc passes ' +
           'the weights as MLAS\'s A operand: its S8U8 kernel widens to int16), while QLinearConv, MatMulInteger ' +
           'and QLinearMatMul saturate u8 x s8 pairs to int16 (vpmaddubsw); the claim ort-cpu@x86-vpmaddubsw ' +
           'describes the latter, so int32 and dequantized u8 x s8 convolutions are not claimed here');
  const wp = w.params;
  checkScalesF32(wp, 'QLinearConv');
  let perChannel = false;
  if (granularity(wp) === 'per_axis') {
    if (normAxis(wp.axis, 4) !== 0) refuse('ONNX QLinearConv quantizes the weights per tensor or per output channel only');
    perChannel = true;
  }
  const oc = w.values.shape[0];
  const pshape = perChannel ? [oc] : [];
  const wscale = g.init('f32', pshape, Float32Array.from(wp.scales), 'w_scale');
  const wzp = g.init(wfmt, pshape, TYPED[wfmt].from(wp.zero_points.length ? wp.zero_points : new Array(product(pshape)).fill(0)), 'w_zp');
  let wq;
  if (isInt(w.values.dtype)) {
    wq = g.init(wfmt, w.values.shape, load(w.values).data, 'w');
  } else {
    if (w.values.dtype !== 'f32') refuse('float weights must be f32 here, not ' + w.values.dtype);
    const wf = g.init('f32', w.values.shape, load(w.values).data, 'w_float');
    wq = g.node('QuantizeLinear', [wf, wscale, wzp], perChannel ? { axis: 0 } : {});
  }
  const attrs = {
    strides: geo.strides, pads: geo.pads, dilations: geo.dilations, group: geo.groups,
    kernel_shape: w.values.shape.slice(2),
  };
  if (out.kind === 'requantized') {
    if (!['u8', 'i8'].includes(out.format)) refuse('QLinearConv outputs u8 or i8, not ' + out.format);
    if (!fullRange(out.clamp, out.format))
      refuse('ONNX QLinearConv has no fused activation: a clamp narrower than the output type is not expressible');
    if (a.dynamic) refuse('QLinearConv takes a statically quantized input');
    if (op.bias && op.bias.dtype !== 'i32') refuse('QLinearConv takes an int32 bias (scale x_scale * w_scale) only');
    const ys = g.init('f32', [], Float32Array.from([out.scale]), 'y_scale');
    const yz = g.init(out.format, [], TYPED[out.format].from([out.zero_point]), 'y_zp');
    const inputs = [a.q, a.scale, a.zp, wq, wscale, wzp, ys, yz];
    if (op.bias) inputs.push(g.init('i32', op.bias.shape, load(op.bias).data, 'bias'));
    const y = nhwc ? g.node('QLinearConv', inputs, { ...attrs, channels_last: 1 }, 1, 'com.microsoft')
                   : g.node('QLinearConv', inputs, attrs);
    g.output(y, out.format);
    return { graph: g, output: y, dtype: out.format };
  }
  // ORT's ConvInteger takes one weight zero point (conv_integer.cc ConvInteger::Compute:
  // "Non per-tensor quantization is not supported now"); per-channel scales do not enter it.
  const wzps = wp.zero_points.length ? wp.zero_points : [0];
  if (wzps.some((z) => z !== wzps[0]))
    refuse('ORT ConvInteger takes a per-tensor weight zero point only (conv_integer.cc: "Non per-tensor ' +
           'quantization is not supported now"); these weights have per-channel zero points');
  const wzpScalar = perChannel ? g.init(wfmt, [], TYPED[wfmt].from([wzps[0]]), 'w_zp') : wzp;
  let y = g.node('ConvInteger', [a.q, wq, a.zp, wzpScalar], attrs);
  if (out.kind === 'int32') {
    if (op.bias && op.bias.dtype !== 'i32') refuse('an int32 output takes an int32 bias only');
    if (op.bias) y = g.node('Add', [y, g.init('i32', [1, oc, 1, 1], load(op.bias).data, 'bias')]);
    g.output(y, 'i32');
    return { graph: g, output: y, dtype: 'i32' };
  }
  // dequantized: float(acc) * (s_x * s_w[oc]) (+ bias), each an ORT f32 op.
  if (out.format !== 'f32') refuse('the dequantized convolution runs in float (f32) here, not ' + out.format);
  if (op.bias && op.bias.dtype !== 'f32') refuse('a dequantized convolution takes a float bias here');
  const wsB = perChannel ? g.node('Reshape', [wscale, g.init('i64', [4], BigInt64Array.from([1n, BigInt(oc), 1n, 1n]), 'shape')])
                         : wscale;
  const s = g.node('Mul', [a.scale, wsB]);
  y = g.node('Mul', [g.node('Cast', [y], { to: 1 }), s]);
  if (op.bias) y = g.node('Add', [y, g.init('f32', [1, oc, 1, 1], load(op.bias).data, 'bias')]);
  g.output(y, 'f32');
  return { graph: g, output: y, dtype: 'f32' };
}

function build(ort, op, dir) {
  const load = loader(dir);
  switch (op.op) {
    case 'quantize':
      return buildQuantize(ort, op, load);
    case 'dequantize':
      return buildDequantize(ort, op, load);
    case 'qgemm':
      return buildQGemm(ort, op, load);
    case 'qconv2d':
      return buildQConv(ort, op, load);
    case 'requantize':
      return refuse('ONNX has no operator that requantizes given int32 accumulators; ORT requantizes inside ' +
                    'QLinearMatMul and QLinearConv (the qgemm and qconv2d requests)');
    case 'weight_only_gemm':
      return refuse('not mapped: ORT\'s weight-only GEMM is com.microsoft MatMulNBits (4-bit blocked weights in its ' +
                    'own packing), which this runner does not build');
    case 'conv2d':
      return refuse('not mapped: this runner builds ORT\'s quantized operators; a float (or weight-only) Conv is not one');
    case 'mx_quantize':
    case 'mx_dequantize':
    case 'mx_gemm':
      return refuse('ORT 1.30 has no OCP MX or NVFP4 block-scaled operators (and onnxruntime-node no float4/float8 ' +
                    'tensor type)');
    case 'qadd':
      return refuse('not mapped yet: com.microsoft QLinearAdd (MLAS qladd_avx2 on x86, the ort presets\' add ' +
                    'scheme ort_mlas_avx2) is not built by this runner');
    default:
      return refuse('unknown op ' + op.op);
  }
}

// ---- sessions -------------------------------------------------------------------------------------

const SESSION_OPTIONS = {
  executionProviders: ['cpu'],
  graphOptimizationLevel: 'disabled',  // no fusion, constant folding or layout transformation
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  enableCpuMemArena: false,
};

// An ORT error that means "no kernel for this type combination" (a limit of the library, not a
// fault of the request or the runner).
// The operand types of a request, for the reasons given when ORT has no kernel for them.
function typeSummary(op) {
  const fmt = (x) => (x ? (isInt(x.values.dtype) ? x.values.dtype : x.format) : '');
  if (op.op === 'qgemm') return ' (A ' + fmt(op.a) + ', B ' + fmt(op.b) + ', output ' + op.output.format + ')';
  if (op.op === 'qconv2d') return ' (X ' + fmt(op.input) + ', W ' + fmt(op.weight) + ', output ' + op.output.format + ')';
  return '';
}

function isMissingKernel(message) {
  return /Could not find an implementation|NOT_IMPLEMENTED|is not supported|not implemented/i.test(message);
}

async function runOp(ort, op, dir) {
  const built = build(ort, op, dir);
  const model = built.graph.serialize(IR_VERSION, OPSETS);
  let session;
  try {
    session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  } catch (e) {
    if (isMissingKernel(e.message)) refuse('ORT has no CPU kernel for this' + typeSummary(op) + ': ' + firstLine(e.message));
    throw e;
  }
  try {
    const result = await session.run(built.graph.feeds);
    return { tensor: result[built.output], dtype: built.dtype };
  } finally {
    await session.release();
  }
}

// ---- protocol -------------------------------------------------------------------------------------

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function handle(state, req) {
  if (req.type === 'hello') {
    const { flags, model } = cpuFlags();
    const mlas = mlasU8S8Kernel(flags);
    const facts = {
      library: 'ONNX Runtime',
      node: process.version,
      isa: hostIsa(flags),
      cpu: model,
      mlas_u8s8_kernel: mlas.kernel,
      u8s8_int16_pair_saturation: mlas.saturates,
      execution_provider: 'CPUExecutionProvider, graph optimizations disabled, 1 thread',
      opsets: 'ai.onnx 21, com.microsoft 1 (IR 10)',
    };
    if (state.ort) {
      facts.version = state.ort.env.versions.node || '';
      facts.onnxruntime_common = state.ort.env.versions.common || '';
      facts.package = state.from;
    }
    reply({
      version: PROTOCOL_VERSION,
      name: NAME,
      description: 'ONNX Runtime ' + (state.ort ? state.ort.env.versions.node : '(missing)') +
                   ' CPU EP via onnxruntime-node: one ONNX op per request (QuantizeLinear, DequantizeLinear, ' +
                   'MatMulInteger, QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul, ConvInteger, QLinearConv)',
      claim: claimFor(flags),
      available: !!state.ort,
      reason: state.ort ? '' : state.reason,
      facts,
    });
    return true;
  }
  if (req.type === 'bye') return false;
  if (req.type === 'supports') {
    if (!state.ort) {
      reply({ available: false, reason: state.reason });
      return true;
    }
    try {
      // Build the model and open a session: a type combination ORT has no kernel for is refused
      // here with ORT's own message.
      const built = build(state.ort, req.op, req.dir);
      const session = await state.ort.InferenceSession.create(built.graph.serialize(IR_VERSION, OPSETS), SESSION_OPTIONS);
      await session.release();
      reply({ available: true, reason: '' });
    } catch (e) {
      if (e instanceof Unsupported) reply({ available: false, reason: e.message });
      else if (isMissingKernel(e.message))
        reply({ available: false, reason: 'ORT has no CPU kernel for this' + typeSummary(req.op) + ': ' + firstLine(e.message) });
      else reply({ ok: false, error: 'supports: ' + e.message });
    }
    return true;
  }
  if (req.type === 'run') {
    try {
      const { tensor, dtype } = await runOp(state.ort, req.op, req.dir);
      const data = tensor.data;
      if (!(dtype in NPY)) throw new Error('no .npy storage for ' + dtype);
      writeNpy(path.join(req.dir, 'out.npy'), NPY[dtype], tensor.dims.map(Number), data);
      reply({ ok: true, output: 'out.npy' });
    } catch (e) {
      reply({ ok: false, error: e.message });
    }
    return true;
  }
  reply({ ok: false, error: 'unknown request type ' + JSON.stringify(req.type) });
  return true;
}

function main() {
  const state = loadOrt();
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  // Requests are answered one at a time, in order (ORT's session calls are asynchronous).
  let chain = Promise.resolve(true);
  rl.on('line', (line) => {
    if (!line.trim()) return;
    chain = chain.then(async (going) => {
      if (!going) return false;
      let req;
      try {
        req = JSON.parse(line);
      } catch (e) {
        reply({ ok: false, error: 'request is not JSON: ' + e.message });
        return true;
      }
      const more = await handle(state, req);
      if (!more) process.exit(0);
      return more;
    });
  });
  rl.on('close', () => chain.then(() => process.exit(0)));
}

if (require.main === module) main();

module.exports = { build, mlasU8S8Kernel, f16Bits };
