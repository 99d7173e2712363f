#!/usr/bin/env python3
"""Benchmark cases of the performance issue: each is a program/1 text, the torch expression that
computes the same outputs, and (where CUB has the primitive) the CUB call that does.

Suite 1 (single reductions): every shape / reduced-dims pair of the issue, under the operator and
dtype pairs sum / max over f32, f16, i32 and logical-and over bool. Suite 2: Panamera's twelve
sub-graphs (Table 2), softmax and layer norm over [8192, 768] and [64, 128, 768].

`python3 bench/cases.py DIR` writes DIR/<case>.yaml and prints the number of cases.
POLYK_BENCH_EXTRA="op:dtype:RxC:dims,..." (e.g. sum:f32:1280x21120:0) adds single reductions for
experiments (size variants) to both suites' cases.

Suite 3 (random, issue 19): POLYK_BENCH_RANDOM=SEED:COUNT adds COUNT reductions drawn at random
(random_cases: the distribution is stated there), not hand-picked; give a new SEED per run and
print it. POLYK_BENCH_SUITES=random (a comma list of single, subgraph, random, extra: the POLYK_BENCH_EXTRA
cases without suite 1) keeps those suites.
"""
import os
import random
import sys

IDX = "abcdefgh"

SHAPES = [([1024, 1024], [[0, 1], [1], [0]]), ([768, 21128], [[0, 1], [1], [0]]), ([16226304], [[0]]),
          ([1024, 131072], [[1], [0]]), ([131072, 1024], [[1], [0]]), ([1048576, 512], [[1]]),
          ([64, 128, 768], [[0, 1], [2]]), ([40, 20, 10, 5], [[0, 2, 3]])]

# (op, dtype) pairs: sum and max over the numeric types, logical-and over bool.
OPS = [("sum", "f32"), ("sum", "f16"), ("sum", "i32"), ("max", "f32"), ("max", "f16"), ("max", "i32"), ("and", "bool")]

SYMBOL = {"sum": "+=!", "max": "max=!", "and": "&&=!", "prod": "*=!", "min": "min=!", "or": "||=!"}


def reduce_dims(x, op, dims, dtype):
    """torch's reduction of x over dims (one dim at a time where torch takes one: prod), in the
    output type polyk keeps (i32 sums and products stay i32, wrapping)."""
    keep = {"dtype": x.dtype} if dtype in ("i32", "i64") else {}
    if op == "sum":
        return x.sum(dim=tuple(dims), **keep)
    if op == "max":
        return x.amax(dim=tuple(dims))
    if op == "min":
        return x.amin(dim=tuple(dims))
    for d in sorted(dims, reverse=True):
        x = x.prod(d, **keep) if op == "prod" else x.all(d) if op == "and" else x.any(d)
    return x


def torch_reduction(op, dtype, dims, rank):
    if op in ("prod", "min", "or"):
        return f"lambda x: cases.reduce_dims(x, {op!r}, {tuple(dims)!r}, {dtype!r})"
    d = tuple(dims)
    if op == "sum":
        # torch widens integer sums to i64 unless told; polyk keeps i32 (wrapping).
        return f"lambda x: x.sum(dim={d}, dtype=torch.int32)" if dtype == "i32" else f"lambda x: x.sum(dim={d})"
    if op == "max":
        return f"lambda x: x.amax(dim={d})"
    return "lambda x: x.all()" if len(d) == rank else f"lambda x: torch.all(x, dim={d})"


def cub_call(shape, dims, op, dtype):
    """('all', n) for a reduction over every dim, ('rows', rows, cols) over trailing dims, else
    None: CUB has no primitive for reductions over outer or interleaved dims, and
    bench/cub_peer.cu has only sum, max and and over f32, f16, i32 and bool."""
    if op not in ("sum", "max", "and") or dtype not in ("f32", "f16", "i32", "bool"):
        return None
    n = 1
    for e in shape:
        n *= e
    if sorted(dims) == list(range(len(shape))):
        return ("all", n)
    k = len(shape) - len(dims)
    if sorted(dims) == list(range(k, len(shape))):
        cols = 1
        for e in shape[k:]:
            cols *= e
        return ("rows", n // cols, cols)
    return None


def reduction(name, shape, dims, dtype, op):
    ix = [IDX[k] for k in range(len(shape))]
    out_ix = [ix[k] for k in range(len(shape)) if k not in dims]
    out_shape = [shape[k] for k in range(len(shape)) if k not in dims]
    text = (f"polyk: program/1\nname: {name}\ntensors:\n"
            f"  x:   {{type: {dtype}, shape: {list(shape)}, role: input}}\n"
            f"  out: {{type: {dtype}, shape: {out_shape}, role: output}}\n"
            f"statements:\n  - out({', '.join(out_ix)}) {SYMBOL[op]} x({', '.join(ix)})\n")
    return {"name": name, "suite": "single", "program": text, "torch": torch_reduction(op, dtype, dims, len(shape)),
            "cub": cub_call(shape, dims, op, dtype), "op": op, "dtype": dtype}


def single_cases():
    out = []
    for op, dtype in OPS:
        for shape, dimsets in SHAPES:
            for dims in dimsets:
                tag = "x".join(map(str, shape)) + "_d" + "".join(map(str, dims))
                out.append(reduction(f"{op}_{dtype}_{tag}", shape, dims, dtype, op))
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
    "softmax": "lambda x: torch.softmax(x, -1)",
    "layernorm": "lambda x: torch.nn.functional.layer_norm(x, (768,), eps=1e-5)",
}


def as_3d(text, name):
    """The [8192, 768] softmax / layer norm of examples/ over [64, 128, 768] (rows b, s)."""
    text = text.replace("name: " + name, "name: " + name + "_3d")
    text = text.replace("[8192, 768]", "[64, 128, 768]").replace("[8192]", "[64, 128]")
    text = text.replace("(i, j)", "(b, i, j)").replace("(i)", "(b, i)")
    return text


def subgraph_cases(root):
    out = []
    for path, fn in SUBGRAPHS.items():
        with open(os.path.join(root, "examples", path + ".yaml")) as f:
            text = f.read()
        name = path.split("/")[-1]
        out.append({"name": name, "suite": "subgraph", "program": text, "torch": fn, "cub": None})
        if name in ("softmax", "layernorm"):
            out.append({"name": name + "_3d", "suite": "subgraph", "program": as_3d(text, name), "torch": fn, "cub": None})
    return out


def extra_cases():
    out = []
    for spec in filter(None, os.environ.get("POLYK_BENCH_EXTRA", "").split(",")):
        op, dtype, shape, dims = spec.split(":")
        shape = [int(e) for e in shape.split("x")]
        name = f"{op}_{dtype}_{'x'.join(map(str, shape))}_d{dims}"
        out.append(reduction(name, shape, [int(d) for d in dims], dtype, op))
    return out


# Suite 3: the random distribution (issue 19). Rank uniform in 1..5; each extent log-uniform in
# [1, 2^24] (2 ** U(0, 24), rounded down); dtype uniform over f32, f16, bf16, f64, i32, i64, bool;
# the op uniform over sum, prod, max, min for numbers and over and, or for bool; the reduced dims a
# uniformly random non-empty subset; a draw whose input exceeds 8 GiB is drawn again. Besides the
# draws, one case in ten (at least 2 and 3 of COUNT) is forced to the shapes the issue names: a
# single element (shape [1] or [1, 1, 1]), or a few very long rows ([R, L], R in 1..8, L
# log-uniform in [2^22, 2^26], reduced over L), with the dtype and op drawn as above.
RANDOM_DTYPES = ["f32", "f16", "bf16", "f64", "i32", "i64", "bool"]
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "bool": 1}


def random_cases(seed, count):
    r = random.Random(seed)
    out = []
    singles, longs = max(2, count // 20), max(3, count // 20)
    while len(out) < count:
        k = len(out)
        dtype = r.choice(RANDOM_DTYPES)
        op = r.choice(["and", "or"] if dtype == "bool" else ["sum", "prod", "max", "min"])
        if k < singles:
            shape, dims = ([1], [0]) if k % 2 == 0 else ([1, 1, 1], [0, 2])
        elif k < singles + longs:
            shape, dims = [r.randint(1, 8), int(2 ** r.uniform(22, 26))], [1]
        else:
            shape = [max(1, int(2 ** r.uniform(0, 24))) for _ in range(r.randint(1, 5))]
            dims = [d for d in range(len(shape)) if r.random() < 0.5] or [r.randrange(len(shape))]
        n = 1
        for e in shape:
            n *= e
        if n * BYTES[dtype] > 8 << 30:
            continue
        name = f"r{k:02d}_{op}_{dtype}_{'x'.join(map(str, shape))}_d{''.join(map(str, dims))}"
        c = reduction(name, shape, dims, dtype, op)
        c["suite"] = "random"
        out.append(c)
    return out


def all_cases(root):
    rnd = os.environ.get("POLYK_BENCH_RANDOM", "")
    suites = os.environ.get("POLYK_BENCH_SUITES", "single,subgraph,random").split(",")
    out = []
    if "single" in suites:
        out += single_cases()
    if "single" in suites or "extra" in suites:
        out += extra_cases()
    if "subgraph" in suites:
        out += subgraph_cases(root)
    if rnd and "random" in suites:
        seed, count = rnd.split(":")
        out += random_cases(int(seed), int(count))
    return out


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
