"""The block-scaled GEMM (qconform.mx_gemm) from Python: hand-derived values (OCP MX 6.3's scales and
elements, 6.2's Dot = X(A) X(B) sum P(A) P(B) per block pair), NaN rows and columns, and a numpy
re-derivation: each operand quantized by qconform.mx_quantize, multiplied in float64 (exact for MXFP4:
every product and partial sum of these inputs fits 53 bits) and rounded to f32 once."""

from fractions import Fraction

import numpy as np
import pytest

import qconform


def test_the_docs_example():
    # docs/python.md: A's block has amax 48: X = 2^(5 - 2) = 8, P = 6, 3, 2 (2.5 ties to even), 1.5.
    # B: amax 0.75: X = 2^-3, P = 6, -4, 2, 1.5. Dot = 1 * (36 - 12 + 4 + 2.25) = 30.25.
    a = np.array([[48, 24, 20, 12]], np.float32)
    b = np.array([[0.75], [-0.5], [0.25], [0.1875]], np.float32)
    y = qconform.mx_gemm(a, b, "mxfp4", block_size=4)
    assert y.dtype == np.float32 and y.tolist() == [[30.25]]


def test_mixed_formats_bias_and_exact():
    # A in MXFP8 E4M3: 1.0 -> X = 2^-8, P = 256 (value 1); B in MXFP4: amax 7.5 -> X = 1, 7.5 saturates to 6.
    a = np.ones((1, 4), np.float32)
    b = np.array([[7.5], [1], [1], [1]], np.float32)
    y, exact = qconform.mx_gemm(a, b, "mxfp8_e4m3", "mxfp4", block_size=4, bias=np.array([0.5], np.float32),
                                exact="fraction")
    assert y.tolist() == [[9.5]]  # 6 + 3 + 0.5
    assert exact[0, 0] == Fraction(19, 2)


def test_nan_scale_row_and_column():
    a = np.ones((2, 4), np.float32)
    a[1, 2] = np.nan
    b = np.ones((4, 2), np.float32)
    b[0, 1] = np.inf
    y = qconform.mx_gemm(a, b, "mxfp4", block_size=4)
    assert y[0, 0] == 4
    assert np.isnan(y[0, 1]) and np.isnan(y[1, 0]) and np.isnan(y[1, 1])


def test_n_by_k_and_a_numpy_rederivation():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((5, 96)) * 3).astype(np.float32)
    w = rng.standard_normal((4, 96)).astype(np.float32)  # [N, K]
    qa = qconform.mx_quantize(a, "mxfp4").astype(np.float64)
    qw = qconform.mx_quantize(w, "mxfp4").astype(np.float64)  # blocks along K, the last axis of [N, K]
    want = (qa @ qw.T).astype(np.float32)
    y = qconform.mx_gemm(a, w, "mxfp4", b_layout="n_by_k")
    assert np.array_equal(y, want)


def test_nvfp4_given_global_scales():
    # A = [5, 1, 0...], g 0.5: s8 = e4m3(f32(5/6) / 0.5) = 1.625, t = 0.8125; P = 6 (5/t = 6.15 clamps), 1.
    # B = [1, 1, 0...], g 0.25: s8 = e4m3(4 f32(1/6)) = 0.6875, t = 0.171875; P = 6 (1/t = 5.82).
    # Y = 0.8125 * 0.171875 * (36 + 6) = 5.865234375.
    a = np.zeros((1, 16), np.float32)
    a[0, :2] = [5, 1]
    b = np.zeros((16, 1), np.float32)
    b[:2, 0] = [1, 1]
    y = qconform.mx_gemm(a, b, "nvfp4", a_global_scale=0.5, b_global_scale=0.25)
    assert y.tolist() == [[5.865234375]]


def test_op_class_and_errors():
    op = qconform.MxGemmOp(np.ones((2, 32), np.float32), np.ones((32, 3), np.float32), "mxfp8_e4m3", "mxfp4")
    assert op.kind == "mx_gemm" and op.a_format == "mxfp8_e4m3" and op.b_format == "mxfp4"
    assert op.block_size == 32 and op.b_layout == "k_by_n" and op.output_dtype == qconform.DType.f32
    case = qconform.Case("g", op, expect={"cpu-ref": "exact"})
    assert case.op.kind == "mx_gemm"
    with pytest.raises(ValueError, match="disagree on K"):
        qconform.mx_gemm(np.ones((1, 4), np.float32), np.ones((5, 1), np.float32), "mxfp4")
    with pytest.raises(ValueError, match="global_scale"):
        qconform.mx_gemm(np.ones((1, 4), np.float32), np.ones((4, 1), np.float32), "mxfp4", a_global_scale=0.5)


class F32RunningSum(qconform.Backend):
    """A kernel's order: the quantized values (qconform.mx_quantize, exact in f32 for MX formats) multiplied
    and added one k at a time into an f32 accumulator. `nan_as_zero` breaks OCP 6.2's NaN."""

    def __init__(self, nan_as_zero=False):
        super().__init__()
        self.nan_as_zero = nan_as_zero

    def name(self):
        return "py-f32-running-sum" + ("-nan0" if self.nan_as_zero else "")

    def description(self):
        return "numpy, f32 accumulation in k order"

    def claim(self):
        return "onnx"

    def supports(self, op):
        return True if op.kind == "mx_gemm" else (False, "only mx_gemm")

    def run(self, op):
        qa = qconform.mx_quantize(op.a, op.a_format, block_size=op.block_size)
        qb = qconform.mx_quantize(op.b, op.b_format, axis=0, block_size=op.block_size)
        if self.nan_as_zero:
            qa, qb = np.nan_to_num(qa, nan=0.0), np.nan_to_num(qb, nan=0.0)
        acc = np.zeros((qa.shape[0], qb.shape[1]), np.float32)
        for k in range(qa.shape[1]):
            acc = (acc + qa[:, k : k + 1] * qb[k : k + 1, :]).astype(np.float32)  # each product exact in f32
        return acc


def test_a_kernel_order_against_exact_and_the_tosa_bound():
    # MXFP8 E4M3 x E4M3, K = 256: every product is exact in f32 (4 x 4 significant bits) but the running
    # sum rounds, so some elements miss the correctly rounded sum; all are within the TOSA bound.
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((16, 256)) * 3).astype(np.float32)
    b = rng.standard_normal((256, 16)).astype(np.float32)
    op = qconform.MxGemmOp(a, b, "mxfp8_e4m3")
    exact = qconform.Case("exact", op, expect={"*": "exact"})
    bound = qconform.Case("bound", op, expect={"*": "dot_product"})
    report = qconform.run_cases([exact, bound], [F32RunningSum()])
    assert [c.backends[0].verdict for c in report.cases] == [qconform.Verdict.FAIL, qconform.Verdict.PASS]
    assert report.cases[0].backends[0].metrics.mismatches > 0


def test_the_bound_requires_nan_where_a_scale_is_nan():
    a = np.ones((2, 32), np.float32)
    a[1, 3] = np.nan
    b = np.ones((32, 2), np.float32)
    case = qconform.Case("nan", qconform.MxGemmOp(a, b, "mxfp4"), expect={"*": "dot_product"})
    report = qconform.run_cases([case], [F32RunningSum(), F32RunningSum(nan_as_zero=True)])
    assert [r.verdict for r in report.cases[0].backends] == [qconform.Verdict.PASS, qconform.Verdict.FAIL]
    assert "NaN scale" in report.cases[0].backends[1].reason
