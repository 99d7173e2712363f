#!/usr/bin/env python3
"""Old against new tools from one bench/run-list.sh output: rows NAME and NAME_old (check=0,
timed), and any checked row of NAME. Prints per case: new us, old us, old/new, the check's result;
then the geomean of old/new.
Usage: python3 bench/old-new.py RUN.txt [RUN.txt ...]"""
import math
import re
import sys

new, old, check = {}, {}, {}
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"(\S+)\s+(.*?)\s+(PASS|FAIL|UNCHECKED|TIMEOUT)\S*\s.*?median_us=(\S+)", line)
        if not m:
            continue
        name, args, result, us = m.group(1), m.group(2), m.group(3), float(m.group(4))
        if result != "UNCHECKED":
            base = name[:-4] if name.endswith("_old") else name
            check[base] = check.get(base, "PASS") if result == "PASS" else result
            continue
        (old if name.endswith("_old") else new)[name[:-4] if name.endswith("_old") else name] = us
ratios = []
print(f"{'case':34} {'new_us':>10} {'old_us':>10} {'old/new':>8}  check")
for name in sorted(new):
    if name not in old:
        continue
    r = old[name] / new[name]
    ratios.append(r)
    print(f"{name:34} {new[name]:10.2f} {old[name]:10.2f} {r:8.3f}  {check.get(name, '-')}")
if ratios:
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean old/new {g:.3f} over {len(ratios)} cases; min {min(ratios):.3f}, max {max(ratios):.3f}")
