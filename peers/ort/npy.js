// .npy files as the exec protocol carries them (docs/integrate.md, "Protocol reference"):
// format 1.0-3.0, C order, little-endian. Each qconform format travels as one numpy storage type
// (core: npy_storage_dtype); this module reads those and writes the ones ORT can produce.
'use strict';

const fs = require('fs');

// numpy descr -> [bytes per element, TypedArray] for the storage types a request can hold.
const DESCR = {
  '<f8': [8, Float64Array],
  '<f4': [4, Float32Array],
  '<f2': [2, Uint16Array],  // f16 bit patterns
  '<i4': [4, Int32Array],
  '<i2': [2, Int16Array],
  '<u2': [2, Uint16Array],  // u16, and bf16 bit patterns
  '|i1': [1, Int8Array],
  '|u1': [1, Uint8Array],
  '<i8': [8, BigInt64Array],
};
DESCR['<u1'] = DESCR['|u1'];
DESCR['<i1'] = DESCR['|i1'];

function parseHeader(text) {
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) throw new Error('npy: malformed header ' + JSON.stringify(text));
  if (fortran[1] === 'True') throw new Error('npy: Fortran order is not part of the protocol');
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  return { descr: descr[1], shape: dims };
}

// Returns {descr, shape, data: TypedArray} (the data copied into an aligned buffer).
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error('npy: ' + path + ' is not an .npy file');
  const major = buf[6];
  let headerLen, offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw new Error('npy: version ' + major + ' in ' + path);
  }
  const header = parseHeader(buf.toString(major === 3 ? 'utf8' : 'latin1', offset, offset + headerLen));
  const kind = DESCR[header.descr];
  if (!kind) throw new Error('npy: unsupported dtype ' + header.descr + ' in ' + path);
  const count = header.shape.reduce((a, b) => a * b, 1);
  const start = offset + headerLen;
  if (buf.length - start < count * kind[0]) throw new Error('npy: ' + path + ' is truncated');
  const bytes = new Uint8Array(count * kind[0]);
  bytes.set(buf.subarray(start, start + count * kind[0]));
  return { descr: header.descr, shape: header.shape, data: new kind[1](bytes.buffer) };
}

// Writes a version 1.0 .npy of `descr` (one of DESCR) with `shape` and the typed array `data`.
function writeNpy(path, descr, shape, data) {
  const shapeText = shape.length === 1 ? '(' + shape[0] + ',)' : '(' + shape.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeText + ', }';
  // Pad so that the data starts on a 64-byte boundary, ending the header with a newline.
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head[0] = 0x93;
  head.write('NUMPY', 1, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
