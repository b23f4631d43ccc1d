"""qgemm with a batched B: the batch dimensions of A and B broadcast as numpy.matmul's do (ONNX
MatMul, QLinearMatMul and MatMulInteger on 3-D inputs). Expected values come from numpy's own
integer matmul, which implements those rules independently of qconform."""

from fractions import Fraction

import numpy as np
import pytest

import qconform


def test_batched_b_broadcasts_like_numpy_matmul():
    rng = np.random.default_rng(7)
    a = rng.integers(-20, 20, size=(2, 1, 3, 4)).astype(np.int8)  # batch [2, 1]
    b = rng.integers(-20, 20, size=(5, 4, 2)).astype(np.int8)  # batch [5]
    y = qconform.qgemm(qconform.Activation(a, scale=1.0), qconform.Weights(b, scale=1.0))
    want = np.matmul(a.astype(np.int64), b.astype(np.int64))  # [2, 5, 3, 2]
    assert y.shape == (2, 5, 3, 2)
    assert y.tolist() == want.tolist()


def test_batched_b_per_column_scales_dequantized():
    # Per column on B's last axis (ONNX QLinearMatMul's b_scale of [N]), the same for every batch.
    a = np.array([[[1, 2], [3, 4]], [[-1, 0], [2, -2]]], dtype=np.int8)  # [2, 2, 2]
    b = np.array([[[1, -1], [2, 0]], [[0, 3], [1, 1]]], dtype=np.int8)  # [2, 2, 2]
    y, exact = qconform.qgemm(
        qconform.Activation(a, scale=0.5),
        qconform.Weights(b, scale=[0.25, 0.125], axis=2),
        output=qconform.Output.dequantized("f32"),
        exact=True,
    )
    acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
    s = [Fraction(1, 2) * Fraction(1, 4), Fraction(1, 2) * Fraction(1, 8)]
    want = [[[s[n] * int(v) for n, v in enumerate(row)] for row in m] for m in acc.tolist()]
    assert exact.tolist() == want
    assert y.tolist() == [[[float(v) for v in row] for row in m] for m in want]


def test_batches_that_do_not_broadcast_are_rejected():
    a = qconform.Activation(np.zeros((2, 1, 2), np.int8), scale=1.0)
    b = qconform.Weights(np.zeros((3, 2, 2), np.int8), scale=1.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        qconform.qgemm(a, b)


def test_batched_b_runs_on_cpu_ref_as_the_oracle_says():
    rng = np.random.default_rng(3)
    a = rng.integers(-30, 30, size=(3, 2, 4)).astype(np.int8)
    b = rng.integers(-30, 30, size=(1, 4, 3)).astype(np.int8)
    op = qconform.QGemmOp(qconform.Activation(a, scale=1.0), qconform.Weights(b, scale=1.0))
    out = qconform.backend("cpu-ref").run(op)
    assert np.asarray(out).tolist() == np.matmul(a.astype(np.int64), b.astype(np.int64)).tolist()


def test_batched_b_one_scale_per_batch():
    # Per axis on B's batch dimension (axis 0 of [2, K, N]): batch i is scaled by s[i]. numpy's integer
    # matmul gives the accumulators; times s_a * s[i] = [0.5, 0.25] (exact in f32).
    a = np.array([[[1, 2], [3, 4]]], np.int8)  # [1, 2, 2]: broadcast to both batches
    b = np.array([[[1, -1], [2, 0]], [[0, 3], [1, 1]]], np.int8)
    w = qconform.Weights(b, scale=[0.5, 0.25], axis=0)
    y = qconform.qgemm(qconform.Activation(a, scale=1.0), w, output=qconform.Output.dequantized("f32"))
    acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
    assert y.tolist() == (acc * np.array([0.5, 0.25])[:, None, None]).tolist()
