#!/usr/bin/env python3
"""The paper's Figures 4 and 5 for F from bench/map/covers.py's CSV: (left) every cover, ordered by
measured time, with its predicted time; (right) the measured time of the covers in the order the
search predicted them. usage: plot.py COVERS.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
fig, axes = plt.subplots(2, 2, figsize=(11, 7))
for row, n in enumerate((31744, 1048576)):
    rs = [r for r in rows if r["program"] == "F" and int(r["n"]) == n]
    by_measured = sorted(rs, key=lambda r: float(r["measured_us"]))
    ax = axes[row][0]
    ax.plot([float(r["measured_us"]) for r in by_measured], "o", ms=3, label="measured")
    ax.plot([float(r["predicted_us"]) for r in by_measured], "x", ms=3, label="predicted (psi, Eq. 3)")
    ax.set_title(f"F, n = {n}: covers by measured time")
    ax.set_xlabel("cover (fastest measured first)")
    ax.set_ylabel("us")
    ax.legend()
    by_predicted = sorted(rs, key=lambda r: int(r["predicted_rank"]))
    ax = axes[row][1]
    ax.plot([float(r["measured_us"]) for r in by_predicted], "o", ms=3)
    ax.set_title(f"F, n = {n}: measured, in predicted order")
    ax.set_xlabel("predicted rank")
    ax.set_ylabel("measured us")
fig.suptitle("polyk-schedule --fusion=search on an H100 (2026-11-27)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=90)
