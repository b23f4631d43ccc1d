"""Example (c): a per-channel quantized GEMM compared across every available backend, written as
an HTML report.

The activations are float32 quantized to u8 (static scale and zero point); the weights are int8
with one scale per output channel; the int32 accumulators (+ an int32 bias) are requantized to
u8 (QLinearMatMul). Each backend is judged against the preset it claims, and the report also
measures it against the ONNX spec.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/per_channel_qgemm_report.py [OUT_DIR]
"""

import pathlib
import sys
import tempfile

import numpy as np

import qconform


def main(out_dir):
    out = pathlib.Path(out_dir)
    gen = qconform.generators
    m, k, n = 16, 64, 24
    a = gen.uniform([m, k], "f32", seed=1, low=-2.0, high=2.0)
    w = gen.uniform([k, n], "i8", seed=2, low=-127.0, high=128.0)
    channel_scales = (0.002 + 0.0005 * (np.arange(n) % 5)).astype(np.float32)
    bias = gen.uniform([n], "i32", seed=3, low=-500.0, high=500.0)

    op = qconform.QGemmOp(
        qconform.Activation(a, scale=4.0 / 255, zero_point=128, format="u8"),
        qconform.Weights(w, scale=channel_scales, axis=1),
        bias=bias,
        output=qconform.Output.requantized("u8", scale=0.05, zero_point=128),
    )
    case = qconform.Case("u8s8_per_channel_requantized", op, spec="onnx", expect="claim", suite="examples",
                         description="QLinearMatMul with per-channel weight scales")

    available = [b for b in qconform.backends() if b.availability().available]
    report = qconform.run_cases([case], available)
    report.write(out)  # report.json, report.html, report.junit.xml
    for b in report.cases[0].backends:
        mm = b.metrics
        print(f"{b.backend:14} {b.verdict!s:5} vs spec: {mm.exact}/{mm.compared} exact, |delta| histogram "
              f"{mm.histogram.tolist()}; {b.reason}")
    print("HTML report:", out / "report.html")
    return report


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="qconform-example-"))
