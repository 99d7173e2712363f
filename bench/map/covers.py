#!/usr/bin/env python3
"""Joins bench/map/covers.sh's predictions (the fusion/1 files of --fusion=search) with the measured
times: per program and instance count, the rank correlation (Spearman) of predicted against
measured, where the measured best sits in the predicted order, and the best cover against the
best with no fusion and the best with everything fused.
usage: covers.py DIR RUNS.txt OUT.csv [PREDICTIONS_DIR]
(DIR's NAME_31744.fusion.yaml name the harnesses built, NAME_r its rank r; the predictions come
from PREDICTIONS_DIR's, DIR's by default.)"""
import csv
import os
import re
import sys

COVER = re.compile(r'- \{cover: "?(.*?)"?, sizes: "([^"]*)", us: ([0-9.eE+-]+)\}')


def predicted(path):
    out = []
    for line in open(path):
        m = COVER.search(line)
        if m:
            out.append((m.group(1), m.group(2), float(m.group(3))))
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def main():
    d, runs, out_csv = sys.argv[1], sys.argv[2], sys.argv[3]
    pd = sys.argv[4] if len(sys.argv) > 4 else d
    measured = {}
    for line in open(runs):
        m = re.match(r"(\S+)_(\d+)\s+.*?n=(\d+).*?\s(PASS|FAIL|UNCHECKED)\S*\s.*median_us=(\S+)", line)
        if m:
            measured[(m.group(1), int(m.group(2)), int(m.group(3)))] = (m.group(4), float(m.group(5)))
    rows = []
    programs = sorted({k[0] for k in measured})
    for p in programs:
        built = predicted(os.path.join(d, f"{p}_31744.fusion.yaml"))  # harness p_r: this file's rank r
        for n in (31744, 1048576):
            pred = {(c, s): (rank, us) for rank, (c, s, us) in enumerate(predicted(os.path.join(pd, f"{p}_{n}.fusion.yaml")))}
            for r, (c, s, _) in enumerate(built):
                if (p, r, n) not in measured or (c, s) not in pred:
                    continue
                result, us = measured[(p, r, n)]
                rank, pus = pred[(c, s)]
                rows.append(dict(program=p, n=n, cover=c, sizes=s, predicted_rank=rank, predicted_us=pus, measured_us=us, result=result))
    with open(out_csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{'program':9} {'n':>8} {'covers':>6} {'spearman':>8} {'best us':>8} {'best cover (its predicted rank)':45} "
          f"{'top1 us':>8} {'best@8':>7} {'nofuse':>7} {'allfuse':>7} {'best/nofuse':>11} {'best/all':>8}")
    for p in programs:
        for n in (31744, 1048576):
            rs = [r for r in rows if r["program"] == p and r["n"] == n]
            if not rs:
                continue
            rho = spearman([r["predicted_us"] for r in rs], [r["measured_us"] for r in rs])
            best = min(rs, key=lambda r: r["measured_us"])
            top1 = min(rs, key=lambda r: r["predicted_rank"])
            top8 = min((r for r in rs if r["predicted_rank"] < 8), key=lambda r: r["measured_us"])
            nofuse = min((r for r in rs if "+" not in r["cover"]), key=lambda r: r["measured_us"], default=None)
            allfuse = min((r for r in rs if "," not in r["cover"]), key=lambda r: r["measured_us"], default=None)
            nf = nofuse["measured_us"] if nofuse else float("nan")
            af = allfuse["measured_us"] if allfuse else float("nan")
            threads = " ".join("[" + x + "]" for x in re.findall(r"threads\[([^]]*)\]", best["sizes"]))
            label = f"{best['cover']} {threads} ({best['predicted_rank']})"
            print(f"{p:9} {n:8} {len(rs):6} {rho:8.3f} {best['measured_us']:8.1f} {label:45} {top1['measured_us']:8.1f} "
                  f"{top8['measured_us']:7.1f} {nf:7.1f} {af:7.1f} {nf / best['measured_us']:11.2f} {af / best['measured_us']:8.2f}")


if __name__ == "__main__":
    main()
