#!/usr/bin/env python3
"""Contractions drawn at random, in the family of the CCSD(T) triples (TCCG's sd_t_d1 / sd_t_d2,
COGENT's abcdef-gdab-efgc): to see whether polyk's defaults for them (AffineSchedule.cpp,
smallContractionTiles and the rules before it) hold outside examples/contraction. Not hand-picked: the
seed is printed.

Distribution: C(a, b, c, d, e, f) += A(...) * B(...) summed over g. Three of the six output
indices, drawn, go to A and the other three to B; g and each factor's three take a random order in
its subscripts. Extents: each output index uniform in [8, 24], g in [8, 64]. f32, row-major.

  here:        python3 bench/contraction_draw.py prepare DIR [SEED] [N]
               -> DIR/*.yaml, DIR/spec (bench/affine-variants.sh DIR/build DIR/spec: each case timed,
                  and checked at 2/3 of its extents), DIR/old.spec (the same cases named NAME_old,
                  for POLYK_BIN=OLDER/bin bench/affine-variants.sh OTHER DIR/old.spec: copy its .cu
                  files into DIR/build and append its list.txt to DIR/build/list.txt)
  on the GPU:  bench/run-list.sh DIR/build DIR/build/list.txt OUT/run.txt, then
               python3 bench/contraction_draw.py peers DIR OUT/run.txt   (einsum and torch.compile of it,
               the result made contiguous in the program's layout; the view's time beside)
"""
import math
import os
import random
import re
import sys
import time

OUT = "abcdef"


def draw(rng):
    ext = {i: rng.randint(8, 24) for i in OUT}
    ext["g"] = rng.randint(8, 64)
    a_idx = rng.sample(OUT, 3)
    b_idx = [i for i in OUT if i not in a_idx]
    A = a_idx + ["g"]
    B = b_idx + ["g"]
    rng.shuffle(A)
    rng.shuffle(B)
    return ext, "".join(A), "".join(B)


def name_of(A, B):
    return f"c_{A}_{B}"


def program(name, ext, A, B, scale=1.0):
    params = ", ".join(f"{i.upper()}{i.upper()}: {max(1, int(ext[i] * scale))}" for i in OUT + "g")
    shape = lambda s: "[" + ", ".join(i.upper() * 2 for i in s) + "]"
    return f"""# Drawn by bench/contraction_draw.py: abcdef-{A}-{B}, extents {ext}.
polyk: program/1
name: {name}
params: {{{params}}}
tensors:
  A: {{type: f32, shape: {shape(A)}, role: input}}
  B: {{type: f32, shape: {shape(B)}, role: input}}
  C: {{type: f32, shape: {shape(OUT)}, role: output}}
statements:
  - C({", ".join(OUT)}) +=! A({", ".join(A)}) * B({", ".join(B)})
"""


def small(ext):
    return " ".join(f"{i.upper() * 2}={max(1, (2 * ext[i]) // 3)}" for i in OUT + "g")


def prepare(d, seed, n):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    spec, old = [], []
    cases = []
    for _ in range(n):
        ext, A, B = draw(rng)
        name = name_of(A, B)
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as fh:
            fh.write(program(name, ext, A, B))
        cases.append(f"{name} {A} {B} " + " ".join(f"{k}={v}" for k, v in ext.items()))
        spec.append(f"{name} {path} 1 10 check=0 | | |")
        spec.append(f"{name} {path} 2 2 {small(ext)} | | |")
        old.append(f"{name}_old {path} 1 10 check=0 | | |")
    with open(os.path.join(d, "spec"), "w") as fh:
        fh.write("\n".join(spec) + "\n")
    with open(os.path.join(d, "old.spec"), "w") as fh:
        fh.write("\n".join(old) + "\n")
    with open(os.path.join(d, "cases.txt"), "w") as fh:
        fh.write(f"# seed {seed}\n" + "\n".join(cases) + "\n")
    print(f"seed {seed}: {n} contractions in {d}")


def peers(d, run):
    import torch
    from triton.testing import do_bench
    torch.backends.cuda.matmul.allow_tf32 = False
    polyk = {}
    for line in open(run):
        m = re.match(r"(\S+)\s+1 10 check=0\s+\S+ .*median_us=(\S+)", line)
        if m:
            polyk[m.group(1)] = float(m.group(2))
    checks = {m.group(1): m.group(2) for m in (re.match(r"(\S+)\s+2 2 .*?\s(PASS|FAIL|TIMEOUT)", l) for l in open(run)) if m}
    rows = []
    for line in open(os.path.join(d, "cases.txt")):
        if line.startswith("#"):
            print(line.strip())
            continue
        name, A, B, *kv = line.split()
        ext = {k: int(v) for k, v in (x.split("=") for x in kv)}
        ta = torch.randn(*[ext[i] for i in A], device="cuda")
        tb = torch.randn(*[ext[i] for i in B], device="cuda")
        spec = f"{A},{B}->{OUT}"
        f = lambda: torch.einsum(spec, ta, tb).contiguous()
        view = lambda: torch.einsum(spec, ta, tb)
        eager = do_bench(f, return_mode="median") * 1000
        view_us = do_bench(view, return_mode="median") * 1000
        torch._dynamo.reset()  # a static compile per draw (one lambda, new shapes: dynamo would make them symbolic)
        cf = torch.compile(lambda x, y: torch.einsum(spec, x, y).contiguous(), dynamic=False)
        cf(ta, tb)
        comp = do_bench(lambda: cf(ta, tb), return_mode="median") * 1000
        best = min(eager, comp)
        new, old = polyk.get(name, float("nan")), polyk.get(name + "_old", float("nan"))
        rows.append((name, ext, new, old, eager, comp, view_us, best / new, old / new, checks.get(name, "MISSING")))
        torch.cuda.empty_cache()
    print(f"{'case':24} {'extents':52} {'polyk':>8} {'old':>8} {'eager':>8} {'compile':>8} {'view':>8} {'peer/polyk':>10} {'old/new':>8}  check")
    for r in rows:
        e = " ".join(f"{k}{v}" for k, v in r[1].items())
        print(f"{r[0]:24} {e:52} {r[2]:8.1f} {r[3]:8.1f} {r[4]:8.1f} {r[5]:8.1f} {r[6]:8.1f} {r[7]:10.3f} {r[8]:8.3f}  {r[9]}")
    good = [r for r in rows if r[2] == r[2]]
    if good:
        g = lambda k: math.exp(sum(math.log(r[k]) for r in good if r[k] == r[k]) / len(good))
        print(f"geomean peer/polyk {g(7):.3f}, old/new {g(8):.3f} over {len(good)} cases")


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        seed = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time())
        prepare(sys.argv[2], seed, int(sys.argv[4]) if len(sys.argv) > 4 else 10)
    elif sys.argv[1] == "peers":
        peers(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
