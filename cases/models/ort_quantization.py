"""The static quantization ONNX Runtime's quantizer applies (onnxruntime/python/tools/quantization/:
quant_utils.py compute_scale_zp and quantize_nparray, onnx_quantizer.py quantize_bias_static), one
definition for the generators of the shipped models (make_digits.py, make_realistic.py)."""

import numpy as np

F32 = np.float32


def rne(a):
    """Round half to even (numpy.round / Python round / ONNX QuantizeLinear rounding)."""
    return np.round(a)


def act_params(rmin, rmax):
    """uint8 asymmetric per-tensor params, as quant_utils.py compute_scale_zp(symmetric=False)
    with qmin=0, qmax=255:
      rmin = min(rmin, 0); rmax = max(rmax, 0)          (the range must contain 0 exactly)
      scale = (rmax - rmin) / 255                        computed in float64 (Python floats)
      if scale < float32 tiny: scale = 1, zp = 0         (ORT's guard for an all-zero tensor)
      zp = round_half_even(0 - rmin / scale)             float64, using the float64 scale,
                                                         then clamped to [0, 255]
    The scale is then stored as float32(scale) in the model, which is what ORT writes into its
    scale initializer. rmin/rmax come from float32 calibration tensors (exact in float64)."""
    rmin = min(float(rmin), 0.0)
    rmax = max(float(rmax), 0.0)
    scale = (rmax - rmin) / 255.0
    if scale < np.finfo(F32).tiny:
        return F32(1.0), np.uint8(0)
    zp = int(np.clip(rne(0.0 - rmin / scale), 0, 255))
    return F32(scale), np.uint8(zp)


def quantize_u8(x, scale, zp):
    """ONNX QuantizeLinear (and ORT quantize_nparray): saturate(rne(x / scale) + zp), in float32."""
    q = rne(x.astype(F32) / F32(scale)) + F32(zp)
    return np.clip(q, 0, 255).astype(np.uint8)


def weight_params_per_channel(w, axis):
    """int8 symmetric per-channel weights, as quant_utils.py compute_scale_zp(symmetric=True) with
    qmin=-127, qmax=127 (ORT's range for symmetric int8): scale_c = max|w_c| / 127 (float64,
    stored as float32), zp = 0; q = clip(rne(w / scale_c), -127, 127), the division done in float32
    against the float32 scale, as quantize_nparray does (w.astype(float32) / scale)."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    absmax = np.abs(w).max(axis=red).astype(np.float64)
    scale = absmax / 127.0
    scale[scale < np.finfo(F32).tiny] = 1.0  # an all-zero channel: ORT's scale=1 guard
    scale = scale.astype(F32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(rne(w.astype(F32) / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale, np.zeros(len(scale), np.int8)


def bias_int32(b, x_scale, w_scale):
    """onnx_quantizer.py quantize_bias_static: bias_scale = input_scale * weight_scale (float32
    arrays, so the product is rounded to float32), q = rne(b / bias_scale) as int32 (float32
    division), zero point 0. Stored with its per-channel scale (axis 0) for DequantizeLinear."""
    bscale = (F32(x_scale) * w_scale.astype(F32)).astype(F32)
    q = rne(b.astype(F32) / bscale).astype(np.int64)
    assert np.all(np.abs(q) < 2**31 - 1)
    return q.astype(np.int32), bscale
