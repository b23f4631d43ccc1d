"""Example (a): a new quantize case from a numpy array.

Builds a per-channel QuantizeLinear case whose inputs lie exactly on rounding ties, checks the
oracle's answer against the ONNX definition computed with numpy (np.rint rounds half to even),
saves it as a case file that `qconform run` reads, and runs it on every built-in backend.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/new_quantize_case.py [OUT_DIR]
"""

import pathlib
import sys
import tempfile

import numpy as np

import qconform


def main(out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    # Three channels (rows) with power-of-two scales, so (k + 1/2) * s is an exact tie in f32.
    scales = np.array([0.5, 0.25, 0.125], dtype=np.float32)
    zero_points = np.array([0, 3, -3])
    k = np.arange(-4, 4, dtype=np.float32)
    x = ((k + np.float32(0.5))[None, :] * scales[:, None]).astype(np.float32)

    op = qconform.QuantizeOp(x, scales, zero_points, dtype="i8", axis=0)
    case = qconform.Case("ties_per_channel", op, spec="onnx", expect="exact", suite="examples",
                         description="every element an exact tie of its channel's scale")

    # The oracle against ONNX QuantizeLinear written with numpy: saturate(rint(x / s) + zp).
    ref = qconform.evaluate(case)
    onnx = np.clip(np.rint(x / scales[:, None]) + zero_points[:, None], -128, 127).astype(np.int8)
    assert np.array_equal(ref.expected, onnx)
    assert set(ref.labels.ravel().tolist()) == {"tie"}

    path = out / "ties_per_channel.json"
    qconform.save_cases(path, [case])  # then: qconform run <path>
    report = qconform.run_cases(path)  # every built-in backend
    for c in report.cases:
        for b in c.backends:
            print(f"{c.id:28} {b.backend:14} {b.verdict!s:5} {b.reason}")
    print("case file:", path)
    return path, report


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="qconform-example-"))
