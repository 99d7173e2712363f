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


# Suite 2: Panamera's sub-graphs (Table 2), softmax and layer norm, from examples/, with the torch
# program computing the same outputs (a tuple when there are several).
SUBGRAPHS = {
    "panamera/sg1": "lambda x: x.half().float().half().sum(0, dtype=torch.float32).half()",
    "panamera/sg2": "lambda x: x.half().sum(0, dtype=torch.float32).half()",
    "panamera/sg3": "lambda x: x.float().sum(0)",
    "panamera/sg4": "lambda x: (x * x).sum(1)",
    "panamera/sg5": "lambda x: ((-x) * x).sum()",
    "panamera/sg6": "lambda x: ((x * 2.0) * x).sum()",
    "panamera/sg7": "lambda x: ((x + 1.0) * x).sum((0, 1))",
    "panamera/sg8": "lambda x: (((x + 1.0) * x).sum((0, 1)), ((x + 2.0) * (x + 2.0)).sum((0, 1)))",
    "panamera/sg9": "lambda x: (x.sum(0), (x * x).sum(0))",
    "panamera/sg10": "lambda x: x.float().sum((0, 1))",
    "panamera/sg11": "lambda x: x.float().sum(2)",
    "panamera/sg12": "lambda x: x.sum(dtype=torch.float32).half()",
    "softmax": "lambda x: torch.softmax(x, 1)",
    "layernorm": "lambda x: torch.nn.functional.layer_norm(x, (768,), eps=1e-5)",
}


def subgraph_cases(root):
    out = []
    for path, fn in SUBGRAPHS.items():
        with open(os.path.join(root, "examples", path + ".yaml")) as f:
            text = f.read()
        out.append({"name": path.split("/")[-1], "suite": "subgraph", "program": text, "torch": fn})
    return out


def all_cases(root):
    return single_cases() + subgraph_cases(root)


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    cases = all_cases(root)
    for c in cases:
        with open(os.path.join(d, c["name"] + ".yaml"), "w") as f:
            f.write(c["program"])
    print(len(cases))


if __name__ == "__main__":
    main()
