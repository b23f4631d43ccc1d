"""Example: a numpy kernel as an exec runner (docs/integrate.md, "Exec runners").

RecipQuantize quantizes the way many fast kernels do: x times the float32 reciprocal of the scale,
rounded half away from zero, + zero point, saturated. Run as a program, it serves the exec protocol
on stdin/stdout, so qconform runs it in its own process:

    qconform run --backend "exec:/usr/bin/python3 python/examples/recip_quantize.py" cases/quantize_linear.json
    qconform run --backend py:recip_quantize:RecipQuantize cases/quantize_linear.json  # module on PYTHONPATH
"""

import numpy as np

import qconform


class RecipQuantize(qconform.Backend):
    def name(self):
        return "recip-quantize"

    def description(self):
        return "numpy: x * float32(1/s), ties away from zero, + zp, saturate"

    def claim(self):
        return "onnx"

    def supports(self, op):
        if op.kind != "quantize" or qconform.format_info(op.dtype).is_float:
            return False, "quantize to integers only"
        if op.x.dtype != np.float32:
            return False, "float32 inputs only"
        return True

    def run(self, op):
        inv = (1.0 / op.element_scales()).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            y = (op.x * inv).astype(np.float64)  # the product rounded to float32, then exact
            v = np.sign(y) * np.floor(np.abs(y) + 0.5) + op.element_zero_points()
        v = np.where(np.isnan(v), 0, v)
        info = qconform.format_info(op.dtype)
        return np.clip(v, info.int_min, info.int_max).astype(info.numpy_dtype)


if __name__ == "__main__":
    raise SystemExit(qconform.serve(RecipQuantize()))
