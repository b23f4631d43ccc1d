"""Chained cases and agreement statements from Python: the fields of a loaded case, the runner's
findings on cpu-ref, and chains built from arrays. Expected values are the ones derived by hand in
cases/pipelines.json's descriptions and in the comments here."""

import pathlib

import numpy as np
import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "cases" / "pipelines.json"


def by_name(cases):
    return {c.name: c for c in cases}


def test_a_loaded_case_names_its_producers_and_statements():
    cases = by_name(qconform.load_suite(PIPELINES).cases)
    add = cases["fc_lowered_bias_add"]
    assert add.operands_from == {"a": "fc_lowered_matmul_requantized", "b": "fc_lowered_bias_quantize"}
    assert add.differs_from == [("fc_fused", 3)]
    assert add.same_outputs_as == []
    assert cases["u8s8_rewrite_gemm"].same_outputs_as == ["s8s8_gemm"]
    # The writer keeps the link and the statement.
    j = add.to_json()
    assert j["a"]["from"] == "fc_lowered_matmul_requantized" and "data" not in j["a"]
    assert j["differs_from"] == {"case": "fc_fused", "elements": 3}
    # Its values exist only in a run.
    with pytest.raises(qconform.InputError, match="takes its a from case 'fc_lowered_matmul_requantized'"):
        qconform.evaluate(add)


def test_the_pipelines_suite_on_cpu_ref():
    report = qconform.run_cases(PIPELINES, ["cpu-ref"], keep_outputs=True)
    assert report.exit_code == 0
    results = {c.name: c for c in report.cases}
    add = results["fc_lowered_bias_add"]
    assert add.operands_from == {"a": "pipelines/fc_lowered_matmul_requantized",
                                 "b": "pipelines/fc_lowered_bias_quantize"}
    (oracle,) = add.agreements
    assert (oracle.assertion, oracle.other, oracle.stated, oracle.status) == \
        ("differs_from", "pipelines/fc_fused", 3, "holds")
    assert (oracle.differing, oracle.elements, oracle.first_differing) == (3, 12, [0, 7, 11])
    assert add.backend("cpu-ref").agreements[0].status == "holds"
    # The lowered FC's outputs, and the intermediate the chain carried (kept_outputs has both).
    out = report.outputs
    assert out[("pipelines/fc_lowered_bias_add", "cpu-ref")].tolist() == \
        [[10, -47, -50], [14, -47, 2], [84, 62, -22], [-69, -61, -39]]
    assert out[("pipelines/fc_lowered_matmul_requantized", "cpu-ref")].tolist() == \
        [[7, -30, -41], [10, -30, 2], [68, 61, -18], [-59, -42, -32]]
    hazard = results["u8s8_rewrite_conv_zero_byte_padding"].agreements[0]
    assert (hazard.status, hazard.differing, hazard.stated) == ("holds", 47, 47)


def test_a_chain_built_from_arrays():
    # q: x = [0.5, 1.5, 2.5, 3.0] to u8 (scale 1): [0, 2, 2, 3] (ties to even). g: q's output as A
    # [1, 4] times B = [1, 2, 4, 8]^T: 0 + 4 + 8 + 24 = 36. A ties-away kernel of q would give
    # [1, 2, 3, 3] and 41 (see tests/harness/lowering_test.cpp); here a numpy backend multiplies
    # whatever it gets, so g shows the chained values.
    x = np.array([[0.5, 1.5, 2.5, 3.0]], dtype=np.float32)
    q = qconform.Case("q", qconform.QuantizeOp(x, 1.0, 0, dtype="u8"), suite="chain")
    a = qconform.Activation(np.zeros((1, 4), np.uint8), scale=1.0, zero_point=0)  # stands for q's output
    b = qconform.Weights(np.array([[1], [2], [4], [8]], np.int8), scale=1.0)
    g = qconform.Case("g", qconform.QGemmOp(a, b, output=qconform.Output.int32()), suite="chain",
                      operands_from={"a": "q"})
    assert g.operands_from == {"a": "q"}
    report = qconform.run_cases([q, g], ["cpu-ref"], keep_outputs=True)
    assert report.exit_code == 0
    assert report.outputs[("chain/q", "cpu-ref")].tolist() == [[0, 2, 2, 3]]
    assert report.outputs[("chain/g", "cpu-ref")].tolist() == [[36]]
    # A placeholder of the wrong shape is caught when the cases run together.
    bad = qconform.Case("g", qconform.QGemmOp(qconform.Activation(np.zeros((1, 2), np.uint8), scale=1.0),
                                              qconform.Weights(np.array([[1], [2]], np.int8), scale=1.0),
                                              output=qconform.Output.int32()),
                        suite="chain", operands_from={"a": "q"})
    with pytest.raises(qconform.InputError, match="field 'a.from': 'q' outputs u8 \\[1, 4\\]"):
        qconform.run_cases([q, bad], ["cpu-ref"])
    # A statement made in Python: g' equals g.
    g2 = qconform.Case("g2", qconform.QGemmOp(a, b, output=qconform.Output.int32()), suite="chain",
                       operands_from={"a": "q"}, same_outputs_as="g")
    report = qconform.run_cases([q, g, g2], ["cpu-ref"])
    assert report.cases[2].agreements[0].status == "holds"


def test_the_case_schema_takes_from_and_statements_as_the_loader_does():
    import json

    import jsonschema

    schema = json.loads((ROOT / "cases" / "case.schema.json").read_text())
    producer = {"name": "p", "op": "quantize", "input": {"dtype": "f32", "shape": [4], "data": [1, 2, 3, 4]},
                "scale": 1.0, "output_dtype": "i8"}
    consumer = {"name": "c", "op": "dequantize", "input": {"from": "p"}, "scale": 1.0,
                "differs_from": {"case": "p2", "elements": 2}, "same_outputs_as": ["p3"]}
    jsonschema.validate({"suite": "s", "cases": [producer, consumer]}, schema)
    both = dict(consumer, input={"from": "p", "dtype": "i8", "shape": [4], "data": [1, 2, 3, 4]})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"suite": "s", "cases": [producer, both]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"suite": "s", "cases": [dict(consumer, differs_from={"case": "p", "elements": 0})]}, schema)
