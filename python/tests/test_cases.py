"""Cases from numpy arrays, the JSON case format both ways (the C++ writer and the loader), and
the seeded generators, checked against a pure-Python SplitMix64 and the stated definitions."""

import json
import math
import pathlib
import re

import jsonschema
import numpy as np
import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASE_SCHEMA = json.loads((ROOT / "cases" / "case.schema.json").read_text())


def one_case_of_each_kind():
    x = np.array([[0.5, -1.5, 2.25, 300.0], [-0.0, 1e-30, 7.5, -7.5]], dtype=np.float32)
    qa = qconform.Activation(np.array([[130, 120, 128]], dtype=np.uint8), scale=0.5, zero_point=128)
    w4 = qconform.Weights(np.array([[7, -8], [-3, 2], [5, 1]], dtype=np.int8), scale=np.array([[0.5, 0.25], [1.0, 2.0]]),
                          axis=0, block_size=2, dtype="i4", packing="onnx")
    conv_in = qconform.Activation(np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3) / 4, scale=0.25, zero_point=3)
    conv_w = qconform.Weights(np.array([1, -1, 2, -2, 3, -3, 4, -4], dtype=np.int8).reshape(2, 1, 2, 2),
                              scale=[0.5, 0.25], axis=0)
    return [
        qconform.Case("quantize_per_axis", qconform.QuantizeOp(x, [0.5, 0.25], [1, -1], axis=0),
                      policy=qconform.Policy("onnx", rounding="rna"), expect={"*": "exact", "cpu-ref": {"max_lsb": 1}},
                      description="per axis, ties away"),
        qconform.Case("dequantize_i4_f16", qconform.DequantizeOp(np.array([-8, 7, 0, 1], np.int8), 0.1, 1, dtype="f16",
                                                                 input_dtype="i4")),
        qconform.Case("requantize_gemmlowp", qconform.RequantizeOp(np.array([5, -5, 1000], np.int32), 0.5, 1.0, 1.0),
                      policy=qconform.Policy("onnx", requantize={"scheme": "gemmlowp_double"})),
        qconform.Case("qgemm_int4_blocked", qconform.QGemmOp(qa, w4, output=qconform.Output.dequantized())),
        qconform.Case("qgemm_relu6", qconform.QGemmOp(qa, qconform.Weights(np.array([[1], [2], [3]], np.int8), scale=0.25),
                                                      bias=np.array([4], np.int32),
                                                      output=qconform.Output.requantized("u8", 0.125, 7, "relu6"))),
        qconform.Case("qconv2d_groups", qconform.QConv2dOp(conv_in, conv_w, groups=2, padding=(1, 0, 0, 1), stride=(2, 1),
                                                           output=qconform.Output.requantized("i8", 0.5, 0))),
        qconform.Case("weight_only", qconform.WeightOnlyGemmOp(np.array([[0.5, -1.0, 0.1]], np.float32),
                                                               qconform.Weights(np.array([[1], [2], [3]], np.int8), scale=0.5)),
                      expect="dot_product"),
        qconform.Case("conv2d_weight_only", qconform.Conv2dOp(np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3) / 4,
                                                              conv_w, groups=2, padding=(1, 1, 1, 1)),
                      expect="dot_product"),
        qconform.Case("qgemm_batched_b", qconform.QGemmOp(qconform.Activation(np.array([[[1, 2, 3]]], np.int8), scale=1.0),
                                                          qconform.Weights(np.arange(6, dtype=np.int8).reshape(2, 3, 1),
                                                                           scale=0.5))),
    ]


def test_cases_round_trip_through_the_case_format(tmp_path):
    cases = one_case_of_each_kind()
    path = tmp_path / "suite.json"
    qconform.save_cases(path, cases, suite="made_in_python")
    text = json.loads(path.read_text())
    jsonschema.validate(text, CASE_SCHEMA)  # the file is a valid case file
    suite = qconform.load_suite(path)
    assert suite.name == "made_in_python" and len(suite) == len(cases)
    for a, b in zip(cases, suite.cases):
        assert b.name == a.name and b.policy == a.policy and b.expect == a.expect
        assert b.op.kind == a.op.kind
        assert np.array_equal(a.op.main_input.view(np.uint8), b.op.main_input.view(np.uint8))  # bit for bit
        ra, rb = qconform.evaluate(a), qconform.evaluate(b)
        assert np.array_equal(ra.expected.view(np.uint8), rb.expected.view(np.uint8)), a.name
        assert ra.labels.tolist() == rb.labels.tolist()
        assert b.to_json() == a.to_json()


def test_case_json_holds_the_inline_data_and_the_spec():
    j = one_case_of_each_kind()[0].to_json()
    assert j["op"] == "quantize" and j["name"] == "quantize_per_axis"
    assert j["spec"] == {"preset": "onnx", "rounding": "rna"}
    assert j["input"]["dtype"] == "f32" and j["input"]["shape"] == [2, 4]
    assert j["input"]["data"][:4] == [0.5, -1.5, 2.25, 300.0]
    assert math.copysign(1, j["input"]["data"][4]) == -1  # -0 survives
    assert j["scale"] == [0.5, 0.25] and j["zero_point"] == [1, -1] and j["axis"] == 0
    assert j["expect"] == {"*": "exact", "cpu-ref": {"max_lsb": 1}}
    q = one_case_of_each_kind()[4].to_json()
    assert q["output"] == {"kind": "requantized", "dtype": "u8", "scale": 0.125, "zero_point": 7, "activation": "relu6"}


def test_special_values_survive_bit_for_bit(tmp_path):
    bits = np.array([0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x7FC00000, 0xFFC00000, 0x7FC00123],
                    dtype=np.uint32)
    case = qconform.Case("specials", qconform.QuantizeOp(bits.view(np.float32), 1.0))
    qconform.save_cases(tmp_path / "s.json", [case])
    back = qconform.load_suite(tmp_path / "s.json").cases[0]
    assert back.op.x.view(np.uint32).tolist() == bits.tolist()
    # An f16 NaN other than the format's canonical one cannot be written bit for bit.
    h = np.array([0x7E01], dtype=np.uint16).view(np.float16)
    with pytest.raises(qconform.InputError, match="cannot be written"):
        qconform.case_to_json(qconform.Case("nan16", qconform.QuantizeOp(h, 1.0)))
    assert qconform.case_to_json(qconform.Case("nan16", qconform.QuantizeOp(h, 1.0)), canonical_nans=True)["input"][
        "data"] == ["nan"]


def test_saved_files_keep_generators_and_run_arrays_on_lines(tmp_path):
    generator = {"kind": "uniform", "seed": 9, "low": -2.0, "high": 2.0}
    src = tmp_path / "gen.json"
    src.write_text(json.dumps({"suite": "gen", "cases": [
        {"name": "u", "op": "quantize", "scale": 0.015625, "output_dtype": "i8",
         "input": {"dtype": "f32", "shape": [32, 32], "generator": generator}}]}))
    out = tmp_path / "saved.json"
    qconform.save_cases(out, qconform.load_suite(src).cases)
    j = json.loads(out.read_text())
    jsonschema.validate(j, CASE_SCHEMA)
    assert j["cases"][0]["input"] == {"dtype": "f32", "shape": [32, 32], "generator": generator}
    want = qconform.generators.uniform([32, 32], "f32", seed=9, low=-2.0, high=2.0)
    back = qconform.load_suite(out).cases[0]
    assert back.op.x.tobytes() == want.tobytes()
    assert back.to_json()["input"]["generator"] == generator

    # Values changed in Python are written as values, a line holding several of them.
    x = want.copy()
    x[3, 4] = np.float32(1.5) if x[3, 4] != 1.5 else np.float32(1.25)
    qconform.save_cases(out, [qconform.Case("u", qconform.QuantizeOp(x, 0.015625), suite="gen")])
    text = out.read_text()
    j = json.loads(text)
    assert "generator" not in j["cases"][0]["input"] and len(j["cases"][0]["input"]["data"]) == 1024
    # Several values a line: an f32 value's double text is at most 20 characters with its ", ".
    lines = text.splitlines()
    assert len(lines) < 1024 // 3 and max(len(line) for line in lines) <= 100
    assert qconform.load_suite(out).cases[0].op.x.tobytes() == x.tobytes()


def test_npy_side_files_hold_large_arrays_bit_for_bit(tmp_path, monkeypatch):
    # An f16 NaN with a payload: no inline text reads back as it, a side file does.
    h = np.array([0x7E01, 0xFC00, 0x8000, 0x0001] * 4, dtype=np.uint16).view(np.float16).reshape(4, 4)
    small = np.array([0.5, -0.0], np.float32)
    cases = [qconform.Case("big f16", qconform.QuantizeOp(h, 1.0)), qconform.Case("small", qconform.QuantizeOp(small, 1.0))]
    with pytest.raises(qconform.InputError, match="cannot be written"):
        qconform.save_cases(tmp_path / "inline.json", cases, suite="s")
    qconform.save_cases(tmp_path / "c.json", cases, suite="s", npy_min_elements=16)
    j = json.loads((tmp_path / "c.json").read_text())
    jsonschema.validate(j, CASE_SCHEMA)
    assert j["cases"][0]["input"]["data"] == {"npy": "c.big_f16.input.npy"}
    assert j["cases"][1]["input"]["data"] == [0.5, 0.0] and math.copysign(1, j["cases"][1]["input"]["data"][1]) == -1
    side = np.load(tmp_path / "c.big_f16.input.npy")
    assert side.dtype == np.float16 and side.view(np.uint16).tolist() == h.view(np.uint16).tolist()
    back = qconform.load_suite(tmp_path / "c.json").cases
    assert back[0].op.x.view(np.uint16).tolist() == h.view(np.uint16).tolist()
    assert back[1].op.x.view(np.uint32).tolist() == small.view(np.uint32).tolist()
    with pytest.raises(qconform.InputError, match="npy_min_elements"):
        qconform.save_cases(tmp_path / "c.json", cases, suite="s", npy_min_elements=-1)
    # case_from_json reads a relative side file from the working directory.
    monkeypatch.chdir(tmp_path)
    one = qconform.case_from_json(dict(j["cases"][0], name="again"))
    assert one.op.x.view(np.uint16).tolist() == h.view(np.uint16).tolist()


def test_the_save_cases_snippet_of_docs_python_runs(tmp_path, monkeypatch):
    blocks = [b for b in re.findall(r"```python\n(.*?)```\n", (ROOT / "docs" / "python.md").read_text(), re.S)
              if "npy_min_elements" in b]
    assert len(blocks) == 1
    (tmp_path / "cases").symlink_to(ROOT / "cases")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "docs/python.md", "exec"), {})
    assert (tmp_path / "mine.wide.input.npy").exists()


def test_case_from_json_uses_the_loader():
    case = qconform.case_from_json({"name": "c", "op": "quantize", "input": {"dtype": "f32", "shape": [2],
                                    "data": [0.5, "0x1.8p+1"]}, "scale": 1.0, "output_dtype": "i8"})
    assert case.op.x.tolist() == [0.5, 3.0] and case.suite == "python"
    assert qconform.evaluate(case).expected.tolist() == [0, 3]
    with pytest.raises(qconform.InputError, match="field 'scael': unknown field"):
        qconform.case_from_json({"name": "c", "op": "quantize", "input": {"dtype": "f32", "shape": [1], "data": [1]},
                                 "scael": 1.0, "output_dtype": "i8"})


def test_a_sweep_is_every_case_and_case_from_json_refuses_to_drop_any():
    # qconv2d.json's padding_value sweep: two values, so two cases named after them.
    obj = {"name": "pad", "op": "qconv2d",
           "input": {"dtype": "u8", "shape": [1, 1, 2, 2], "data": [1, 2, 3, 4], "scale": 0.5, "zero_point": 100},
           "weight": {"dtype": "i8", "shape": [1, 1, 1, 1], "data": [3], "scale": 0.25},
           "output": {"kind": "int32"}, "sweep": {"padding_value": ["real_zero", "quantized_zero"]}}
    cases = qconform.cases_from_json(obj)
    assert [c.name for c in cases] == ["pad[padding_value=real_zero]", "pad[padding_value=quantized_zero]"]
    with pytest.raises(qconform.InputError, match="expands to 2 cases .*cases_from_json"):
        qconform.case_from_json(obj)
    one = dict(obj)
    del one["sweep"]
    assert [c.name for c in qconform.cases_from_json(one)] == ["pad"]


def test_ops_are_read_only_views_that_keep_their_case_alive():
    case = qconform.Case("c", qconform.QuantizeOp(np.array([1.0, 2.0], np.float32), 0.5, 3))
    x = case.op.x
    assert not x.flags.writeable and x.base is not None
    assert case.op.element_scales().tolist() == [0.5, 0.5]
    assert case.op.element_zero_points().tolist() == [3, 3]
    del case
    assert x.tolist() == [1.0, 2.0]  # still valid: the view keeps the case alive


def test_load_the_default_suites():
    cases = qconform.load_cases(ROOT / "cases")
    assert len(cases) > 50
    assert len({c.id for c in cases}) == len(cases)
    suites = qconform.load_suites([ROOT / "cases" / "quantize_linear.json"])
    assert suites[0].name == "quantize_linear" and suites[0].cases[0].file.endswith("quantize_linear.json")


# ---- generators ------------------------------------------------------------------------------

M64 = (1 << 64) - 1


def splitmix64(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def test_splitmix64_and_uniform_match_their_definition():
    rng = qconform.generators.SplitMix64(0)
    assert [rng.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    ref = splitmix64(42)
    # uniform: low + (high - low) * u with u = (next >> 11) * 2^-53, rounded once into f32.
    want = [np.float32(-2.0 + 5.0 * ((next(ref) >> 11) * 2.0**-53)) for _ in range(100)]
    got = qconform.generators.uniform(100, "f32", seed=42, low=-2.0, high=3.0)
    assert got.dtype == np.float32 and got.tolist() == [float(v) for v in want]


def test_value_generators():
    h = qconform.generators.exhaustive([65536], "f16")
    assert h.view(np.uint16).tolist() == list(range(65536))
    s = qconform.generators.specials([15], "f16")
    assert np.isnan(s[0]) and s[1:5].tolist() == [0.0, -0.0, 2.0**-24, -(2.0**-24)] and s[11] == 65504
    t = qconform.generators.ties([30], "f32", seed=3, scale=0.25)
    ties = t[0::3].astype(np.float64) / 0.25
    assert np.all(ties - np.floor(ties) == 0.5)  # (k + 1/2) * s exactly
    assert np.all(t[1::3] == np.nextafter(t[0::3], np.float32(-np.inf)))
    st = qconform.generators.accumulator_stress([64], "i8", seed=1)
    assert set(st.tolist()) <= {127, -128}
    b = qconform.generators.normal([8], "bf16", seed=1)
    assert b.dtype == np.uint16  # bf16 bits
    assert qconform.generators.saturation([16], "f32", seed=1, scale=1.0).dtype == np.float32
    assert qconform.generators.tosa_dot_product([4, 8], "f32", set=0).shape == (4, 8)
