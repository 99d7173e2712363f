#!/usr/bin/env python3
"""The table of a reduce_bench.py CSV (and its -variants.csv): per case polyk, the peers, the best
peer's time over polyk's, and each variant's; geomeans and the slowest case per suite.
Usage: csv_table.py CSV [--suite NAME] [--replace OTHER.csv:CASE,CASE]  (polyk's times of CASEs from
OTHER.csv: a run whose code for those cases was since withdrawn)."""
import argparse
import csv
import math
import os


def load(path, suite):
    d = {}
    for r in csv.DictReader(open(path)):
        if r["suite"] == suite:
            d.setdefault(r["case"], {})[r["contender"] if "contender" in r else r["variant"]] = float(r["median_us"])
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--suite", default="random")
    ap.add_argument("--replace", default="")
    a = ap.parse_args()
    cases = load(a.csv, a.suite)
    vpath = a.csv.replace(".csv", "-variants.csv")
    variants = load(vpath, a.suite) if os.path.exists(vpath) else {}
    if a.replace:
        other, names = a.replace.split(":")
        old = load(other, a.suite)
        for n in names.split(","):
            cases[n]["polyk"] = old[n]["polyk"]
    vnames = sorted({v for c in variants.values() for v in c})
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    print("%-34s %9s %9s %9s %9s %6s" % ("case", "polyk", "torch", "compile", "cub", "ratio") +
          "".join(" %9s %6s" % (v, "ratio") for v in vnames))
    ratios, vratios = [], {v: [] for v in vnames}
    for n, c in cases.items():
        best = min(t for k, t in c.items() if k != "polyk")
        ratios.append((best / c["polyk"], n))
        line = "%-34s %9.2f %9s %9s %9s %6.2f" % (n, c["polyk"], *["%9.2f" % c[k] if k in c else "-" for k in ("torch", "torch.compile", "cub")],
                                                  best / c["polyk"])
        for v in vnames:
            t = variants.get(n, {}).get(v)
            if t:
                vratios[v].append((best / t, n))
            line += " %9s %6s" % ("%.2f" % t if t else "-", "%.2f" % (best / t) if t else "-")
        print(line)
    print("polyk: geomean best-peer/polyk %.3f over %d cases, slowest %.2f (%s), %d below 0.95" % (
        geo([r for r, _ in ratios]), len(ratios), *min(ratios), sum(r < 0.95 for r, _ in ratios)))
    for v, rs in vratios.items():
        if rs:
            print("%s: geomean best-peer/%s %.3f over %d cases, slowest %.2f (%s)" % (v, v, geo([r for r, _ in rs]), len(rs), *min(rs)))


if __name__ == "__main__":
    main()
