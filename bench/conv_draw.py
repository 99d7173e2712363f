#!/usr/bin/env python3
"""Convolution layers drawn at random, against cuDNN, to see whether polyk's conv defaults (register tiles
and split-C, AffineSchedule.cpp) hold outside CNNOpt's Table 2. Not hand-picked: the seed is printed.

Distribution: K and C log-uniform integers in [16, 1024], a square input of 5 to 56, filter 1, 3
or 5 (probabilities 0.2, 0.6, 0.2), stride 1 (0.75) or 2, zero padding F/2, batch 1, NCHW, f32.

  here:            python3 bench/conv_draw.py prepare DIR [SEED] [N]   (SEED: drawn from the clock)
                   -> DIR/*.yaml, DIR/spec (for bench/affine-variants.sh DIR/build DIR/spec): per
                      layer its default; where the default splits C, the same tile unsplit; where
                      it does not but the reduction is long (>= 2048) and the layer has no register tiles, the
                      rule's split forced
                   (DIR/build/NAME_old, `NAME_old 1 10 check=0` in its list: another build's
                   defaults, timed beside them, shown as `old us`)
  on the GPU:      bench/run-list.sh DIR/build DIR/build/list.txt OUT/run.txt, then
                   python3 bench/conv_draw.py peers DIR OUT/run.txt   (cuDNN in the same process)
"""
import math
import os
import random
import re
import subprocess
import sys
import time


def draw(rng):
    K = int(round(math.exp(rng.uniform(math.log(16), math.log(1024)))))
    C = int(round(math.exp(rng.uniform(math.log(16), math.log(1024)))))
    X = rng.randint(5, 56)
    Fs = rng.choices([1, 3, 5], [0.2, 0.6, 0.2])[0]
    s = 1 if rng.random() < 0.75 else 2
    return K, C, X, Fs, s


def program(name, K, C, X, Fs, s):
    p = Fs // 2
    out = (X + 2 * p - Fs) // s + 1
    sy, sx = ("y", "x") if s == 1 else (f"{s}*y", f"{s}*x")
    return f"""# Drawn by bench/conv_draw.py: K={K} C={C} X={X} F={Fs} stride {s}.
polyk: program/1
name: {name}
params: {{K: {K}, C: {C}, H: {X}, W: {X}, OH: {out}, OW: {out}}}
tensors:
  I: {{type: f32, shape: [C, H, W], role: input, padding: 0}}
  F: {{type: f32, shape: [K, C, {Fs}, {Fs}], role: input}}
  O: {{type: f32, shape: [K, OH, OW], role: output}}
statements:
  - O(k, y, x) +=! I(c, {sy} + fy - {p}, {sx} + fx - {p}) * F(k, c, fy, fx)
"""


def sizes(path, binary="build/bin"):
    """The default sizes polyk-schedule picks for a program (its --dump-sizes line)."""
    flat = subprocess.run([f"{binary}/polyk-flatten", path], capture_output=True, text=True, check=True).stdout
    r = subprocess.run([f"{binary}/polyk-schedule", "--dump-sizes", "-o", "/dev/null"], input=flat, capture_output=True,
                       text=True, check=True)
    return r.stderr.strip().splitlines()[-1]


def prepare(d, seed, n):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    spec = []
    print(f"seed {seed}, {n} layers")
    for i in range(n):
        K, C, X, Fs, s = draw(rng)
        name = f"convdraw{i}"
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as fh:
            fh.write(program(name, K, C, X, Fs, s))
        sz = sizes(path)
        print(f"{name}: K={K} C={C} X={X} F={Fs} s={s}  {sz}")
        spec.append(f"{name} {path} 1 10 | | |")
        red = C * Fs * Fs
        if "split[" not in sz and "reduce[" not in sz and red >= 2048:
            # A long reduction the rule leaves unsplit (blocks enough): the rule's split, forced.
            S = min(red // 288, (C + 7) // 8, 16)
            tiles = ";".join(e.strip() for e in sz.strip("{} ").split(";"))
            spec.append(f"{name}_split {path} 1 10 | --sizes={{{tiles.replace(' ', '')};kernel[0]->reduce[8,{Fs},{Fs}];"
                        f"kernel[0]->split[{S}]}} | |")
        if "split[" in sz:
            # The same tile without the split (no reduce sizes: one output a thread, as before).
            plain = ";".join(e.strip() for e in sz.strip("{} ").split(";") if "tile[" in e or "block[" in e)
            spec.append(f"{name}_unsplit {path} 1 10 | --sizes={{{plain.replace(' ', '')}}} | |")
    with open(os.path.join(d, "spec"), "w") as fh:
        fh.write("\n".join(spec) + "\n")


def peers(d, run):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import affine_peers as ap  # TF32 off, cudnn.benchmark on, do_bench
    polyk = {}
    for line in open(run):
        m = re.match(r"(\S+)\s.*?\s(PASS|FAIL|UNCHECKED) .*median_us=(\S+)", line)
        if m:
            polyk[m.group(1)] = (m.group(2), float(m.group(3)))
    print(f"{'layer':12} {'K':>5} {'C':>5} {'X':>3} {'F':>2} {'s':>2} {'default us':>11} {'old us':>8} {'unsplit us':>11} {'split us':>9} {'cuDNN us':>9} "
          f"{'cuDNN/polyk':>11}  result")
    ratios = []
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        name = f[:-5]
        K, C, X, Fs, s = map(int, re.search(r"K=(\d+) C=(\d+) X=(\d+) F=(\d+) stride (\d+)", open(os.path.join(d, f)).read()).groups())
        fn, args, _, _ = ap.conv(K, C, X, Fs, s)
        cudnn = ap.do_bench(lambda: fn(*args), return_mode="median") * 1000
        res, us = polyk.get(name, ("MISSING", float("nan")))
        un = polyk.get(name + "_unsplit", ("", float("nan")))[1]
        old = polyk.get(name + "_old", ("", float("nan")))[1]
        forced = polyk.get(name + "_split", ("", float("nan")))[1]
        ratios.append(cudnn / us)
        print(f"{name:12} {K:5} {C:5} {X:3} {Fs:2} {s:2} {us:11.1f} {old:8.1f} {un:11.1f} {forced:9.1f} {cudnn:9.1f} {cudnn / us:11.3f}  {res}")
        torch.cuda.empty_cache()
    print(f"geomean cuDNN/polyk over {len(ratios)} layers: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "prepare":
        seed = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else int(time.time())
        prepare(sys.argv[2], seed, int(sys.argv[4]) if len(sys.argv) > 4 else 12)
    elif len(sys.argv) == 4 and sys.argv[1] == "peers":
        peers(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
