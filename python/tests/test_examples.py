"""The three examples of docs/python.md run as tests, each checked on what it claims."""

import json
import pathlib
import runpy

import numpy as np

import qconform

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


def test_example_a_new_quantize_case(tmp_path):
    path, report = load("new_quantize_case")["main"](tmp_path)
    case = qconform.load_suite(path).cases[0]
    assert case.id == "examples/ties_per_channel"
    # Channel 1 has scale 0.25 and zero point 3: (k + 1/2) for k = -4..3 rounds half to even.
    assert qconform.evaluate(case).expected[1].tolist() == [-4 + 3, -2 + 3, -2 + 3, 0 + 3, 0 + 3, 2 + 3, 2 + 3, 4 + 3]
    assert report.result("examples/ties_per_channel", "cpu-ref").verdict == qconform.Verdict.PASS


def test_example_b_numpy_backend_rounds_ties_to_even(tmp_path):
    example = load("numpy_backend")
    inferred, report = example["main"](tmp_path)
    assert inferred.backend == "numpy-quantize" and "quantize" in inferred.ops
    assert example["rounds_ties_to_even"](inferred)
    # np.round is ONNX's rounding: every supported default quantize case passes bit for bit.
    verdicts = {str(b.verdict) for c in report.cases for b in c.backends}
    assert verdicts <= {"PASS", "SKIP"} and "PASS" in verdicts
    assert json.loads((tmp_path / "report.json").read_text())["cases"]


def test_example_c_per_channel_qgemm_report(tmp_path):
    report = load("per_channel_qgemm_report")["main"](tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "u8s8_per_channel_requantized" in html
    available = [b.name() for b in qconform.backends() if b.availability().available]
    results = report.cases[0].backends
    assert [b.backend for b in results] == available
    cpu = report.result("examples/u8s8_per_channel_requantized", "cpu-ref")
    assert cpu.verdict == qconform.Verdict.PASS and cpu.metrics.exact == cpu.metrics.compared == 16 * 24
    assert all(np.sum(b.metrics.histogram) == b.metrics.compared for b in results)
