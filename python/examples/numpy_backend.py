"""Example (b): a backend written in Python with numpy, and what policy it follows.

NumpyQuantize implements QuantizeLinear the way a numpy user would: x / s in float32, np.round
(which rounds half to even), + zero point, clip. qconform.infer probes it with ties, near ties,
reciprocal-sensitive values, saturation and NaN, and reports that it rounds ties to even; then the
default quantize suite runs on it through the same runner and reports as the CLI's backends.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/numpy_backend.py [OUT_DIR]
"""

import pathlib
import sys
import tempfile

import numpy as np

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]


class NumpyQuantize(qconform.Backend):
    def name(self):
        return "numpy-quantize"

    def description(self):
        return "numpy: float32 x / s, np.round (half to even), + zp, clip"

    def claim(self):
        return "onnx"

    def supports(self, op):
        if op.kind != "quantize":
            return False, "quantize only"
        if op.x.dtype != np.float32 or str(op.params.scale_dtype) != "f32":
            return False, "float32 inputs and scales only"
        return True

    def run(self, op):
        scale = op.element_scales().astype(np.float32)  # exact: the scales are f32 values
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            v = np.round(op.x / scale) + op.element_zero_points()
        v = np.where(np.isnan(v), 0, v)  # ONNX leaves NaN open; this backend writes 0
        info = qconform.format_info(op.dtype)
        return np.clip(v, info.int_min, info.int_max).astype(info.numpy_dtype)


def rounds_ties_to_even(report):
    """Whether inference found exactly one rounding that reproduces the backend: ties to even."""
    f = report.finding("quantize", "rounding")
    even = {str(qconform.RoundingMode.rne), qconform.RoundingMode.rne.description}
    return f is not None and len(f.values) == 1 and f.values[0] in even


def main(out_dir):
    backend = NumpyQuantize()
    inferred = qconform.infer(backend)
    print(inferred.summary)
    for f in inferred.findings:
        print(f"  {f.op}.{f.dimension}: {', '.join(f.values)}")
    assert rounds_ties_to_even(inferred), inferred.summary

    report = qconform.run_cases(ROOT / "cases" / "quantize_linear.json", [backend])
    report.write(out_dir)
    print(report, "->", pathlib.Path(out_dir) / "report.html")
    return inferred, report


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="qconform-example-"))
