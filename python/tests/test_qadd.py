"""qadd (QLinearAdd) from Python: values worked by hand from the formula
C = saturate(round((sA(a - zA) + sB(b - zB)) / sC) + zC) and from MLAS's qladd_avx2.cpp arithmetic,
the op class on the backends, and the checks that name the bad argument."""

from fractions import Fraction

import numpy as np
import pytest

import qconform


def test_the_docs_example():
    # docs/python.md: 0.5(a - 1) + 0.25(b + 2) + 3. a = 2: 0.5 + 0.5 = 1 -> 4; a = 4: 2 -> 5;
    # a = 1: 0.5, a tie to even 0 -> 3. MLAS folds zC into its constant: 3.5 -> 4.
    a = np.array([2, 4, 1], np.int8)
    b = np.array([0, 0, 0], np.int8)
    assert qconform.qadd(a, 0.5, 1, b, 0.25, -2, 1.0, 3).tolist() == [4, 5, 3]
    assert qconform.qadd(a, 0.5, 1, b, 0.25, -2, 1.0, 3, spec="x86-vnni").tolist() == [4, 5, 4]


def test_broadcast_labels_and_exact_values():
    # B [3] over A [2, 3], an i32 bias at 2^-8: (0.5 a + b / 256) / 0.25.
    a = np.array([[2, 0, -1], [127, 1, 3]], np.int8)
    b = np.array([128, -64, 0], np.int32)
    q, labels, exact = qconform.qadd(a, 0.5, 0, b, 2 ** -8, 0, 0.25, labels=True, exact=True)
    # Row 0: (1 + 0.5) * 4 = 6; (0 - 0.25) * 4 = -1; -0.5 * 4 = -2.
    # Row 1: (63.5 + 0.5) * 4 = 256 -> 127 (saturated); (0.5 - 0.25) * 4 = 1; 1.5 * 4 = 6.
    assert q.tolist() == [[6, -1, -2], [127, 1, 6]]
    assert labels.tolist() == [["clear"] * 3, ["saturated", "clear", "clear"]]
    assert exact[1][0] == Fraction(256)


def test_xnnpack_vadd_takes_8_bit_operands():
    # XNNPACK (microparams-init.c): ratios 0.5 and 0.25, shift = 20 - floor(log2 0.5) = 21,
    # multipliers 2^20 and 2^19, bias 2^20; (2^20 + 3 * 2^20 + 1 * 2^19) >> 21 = 4.5 * 2^20 >> 21 = 2.
    assert qconform.qadd(np.array([3], np.int8), 0.5, 0, np.array([1], np.int8), 0.25, 0, 1.0,
                         spec="xnnpack-fp32").tolist() == [2]
    with pytest.raises(qconform.InputError, match="8-bit"):
        qconform.qadd(np.array([3], np.int8), 0.5, 0, np.array([1], np.int32), 0.25, 0, 1.0, spec="xnnpack-fp32")


def test_the_op_class_runs_on_cpu_ref_and_evaluates():
    op = qconform.QAddOp(np.array([2, 4, 1], np.int8), 0.5, 1, np.array([0, 0, 0], np.int8), 0.25, -2, 1.0, 3)
    assert op.kind == "qadd" and op.b_zero_point == -2 and op.scale == 1.0
    assert qconform.backend("cpu-ref").run(op).tolist() == [4, 5, 3]


def test_bad_arguments_name_what_is_wrong():
    with pytest.raises(qconform.InputError, match="broadcast"):
        qconform.qadd(np.array([1, 2, 3], np.int8), 1, 0, np.array([1, 2], np.int8), 1, 0, 1)
    with pytest.raises(qconform.InputError, match="A is i8 or u8"):
        qconform.qadd(np.array([1.0], np.float32), 1, 0, np.array([1], np.int8), 1, 0, 1)
    with pytest.raises(qconform.InputError, match="output zero point"):
        qconform.qadd(np.array([1], np.int8), 1, 0, np.array([1], np.int8), 1, 0, 1, zero_point=300)
