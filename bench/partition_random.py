#!/usr/bin/env python3
"""Cases drawn at random for polyk-partition on the CPU backend: examples drawn from examples/
(those polyk-emit --partition accepts), each example's `ci-params` sizes scaled by random factors
(odd and tiny ones included), a random seed and random device counts (1-8). Every draw runs the
multi-device harness, which compares each device count with the one-device run bit for bit (the
batch split of reductions: with the reference). Prints one line per draw and a summary; exit 1 if
any draw fails.

  python3 bench/partition_random.py [--seed S] [--examples 8] [--draws 30] [--bin build/bin]
"""
import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile


def ci_params(path):
    for line in open(path):
        m = re.match(r"#\s*ci-params:\s*(.*)", line)
        if m:
            return dict(kv.split("=") for kv in m.group(1).split())
    return {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--examples", type=int, default=8)
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--runtime", default="libcore/runtime")
    opt = ap.parse_args()
    seed = opt.seed if opt.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    print(f"seed {seed}", flush=True)
    examples = sorted(glob.glob("examples/**/*.yaml", recursive=True))
    rng.shuffle(examples)
    work = tempfile.mkdtemp(prefix="polyk-partition-random-")
    built = []
    for ex in examples:
        if len(built) >= opt.examples:
            break
        name = os.path.splitext(os.path.basename(ex))[0]
        base = os.path.join(work, name)
        b = opt.bin
        pipe = (f"{b}/polyk-flatten {ex} | {b}/polyk-schedule | {b}/polyk-bind > {base}.bound.yaml && "
                f"{b}/polyk-partition {base}.bound.yaml -o {base}.partition.yaml && "
                f"{b}/polyk-emit {base}.bound.yaml --partition {base}.partition.yaml --target c-mapped --harness -o {base}.cpp")
        r = subprocess.run(pipe, shell=True, capture_output=True, text=True)
        if r.returncode != 0:
            reason = (r.stderr.strip().splitlines() or ["?"])[-1]
            print(f"skip {ex}: {reason[:160]}", flush=True)
            continue
        r = subprocess.run(["c++", "-std=c++17", "-O1", f"-I{opt.runtime}", f"{base}.cpp", "-o", base], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {ex}: c++: {r.stderr[:300]}", flush=True)
            return 1
        built.append((ex, base, ci_params(ex)))
    failed = 0
    for i in range(opt.draws):
        ex, binary, params = rng.choice(built)
        sizes = []
        for k, v in params.items():
            v = int(v)
            f = rng.choice([0.1, 0.5, 0.9, 1.0, 1.3, 2.0, 3.0])
            sizes.append(f"{k}={max(1, round(v * f) + rng.choice([-1, 0, 0, 1]))}")
        devices = sorted(rng.sample(range(1, 9), rng.randint(1, 4)))
        args = [binary, str(rng.randrange(1000))] + sizes + ["devices=" + ",".join(map(str, devices))]
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        lines = [l for l in r.stdout.splitlines() if l.startswith(("PASS", "FAIL"))]
        ok = r.returncode == 0 and lines and all(l.startswith("PASS") for l in lines)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {os.path.relpath(ex)} {' '.join(args[1:])}: {len(lines)} lines"
              + ("" if ok else "\n  " + "\n  ".join((r.stdout + r.stderr).splitlines()[-6:])), flush=True)
    print(f"{opt.draws - failed} of {opt.draws} draws pass (seed {seed}, {len(built)} examples: "
          + ", ".join(os.path.basename(e) for e, _, _ in built) + ")")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
