"""Exec runners from Python: one numpy kernel run three ways (exec:CMD with qconform.serve,
py:MODULE:CLASS, in process) gives the same verdicts, reasons and causes on the default suites;
supports() must return what the docs list; baseline/gate from Python;
the commands of docs/integrate.md and the snippet of docs/python.md run as written."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "python" / "examples"
BUILD_PYTHON = pathlib.Path(qconform.__file__).resolve().parents[1]
CLI = BUILD_PYTHON.parent / "cli" / "qconform"
QUANTIZE = ROOT / "cases" / "quantize_linear.json"

for p in (str(DATA), str(EXAMPLES)):
    if p not in sys.path:
        sys.path.insert(0, p)

import fault_backends  # noqa: E402
from recip_quantize import RecipQuantize  # noqa: E402


def env_with(*paths):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in paths] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for k in ("GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"):
        env.pop(k, None)
    return env


def results(report_json):
    """(case id, backend) -> (verdict, reason, causes) from a report.json. The CLI's run also runs the model
    files among the cases (their node cases come from a .onnx file); run_cases runs case files only."""
    out = {}
    for c in json.loads(pathlib.Path(report_json).read_text())["cases"]:
        if c.get("file", "").endswith(".onnx"):
            continue
        for b in c["backends"]:
            out[(c["id"], b["backend"])] = (b["verdict"], b["reason"], json.dumps(b.get("causes"), sort_keys=True))
    return out


def cli(args, env, cwd=None):
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_the_same_kernel_three_ways_gives_the_same_results(tmp_path):
    runner = f"exec:{sys.executable} {EXAMPLES / 'recip_quantize.py'}"
    p1 = cli(["run", "--backend", runner, "-q", "--no-reproducers", "-o", str(tmp_path / "exec")],
             env_with(BUILD_PYTHON))
    assert p1.returncode in (0, 1), p1.stdout + p1.stderr
    p2 = cli(["run", "--backend", "py:recip_quantize:RecipQuantize", "-q", "--no-reproducers", "-o",
              str(tmp_path / "py")], env_with(EXAMPLES))
    assert p2.returncode in (0, 1), p2.stdout + p2.stderr
    qconform.run_cases(ROOT / "cases", [RecipQuantize()]).write(tmp_path / "inproc")
    a, b, c = (results(tmp_path / d / "report.json") for d in ("exec", "py", "inproc"))
    assert a == c
    assert b == c
    verdicts = [v[0] for v in c.values()]
    # Ties away from zero differs from ONNX (ties to even) on the tie cases, and quantize is all it runs.
    assert "FAIL" in verdicts and "PASS" in verdicts and "SKIP" in verdicts
    quantizing = ("quantize_linear", "int4", "pipelines", "peers_", "seed000", "seed003")  # suites with quantize cases
    assert all(v[0] == "SKIP" for k, v in c.items() if not any(s in k[0] for s in quantizing))


def quantize_cases():
    return qconform.load_suite(str(QUANTIZE)).cases


def test_isolate_needs_an_importable_class():
    class Local(RecipQuantize):
        pass

    with pytest.raises(qconform.InputError, match="inside a function"):
        qconform.run_cases(quantize_cases()[:1], [Local()], isolate=True)


def test_supports_returning_something_else_is_an_error_naming_the_backend():
    report = qconform.run_cases(quantize_cases()[:2], [fault_backends.BadSupports(), "cpu-ref"])
    for c in report.cases:
        r = c.backend("py-bad-supports")
        assert r.verdict == qconform.Verdict.CRASH
        assert "backend 'py-bad-supports': supports() returned 42" in r.reason
        assert c.backend("cpu-ref").verdict == qconform.Verdict.PASS


def test_serve_keeps_the_protocol_on_its_own_fd(tmp_path):
    # A hello through `python -m qconform.exec`, with the class printing while imported and made.
    (tmp_path / "noisy.py").write_text(
        "import qconform\nprint('imported')\n"
        "class Noisy(qconform.Backend):\n"
        "    def __init__(self):\n        super().__init__()\n        print('made')\n"
        "    def name(self):\n        print('name'); return 'noisy'\n"
        "    def description(self):\n        return 'prints'\n"
        "    def claim(self):\n        return 'onnx'\n"
        "    def run(self, op):\n        return None\n")
    p = subprocess.run([sys.executable, "-m", "qconform.exec", "noisy:Noisy"],
                       input='{"qconform": "exec", "version": 1, "type": "hello"}\n{"type": "bye"}\n',
                       capture_output=True, text=True, env=env_with(tmp_path, BUILD_PYTHON), timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 1
    hello = json.loads(lines[0])
    assert hello["version"] == qconform.EXEC_PROTOCOL_VERSION == 1
    assert (hello["name"], hello["claim"], hello["available"]) == ("noisy", "onnx", True)
    assert "imported" in p.stderr and "made" in p.stderr and "name" in p.stderr


def test_baseline_and_gate_from_python(tmp_path):
    first = qconform.run_cases(QUANTIZE, [RecipQuantize()])
    fails = sum(1 for c in first.cases for b in c.backends if b.verdict == qconform.Verdict.FAIL)
    assert fails > 0
    assert qconform.gate(first) == fails  # no baseline: every FAIL is a change
    assert qconform.baseline(first, tmp_path / "b.json") == fails
    again = qconform.run_cases(QUANTIZE, [RecipQuantize()], baseline=tmp_path / "b.json")
    assert qconform.gate(again) == 0
    assert sum(1 for c in again.cases for b in c.backends if b.verdict == qconform.Verdict.XFAIL) == fails
    first.write(tmp_path / "r")
    assert qconform.baseline(tmp_path / "r" / "report.json", tmp_path / "b2.json") == fails


def code_blocks(doc, lang):
    return re.findall(r"```" + lang + r"\n(.*?)```\n", (ROOT / "docs" / doc).read_text(), re.S)


def docs_tree(tmp_path):
    """A folder laid out as the docs' commands expect: build/cli/qconform, build/python, cases/,
    python/examples/."""
    (tmp_path / "build" / "cli").mkdir(parents=True)
    (tmp_path / "build" / "cli" / "qconform").symlink_to(CLI)
    (tmp_path / "build" / "python").symlink_to(BUILD_PYTHON)
    (tmp_path / "cases").symlink_to(ROOT / "cases")
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "examples").symlink_to(EXAMPLES)


def test_the_commands_of_docs_integrate_run(tmp_path):
    # The blocks on the installed package ($PREFIX) are run by scripts/check-client-example.sh.
    blocks = [b for b in code_blocks("integrate.md", "sh") if "qconform run" in b and "$PREFIX" not in b]
    assert len(blocks) >= 1
    docs_tree(tmp_path)
    env = env_with()
    env.pop("PYTHONPATH", None)
    for block in blocks:
        p = subprocess.run(["sh", "-c", block], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
        # 1: the kernel rounds ties away from zero, which ONNX does not: FAILs, as the docs say.
        assert p.returncode == 1, block + p.stdout + p.stderr
    exec_r = results(tmp_path / "exec-report" / "report.json")
    py_r = results(tmp_path / "py-report" / "report.json")
    assert exec_r == py_r
    assert {k[1] for k in exec_r} == {"recip-quantize", "cpu-ref"}
    # The runner shown in the docs is the example file, as it is.
    assert (EXAMPLES / "recip_quantize.py").read_text().split('"""', 2)[2].strip() in \
        (ROOT / "docs" / "integrate.md").read_text()


def test_the_snippet_of_docs_python_runs(tmp_path):
    blocks = [b for b in code_blocks("python.md", "python") if "qconform.gate(" in b]
    assert len(blocks) == 1
    docs_tree(tmp_path)
    p = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                       env=env_with(BUILD_PYTHON, EXAMPLES), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "baseline.json").exists()
