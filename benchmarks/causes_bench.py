#!/usr/bin/python3
"""Cause attribution's cost, as the ratio of `qconform run` with causes to the same run with
--no-causes (medians of 5 runs' CPU time, in this script): about 10^6 mismatching elements
(6,000,000 f32 values, a third of them ties (k + 1/2) * s, of which the kernel rounds half another
way: cpu-ref:tflite-reference, ties away from zero, against onnx), and the default suites on
cpu-ref, which pass (benchmarks/README.md).

  benchmarks/causes_bench.py [build/cli/qconform]
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def cpu_seconds(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ratio(name, cmd, rounds=5):
    with_causes, without = [], []
    for _ in range(rounds):  # interleaved, so a slow spell of the machine hits both
        with_causes.append(cpu_seconds(cmd))
        without.append(cpu_seconds(cmd + ["--no-causes"]))
    a, b = statistics.median(with_causes), statistics.median(without)
    print(f"{name}: {a:.3f} s CPU with causes, {b:.3f} s without: {a / b:.2f}x")


def main():
    qconform = sys.argv[1] if len(sys.argv) > 1 else "build/cli/qconform"
    with tempfile.TemporaryDirectory() as d:
        case = os.path.join(d, "ties.json")
        with open(case, "w") as f:
            json.dump({"suite": "causes_bench", "description": "6,000,000 f32 values around ties for the causes benchmark",
                       "cases": [{"name": "ties", "op": "quantize", "spec": "onnx",
                                  "input": {"dtype": "f32", "shape": [6000000],
                                            "generator": {"kind": "ties", "seed": 1, "scale": 0.5,
                                                          "k_min": -32000, "k_max": 31999}},
                                  "scale": 0.5, "zero_point": 0, "output_dtype": "i16"}]}, f)
        out = os.path.join(d, "out")
        run = [qconform, "run", case, "--backend", "cpu-ref:tflite-reference", "--report-dir", out]
        subprocess.run(run, stdout=subprocess.DEVNULL, check=False)
        with open(os.path.join(out, "report.json")) as f:
            result = json.load(f)["cases"][0]["backends"][0]
        print(f"{result['metrics']['mismatches']} mismatches: {result['reason']}")
        ratio("10^6 mismatches", run)
        ratio("default suites on cpu-ref",
              [qconform, "run", "--backend", "cpu-ref", "--report-dir", os.path.join(d, "suites")])


if __name__ == "__main__":
    main()
