#!/usr/bin/env python3
"""Random maps over independent instances (Fousek's kind, drawn outside examples/fousek): chains and
branches of 2 to 5 per-instance functions (small matrix products of random shapes, matrix-vector
products, sums of squares and maxima over a row, elementwise combinations of earlier results,
transposed reads), every float dtype and i32, odd instance counts. Each goes through
polyk-schedule --fusion=shared (the defaults and random threads per instance and instances a block),
--fusion=search (a random rank of its covers) and a random --fusion-cover, then the kernels' code on
the CPU (`--target=c-mapped`) against the sequential reference on random data.

  random_maps.py [COUNT]     POLYK_RANDOM_SEED=N draws other programs (default 1)
  random_maps.py COUNT --cuda DIR   instead of running on the CPU, writes each variant's CUDA
                             harness to DIR and DIR/list.txt (bench/run-list.sh runs them on a GPU)
Env: POLYK_BIN, POLYK_SRC. Exit 1 on any failure, printing the program and the options.
"""
import os
import random
import re
import subprocess
import sys
import tempfile

BIN = os.environ.get("POLYK_BIN", "build/bin")
SRC = os.environ.get("POLYK_SRC", ".")
DTYPES = ["f32", "f64", "f16", "bf16", "i32"]


def draw(r, n):
    """A map: tensors with the instance first, statements each producing one new tensor."""
    dt = r.choice(DTYPES)
    tensors = {}  # name -> (row dims, role)
    stmts = []
    inputs = []
    for k in range(r.randint(1, 3)):
        name = f"X{k}"
        tensors[name] = ([r.randint(1, 5), r.randint(1, 5)], "input")
        inputs.append(name)
    made = []
    for f in range(r.randint(2, 5)):
        avail = inputs + made
        # (The first a product: a map of plain subscripts without one takes the reduction path.)
        kind = "mm" if f == 0 else r.choice(["mm", "mv", "norm", "max", "ew", "tr"])
        a = r.choice(avail)
        ra = tensors[a][0]
        name = f"T{f}"
        if kind == "mm" and len(ra) == 2:
            m, k = ra
            ncols = r.randint(1, 5)
            b = f"W{f}"
            tensors[b] = ([k, ncols], "input")
            tensors[name] = ([m, ncols], "temporary")
            stmts.append(f"{name}(p, i, j) +=! {a}(p, i, k) * {b}(p, k, j)")
        elif kind == "mv" and len(ra) == 2:
            m, k = ra
            v = f"V{f}"
            tensors[v] = ([k], "input")
            tensors[name] = ([m], "temporary")
            stmts.append(f"{name}(p, i) +=! {a}(p, i, j) * {v}(p, j)")
        elif kind in ("norm", "max") and len(ra) >= 1:
            idx = ["i", "j"][: len(ra)]
            keep = idx[:-1]
            tensors[name] = (ra[:-1], "temporary")
            lhs = f"{name}(p{''.join(', ' + x for x in keep)})"
            op = "+=!" if kind == "norm" else "max=!"
            rhs = f"{a}(p, {', '.join(idx)}) * {a}(p, {', '.join(idx)})" if kind == "norm" else f"{a}(p, {', '.join(idx)})"
            stmts.append(f"{lhs} {op} {rhs}")
        elif kind == "tr" and len(ra) == 2:
            tensors[name] = ([ra[1], ra[0]], "temporary")
            stmts.append(f"{name}(p, i, j) = {a}(p, j, i) * 2 + 1")
        else:
            # Elementwise: the row of `a` combined with another tensor of the same row, else a constant.
            same = [x for x in avail if tensors[x][0] == ra and x != a]
            idx = ["i", "j"][: len(ra)]
            sub = "".join(", " + x for x in idx)
            other = f" + {r.choice(same)}(p{sub})" if same else " + 3"
            tensors[name] = (list(ra), "temporary")
            stmts.append(f"{name}(p{sub}) = {a}(p{sub}) * {a}(p{sub}){other}")
        made.append(name)
    # The outputs: the last result, and maybe another.
    outs = [made[-1]] + ([r.choice(made[:-1])] if len(made) > 1 and r.random() < 0.4 else [])
    for o in outs:
        tensors[o] = (tensors[o][0], "output")
    text = f"polyk: program/1\nname: rmap{n}\nparams: {{n: {r.choice([1, 7, 37, 64, 101, 300])}}}\ntensors:\n"
    for name, (row, role) in tensors.items():
        if role == "temporary" and name not in made:
            continue
        text += f"  {name}: {{type: {dt}, shape: [n{''.join(', ' + str(x) for x in row)}], role: {role}}}\n"
    text += "statements:\n" + "".join(f'  - "{s}"\n' for s in stmts)
    return text


def run(cmd, stdin=None):
    p = subprocess.run(cmd, shell=True, input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    cuda = sys.argv[sys.argv.index("--cuda") + 1] if "--cuda" in sys.argv else None
    if cuda:
        os.makedirs(cuda, exist_ok=True)
        listing = open(os.path.join(cuda, "list.txt"), "w")
    r = random.Random(int(os.environ.get("POLYK_RANDOM_SEED", "1")))
    failures = 0
    runs = refused = 0

    def step(command, label, text):
        """Runs one command; a failure is printed with the program and counted."""
        nonlocal failures
        rc, out = run(command)
        if rc != 0:
            print(f"FAIL {label}:\n{text}{out}")
            failures += 1
        return rc == 0

    with tempfile.TemporaryDirectory() as d:
        for n in range(count):
            text = draw(r, n)
            prog = os.path.join(d, f"m{n}.yaml")
            open(prog, "w").write(text)
            if not step(f"{BIN}/polyk-flatten {prog} > {d}/m{n}.flat.yaml", f"flatten rmap{n}", text):
                continue
            if not step(f"{BIN}/polyk-schedule --fusion-candidates {d}/m{n}.fusion.yaml < {d}/m{n}.flat.yaml > /dev/null",
                        f"candidates rmap{n}", text):
                continue
            doc = open(f"{d}/m{n}.fusion.yaml").read()
            funcs = re.findall(r"- name: (f\d+)\n\s+source", doc)
            grans = [list(map(int, g.split(", "))) for g in re.findall(r"threads_per_instance: \[([^]]*)\]", doc)]
            variants = ["--fusion=shared"]
            threads = ", ".join(str(r.choice(g)) for g in grans)
            variants.append(f"--fusion=shared --sizes '{{kernel[0]->tile[{r.choice([1, 3, 8, 32])}];kernel[0]->block[{r.choice([32, 64, 256])}];kernel[0]->threads[{threads}]}}'")
            variants.append(f"--fusion=search --fusion-covers 50 --fusion-rank {r.randint(0, 3)}")
            # A random cover: functions split at random points of program order (each set a run of
            # consecutive functions, which may not be fusible: then it must be refused cleanly).
            cuts = sorted(r.sample(range(1, len(funcs)), r.randint(0, len(funcs) - 1))) if len(funcs) > 1 else []
            sets, last = [], 0
            for c in cuts + [len(funcs)]:
                sets.append("+".join(funcs[last:c]))
                last = c
            variants.append(f"--fusion=shared --fusion-cover {','.join(sets)}")
            for v in variants:
                runs += 1
                # The stages, to the CUDA harness (--cuda) or to the kernels' code on the CPU.
                name = f"rmap{n}_{variants.index(v)}"
                target = f"--harness -o {cuda}/{name}.cu" if cuda else f"--target=c-mapped --harness -o {d}/m{n}.c"
                rc, out = run(f"{BIN}/polyk-schedule {v} < {d}/m{n}.flat.yaml | {BIN}/polyk-bind | {BIN}/polyk-emit {target}")
                if rc != 0:
                    # A refusal is fine if it says why (error:), never a crash.
                    if "error:" in out and "Assertion" not in out and "terminate" not in out and "internal" not in out.lower():
                        refused += 1
                        continue
                    print(f"FAIL stages rmap{n} ({v}):\n{text}{out}")
                    failures += 1
                    continue
                if cuda:
                    listing.write(f"{name} 3\n{name} 11 n=1001\n")
                    open(os.path.join(cuda, name + ".yaml"), "w").write(text + f"# {v}\n")
                    continue
                if not step(f"cc -O1 -I{SRC}/libcore/runtime {d}/m{n}.c -lm -o {d}/m{n}", f"cc rmap{n} ({v})", text):
                    continue
                for seed in (3, 11):
                    rc, out = run(f"{d}/m{n} {seed}")
                    if rc != 0 or "PASS" not in out:
                        print(f"FAIL run rmap{n} ({v}) seed {seed}:\n{text}{out}")
                        failures += 1
                        break
    print(f"random maps: {count} programs, {runs} variants ({refused} refused, saying why), {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
