"""PyTorch (Debian python3-torch 1.13) quantized CPU ops as qconform peer backends.

One backend per quantized engine, since the engine decides the kernels of quantized::linear and
quantized::conv2d (quantize and dequantize do not depend on it):

    TorchOnednn   "torch-onednn"   torch.backends.quantized.engine = "onednn" (oneDNN 2.6 via ideep)
    TorchQnnpack  "torch-qnnpack"  torch.backends.quantized.engine = "qnnpack" (PyTorch's QNNPACK fork)

Run next to the reference (the py: route puts the qconform package first on PYTHONPATH; python/
must be on it for this module):

    PYTHONPATH=build/python:python build/cli/qconform run --backend cpu-ref \
        --backend py:qconform.peers.torch_quant:TorchOnednn \
        --backend py:qconform.peers.torch_quant:TorchQnnpack -o /tmp/torch-report

What torch can be asked (each other request answers supports() = False with the reason):
  quantize    torch.quantize_per_tensor / quantize_per_channel: float32 input only ("Quantize only
              works on Float Tensor"), outputs quint8 / qint8 / qint32 (u8, i8, i32), zero points
              inside the output type's range (checkZeroPoint), no blocked parameters.
  dequantize  Tensor.dequantize() of torch._make_per_{tensor,channel}_quantized_tensor: u8 / i8 / i32
              input, float32 output only.
  qgemm       torch.ops.quantized.linear with torch.ops.quantized.linear_prepack: quint8 activations
              quantized per tensor (static parameters; float values are quantized by
              torch.quantize_per_tensor first), qint8 weights per tensor or per output channel
              (onednn: weight zero points must be 0), an optional float32 bias (torch's bias is a
              float), output requantized to quint8 with no fused clamp or the ReLU of linear_relu.
  qconv2d     torch.ops.quantized.conv2d with conv2d_prepack, with the same operand rules, NCHW or
              NHWC, symmetric padding, padding with the input zero point (real zero).

The numerics each op follows, and the preset rows they need, are in python/tests/test_peer_torch.py
(a numpy re-implementation of each recipe checked against torch on discriminating inputs).
"""

import re

import numpy as np

import qconform

try:  # the backends answer "unavailable" instead of failing to import
    import torch
except ImportError:  # pragma: no cover - depends on the host
    torch = None

# qconform integer format -> torch quantized dtype, and the integer dtype holding its values.
_QDTYPES = {"u8": "quint8", "i8": "qint8", "i32": "qint32"}


def host_isa():
    """The widest int8 dot-product ISA in /proc/cpuinfo flags, and the flags that decide it."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return "unknown", ""
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    flags = set(m.group(1).split()) if m else set()
    found = [f for f in ("avx512_vnni", "avx_vnni", "avx512f", "avx2") if f in flags]
    for isa in ("avx512_vnni", "avx_vnni", "avx2"):
        if isa in flags:
            return isa, " ".join(found)
    return "none", " ".join(found)


def _onednn_version():
    """The oneDNN version torch was built with, from torch.__config__.show()."""
    m = re.search(r"MKL-DNN v([0-9.]+)", torch.__config__.show())
    return m.group(1) if m else "unknown"


def _name(x):  # qconform enums and formats print as their names
    return str(x)


def _per_tensor(params):
    return params.block_size == 0 and (params.axis is None or len(params.scales) == 1)


def _zero_points(params, n):
    return list(params.zero_points) if len(params.zero_points) else [0] * n


def _params_reason(params, what):
    """Why torch cannot take these parameters, or None."""
    if params.block_size:
        return f"{what}: torch 1.13 has no blocked quantization (per tensor or per channel only)"
    return None


class _TorchQuant(qconform.Backend):
    """Common part: engine selection, facts, and the four ops. Subclasses name the engine."""

    ENGINE = ""
    NAME = ""
    CLAIM = ""

    def name(self):
        return self.NAME

    def description(self):
        return (
            f"PyTorch {torch.__version__ if torch else '(missing)'} quantized CPU ops, "
            f"torch.backends.quantized.engine = '{self.ENGINE}': quantize_per_tensor/per_channel, "
            "dequantize, quantized::linear, quantized::conv2d"
        )

    def claim(self):
        # The preset of this engine in PyTorch 1.13 without FBGEMM (docs/peers.md); the recipes it
        # encodes are checked against torch in python/tests/test_peer_torch.py.
        return self.CLAIM

    def availability(self):
        if torch is None:
            return False, "PyTorch is not installed (Debian: apt install python3-torch)"
        engines = torch.backends.quantized.supported_engines
        if self.ENGINE not in engines:
            return False, f"this torch build has no '{self.ENGINE}' quantized engine (it has {engines})"
        return True

    def facts(self):
        if torch is None:
            return {}
        isa, flags = host_isa()
        facts = {
            "library": "PyTorch",
            "version": torch.__version__,
            "engine": self.ENGINE,
            "isa": isa,
            "cpu_flags": flags,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()
            if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability")
            else "unknown",
            "fbgemm": "yes" if "fbgemm" in torch.backends.quantized.supported_engines else "no",
        }
        if self.ENGINE == "onednn":
            facts["onednn"] = _onednn_version()
        return facts

    # ---- supports ---------------------------------------------------------------------------

    def supports(self, op):
        if torch is None:
            return False, "PyTorch is not installed"
        kind = op.kind
        if kind == "quantize":
            return self._supports_quantize(op)
        if kind == "dequantize":
            return self._supports_dequantize(op)
        if kind in ("qgemm", "qconv2d") and self.ENGINE == "onednn" and host_isa()[0] not in ("avx512_vnni", "avx_vnni"):
            # Without VNNI, oneDNN 2.6 multiplies u8 x s8 with vpmaddubsw: adjacent products saturate to
            # int16 in K blocks (gemm_driver.cpp::get_k_padd), a pairing no preset models yet (docs/peers.md).
            return False, (
                f"on this host ({host_isa()[0]}) oneDNN's int8 kernels use vpmaddubsw, which saturates pairs of "
                "products to int16; no preset models that pairing yet"
            )
        if kind == "qgemm":
            return self._supports_linear(op)
        if kind == "qconv2d":
            return self._supports_conv(op)
        return False, f"torch has no quantized CPU op for '{kind}' that takes this request"

    def _supports_quantize(self, op):
        if op.x.dtype != np.float32:
            return False, (
                f"torch.quantize_per_tensor takes float32 input only ('Quantize only works on Float "
                f"Tensor'); this input is {op.x.dtype}"
            )
        if _name(op.dtype) not in _QDTYPES:
            return False, f"torch 1.13 quantizes to quint8, qint8 and qint32 only, not {_name(op.dtype)}"
        return _params_reason(op.params, "quantize") or True

    def _supports_dequantize(self, op):
        fmt = _input_format(op)
        if fmt not in _QDTYPES:
            return False, f"torch 1.13 quantized tensors hold quint8, qint8 or qint32 only, not {fmt}"
        if _name(op.dtype) != "f32":
            return False, f"Tensor.dequantize() returns float32 only, not {_name(op.dtype)}"
        return _params_reason(op.params, "dequantize") or True

    def _operand_reason(self, a, w, bias, output, out_channels_axis):
        if a.quantize != "static":
            return (
                "activation: quantized::linear/conv2d take a statically quantized quint8 tensor; dynamic "
                "quantization is quantized::linear_dynamic, whose output is float (not this request)"
            )
        if _name(a.format) != "u8" or (a.values.dtype != np.float32 and a.values.dtype != np.uint8):
            return (
                "activation: quantized::linear/conv2d take quint8 activations only (float32 values "
                "quantized to u8, or u8 values)"
            )
        if not _per_tensor(a.params):
            return "activation: torch's quantized activations are quantized per tensor"
        if w.packing is not None or _name(w.format) != "i8":
            return "weights: linear_prepack/conv2d_prepack take qint8 weights only (no int4)"
        if w.unpacked().dtype not in (np.int8, np.float32):
            return "weights: int8 values or float32 values quantized to qint8 only"
        r = _params_reason(w.params, "weights")
        if r:
            return r
        if not _per_tensor(w.params):
            ndim = len(w.shape) if w.packing is not None else w.unpacked().ndim
            if (w.params.axis % ndim) != out_channels_axis:
                return "weights: torch quantizes weights per output channel only"
        if self.ENGINE == "onednn" and any(z != 0 for z in w.params.zero_points):
            return (
                "weights: the onednn engine's prepack rejects weight zero points other than 0 ('ONEDNN "
                "only supports symmetric quantization of weight')"
            )
        if bias is not None and bias.dtype != np.float32:
            return (
                "bias: torch's prepack takes a float32 bias and rescales it itself (onednn: times "
                "f32(1/s_a)*f32(1/s_w); qnnpack: quantize_per_tensor to qint32); an int32 bias in "
                "accumulator units cannot be passed"
            )
        if _name(output.kind) != "requantized" or _name(output.dtype) != "u8":
            return (
                "output: quantized::linear/conv2d requantize to quint8 only (no int32 or float output; "
                "linear_dynamic is a different path)"
            )
        if output.clamp is not None and tuple(output.clamp) != (max(0, int(output.zero_point)), 255):
            return "output: torch fuses ReLU only (linear_relu/conv2d_relu); this clamp is another range"
        return None

    def _supports_linear(self, op):
        if _name(op.b.format) == "i8" and op.b.packing is None and op.b.unpacked().ndim != 2:
            return False, "weights: 2-D weights only"
        axis = 1 if _name(op.b_layout) == "k_by_n" else 0
        r = self._operand_reason(op.a, op.b, op.bias, op.output, axis)
        return (False, r) if r else True

    def _supports_conv(self, op):
        t, l, b, r = op.padding
        if t != b or l != r:
            return False, "quantized::conv2d pads symmetrically (padding=(h, w)); this padding is asymmetric"
        if _name(op.padding_value) != "real_zero":
            return False, "quantized::conv2d pads with the input zero point (real zero) only"
        reason = self._operand_reason(op.input, op.weight, op.bias, op.output, 0)
        return (False, reason) if reason else True

    # ---- run ----------------------------------------------------------------------------------

    def run(self, op):
        torch.backends.quantized.engine = self.ENGINE  # process-wide: set for every call
        kind = op.kind
        if kind == "quantize":
            return self._quantize(op)
        if kind == "dequantize":
            return self._dequantize(op)
        if kind == "qgemm":
            return self._linear(op)
        if kind == "qconv2d":
            return self._conv(op)
        raise ValueError(f"unsupported op {kind}")

    def _quantize(self, op):
        x = torch.from_numpy(np.array(op.x, dtype=np.float32, copy=True))
        qdtype = getattr(torch, _QDTYPES[_name(op.dtype)])
        p = op.params
        if _per_tensor(p):
            q = torch.quantize_per_tensor(x, float(p.scales[0]), int(_zero_points(p, 1)[0]), qdtype)
        else:
            q = torch.quantize_per_channel(
                x,
                torch.tensor(p.scales, dtype=torch.float64),
                torch.tensor(_zero_points(p, len(p.scales)), dtype=torch.int64),
                p.axis % x.dim(),
                qdtype,
            )
        return q.int_repr().numpy()

    def _dequantize(self, op):
        q = _make_quantized(np.array(op.q, copy=True), op.params)
        return q.dequantize().numpy()

    def _job(self, op, kind):
        """The request as plain arrays and numbers: what _run_job needs, here or in a child."""
        a, w = (op.a, op.b) if kind == "linear" else (op.input, op.weight)
        values = np.array(w.unpacked(), copy=True)
        if kind == "linear" and _name(op.b_layout) == "k_by_n":
            # linear takes [N, K]; a per-channel quantized tensor cannot be transposed in torch 1.13
            # ("Setting strides is possible only on uniformly quantized tensor"): transpose first.
            values = np.ascontiguousarray(values.T)
        p = w.params
        job = {
            "engine": self.ENGINE,
            "kind": kind,
            "a": np.array(a.values, copy=True),
            "s_in": float(a.params.scales[0]),
            "za": int(_zero_points(a.params, 1)[0]),
            "w": values,
            "w_scales": [float(v) for v in p.scales],
            "w_zps": [int(v) for v in _zero_points(p, len(p.scales))],
            "w_per_tensor": _per_tensor(p),
            "bias": None if op.bias is None else np.array(op.bias, dtype=np.float32, copy=True),
            "s_out": float(op.output.scale),
            "zo": int(op.output.zero_point),
            "relu": op.output.clamp is not None,
        }
        if kind == "conv":
            t, l, _, _ = op.padding
            job.update(nhwc=_name(op.layout) == "nhwc", stride=list(op.stride), padding=[t, l],
                       dilation=list(op.dilation), groups=int(op.groups))
        return job

    def _execute(self, job):
        """Runs the job here, or in a fresh process where this process's oneDNN primitive cache
        could answer with stale zero points.

        ideep 2.6 (intel/ideep tag pytorch-rls-v2.6.0, operators/matmul.hpp and conv.hpp
        do_prepare) keys its primitive cache on the descriptors, the scales and the thread count
        but not on the zero points (fixed upstream by ideep 35ba151 "add zp into pd cache key",
        2022-12): a second quantized::linear/conv2d with the same shapes and scales but another
        input or output zero point reuses the first call's zero points. Measured: linear with
        output zero point 255 after the same call with 0 returns the zero-point-0 result."""
        if self.ENGINE == "onednn":
            key = (job["kind"], job["a"].shape, job["a"].dtype.str, job["w"].shape, tuple(job["w_scales"]),
                   job["s_in"], job["s_out"], job["bias"] is None, job["relu"], torch.get_num_threads(),
                   tuple(job.get(k) and tuple(job[k]) for k in ("stride", "padding", "dilation")),
                   job.get("groups"), job.get("nhwc"))
            zero_points = (job["za"], job["zo"], tuple(job["w_zps"]))
            if self._cache_keys.setdefault(key, zero_points) != zero_points:
                import multiprocessing  # a fresh interpreter: spawn, not fork (torch's thread pools)

                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    return pool.apply(_run_job, (job,))
        return _run_job(job)

    def _linear(self, op):
        return self._execute(self._job(op, "linear")).reshape(qconform_output_shape(op))

    def _conv(self, op):
        return self._execute(self._job(op, "conv"))

    @property
    def _cache_keys(self):
        if not hasattr(self, "_keys"):
            self._keys = {}
        return self._keys


def _quantized_weights(job):
    """qint8 weights, output channels first; per-channel parameters along axis 0."""
    values = job["w"]
    if job["w_per_tensor"]:
        if values.dtype == np.float32:
            return torch.quantize_per_tensor(torch.from_numpy(values), job["w_scales"][0], job["w_zps"][0], torch.qint8)
        return torch._make_per_tensor_quantized_tensor(torch.from_numpy(values), job["w_scales"][0], job["w_zps"][0])
    scales = torch.tensor(job["w_scales"], dtype=torch.float64)
    zps = torch.tensor(job["w_zps"], dtype=torch.int64)
    if values.dtype == np.float32:
        return torch.quantize_per_channel(torch.from_numpy(values), scales, zps, 0, torch.qint8)
    return torch._make_per_channel_quantized_tensor(torch.from_numpy(values), scales, zps, 0)


def _run_job(job):
    """quantized::linear or quantized::conv2d on one request (module level: a spawned child runs it)."""
    torch.backends.quantized.engine = job["engine"]
    a = torch.from_numpy(job["a"])
    if job["a"].dtype == np.uint8:  # u8 values, already quantized
        qa = torch._make_per_tensor_quantized_tensor(a, job["s_in"], job["za"])
    else:  # float32 values quantized by torch
        qa = torch.quantize_per_tensor(a, job["s_in"], job["za"], torch.quint8)
    w = _quantized_weights(job)
    bias = None if job["bias"] is None else torch.from_numpy(job["bias"])
    if job["kind"] == "linear":
        packed = torch.ops.quantized.linear_prepack(w, bias)
        fn = torch.ops.quantized.linear_relu if job["relu"] else torch.ops.quantized.linear
        return fn(qa, packed, job["s_out"], job["zo"]).int_repr().numpy()
    if job["nhwc"]:  # quantized::conv2d takes NCHW; the result is permuted back
        qa = qa.permute(0, 3, 1, 2)
    packed = torch.ops.quantized.conv2d_prepack(w, bias, job["stride"], job["padding"], job["dilation"], job["groups"])
    fn = torch.ops.quantized.conv2d_relu if job["relu"] else torch.ops.quantized.conv2d
    y = fn(qa, packed, job["s_out"], job["zo"])
    if job["nhwc"]:
        y = y.permute(0, 2, 3, 1)
    return np.ascontiguousarray(y.int_repr().numpy())


def _input_format(op):
    """The qconform format of an op's main input (an i4 input is held in int8, so the numpy dtype
    alone does not tell): the op's repr names it, "dequantize(i4[2x3] -> f32)"."""
    m = re.match(r"\w+\(([a-z0-9]+)\[", repr(op))
    return m.group(1) if m else "unknown"


def qconform_output_shape(op):
    """[batch..., M, N] of a qgemm request."""
    a_shape = list(op.a.values.shape)
    b_shape = list(op.b.unpacked().shape)
    n = b_shape[1] if _name(op.b_layout) == "k_by_n" else b_shape[0]
    return tuple(a_shape[:-1] + [n])


def _make_quantized(values, params):
    """A quantized tensor holding integer `values` with the request's parameters."""
    t = torch.from_numpy(values)
    if _per_tensor(params):
        return torch._make_per_tensor_quantized_tensor(t, float(params.scales[0]), int(_zero_points(params, 1)[0]))
    ax = params.axis % values.ndim
    return torch._make_per_channel_quantized_tensor(
        t,
        torch.tensor(params.scales, dtype=torch.float64),
        torch.tensor(_zero_points(params, len(params.scales)), dtype=torch.int64),
        ax,
    )


class TorchOnednn(_TorchQuant):
    ENGINE = "onednn"
    NAME = "torch-onednn"
    CLAIM = "pytorch-onednn@1.13"


class TorchQnnpack(_TorchQuant):
    ENGINE = "qnnpack"
    NAME = "torch-qnnpack"
    CLAIM = "pytorch-qnnpack@1.13"
