#!/usr/bin/python3
"""A whole judged run at real layer sizes, phase by phase: `qconform run --timings` on single-layer
cases, with cause attribution and with --no-causes, on one thread and on two, against the backend's
own time and the oracle's own time measured in the same run (benchmarks/README.md "Judged runs").

The mismatch rate is set by the case's spec, not by a faulty backend: the backend computes its own
way and the spec names a rounding that parts from it on a known share of the elements.
  ties 1e-4   per-channel weight scales with s_a*s_b/s_out = 2^-12 and full-range operands: about
              2^-12 of the outputs are exact ties; the spec rounds them away from zero (rna), the
              backend to even, so about 1.2e-4 of the elements differ
  ties 1e-2   the same with 2^-5 and operands within +-8 of their zero points: about 1.6e-2
  floor 0.5   the spec rounds down (floor) where the backend rounds to nearest: about 0.5
  exact 0     the spec the backend follows: no mismatch
Mismatches are then explained by the changes that undo the spec's rounding.

  benchmarks/judge_bench.py [--qconform build/cli/qconform] [--sizes 1024,2048] [--convs NAME,...]
                            [--backend onednn] [--rounds 3] [--threads 1,2] [--rates ...] [--smallest]

--sizes gives the qgemm cases (n^3); --convs the qconv2d ones (CONVS below; "" for none).
--smallest runs one 128^3 qgemm per rate once (ctest, label bench). Prints one line per run and a table of
medians: the whole run's wall time over (backend + oracle), and with causes over --no-causes. The
oracle's time is its evaluations of the case under the spec and under the backend's claimed preset
(`qconform run --timings`: phases "oracle" and "claim").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

RATES = {  # name: (spec overrides of the requantize stage, activation half-range, weight half-range, j)
    "exact 0": ({}, 128, 128, 12),
    "ties 1e-4": ({"rounding": "rna"}, 128, 128, 12),
    "ties 1e-2": ({"rounding": "rna"}, 8, 8, 5),
    "floor 0.5": ({"rounding": "floor"}, 128, 128, 12),
}


def gemm_case(n, rate):
    """A requantized u8 x s8 -> i8 qgemm of n^3, per-channel weights."""
    overrides, ar, br, j = RATES[rate]
    sa, sout = 0.5, 0.25
    # Two scales alternate over the channels, both giving s_a*s_b/s_out = 2^-j or 2^-(j+1): ties
    # in every channel, the channels still scaled differently.
    sb = [sout * 2.0 ** -(j + (c % 2)) / sa for c in range(n)]
    spec = {"preset": "onnx", "requantize": overrides} if overrides else "onnx"
    return {"name": f"gemm{n}", "op": "qgemm", "spec": spec,
            "a": {"dtype": "u8", "shape": [n, n], "scale": sa, "zero_point": 128,
                  "generator": {"kind": "uniform", "seed": 1, "low": 128 - ar, "high": min(256, 128 + ar)}},
            "b": {"dtype": "i8", "shape": [n, n], "scale": sb, "zero_point": 0, "axis": 1,
                  "generator": {"kind": "uniform", "seed": 2, "low": -br, "high": br}},
            "output": {"kind": "requantized", "dtype": "i8", "scale": sout, "zero_point": 3}}


CONVS = {  # name: (batch, channels in, height = width, channels out), 3x3, padding 1
    "56x56x64-64": (1, 64, 56, 64),
    "56x56x64-64 b8": (8, 64, 56, 64),
    "7x7x512-512": (1, 512, 7, 512),
    "7x7x512-512 b8": (8, 512, 7, 512),
}


def conv_case(name, rate):
    """A requantized u8 x s8 -> i8 qconv2d (NCHW, 3x3, padding 1), per-output-channel weights."""
    overrides, ar, br, j = RATES[rate]
    n, c, hw, oc = CONVS[name]
    sa, sout = 0.5, 0.25
    sw = [sout * 2.0 ** -(j + (k % 2)) / sa for k in range(oc)]
    spec = {"preset": "onnx", "requantize": overrides} if overrides else "onnx"
    return {"name": "conv" + name.replace(" ", "_"), "op": "qconv2d", "spec": spec,
            "input": {"dtype": "u8", "shape": [n, c, hw, hw], "scale": sa, "zero_point": 128,
                      "generator": {"kind": "uniform", "seed": 1, "low": 128 - ar, "high": min(256, 128 + ar)}},
            "weight": {"dtype": "i8", "shape": [oc, c, 3, 3], "scale": sw, "zero_point": 0, "axis": 0,
                       "generator": {"kind": "uniform", "seed": 2, "low": -br, "high": br}},
            "padding": [1, 1, 1, 1],
            "output": {"kind": "requantized", "dtype": "i8", "scale": sout, "zero_point": 3}}


def run(qconform, case_file, backend, threads, causes, workdir):
    timings = os.path.join(workdir, "timings.json")
    cmd = [qconform, "run", case_file, "--backend", backend, "--report-dir", os.path.join(workdir, "out"),
           "--timings", timings, "-q"]
    if not causes:
        cmd.append("--no-causes")
    env = dict(os.environ, QCONFORM_THREADS=str(threads))
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"judge_bench: {' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    with open(timings) as f:
        t = json.load(f)
    with open(os.path.join(workdir, "out", "report.json")) as f:
        result = json.load(f)["cases"][0]["backends"][0]
    return t, result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qconform", default="build/cli/qconform")
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--convs", default="56x56x64-64,7x7x512-512")
    ap.add_argument("--backend", default="onednn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rates", default=",".join(RATES))
    ap.add_argument("--smallest", action="store_true", help="one 128^3 run of each rate, once (ctest)")
    args = ap.parse_args()
    sizes = [128] if args.smallest else [int(s) for s in args.sizes.split(",") if s]
    convs = [] if args.smallest else [c for c in args.convs.split(",") if c]
    threads = [1] if args.smallest else [int(t) for t in args.threads.split(",")]
    rounds = 1 if args.smallest else args.rounds
    rates = args.rates.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        layers = [(f"qgemm {n}^3", n * n, gemm_case, n) for n in sizes]
        for c in convs:
            b, _, hw, oc = CONVS[c]
            layers.append((f"qconv2d {c}", b * oc * hw * hw, conv_case, c))
        for layer, total, make, arg in layers:
            for rate in rates:
                case_file = os.path.join(d, "layer.json")
                with open(case_file, "w") as f:
                    json.dump({"suite": "judge_bench", "cases": [make(arg, rate)]}, f)
                for th in threads:
                    samples = {True: [], False: []}
                    for _ in range(rounds):  # interleaved, so a slow spell of the machine hits both
                        for causes in (True, False):
                            t, result = run(args.qconform, case_file, args.backend, th, causes, d)
                            samples[causes].append(t)
                    with_c = samples[True]
                    wall = statistics.median(t["wall"] for t in with_c)
                    wall_nc = statistics.median(t["wall"] for t in samples[False])
                    # The oracle's time: its evaluations under the spec and under the backend's claim.
                    work = statistics.median(t["phases"]["backend"] + t["phases"]["oracle"] + t["phases"]["claim"]
                                             for t in with_c)
                    phases = {p: statistics.median(t["phases"][p] for t in with_c) for p in with_c[0]["phases"]}
                    mism = result["metrics"]["mismatches"]
                    print(f"{layer} {rate:10s} {th} thread(s): {mism} of {total} elements differ "
                          f"({mism / total:.1e}); " + ", ".join(f"{p} {s:.3f}" for p, s in phases.items() if s > 0.0005)
                          + f"; wall {wall:.3f} s, --no-causes {wall_nc:.3f} s; {result['reason'][:160]}",
                          flush=True)
                    rows.append((layer, rate, th, wall, work, wall / work, wall / wall_nc))
    print()
    print("| layer | mismatches | threads | wall (s) | backend + oracle (s) | wall / (backend + oracle) "
          "| with causes / --no-causes |")
    print("|---|---|---|---|---|---|---|")
    for layer, rate, th, wall, work, r1, r2 in rows:
        print(f"| {layer} | {rate} | {th} | {wall:.2f} | {work:.3f} | {r1:.2f} | {r2:.2f} |")


if __name__ == "__main__":
    main()
