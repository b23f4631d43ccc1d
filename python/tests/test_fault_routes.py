"""Every backend fault through both routes a Python backend takes into qconform, one table (the
C++ routes' is tests/harness/fault_routes_test.cpp): the backends of data/fault_backends.py in this
interpreter with run_cases(isolate=True, timeout=1), and from the CLI as py:MODULE:CLASS (an exec
runner) with --timeout 1. Each fault becomes its row's verdict with its row's words in the reason,
beside cpu-ref, whose results are those of cpu-ref run alone; the run exits 1 and the reports hold
every (case, backend)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(__file__).resolve().parent / "data"
BUILD_PYTHON = pathlib.Path(qconform.__file__).resolve().parents[1]
CLI = BUILD_PYTHON.parent / "cli" / "qconform"

if str(DATA) not in sys.path:
    sys.path.insert(0, str(DATA))

import fault_backends  # noqa: E402

# fault -> (verdict, words every route puts in the reason)
TABLE = {
    "segv": ("CRASH", ["signal 11"]),
    "abort": ("CRASH", ["signal 6"]),
    "hang": ("TIMEOUT", ["no answer within 1 s"]),
    "exit0": ("CRASH", ["exited with status 0"]),
    "exit1": ("CRASH", ["exited with status 1"]),
    "wrong-shape": ("FAIL", ["backend returned i8 [11], expected i8 [10]"]),
    "wrong-dtype": ("CRASH", ["i8 needs integer values, got a numpy float32 array"]),
    "throws": ("CRASH", ["RuntimeError: the kernel refused"]),
    "huge-alloc": ("CRASH", ["MemoryError"]),
}
assert sorted(TABLE) == sorted(cls.FAULT for cls in fault_backends.ALL)


def one_case_suite(tmp_path):
    """The first case of the default quantize suite: ten f32 values to i8."""
    suite = json.loads((ROOT / "cases" / "quantize_linear.json").read_text())
    suite["cases"] = suite["cases"][:1]
    assert suite["cases"][0]["input"]["shape"] == [10]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(suite))
    return path


def results(report_dir):
    """(case id, backend) -> (verdict, reason) from DIR/report.json."""
    out = {}
    for c in json.loads((report_dir / "report.json").read_text())["cases"]:
        for b in c["backends"]:
            out[(c["id"], b["backend"])] = (b["verdict"], b["reason"])
    return out


def check(report_dir, alone):
    for f in ("report.json", "report.html", "report.junit.xml"):
        assert (report_dir / f).is_file(), f
    got = results(report_dir)
    assert len(got) == len(TABLE) + 1
    for key, value in alone.items():
        assert got[key] == value, key
    for fault, (verdict, words) in TABLE.items():
        mine = [v for k, v in got.items() if k[1] == "py-" + fault]
        assert len(mine) == 1, fault
        v, reason = mine[0]
        assert v == verdict, (fault, reason)
        for w in words:
            assert w in reason, (fault, w, reason)


def cli(args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(DATA), str(BUILD_PYTHON), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["QCONFORM_PEERS"] = ""
    for k in ("GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"):
        env.pop(k, None)
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture
def alone(tmp_path):
    cases = one_case_suite(tmp_path)
    qconform.run_cases(str(cases), ["cpu-ref"]).write(tmp_path / "alone")
    return cases, results(tmp_path / "alone")


def test_in_process_with_isolation(tmp_path, alone):
    cases, by_id = alone
    report = qconform.run_cases(str(cases), ["cpu-ref"] + [cls() for cls in fault_backends.ALL], isolate=True, timeout=1)
    report.write(tmp_path / "out")
    assert report.exit_code == 1
    check(tmp_path / "out", by_id)


def test_from_the_cli_as_exec_runners(tmp_path, alone):
    cases, by_id = alone
    args = ["run", str(cases), "--backend", "cpu-ref"]
    for cls in fault_backends.ALL:
        args += ["--backend", "py:fault_backends:" + cls.__name__]
    p = cli(args + ["--timeout", "1", "--no-reproducers", "-q", "-o", str(tmp_path / "out")])
    assert p.returncode == 1, p.stdout + p.stderr
    check(tmp_path / "out", by_id)
