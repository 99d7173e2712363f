#!/usr/bin/env python3
"""Random affine programs, drawn outside our examples: stencils with random offsets (kept inside by
a `where` or read through padding), contractions with random index orders (a third of them with a
symbolic extent), strided and reversed
reads, triangular reductions, windows with weights (Gaussian2D's form), convolutions with their
default tiles (sized as real layers, run small), every dtype and odd extents, and a thread's
register points cyclic or blocked. Each goes through the whole pipeline,
then the sequential C of its schedule and the CUDA kernels' code on the CPU (`--target=c`,
`--target=c-mapped`) run against the reference on random data, with two seeds.

  random.py [COUNT]          POLYK_RANDOM_SEED=N draws other programs (default 1)
Env: POLYK_BIN (the stage tools), POLYK_SRC (the source tree). Exit 1 on any failure, printing the
program that failed.
"""
import os
import random
import re
import subprocess
import sys
import tempfile

BIN = os.environ.get("POLYK_BIN", "build/bin")
SRC = os.environ.get("POLYK_SRC", ".")
DTYPES = ["f32", "f64", "i32", "f16", "bf16", "i64"]


def term(name, offset):
    return name if offset == 0 else f"{name} {'+' if offset > 0 else '-'} {abs(offset)}"


def stencil(r, n):
    rank = r.randint(1, 3)
    idx = ["i", "j", "k"][:rank]
    ext = [r.randint(5, 19) for _ in idx]
    dt = r.choice(DTYPES)
    padded = r.random() < 0.5
    shape = ", ".join(map(str, ext))
    reads = []
    for _ in range(r.randint(2, 5)):
        offs = [r.randint(-2, 2) for _ in idx]
        reads.append(f"{r.randint(1, 3)} * A({', '.join(term(x, o) for x, o in zip(idx, offs))})")
    body = " + ".join(reads)
    where = "" if padded else " where " + ", ".join(f"2 <= {x} < {e - 2}" for x, e in zip(idx, ext))
    pad = ", padding: 0" if padded else ""
    return f"""polyk: program/1
name: rnd{n}
tensors:
  A: {{type: {dt}, shape: [{shape}], role: input{pad}}}
  B: {{type: {dt}, shape: [{shape}], role: output}}
statements:
  - "B({', '.join(idx)}) = {body}{where}"
"""


def contraction(r, n):
    names = list("abcdef")
    nidx = r.randint(3, 5)
    idx = names[:nidx]
    ext = {x: r.randint(2, 7) for x in idx}
    out = r.sample(idx, r.randint(1, nidx - 1))
    red = [x for x in idx if x not in out]
    a_idx = r.sample(idx, r.randint(1, nidx))
    rest = [x for x in idx if x not in a_idx]
    b_idx = rest + r.sample(a_idx, r.randint(0, len(a_idx)))
    if not b_idx:
        b_idx = [r.choice(idx)]
    r.shuffle(b_idx)
    # every reduced index must appear on the right
    for x in red:
        if x not in a_idx and x not in b_idx:
            b_idx.append(x)
    dt = r.choice(["f32", "f64", "i32", "f16"])
    op = r.choice(["+=!", "+=!", "max=!", "min=!"])
    # One extent a parameter, a third of the time (where Panamera's coalescing cannot keep it
    # affine, flatten takes the affine path: C(a, b) +=! A(c, b) * B(c, b, a) with a's extent S).
    sym = r.choice(idx) if r.random() < 0.3 else None
    shp = lambda ix: ", ".join("S" if x == sym else str(ext[x]) for x in ix)
    params = f"params: {{S: {ext[sym]}}}\n" if sym else ""
    return f"""polyk: program/1
name: rnd{n}
{params}tensors:
  A: {{type: {dt}, shape: [{shp(a_idx)}], role: input}}
  B: {{type: {dt}, shape: [{shp(b_idx)}], role: input}}
  C: {{type: {dt}, shape: [{shp(out)}], role: output}}
statements:
  - C({', '.join(out)}) {op} A({', '.join(a_idx)}) * B({', '.join(b_idx)})
"""


def strided(r, n):
    # (A padding below the window's extent: polyk-flatten refuses one that leaves an output
    # reading the padding only.)
    m, f, s = r.randint(3, 40), r.randint(1, 5), r.randint(1, 3)
    dt = r.choice(["f32", "f64", "i32"])
    return f"""polyk: program/1
name: rnd{n}
params: {{M: {m}}}
tensors:
  x: {{type: {dt}, shape: [{s * m + f}], role: input, padding: 1}}
  w: {{type: {dt}, shape: [{f}], role: input}}
  y: {{type: {dt}, shape: [M], role: output}}
  z: {{type: {dt}, shape: [M], role: output}}
statements:
  - y(i) +=! x({s}*i + q - {r.randint(0, min(2, f - 1))}) * w(q)
  - z(i) = y(M - 1 - i) - y(i)
"""


def triangular(r, n):
    e = r.randint(2, 30)
    op = r.choice(["+=!", "max=!", "min=!", "*=!"])
    rel = r.choice(["<=", "<", ">="])
    dt = r.choice(["f32", "f64", "i64"])
    return f"""polyk: program/1
name: rnd{n}
params: {{N: {e}}}
tensors:
  x: {{type: {dt}, shape: [N, N], role: input}}
  y: {{type: {dt}, shape: [N], role: output}}
statements:
  - y(i) {op} x(k, i) where k {rel} i
"""


def window(r, n):
    """A stencil with weights as a reduction (Gaussian2D's form): a window of random extents and
    offsets, kept inside by a `where` or read through padding."""
    ext = [r.randint(6, 40), r.randint(6, 40)]
    win = [r.randint(1, 5), r.randint(1, 5)]
    off = [r.randint(0, w - 1) for w in win]
    dt = r.choice(["f32", "f64", "i32"])
    padded = r.random() < 0.5
    where = "" if padded else (f" where {off[0]} <= i < {ext[0] - win[0] + 1 + off[0]}, "
                               f"{off[1]} <= j < {ext[1] - win[1] + 1 + off[1]}")
    pad = ", padding: 0" if padded else ""
    return f"""polyk: program/1
name: rnd{n}
tensors:
  A: {{type: {dt}, shape: [{ext[0]}, {ext[1]}], role: input{pad}}}
  W: {{type: {dt}, shape: [{win[0]}, {win[1]}], role: input}}
  B: {{type: {dt}, shape: [{ext[0]}, {ext[1]}], role: output}}
statements:
  - "B(i, j) +=! A({term('i + u', -off[0])}, {term('j + v', -off[1])}) * W(u, v){where}"
"""


def conv(r, n):
    """A convolution (NCHW, zero padding F / 2, stride 1 or 2, a batch dim or none) whose params'
    defaults are drawn from the sizes of real layers, so polyk-schedule picks a conv's default
    tiles (convSizes, pointwiseSizes: split-C, 1 x 1 tiles, 2 images a thread), then run at small
    params drawn apart (`# run:` below): partial tiles of every kind."""
    K, C = (int(round(2 ** r.uniform(4, 10))) for _ in range(2))
    X, Fs, s = r.randint(5, 56), r.choice([1, 1, 3, 5]), r.choice([1, 1, 2])
    batch = r.choice([0, 0, 1, 8])
    p = Fs // 2
    out = lambda x: (x + 2 * p - Fs) // s + 1  # noqa: E731
    sy, sx = ("y", "x") if s == 1 else (f"{s}*y", f"{s}*x")
    nb, ni = ("N: " + str(batch) + ", ", "n, ") if batch else ("", "")
    k, c, x = r.randint(1, 40), r.randint(1, 40), r.randint(1, 20)
    run = f"K={k} C={c} H={x} W={x + 1} OH={out(x)} OW={out(x + 1)}" + (f" N={r.randint(1, 3)}" if batch else "")
    dt = r.choice(["f32", "f32", "f64", "bf16"])
    return f"""# run: {run}
polyk: program/1
name: rnd{n}
params: {{{nb}K: {K}, C: {C}, H: {X}, W: {X}, OH: {out(X)}, OW: {out(X)}}}
tensors:
  I: {{type: {dt}, shape: [{'N, ' if batch else ''}C, H, W], role: input, padding: 0}}
  F: {{type: {dt}, shape: [K, C, {Fs}, {Fs}], role: input}}
  O: {{type: {dt}, shape: [{'N, ' if batch else ''}K, OH, OW], role: output}}
statements:
  - O({ni}k, y, x) +=! I({ni}c, {term(sy + ' + fy', -p)}, {term(sx + ' + fx', -p)}) * F(k, c, fy, fx)
"""


KINDS = [stencil, contraction, strided, triangular, window, conv]


def members(text):
    """The parallel dims of the first statement: its left-hand side's indices."""
    line = [l for l in text.splitlines() if l.startswith("  - ")][0]
    lhs = line.split("(", 1)[1].split(")", 1)[0]
    return len([x for x in lhs.split(",") if x.strip()])


def reduced_dims(text):
    """The indices of the first statement's right-hand side that its left-hand side lacks."""
    line = [l for l in text.splitlines() if l.startswith("  - ")][0]
    lhs, rhs = line.split("(", 1)[1].split(")", 1)
    names = lambda t: set(re.findall(r"\b[a-z]\b", t))
    return len(names(rhs) - names(lhs))


def random_sizes(r, n, reduced=0):
    """Kernel 0's sizes drawn at random: tiles of several points a thread (register tiles,
    unrolled, with full-tile specialisation) half of the time. A reduction (`reduced` dims) then
    has several points a thread along x and y and its reduced loops tiled at random too, so its
    operands are staged in shared memory, box sizes and partial tiles of every kind."""
    if n == 0 or r.random() < 0.5:
        return ""
    block = [r.choice([1, 2, 4]) for _ in range(n)]
    tile = [b * r.choice([1, 2, 3]) for b in block]
    extra = ""
    if reduced:
        for m in range(max(0, n - 2), n):
            tile[m] = block[m] * r.choice([2, 3])
        extra = f";kernel[0]->reduce[{','.join(str(r.choice([1, 2, 3, 5])) for _ in range(reduced))}]"
    # (no spaces: pipelines/compile.sh splits SCHEDULE_OPTS into words)
    return f"--sizes={{kernel[0]->tile[{','.join(map(str, tile))}];kernel[0]->block[{','.join(map(str, block))}]{extra}}}"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check(text, work, sizes, bind=""):
    path = os.path.join(work, "p.yaml")
    with open(path, "w") as f:
        f.write(text)
    # Random sizes only on the affine path (the Panamera path's kernel 0 is another band).
    if "form: affine" not in run([f"{BIN}/polyk-flatten", path]).stdout:
        sizes = ""
    for target in ["c", "c-mapped"]:
        c = os.path.join(work, f"p.{target}.c")
        env = {**os.environ, "POLYK_BIN": BIN, "SCHEDULE_OPTS": sizes, "BIND_OPTS": bind}
        p = run([f"{SRC}/pipelines/compile.sh", path, c, f"--target={target}", "--harness"], env=env)
        if p.returncode:
            return f"pipeline ({target}): {p.stderr.strip()}"
        exe = c + ".bin"
        p = run(["cc", "-std=c99", "-O1", f"-I{SRC}/libcore/runtime", c, "-o", exe, "-lm"])
        if p.returncode:
            return f"cc ({target}): {p.stderr.strip()[:2000]}"
        args = re.search(r"^# run: (.*)$", text, re.M)
        for seed in ["1", "7"]:
            p = run([exe, seed] + (args.group(1).split() if args else []), timeout=60)
            if p.returncode or "PASS" not in p.stdout:
                return f"run ({target}, seed {seed}): {p.stdout.strip()} {p.stderr.strip()}"
    return None


def staged(text, work, sizes):
    """Whether polyk-bind stages some operand of the program in shared memory."""
    path = os.path.join(work, "p.yaml")
    flat = run([f"{BIN}/polyk-flatten", path]).stdout
    opts = [sizes] if sizes and "form: affine" in flat else []
    sched = run([f"{BIN}/polyk-schedule", *opts], input=flat).stdout
    return "shared: [" in run([f"{BIN}/polyk-bind"], input=sched).stdout


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    seed = int(os.environ.get("POLYK_RANDOM_SEED", "1"))
    r = random.Random(seed)
    failed = staging = refused = 0
    with tempfile.TemporaryDirectory() as work:
        for n in range(count):
            text = KINDS[n % len(KINDS)](r, n)
            kind = KINDS[n % len(KINDS)]
            # (A conv keeps its default tiles: the conv rules are what it tests.)
            sizes = "" if kind is conv else random_sizes(r, members(text), reduced_dims(text) if kind in (contraction, window) else 0)
            # Which points of a register tile a thread owns: polyk-bind's choice, or either.
            bind = r.choice(["", "--points=cyclic", "--points=blocked"])
            err = check(text, work, sizes, bind)
            # A reduction that is no contraction, whose symbolic extent Panamera's coalescing
            # cannot keep affine, is refused at its statement (docs/affine.md): that error only.
            if err and re.search(r"p\.yaml:\d+:\d+: error: (symbolic extent '.*' must be the outermost dim of its "
                                 r"coalesced group|two symbolic extents)", err):
                refused += 1
                print(f"REFUSED program {n} ({kind.__name__}, Panamera's Formula 1 limit)")
            elif err:
                failed += 1
                print(f"FAIL program {n} (seed {seed}):\n{text}SCHEDULE_OPTS='{sizes}' BIND_OPTS='{bind}'\n{err}\n")
            else:
                shared = staged(text, work, sizes)
                staging += shared
                print(f"PASS program {n} ({KINDS[n % len(KINDS)].__name__}{', staged in shared memory' if shared else ''})")
    print(f"{count - failed - refused} of {count} random affine programs passed (POLYK_RANDOM_SEED={seed}), "
          f"{staging} of them with operands staged in shared memory; {refused} refused as documented, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
