#!/usr/bin/env python3
"""Draws x-reduces (rows reduced along their contiguous dim) at random and prints them as
POLYK_BENCH_EXTRA (op:dtype:PxR:1,...) for bench/bench.sh prepare with POLYK_BENCH_SUITES=extra.

  bench/xreduce_draw.py SEED COUNT long   rows of 2^11-2^18 elements, 1-2^17 rows, 8 MiB-2 GiB
  bench/xreduce_draw.py SEED COUNT mid    around the mid-row rule (Schedule.cpp, kMidRowVectors):
                                          rows of 128-2048 16-byte vectors and >= 2048 elements,
                                          2^9-2^15.9 rows
  bench/xreduce_draw.py SEED COUNT runs   interleaved reductions ending in a short reduced run, for
                                          polyk-flatten --split-runs: x[A, B, C, D] over b and d
                                          ("prpr", A of 1-16) or x[B, C, D] over b and d ("rpr"),
                                          D of 2-8, C of 2-256, 4M-256M elements
Give a new SEED per run (e.g. from /dev/urandom) and keep it with the results.
"""
import random
import sys

BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "bool": 1}


def draw(seed, count, kind):
    r = random.Random(seed)
    cases = []
    while len(cases) < count:
        dt = r.choice(list(BYTES))
        op = r.choice(["and", "or"] if dt == "bool" else ["sum", "prod", "max", "min"])
        if kind == "long":
            R, P = int(2 ** r.uniform(11, 18)), int(2 ** r.uniform(0, 17))
            if not (8 << 20) <= P * R * BYTES[dt] <= (2 << 30):
                continue
        elif kind == "mid":
            R, P = int(16 // BYTES[dt] * 2 ** r.uniform(7, 11)), int(2 ** r.uniform(9, 15.9))
            if R < 2048:
                continue
        else:
            D, C = r.randint(2, 8), int(2 ** r.uniform(1, 8))
            n = int(2 ** r.uniform(22, 28))
            if r.random() < 0.5:
                A = int(2 ** r.uniform(0, 4))
                B = max(1, n // (A * C * D))
                shape, dims = [A, B, C, D], "13"
            else:
                B = max(1, n // (C * D))
                shape, dims = [B, C, D], "02"
            if n * BYTES[dt] > (2 << 30):
                continue
            cases.append(f"{op}:{dt}:{'x'.join(map(str, shape))}:{dims}")
            continue
        cases.append(f"{op}:{dt}:{P}x{R}:1")
    return cases


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("long", "mid", "runs"):
        sys.exit(__doc__)
    print(",".join(draw(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])))
