#!/usr/bin/env python3
"""Writes the reduction test matrix (issue: every reduction a network uses) as program/1 files:
the three canonical forms x the six reduction ops x the seven dtypes x reduced extents
{1, 7, 1000, 2^20+3}; y-reduces whose threads own vectors of outputs, for every op and dtype:
tall ([40000, 64] over dim 0: columns split over blocks, a combine per thread's lanes) and wide
([3, 33792] over dim 0: whole columns per block); mid-height y-reduces ([1000, 517] over dim 0:
narrow whole-column blocks of 8 columns x 64 threads over the rows, with partial row and column
tiles); and [40, 21128] over dim 0 (whole columns; 1-byte ones in blocks of 8 column threads with
vector[4]); fused rows for every dtype ([37, n], n in
{7, 100, 3000}: a row's result, then every element of the row combined with it, one kernel whose
later part takes the result from the row's leader, polyk::block_broadcast); batched columns
([3, n, 40] over dim 1, n in {7, 1000}, and [2, 2^21 + 1, 2] over dim 1: a y-reduce of rows n and
columns (a, c), read as they lie, no transposition); plus one all-reduce
sum of f32 over more than 2^31 elements (--huge).
Usage: gen.py OUTDIR [--huge]"""
import os
import sys

OPS = {"sum": "+=!", "prod": "*=!", "max": "max=!", "min": "min=!", "and": "&&=!", "or": "||=!"}
DTYPES = ["bool", "i32", "i64", "f16", "bf16", "f32", "f64"]
SIZES = [1, 7, 1000, 2**20 + 3]
PARALLEL = {"x": 3, "y": 5}  # parallel extent beside the reduced one
LANES = {"ytall": (40000, 64), "ywide": (3, 33792), "ymid": (1000, 517), "yw21k": (40, 21128)}  # y-reduces [rows, columns]
FUSED = {"bool": ["and", "or"], **{d: ["sum", "max"] for d in DTYPES if d != "bool"}}  # fx: fused rows
FUSED_SIZES = [7, 100, 3000]
BATCHED = {"b": [(3, 7, 40), (3, 1000, 40)], "bshort": [(2, 2**21 + 1, 2)]}  # x[a, n, c] over dim 1


def program(name, form, op, dtype, n):
    if form == "fx":
        use = "x(i, j) && m(i)" if dtype == "bool" else "x(i, j) - m(i)"
        return (f"# Test matrix: fused rows, {op}, {dtype}, row length {n}.\n"
                f"polyk: program/1\nname: {name}\ntensors:\n"
                f"  x: {{type: {dtype}, shape: [37, {n}], role: input}}\n"
                f"  m: {{type: {dtype}, shape: [37], role: temporary}}\n"
                f"  y: {{type: {dtype}, shape: [37, {n}], role: output}}\n"
                f"statements:\n  - m(i) {OPS[op]} x(i, j)\n  - y(i, j) = {use}\n")
    if form in BATCHED:
        return (f"# Test matrix: batched columns, {op}, {dtype}, shape {list(n)} over dim 1.\n"
                f"polyk: program/1\nname: {name}\ntensors:\n"
                f"  x:   {{type: {dtype}, shape: {list(n)}, role: input}}\n"
                f"  out: {{type: {dtype}, shape: [{n[0]}, {n[2]}], role: output}}\n"
                f"statements:\n  - out(a, c) {OPS[op]} x(a, b, c)\n")
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
    cases += [("fx", op, dtype, n) for dtype, ops in FUSED.items() for op in ops for n in FUSED_SIZES]
    cases += [(form, op, dtype, n) for form, shapes in BATCHED.items() for op in OPS for dtype in DTYPES for n in shapes]
    if "--huge" in sys.argv:
        cases.append(("all", "sum", "f32", 2**31 + 5))
    for form, op, dtype, n in cases:
        size = "x".join(map(str, n)) if isinstance(n, tuple) else n
        name = f"m_{form}_{op}_{dtype}_{size}"
        with open(os.path.join(out, name + ".yaml"), "w") as f:
            f.write(program(name, form, op, dtype, n))
    print(len(cases))


if __name__ == "__main__":
    main()
