#!/usr/bin/env python3
"""The tables of docs/models.md, from real runs of the shipped models.

    models_table.py REPORT... [--update docs/models.md | --check docs/models.md]

REPORT is a report.json with model views (`qconform model`, or `qconform run` on a folder holding
model files), or a folder searched for them (ctest -L model writes one per model under
build/models/). For each model, one table: every run of the model (the oracle's fused reading, each
backend driven through the graph, each runtime running it whole) with the first step whose quantized
output differs from the oracle's chain and its cause, the first float difference, the outputs that
differ and the top-1 agreement; and every fused reading that differs from the QDQ reading.

The runs' host ISA class (avx512-vnni, avx-vnni or avx2) names the block of docs/models.md each
table belongs in: `--update` rewrites it, `--check` exits 1 when it differs and 77 when
docs/models.md has no block for this class (a machine of another class). Without either, the
blocks are printed.
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_table import isa_class, reports  # noqa: E402  (one definition of the ISA classes)

BEGIN = "<!-- models-table {model} {isa} begin (scripts/models_table.py) -->"
END = "<!-- models-table {model} {isa} end -->"


def cause_text(c):
    # "requantize.scheme=float_multiplier (1 of 1 mismatches on the case)" -> its cause alone
    return re.sub(r" \(.*\)$", "", c or "")


def block(model, isa):
    out = [BEGIN.format(model=model["name"], isa=isa), "",
           f"`{model['name']}` ({model['format']}, spec {model['spec']}), host ISA class **{isa}**"
           + (f"; the oracle's top-1: {model['oracle_top1']['correct']}/{model['oracle_top1']['rows']} correct"
              if "oracle_top1" in model else "") + ".", "",
           "| run | mode | first divergent step (quantized) | its cause (the node's case) | first float difference "
           "| outputs differing | top-1 agreement with the oracle |",
           "|---|---|---|---|---|---|---|"]
    for r in model["runs"]:
        if r["status"] != "ok":
            out.append(f"| {r['name']} | {r['mode']} | failed: {r.get('note', '')} | | | | |")
            continue
        top = r.get("top1")
        out.append("| " + " | ".join([
            r["name"], r["mode"], r["first_divergent"] or "—", cause_text(r.get("first_divergent_cause")) or "—",
            r["first_float_difference"] or "—", f"{r['output']['differing']} of {r['output']['elements']}",
            f"{top['agree_with_oracle']}/{top['rows']}" if top else "—"]) + " |")
    fused = [s for s in model["steps"] if s.get("fused_agreement", {}).get("differing", 0)]
    out += [""]
    if fused:
        out += ["Fused integer readings that differ from the QDQ reading (on the oracle chain's inputs):", ""]
        out += [f"- `{s['name']}` ({' → '.join(s['covers'])}): {s['fused_agreement']['differing']} of "
                f"{s['fused_agreement']['elements']} elements" for s in fused]
    else:
        out += ["Every fused integer reading equals the QDQ reading (or the model has none)."]
    out += ["", END.format(model=model["name"], isa=isa)]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reports", nargs="+")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--update")
    g.add_argument("--check")
    a = p.parse_args(argv)
    blocks = []
    for f in reports(a.reports):
        with open(f) as fh:
            r = json.load(fh)
        isa = isa_class(r["metadata"].get("cpu_features", []))
        blocks += [(m["name"], isa, block(m, isa)) for m in r.get("models", [])]
    if not blocks:
        raise SystemExit("models_table: no model view in " + ", ".join(a.reports))
    doc = a.update or a.check
    if not doc:
        print("\n\n".join(b for _, _, b in blocks))
        return 0
    with open(doc) as fh:
        text = fh.read()
    missing, differ = [], []
    for name, isa, b in blocks:
        begin, end = BEGIN.format(model=name, isa=isa), END.format(model=name, isa=isa)
        i, j = text.find(begin), text.find(end)
        if i < 0 or j < 0:
            missing.append(f"{name} {isa}")
            continue
        old = text[i:j + len(end)]
        if old != b:
            differ.append(name)
            text = text[:i] + b + text[j + len(end):]
    if a.update:
        with open(doc, "w") as fh:
            fh.write(text)
        print(f"models_table: {doc} updated" + (f" (no block for {', '.join(missing)}: add one)" if missing else ""))
        return 0
    if differ:
        print(f"models_table: {doc} differs from this run for {', '.join(differ)}; the run gives:\n")
        print("\n\n".join(b for n, _, b in blocks if n in differ))
        return 1
    if missing and len(missing) == len(blocks):
        print(f"models_table: {doc} has no table for {', '.join(missing)} (a host of another ISA class)")
        return 77
    print(f"models_table: {doc} matches this run" + (f" (no block for {', '.join(missing)})" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
