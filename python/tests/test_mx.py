"""OCP MX v1.0 and NVFP4 from Python: hand-derived values (OCP 6.3: X = 2^(floor(log2 amax) - emax_elem),
elements rounded to nearest even and clamped), each scale rule where they part, and a numpy
re-derivation of the floor rule over random blocks (frexp for the exponent, the E2M1 grid by search)."""

import math

import numpy as np
import pytest

import qconform


def test_the_docs_example():
    # docs/python.md: amax 6 -> e = floor(log2 6) - 2 = 0; 5 ties to 4, 2.5 to 2, 0.25 to 0.
    y = qconform.mx_quantize(np.array([6, 5, 2.5, 0.25], np.float32), "mxfp4", block_size=4)
    assert y.dtype == np.float32
    assert y.tolist() == [6, 4, 2, 0]


def test_ties_away_and_codes():
    y, elements, scales, g = qconform.mx_quantize(
        np.array([6, 5, 2.5, 0.25], np.float32), "mxfp4", block_size=4, rounding="rna", codes=True
    )
    assert y.tolist() == [6, 6, 3, 0.5]
    # E2M1 codes: 6 = 0b0111, 3 = 0b0101, 0.5 = 0b0001; scale 2^0 = code 127.
    assert elements.tolist() == [0b0111, 0b0111, 0b0101, 0b0001]
    assert scales.tolist() == [127]
    assert g is None


@pytest.mark.parametrize(
    "rule,want",
    [("floor", [6, 0.5]), ("ceil", [8, 0]), ("even", [8, 0]), ("rceil", [8, 0])],
)
def test_scale_rules_on_amax_7(rule, want):
    # floor: X = 1, 7 saturates to 6 and 0.3 -> 0.5; the others take X = 2: 3.5 ties to 4 (8), 0.15 -> 0.
    assert qconform.mx_quantize(np.array([7, 0.3], np.float32), "mxfp4", scale_rule=rule).tolist() == want


def test_nvfp4_and_dequantize_round_trip():
    # Global 0.5, amax 12: b = 2, s = 4, t = 2; 10 / 2 = 5 ties to 4: 4 * 4 * 0.5 = 8.
    x = np.array([12, 10, 1], np.float32)
    y, elements, scales, g = qconform.mx_quantize(x, "nvfp4", global_scale=0.5, codes=True)
    assert y.tolist() == [12, 8, 1] and g == 0.5
    assert qconform.mx_dequantize(elements, scales, "nvfp4", global_scale=0.5).tolist() == [12, 8, 1]


def e2m1_nearest(v):
    grid = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    a = min(abs(v), 6.0)
    best = min(range(8), key=lambda k: (abs(a - grid[k]), k & 1))
    return math.copysign(grid[best], v)


def test_floor_rule_matches_a_numpy_rederivation():
    rng = np.random.default_rng(32)
    x = (rng.standard_normal((6, 64)) * rng.uniform(0.01, 100, (6, 1))).astype(np.float32)
    y = qconform.mx_quantize(x, "mxfp4")
    for r in range(6):
        for b in range(2):
            blk = x[r, 32 * b : 32 * (b + 1)].astype(np.float64)
            e = math.frexp(float(np.max(np.abs(blk))))[1] - 1 - 2  # floor(log2 amax) - emax
            want = [e2m1_nearest(v / 2.0**e) * 2.0**e for v in blk]
            assert y[r, 32 * b : 32 * (b + 1)].tolist() == want


def test_ops_and_errors():
    op = qconform.MxQuantizeOp(np.ones((2, 32), np.float32), "mxfp8_e5m2", scale_rule="rceil")
    assert op.kind == "mx_quantize" and op.format == "mxfp8_e5m2" and op.scale_rule == "rceil"
    with pytest.raises(ValueError, match="format"):
        qconform.mx_quantize(np.ones(4, np.float32), "mxfp5")
    with pytest.raises(ValueError, match="MXINT8"):
        qconform.mx_quantize(np.ones(4, np.float32), "mxint8", scale_rule="ceil")
