"""report.json is validated against reports/report.schema.json (Debian's python3-jsonschema):
the default suites on every built-in backend (the reports of ctest's conformance runs), a run with
mismatches, integer and float outputs, and the reports of the peers' runs (the real libraries)
that ctest wrote into the build."""

import json
import os
import pathlib
import subprocess

import jsonschema
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
QCONFORM = ROOT / "build" / "cli" / "qconform"
SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())

FAILING_SUITE = {
    "suite": "schema_check",
    "cases": [
        {"name": "ties_away", "op": "quantize", "spec": {"preset": "onnx", "rounding": "rna"},
         "input": {"dtype": "f32", "shape": [300], "generator": {"kind": "ties", "seed": 1, "scale": 0.25}},
         "scale": 0.25, "output_dtype": "i8"},
        {"name": "dequant_f16", "op": "dequantize", "spec": "onnx",
         "input": {"dtype": "i8", "shape": [256], "generator": {"kind": "exhaustive"}},
         "scale": 0.1, "zero_point": 3, "output_dtype": "f16"},
    ],
}


def run(args, tmp_path):
    out = tmp_path / "report"
    # The built-in backends only: the peers' reports are checked as ctest's peer runs wrote them.
    proc = subprocess.run([str(QCONFORM), "run", *args, "--report-dir", str(out), "--quiet"],
                          capture_output=True, text=True, check=False, env={**os.environ, "QCONFORM_PEERS": ""})
    return proc, json.loads((out / "report.json").read_text()), out


# The reports ctest's conformance runs wrote (one per default suite and built-in backend), which
# scripts/run-tests.sh runs before pytest: a second whole default run here would only repeat them.
CONFORMANCE_REPORTS = sorted((ROOT / "build" / "conformance").glob("*/*/report.json"))


@pytest.mark.skipif(not QCONFORM.exists(), reason="qconform is not built (run scripts/build.sh)")
def test_default_suites_report_matches_schema(tmp_path):
    if CONFORMANCE_REPORTS:
        reports = [(json.loads(p.read_text()), p.parent) for p in CONFORMANCE_REPORTS]
    else:  # ctest has not run in this build: every default suite on every built-in backend, here
        proc, report, out = run([str(ROOT / "cases")], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        reports = [(report, out)]
    validator = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)  # the schema read once, for ~300 reports
    for report, out in reports:
        validator.validate(report)
        lines = (out / "results.jsonl").read_text().splitlines()
        assert len(lines) == sum(len(c["backends"]) for c in report["cases"]), out
    assert sum(r["summary"].get("PASS", 0) for r, _ in reports) > 0


@pytest.mark.skipif(not QCONFORM.exists(), reason="qconform is not built (run scripts/build.sh)")
def test_failing_report_matches_schema(tmp_path):
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(FAILING_SUITE))
    proc, report, out = run([str(suite)], tmp_path)
    assert proc.returncode == 1
    jsonschema.validate(report, SCHEMA)
    ties = report["cases"][0]["backends"][0]
    assert ties["verdict"] == "FAIL"
    # Every mismatch is at a tie: x/0.25 = k + 1/2 is where ties-away and ties-to-even part.
    labels = ties["metrics"]["labels"]
    assert labels["tie"]["mismatched"] == ties["metrics"]["mismatches"] > 0
    # JUnit has one <failure> per FAIL of the JSON report (cpu-ref's, and the x86 kernels' where
    # this CPU runs them).
    fails = sum(b["verdict"] == "FAIL" for c in report["cases"] for b in c["backends"])
    assert fails >= 1
    assert (out / "report.junit.xml").read_text().count("<failure") == fails


def test_schema_rejects_a_broken_report():
    bad = {"schema_version": "1.0.0", "tool": "qconform", "metadata": {}, "summary": {}, "cases": []}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


PEER_REPORTS = sorted((ROOT / "build" / "peers").glob("reports*/*/report.json"))


@pytest.mark.skipif(not PEER_REPORTS, reason="no peer reports in build/peers (ctest's peer tests write them)")
# ids as a list: with no reports, pytest would call a function with a placeholder that has no parent.
@pytest.mark.parametrize("path", PEER_REPORTS, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in PEER_REPORTS])
def test_peer_reports_match_schema(path):
    report = json.loads(path.read_text())
    jsonschema.validate(report, SCHEMA)
    assert report["cases"], path
