#!/usr/bin/env python3
"""The peers table of docs/peers.md, from real runs.

    peers_table.py REPORT... [--update docs/peers.md | --check docs/peers.md]

REPORT is a report.json of `qconform run --expect claim` with peer backends, or a folder searched
for them (ctest -L peer writes one per suite and peer under build/peers/reports/). The table says,
per peer and op, how many cases reproduce the peer's claimed preset bit for bit, and lists every
case that does not, with the report's reason (its mismatch count and cause).

The runs' host ISA class (avx512-vnni, avx-vnni or avx2, from the report's cpu_features) names the
block of docs/peers.md the table belongs in: `--update` rewrites that block, `--check` exits 1 when
it differs and 77 when docs/peers.md has no block for this ISA class (a machine of another class).
Without either, the block is printed.
"""

import argparse
import glob
import json
import os
import sys

BEGIN = "<!-- peers-table {isa} begin (scripts/peers_table.py) -->"
END = "<!-- peers-table {isa} end -->"


def isa_class(features):
    if "avx512vnni" in features:
        return "avx512-vnni"
    if "avxvnni" in features:
        return "avx-vnni"
    return "avx2"


def reports(paths):
    for p in paths:
        if os.path.isdir(p):
            yield from sorted(glob.glob(os.path.join(p, "**", "report.json"), recursive=True))
        else:
            yield p


def collect(paths, peers=None, isa=None):
    """(isa, peers: name -> facts/claim, results: (peer, op) -> list of (case id, verdict, reason)).

    isa names the class for reports whose peers ran on an emulated CPU (the host's features then
    say nothing about what the library ran on)."""
    named = isa is not None
    info, results = {}, {}
    for f in reports(paths):
        with open(f) as fh:
            r = json.load(fh)
        meta = r["metadata"]
        this = isa if named else isa_class(meta.get("cpu_features", []))
        if isa not in (None, this):
            raise SystemExit(f"peers_table: {f} ran on {this}, the others on {isa}")
        isa = this
        facts = meta.get("backend_facts", {})
        for case in r["cases"]:
            if case.get("file", "").endswith(".onnx"):
                continue  # a shipped model's node cases: docs/models.md has their table (scripts/models_table.py)
            for b in case["backends"]:
                name = b["backend"]
                if (peers and name not in peers) or (not peers and "library" not in facts.get(name, {})):
                    continue  # by default, the backends that name a library: the peers
                if name not in info:
                    info[name] = {"claim": b.get("claim", ""), "facts": facts.get(name, {})}
                causes = [c["cause"] for c in b.get("causes", [])]
                spec_mismatches = b.get("metrics", {}).get("mismatches", 0)
                results.setdefault((name, case["op"]), []).append(
                    (case["id"], b["verdict"], b.get("reason", ""), spec_mismatches, causes[:1], case["spec"] == "onnx"))
    if isa is None:
        raise SystemExit("peers_table: no report.json found in " + ", ".join(paths))
    return isa, info, results


def table(isa, info, results):
    ops = sorted({op for _, op in results})
    ran_on = sorted({v["facts"].get("isa", "") for v in info.values()} - {""})
    out = [BEGIN.format(isa=isa), "",
           f"Host ISA class: **{isa}**" + (f" (the peers report: {', '.join(ran_on)})" if ran_on else "") +
           ". Each cell: cases that reproduce the claimed preset bit for bit / cases run"
           " (skipped cases, which the library cannot express, in brackets).", "",
           "| peer | library, version | claims | " + " | ".join(ops) + " |",
           "|---|---|---|" + "---|" * len(ops)]
    disagreements = []
    for name in sorted(info):
        facts = info[name]["facts"]
        lib = " ".join(x for x in (facts.get("library", ""), facts.get("version", "")) if x) or "?"
        cells = []
        for op in ops:
            rs = results.get((name, op), [])
            ran = [r for r in rs if r[1] != "SKIP"]
            ok = sum(1 for r in ran if r[1] == "PASS")
            skipped = len(rs) - len(ran)
            cell = f"{ok}/{len(ran)}" if rs else "–"
            if skipped:
                cell += f" ({skipped})"
            cells.append(cell)
            disagreements += [(name, r[0], r[1], r[2]) for r in ran if r[1] != "PASS"]
        out.append(f"| {name} | {lib} | `{info[name]['claim']}` | " + " | ".join(cells) + " |")
    out += ["", "How far each peer is from ONNX, on the cases whose spec is `onnx`: cases whose every element equals "
            "ONNX's / cases run, and the candidates (single policy changes, presets, pairs of changes) that best "
            "reproduce the differing elements "
            "(each case's first cause in the report; `qconform explain` shows one element step by step).", "",
            "| peer | op | exact to ONNX | causes of the differences |", "|---|---|---|---|"]
    for name in sorted(info):
        for op in ops:
            ran = [r for r in results.get((name, op), []) if r[1] != "SKIP" and r[5]]
            if not ran:
                continue
            exact = sum(1 for r in ran if r[3] == 0)
            counts = {}
            for r in ran:
                for c in r[4]:
                    counts[c] = counts.get(c, 0) + 1
            top = sorted(counts, key=lambda c: (-counts[c], c))[:3]
            out.append(f"| {name} | {op} | {exact}/{len(ran)} | " + (", ".join(f"`{c}`" for c in top) or "–") + " |")
    out.append("")
    if disagreements:
        out += ["Where a peer departs from its claim:", "", "| peer | case | verdict | what the report says |",
                "|---|---|---|---|"]
        for name, case, verdict, reason in disagreements:
            out.append(f"| {name} | `{case}` | {verdict} | {reason.replace('|', '/')} |")
    else:
        out.append("Every case that ran reproduces the peer's claimed preset bit for bit.")
    out += ["", END.format(isa=isa)]
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("reports", nargs="+")
    p.add_argument("--peers", help="comma-separated backend names to keep (default: all in the reports)")
    p.add_argument("--isa", help="the ISA class to name the table by, for peers run on an emulated CPU "
                                 "(default: the class of the host that wrote the reports)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--update", metavar="DOC")
    g.add_argument("--check", metavar="DOC")
    a = p.parse_args(argv)
    isa, info, results = collect(a.reports, set(a.peers.split(",")) if a.peers else None, a.isa)
    block = table(isa, info, results)
    doc = a.update or a.check
    if not doc:
        sys.stdout.write(block)
        return 0
    with open(doc) as fh:
        text = fh.read()
    begin, end = BEGIN.format(isa=isa), END.format(isa=isa)
    if begin not in text or end not in text:
        if a.check:
            print(f"peers_table: {doc} has no table for {isa} hosts (add one with --update)")
            return 77
        text = text.rstrip("\n") + "\n\n" + block
    else:
        head, rest = text.split(begin, 1)
        text = head + block.rstrip("\n") + rest.split(end, 1)[1]
    if a.check:
        with open(doc) as fh:
            if fh.read() == text:
                print(f"peers_table: {doc} matches this run ({isa})")
                return 0
        print(f"peers_table: {doc} differs from this run ({isa}); run with --update and review the diff")
        return 1
    with open(doc, "w") as fh:
        fh.write(text)
    print(f"peers_table: wrote the {isa} table into {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
