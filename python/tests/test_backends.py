"""Backends from Python: the built-in ones, and backends written in Python going through the
harness's runner (qc::run_cases): verdicts, metrics, label splits, causes, worst elements,
fingerprints, reproducers and the JSON/HTML reports. Expected verdicts and counts are derived by
hand from what the backend computes."""

import json
import pathlib
import subprocess

import jsonschema
import numpy as np
import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPORT_SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())
# The CLI next to the module in a build tree: <build>/python/qconform -> <build>/cli/qconform.
CLI = pathlib.Path(qconform.__file__).resolve().parents[2] / "cli" / "qconform"


class RoundHalfAway(qconform.Backend):
    """Quantize with round-half-away-from-zero (C's round()): differs from ONNX exactly at ties."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def name(self):
        return "py-round-away"

    def description(self):
        return "numpy, ties away from zero"

    def claim(self):
        return "onnx"

    def supports(self, op):
        if op.kind != "quantize":
            return False, "only quantize"
        return True

    def run(self, op):
        self.seen.append(op.x)  # kept beyond the call: the view must stay valid
        x = op.x.astype(np.float64)
        v = x / op.element_scales()
        r = np.sign(v) * np.floor(np.abs(v) + 0.5) + op.element_zero_points()
        info = qconform.format_info(op.dtype)
        return np.clip(r, info.int_min, info.int_max).astype(info.numpy_dtype)


def tie_case(name="ties"):
    # Quotients 0.5, 1.5, 2.5, -0.5, 0.25, 3: four ties, of which away and even differ on 0.5, 2.5, -0.5.
    x = np.array([0.25, 0.75, 1.25, -0.25, 0.125, 1.5], dtype=np.float32)
    return qconform.Case(name, qconform.QuantizeOp(x, 0.5, 0), suite="pytests")


def test_builtin_backends():
    names = [b.name() for b in qconform.backends()]
    assert names[0] == "cpu-ref"
    cpu = qconform.backend("cpu-ref")
    assert cpu.claim() == "onnx" and cpu.availability().available
    op = qconform.QuantizeOp(np.array([0.5, 1.5, 2.5, -300.0], np.float32), 1.0)
    assert cpu.supports(op)
    assert cpu.run(op).tolist() == [0, 2, 2, -128]
    assert cpu.run(qconform.Case("c", op)).tolist() == [0, 2, 2, -128]  # a case runs its op
    with pytest.raises(qconform.InputError, match="unknown backend 'nope' \\(known: cpu-ref"):
        qconform.backend("nope")


def test_cpu_ref_claims_another_preset_by_name():
    # Quotients 0.5, 1.5, 2.5, -2.5 (scale 1): TFLite's std::round takes ties away from zero
    # (1, 2, 3, -3) where ONNX's nearbyint takes them to even (0, 2, 2, -2).
    tfl = qconform.backend("cpu-ref:tflite-reference")
    assert tfl.name() == "cpu-ref:tflite-reference" and tfl.claim() == "tflite-reference"
    op = qconform.QuantizeOp(np.array([0.5, 1.5, 2.5, -2.5], np.float32), 1.0)
    assert tfl.run(op).tolist() == [1, 2, 3, -3]
    assert qconform.backend("cpu-ref").run(op).tolist() == [0, 2, 2, -2]
    # Judged against its claim it passes; against the onnx spec, three of four elements differ.
    claim = qconform.Case("ties", op, policy="onnx", expect={"*": "claim"}, suite="pytests")
    exact = qconform.Case("ties_exact", op, policy="onnx", expect={"*": "exact"}, suite="pytests")
    report = qconform.run_cases([claim, exact], ["cpu-ref:tflite-reference"])
    verdicts = [c.backends[0].verdict for c in report.cases]
    assert verdicts == [qconform.Verdict.PASS, qconform.Verdict.FAIL]
    assert report.cases[1].backends[0].metrics.mismatches == 3
    with pytest.raises(qconform.InputError, match="cpu-ref can claim onnx, tflite-reference, pytorch-cpu"):
        qconform.backend("cpu-ref:tosa-single")


def test_python_backend_through_run_compare_and_report(tmp_path):
    backend = RoundHalfAway()
    dq = qconform.Case("dq", qconform.DequantizeOp(np.array([1, 2], np.int8), 0.5), suite="pytests")
    report = qconform.run_cases([tie_case(), dq], [backend, "cpu-ref"], reproducer_dir=tmp_path / "repro",
                                keep_outputs=True)
    assert report.verdict_counts() == {"FAIL": 1, "PASS": 2, "SKIP": 1}
    assert report.exit_code == 1
    r = report.result("pytests/ties", "py-round-away")
    assert r.verdict == qconform.Verdict.FAIL and str(r.verdict) == "FAIL"
    m = r.metrics
    assert (m.elements, m.compared, m.exact, m.mismatches) == (6, 6, 3, 3)
    assert m.unit == "lsb" and m.histogram.tolist() == [3, 3, 0, 0, 0] and m.max_abs == 1
    assert m.signed_sum == 1 + 1 - 1  # 0.5 -> 1 (not 0), 2.5 -> 3 (not 2), -0.5 -> -1 (not 0)
    assert m.labels["tie"] == {"total": 4, "mismatched": 3}
    assert m.labels["clear"] == {"total": 2, "mismatched": 0}
    assert [w.index for w in m.worst] == [0, 2, 3]
    assert m.worst[0].expected.startswith("0") and m.worst[0].actual.startswith("1") and m.worst[0].label == qconform.Label.tie
    # Causes: changing the spec's rounding to ties-away reproduces all three.
    assert "quantize.rounding=rna" in [c.cause for c in r.causes if c.count == 3]
    assert all("quantize.rounding=rna" in w.causes for w in m.worst)
    assert r.unexplained == 0
    assert r.fingerprint.startswith("3:")
    # The reproducer is a case file of the smallest failing unit that fails on its own.
    repro = pathlib.Path(r.reproducer)
    assert repro.exists() and str(repro) in r.reproduce_command
    unit = qconform.load_suite(repro).cases[0]
    assert qconform.run_cases([unit], [backend]).cases[0].backends[0].verdict == qconform.Verdict.FAIL
    skipped = report.result("pytests/dq", "py-round-away")
    assert skipped.verdict == qconform.Verdict.SKIP and skipped.reason == "only quantize"
    assert report.result("pytests/dq", "cpu-ref").verdict == qconform.Verdict.PASS
    # The backend saw read-only views of the case's own data, still valid after the run.
    assert not backend.seen[0].flags.writeable
    assert backend.seen[0].tolist() == [0.25, 0.75, 1.25, -0.25, 0.125, 1.5]
    # keep_outputs: every output array by (case, backend).
    assert report.outputs[("pytests/ties", "py-round-away")].tolist() == [1, 2, 3, -1, 0, 3]
    assert report.outputs[("pytests/ties", "cpu-ref")].tolist() == [0, 2, 2, 0, 0, 3]

    # Reports: JSON (valid against the schema), HTML, and the dict form.
    report.write(tmp_path / "out")
    on_disk = json.loads((tmp_path / "out" / "report.json").read_text())
    jsonschema.validate(on_disk, REPORT_SCHEMA)
    assert on_disk == report.to_json()
    html = (tmp_path / "out" / "report.html").read_text()
    assert "py-round-away" in html and "pytests/ties" in html
    assert "<failure" in report.junit()
    report.write_html(tmp_path / "one.html")
    assert (tmp_path / "one.html").read_text() == html
    back = qconform.load_report(tmp_path / "out" / "report.json")
    assert back.result("pytests/ties", "py-round-away").fingerprint == r.fingerprint


def test_compare_gives_per_element_deltas():
    case = tie_case()
    c = qconform.compare(case, np.array([1, 2, 3, -1, 0, 3], np.int8))
    assert c.delta.tolist() == [1, 0, 1, -1, 0, 0]
    assert c.mismatch.tolist() == [True, False, True, True, False, False]
    assert c.metrics.mismatches == 3 and c.labels.tolist()[:4] == ["tie"] * 4
    # Float outputs: signed ULP of the output format. 1.0 against 1.0 + 2^-23 is one f32 ulp.
    dq = qconform.DequantizeOp(np.array([2, 4], np.int8), 0.5)
    f = qconform.compare(dq, np.array([1.0, np.nextafter(np.float32(2), np.float32(3))], np.float32))
    assert f.metrics.unit == "ulp" and f.delta.tolist() == [0, 1]
    ref = qconform.evaluate(dq)
    assert ref.expected.tolist() == [1.0, 2.0] and ref.specified.tolist() == [True, True]
    assert ref.correctly_rounded.tolist() == [1.0, 2.0]


def test_backend_failures_become_verdicts():
    class Broken(RoundHalfAway):
        def name(self):
            return "py-broken"

        def run(self, op):
            raise ValueError("boom")

    class WrongType(RoundHalfAway):
        def name(self):
            return "py-wrong-type"

        def run(self, op):
            return np.full(op.x.shape, 0.5)  # 0.5 is not an i8 value

    class Away(RoundHalfAway):
        def name(self):
            return "py-away"

        def availability(self):
            return qconform.Availability(False, "no device")

    report = qconform.run_cases(tie_case(), [Broken(), WrongType(), Away()])
    broken, wrong, away = report.cases[0].backends
    assert broken.verdict == qconform.Verdict.CRASH and "ValueError: boom" in broken.reason
    assert wrong.verdict == qconform.Verdict.CRASH and "integer values" in wrong.reason
    assert away.verdict == qconform.Verdict.SKIP and away.reason == "no device"


def test_progress_callback_and_paths(tmp_path):
    seen = []
    qconform.save_cases(tmp_path / "s.json", [tie_case("a"), tie_case("b")])
    report = qconform.run_cases(tmp_path / "s.json", ["cpu-ref"],
                                progress=lambda c, b, done, total: seen.append((c.id, b.backend, done, total)))
    assert seen == [("pytests/a", "cpu-ref", 1, 2), ("pytests/b", "cpu-ref", 2, 2)]
    assert report.exit_code == 0


def test_weight_only_dot_product_check():
    b = qconform.Weights(np.array([[1], [2]], np.int8), scale=0.5)
    op = qconform.WeightOnlyGemmOp(np.array([[0.5, 0.25]], np.float32), b)
    ref = qconform.evaluate(op)
    assert ref.expected.tolist() == [[0.5]]  # 0.5*0.5 + 0.25*1
    assert ref.dot_product_check(np.array([[0.5]], np.float32))["pass"]
    assert not ref.dot_product_check(np.array([[0.75]], np.float32))["pass"]


@pytest.mark.skipif(not CLI.exists(), reason="the qconform CLI is not next to this module (not a build tree)")
def test_errors_carry_the_cli_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"suite": "s", "cases": [\n {"name": "c", "op": "quantize", "scale": 0.0,\n'
                   '  "input": {"dtype": "f32", "shape": [1], "data": [1.0]}, "output_dtype": "i8"}]}')
    proc = subprocess.run([str(CLI), "run", str(bad), "--report-dir", str(tmp_path / "r")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2
    with pytest.raises(qconform.InputError) as e:
        qconform.load_suite(bad)
    assert isinstance(e.value, ValueError)
    assert proc.stderr.strip() == "qconform: error: " + str(e.value)
