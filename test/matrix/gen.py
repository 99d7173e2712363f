#!/usr/bin/env python3
"""Writes the reduction test matrix (issue: every reduction a network uses) as program/1 files:
the three canonical forms x the six reduction ops x the seven dtypes x reduced extents
{1, 7, 1000, 2^20+3}; y-reduces whose threads own vectors of outputs, for every op and dtype:
tall ([40000, 64] over dim 0: columns split over blocks, a combine per thread's lanes) and wide
([3, 33792] over dim 0: whole columns per block); plus one all-reduce sum of f32 over more than
2^31 elements (--huge).
Usage: gen.py OUTDIR [--huge]"""
import os
import sys

OPS = {"sum": "+=!", "prod": "*=!", "max": "max=!", "min": "min=!", "and": "&&=!", "or": "||=!"}
DTYPES = ["bool", "i32", "i64", "f16", "bf16", "f32", "f64"]
SIZES = [1, 7, 1000, 2**20 + 3]
PARALLEL = {"x": 3, "y": 5}  # parallel extent beside the reduced one
LANES = {"ytall": (40000, 64), "ywide": (3, 33792)}  # y-reduces [rows, columns] with vectors


def program(name, form, op, dtype, n):
    if form == "all":
        shape, out_shape, stmt = [n], [], f"out() {OPS[op]} x(i)"
    elif form == "x":
        shape, out_shape, stmt = [PARALLEL["x"], n], [PARALLEL["x"]], f"out(i) {OPS[op]} x(i, j)"
    else:
        cols = LANES[form][1] if form in LANES else PARALLEL["y"]
        shape, out_shape, stmt = [n, cols], [cols], f"out(j) {OPS[op]} x(i, j)"
    return (f"# Test matrix: {form}-reduce, {op}, {dtype}, reduced extent {n}.\n"
            f"polyk: program/1\nname: {name}\ntensors:\n"
            f"  x:   {{type: {dtype}, shape: {shape}, role: input}}\n"
            f"  out: {{type: {dtype}, shape: {out_shape}, role: output}}\n"
            f"statements:\n  - {stmt}\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = [(form, op, dtype, n) for form in ["all", "x", "y"] for op in OPS for dtype in DTYPES for n in SIZES]
    cases += [(form, op, dtype, n) for form, (n, _) in LANES.items() for op in OPS for dtype in DTYPES]
    if "--huge" in sys.argv:
        cases.append(("all", "sum", "f32", 2**31 + 5))
    for form, op, dtype, n in cases:
        name = f"m_{form}_{op}_{dtype}_{n}"
        with open(os.path.join(out, name + ".yaml"), "w") as f:
            f.write(program(name, form, op, dtype, n))
    print(len(cases))


if __name__ == "__main__":
    main()
