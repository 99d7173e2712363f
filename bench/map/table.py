#!/usr/bin/env python3
"""Map programs (examples/fousek, issue 21), in one process on the GPU: each polyk variant's median
(bench/run-list.sh's lines) against the best of torch eager / torch.compile (bench/affine_peers.py's
cases) and against the floor kernel for its bytes (a torch copy moving the same bytes). Both timed
as the harness times polyk: median, L2 flushed (triton's do_bench).
usage: table.py RUNS.txt OUT.csv
"""
import csv
import os
import re
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from affine_peers import CASES  # noqa: E402


def main():
    runs, out_csv = sys.argv[1], sys.argv[2]
    rows = []
    for line in open(runs):
        m = re.match(r"(\S+)\s+(.*?)\s+(PASS|FAIL)\s+\S+.*median_us=(\S+)", line)
        if not m:
            continue
        name, args, result, us = m.group(1), m.group(2), m.group(3), float(m.group(4))
        n = int(re.search(r"n=(\d+)", args).group(1)) if "n=" in args else 31744
        program = name.split("_")[0]
        rows.append(dict(variant=name, program=program, n=n, result=result, polyk_us=us))
    peers = {}
    for program, n in sorted({(r["program"], r["n"]) for r in rows}):
        key = f"fousek_{program}" + ("_1m" if n == 1 << 20 else "")
        make, _ = CASES[key]
        fn, args, _, nbytes = make()
        eager = do_bench(lambda: fn(*args), return_mode="median") * 1000
        cf = torch.compile(fn)
        cf(*args)
        comp = do_bench(lambda: cf(*args), return_mode="median") * 1000
        a = torch.empty(nbytes // 8, device="cuda")
        b = torch.empty_like(a)
        floor = do_bench(lambda: b.copy_(a), return_mode="median") * 1000
        peers[(program, n)] = (eager, comp, floor, nbytes)
        torch.cuda.empty_cache()
    for r in rows:
        eager, comp, floor, nbytes = peers[(r["program"], r["n"])]
        r.update(eager_us=eager, compile_us=comp, floor_us=floor, bytes=nbytes,
                 best_peer_over_polyk=min(eager, comp) / r["polyk_us"], polyk_over_floor=r["polyk_us"] / floor,
                 of_copy_bandwidth=floor / r["polyk_us"])
    with open(out_csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{'variant':18} {'n':>8} {'polyk us':>9} {'eager':>8} {'compile':>8} {'floor':>7} {'peer/polyk':>10} {'polyk/floor':>11}")
    for r in rows:
        print(f"{r['variant']:18} {r['n']:8} {r['polyk_us']:9.1f} {r['eager_us']:8.1f} {r['compile_us']:8.1f} {r['floor_us']:7.1f} "
              f"{r['best_peer_over_polyk']:10.2f} {r['polyk_over_floor']:11.2f} ({r['result']})")


if __name__ == "__main__":
    main()
