#!/usr/bin/env python3
"""Benchmark cases (issue: faster than CUB / torch / torch.compile): program/1 text and the torch
expression computing the same thing. `python3 bench/cases.py DIR` writes DIR/<case>.yaml."""
import os
import sys

IDX = "abcdefgh"


def reduction(name, shape, dims, dtype="f32", op="sum"):
    ix = [IDX[k] for k in range(len(shape))]
    out_ix = [ix[k] for k in range(len(shape)) if k not in dims]
    out_shape = [shape[k] for k in range(len(shape)) if k not in dims]
    sym = {"sum": "+=!", "max": "max=!", "and": "&&=!"}[op]
    text = (f"polyk: program/1\nname: {name}\ntensors:\n"
            f"  x:   {{type: {dtype}, shape: {list(shape)}, role: input}}\n"
            f"  out: {{type: {dtype}, shape: {out_shape}, role: output}}\n"
            f"statements:\n  - out({', '.join(out_ix)}) {sym} x({', '.join(ix)})\n")
    tdims = tuple(dims)
    torch_fn = {"sum": f"lambda x: x.sum(dim={tdims})", "max": f"lambda x: x.amax(dim={tdims})",
                "and": f"lambda x: x.all(dim={tdims})" if len(dims) == 1 else f"lambda x: x.flatten().all() if {len(dims)} == x.dim() else x.all(dim={tdims[0]})"}[op]
    return {"name": name, "suite": "single", "program": text, "inputs": [("x", dtype, list(shape))],
            "torch": torch_fn}


def single_cases():
    shapes = [([1024, 1024], [[0, 1], [1], [0]]), ([768, 21128], [[0, 1], [1], [0]]), ([16226304], [[0]]),
              ([1024, 131072], [[1], [0]]), ([131072, 1024], [[1], [0]]), ([1048576, 512], [[1]]),
              ([64, 128, 768], [[0, 1], [2]]), ([40, 20, 10, 5], [[0, 2, 3]])]
    out = []
    for shape, dimsets in shapes:
        for dims in dimsets:
            tag = "x".join(map(str, shape)) + "_d" + "".join(map(str, dims))
            out.append(reduction(f"sum_f32_{tag}", shape, dims))
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for c in single_cases():
        with open(os.path.join(d, c["name"] + ".yaml"), "w") as f:
            f.write(c["program"])
    print(len(single_cases()))


if __name__ == "__main__":
    main()
