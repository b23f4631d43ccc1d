"""The oracle's quantize from Python, checked against hand-derived values (ONNX
QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point))."""

import numpy as np
import pytest

import qconform


def test_version_is_exposed():
    assert qconform.__version__.count(".") == 2


def test_onnx_preset_is_listed():
    assert "onnx" in qconform.presets


def test_ties_go_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], dtype=np.float32)
    q = qconform.quantize(x, [1.0], [0], dtype="i8")
    assert q.dtype == np.int8
    assert q.tolist() == [-2, -2, 0, 0, 2, 2]


def test_saturation_and_zero_point():
    # 127.5 -> 128 (even) -> saturates at 127; -1 + 255 = 254; 1 + 255 saturates.
    x = np.array([127.5, -1.0, 1.0], dtype=np.float32)
    assert qconform.quantize(x[:1], [1.0], [0]).tolist() == [127]
    assert qconform.quantize(x[1:], [1.0], [255], dtype="u8").tolist() == [254, 255]


def test_per_axis_matches_hand_values():
    x = np.array([[0.25, 0.75, -1.25], [0.25, 0.75, -1.25]], dtype=np.float32)
    q = qconform.quantize(x, [0.5, 0.25], [1, -1], axis=0)
    # row 0: 0.5->0, 1.5->2, -2.5->-2, +1; row 1: 1, 3, -5, -1
    assert q.tolist() == [[1, 3, -1], [0, 2, -6]]


def test_labels():
    x = np.array([2.5, 2.2, 300.0], dtype=np.float32)
    q, labels = qconform.quantize(x, [1.0], [0], labels=True)
    assert labels == ["tie", "clear", "saturated"]


def test_bad_input_raises_with_message():
    with pytest.raises(qconform.InputError, match="positive"):
        qconform.quantize(np.zeros(2, dtype=np.float32), [0.0], [0])
    with pytest.raises(qconform.InputError, match="outside i8"):
        qconform.quantize(np.zeros(2, dtype=np.float32), [1.0], [300])
