"""qconform: an exact-arithmetic conformance harness for quantized ML kernels.

The compiled core lives in ``qconform._qconform``; this package re-exports it and adds a few
helpers written in Python. See docs/python.md.

Arrays and formats: f64/f32/f16 are numpy float64/float32/float16; bf16 is carried as uint16 bit
patterns (``float32_to_bf16`` / ``bf16_to_float32`` convert); f8 formats as uint8 bit patterns;
i4/u4 as int8/uint8 with one value per element (``pack_int4`` / ``unpack_int4`` pack two per byte).
"""

import functools as _functools
import json as _json
import os as _os
import tempfile as _tempfile

from . import _qconform
from ._qconform import *  # noqa: F401,F403
from ._qconform import (  # noqa: F401
    __version__,
    InputError,
    bits_to_float,
    float_to_bits,
    load_suite,
)


InputError.__module__ = "qconform"  # shown as qconform.InputError in tracebacks


# A spec (a case file's "spec", C++ qc::Spec, the CLI's --spec) is the one word for "the numerics
# of every op". Earlier versions said "policy" here: Policy, policy= and Case.policy still work.
Policy = Spec  # noqa: F405


def _spec_keyword(kwargs):
    if "policy" in kwargs:
        if "spec" in kwargs:
            raise TypeError("give spec= or its older name policy=, not both")
        kwargs["spec"] = kwargs.pop("policy")
    return kwargs


def _accept_policy_keyword(f):
    @_functools.wraps(f)
    def call(*args, **kwargs):
        return f(*args, **_spec_keyword(kwargs))

    return call


for _name in ("evaluate", "compare", "quantize", "dequantize", "requantize", "qgemm", "qconv2d", "weight_only_gemm"):
    globals()[_name] = _accept_policy_keyword(getattr(_qconform, _name))

_case_init = Case.__init__  # noqa: F405


def _case_init_accepting_policy(self, *args, **kwargs):
    _case_init(self, *args, **_spec_keyword(kwargs))


Case.__init__ = _case_init_accepting_policy  # noqa: F405
Case.policy = property(lambda case: case.spec, doc="The older name of Case.spec.")  # noqa: F405


def float32_to_bf16(x, rounding="rne"):
    """Values correctly rounded into bfloat16, as uint16 bit patterns (one rounding, from the
    value itself: float64 input is not rounded to float32 first)."""
    return float_to_bits(x, "bf16", rounding=rounding)


def bf16_to_float32(bits):
    """bfloat16 bit patterns (uint16) as float32 values (exact)."""
    return bits_to_float(bits, "bf16")


def _npy_paths_absolute(obj):
    if isinstance(obj, list):
        return [_npy_paths_absolute(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: _npy_paths_absolute(v) for k, v in obj.items()}
    data = out.get("data")
    if isinstance(data, dict) and isinstance(data.get("npy"), str) and data["npy"]:
        out["data"] = dict(data, npy=_os.path.abspath(data["npy"]))
    return out


def cases_from_json(obj, suite="python"):
    """The Cases of one case object of the case format (a dict, or JSON text), read by the same
    loader as case files, so every field is checked exactly as `qconform run` checks it. One case,
    or several where the object has a "sweep" (one per combination, named name[path=value,...]).
    A relative {"npy": path} in "data" is read relative to the working directory."""
    case = _json.loads(obj) if isinstance(obj, str) else obj
    # The loader reads {"npy": path} data relative to the case file; this one is a temporary file,
    # so relative paths are made relative to the working directory instead.
    case = _npy_paths_absolute(case)
    fd, path = _tempfile.mkstemp(suffix=".json", prefix="qconform_case_")
    try:
        with _os.fdopen(fd, "w") as f:
            _json.dump({"suite": suite, "cases": [case]}, f)
        return list(load_suite(path).cases)
    finally:
        _os.unlink(path)


def case_from_json(obj, suite="python"):
    """The Case of one case object of the case format (see cases_from_json). An object whose
    "sweep" expands to several cases is an InputError naming them: use cases_from_json."""
    cases = cases_from_json(obj, suite)
    if len(cases) != 1:
        raise InputError(  # noqa: F405
            "case_from_json: the object expands to %d cases (%s); cases_from_json returns them all"
            % (len(cases), ", ".join(c.name for c in cases[:4]) + (", ..." if len(cases) > 4 else "")))
    return cases[0]


class ModelResult(tuple):
    """What qconform.model returns: (report, view). `report` is run_cases's RunReport of the model's node
    cases (isolated mode); `view` the model view, as report.json's models[] entry (docs/models.md)."""

    __slots__ = ()

    def __new__(cls, report, view):
        return super().__new__(cls, (report, view))

    report = property(lambda self: self[0])
    view = property(lambda self: self[1])


def model(path, inputs=None, labels=None, spec="", backends=None, **run_options):
    """Judges a quantized ONNX model as `qconform model` does (docs/models.md): each node as a case on
    every backend (run_cases, with `run_options`: attribute_causes, jobs, ...), then each backend driven
    through the graph with its own outputs. `path`: an .onnx file or a model file NAME.model.json;
    `inputs`: graph input name -> .npy path or numpy array; `labels`: .npy path or array of classes;
    `backends`: names or Backend objects (default: every built-in backend). Returns ModelResult(report, view)."""
    import numpy as _np

    with _tempfile.TemporaryDirectory(prefix="qconform-model-") as tmp:
        files = {}
        for name, value in (inputs or {}).items():
            if isinstance(value, (str, bytes, _os.PathLike)):
                files[name] = _os.fspath(value)
            else:
                files[name] = _os.path.join(tmp, "input-%d.npy" % len(files))
                _np.save(files[name], _np.ascontiguousarray(value))
        if labels is not None and not isinstance(labels, (str, bytes, _os.PathLike)):
            path_labels = _os.path.join(tmp, "labels.npy")
            _np.save(path_labels, _np.ascontiguousarray(labels))
            labels = path_labels
        prepared = prepare_model(path, files, labels, spec)  # noqa: F405
        report = run_cases(prepared.cases, backends, **run_options)  # noqa: F405
        return ModelResult(report, prepared.judge(backends, report))


__all__ = [name for name in dir(_qconform) if not name.startswith("_")] + [
    "model",
    "ModelResult",
    "__version__",
    "float32_to_bf16",
    "bf16_to_float32",
    "case_from_json",
    "cases_from_json",
    "Policy",
]
