#!/usr/bin/env python3
"""psi/1 from bench/map/psi.sh's runs (bench/run-list.sh lines): launch_us (a copy of one
instance), and per instance count the row copies' and the functions' medians.
usage: psi.py RUNS.txt > psi.yaml"""
import re
import sys
from datetime import date

lines = open(sys.argv[1]).read().splitlines()
device = lines[0].split(",")[0] if lines else "unknown"
sizes, launch = {}, None
for line in lines[1:]:
    m = re.match(r"(\S+)\s+.*?n=(\d+)\s+(?:PASS|FAIL|UNCHECKED)\S*\s.*median_us=(\S+)", line)
    if not m:
        continue
    name, n, us = m.group(1), int(m.group(2)), float(m.group(3))
    if n == 1:
        launch = us
        continue
    at = sizes.setdefault(n, {"copy": {}, "function": {}})
    c = re.fullmatch(r"copy_(\d+)", name)
    f = re.fullmatch(r"(.*)_(f\d+)_g(\d+)(_p\d+)?", name)
    if c:
        at["copy"][int(c.group(1))] = us
    elif f:
        at["function"][f"{f.group(1)} {f.group(2)} g{f.group(3)}" + (f" p{f.group(4)[2:]}" if f.group(4) else "")] = us
print("polyk: psi/1")
print(f"device: {device}")
print(f"date: {date.today()}")
print(f"launch_us: {launch if launch is not None else 0}")
print("sizes:")
for n in sorted(sizes):
    print(f"  - instances: {n}")
    print("    copy_us: {" + ", ".join(f"{r}: {v}" for r, v in sorted(sizes[n]["copy"].items())) + "}")
    print("    function_us:")
    for k, v in sorted(sizes[n]["function"].items()):
        print(f"      \"{k}\": {v}")
