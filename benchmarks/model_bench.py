#!/usr/bin/python3
"""A whole model judged end to end: `qconform model --timings` on a model of realistic layer sizes,
every available backend (the peers and ONNX Runtime's whole-model runs included), with cause
attribution and with --no-causes, against the backends' own time measured in the same run
(benchmarks/README.md "Whole models").

The model is made by cases/models/make_realistic.py (a ResNet-style stack on a 224x224 image, 7x7/2
stem, 3x3 convolutions up to 512 channels, then a 768-wide projection and MLP over the 49 positions;
random weights calibrated on random images; 7 MB, so it is generated, not committed).

  benchmarks/model_bench.py [--qconform build/cli/qconform] [--backend NAME]... [--rounds 1] [--smallest]

--smallest judges the shipped digits model instead, once (ctest, label bench). Prints one line per run:
the wall time, each phase, and the wall time over the backends' own time (the sum of every backend
call's seconds, node cases and runs through the graph).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def backend_seconds(report):
    """Every backend call's own time: the node cases' results and the runs through the graph."""
    own = sum(b.get("seconds", 0) for c in report["cases"] for b in c["backends"])
    own += sum(r.get("seconds", 0) for m in report.get("models", []) for r in m["runs"])
    return own


def judge(qconform, model, inputs, backends, causes, out):
    os.makedirs(out, exist_ok=True)
    timings = os.path.join(out, "timings.json")
    cmd = [qconform, "model", model, "-q", "-o", out, "--timings", timings, "--timeout", "600"]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={v}"]
    for b in backends:
        cmd += ["--backend", b]
    if not causes:
        cmd.append("--no-causes")
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode not in (0, 1):
        sys.exit(f"model_bench: {' '.join(cmd)} exited {got.returncode}:\n{got.stdout}{got.stderr}")
    with open(timings) as f:
        t = json.load(f)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    return t, report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--qconform", default=os.path.join(ROOT, "build", "cli", "qconform"))
    p.add_argument("--backend", action="append", default=[])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--smallest", action="store_true")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qconform-model-bench-") as tmp:
        if a.smallest:
            models = os.path.join(ROOT, "cases", "models")
            model = os.path.join(models, "digits_cnn_qdq.onnx")
            inputs = {"image": os.path.join(models, "digits_test_images.npy")}
        else:
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "cases", "models", "make_realistic.py"), tmp],
                           check=True, capture_output=True)
            model = os.path.join(tmp, "realistic_qdq.onnx")
            inputs = {"image": os.path.join(tmp, "realistic_input.npy")}
        print(f"model_bench: {os.path.basename(model)}, backends: {', '.join(a.backend) or 'every available one'}",
              flush=True)
        walls = {}
        for causes in (True, False):
            for r in range(a.rounds):
                out = os.path.join(tmp, f"out-{int(causes)}-{r}")
                t, report = judge(a.qconform, model, inputs, a.backend, causes, out)
                own = backend_seconds(report)
                walls.setdefault(causes, []).append(t["wall"])
                phases = ", ".join(f"{k} {v:.1f}" for k, v in t["phases"].items() if v >= 0.05)
                runs = len(report["models"][0]["runs"])
                print(f"  {'causes' if causes else 'no causes'}: wall {t['wall']:.1f} s ({phases}); "
                      f"{len(report['cases'])} node cases, {runs} runs through the graph; backends' own time "
                      f"{own:.1f} s; wall / own {t['wall'] / max(own, 1e-9):.2f}")
        with_causes, without = statistics.median(walls[True]), statistics.median(walls[False])
        print(f"model_bench: median wall {with_causes:.1f} s with causes, {without:.1f} s without "
              f"(causes {with_causes / without:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
