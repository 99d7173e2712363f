#!/usr/bin/env python3
"""1 x 1 convolutions (ResNet-50's, and layers drawn at random) against cuDNN: the default sizes
beside GEMM-like register tiles through the conv path, and the same product written as a GEMM
(stride 1 only), to fit polyk-schedule's 1 x 1 rule. Not hand-picked beyond ResNet-50's list: the
random layers' seed is printed.

  here:        python3 bench/conv1x1.py prepare DIR [SEED] [N] [VARIANTS]
               -> DIR/*.yaml and DIR/spec (bench/affine-variants.sh DIR/build DIR/spec)
               VARIANTS: 'all' (small tiles), 'big' (and large ones), 'default' (the defaults and the GEMM form)
               or 'inception' (Inception-v3's 1 x 1 layers instead of ResNet-50's, defaults and GEMM form)
  on the GPU:  bench/run-list.sh DIR/build DIR/build/list.txt OUT/run.txt, then
               python3 bench/conv1x1.py peers DIR OUT/run.txt > OUT/peers.txt  (cuDNN in the same process)
  here:        python3 bench/conv1x1.py csv DIR OUT/peers.txt OUT/run.txt RESULT.csv
"""
import math
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_draw  # noqa: E402

# ResNet-50's 1 x 1 layers at batch 1 (K, C, input X, stride), v1: the projections at stride 2.
RESNET50 = [(64, 64, 56, 1), (256, 64, 56, 1), (64, 256, 56, 1), (128, 256, 56, 1), (512, 256, 56, 2),
            (128, 512, 28, 1), (512, 128, 28, 1), (256, 512, 28, 1), (1024, 512, 28, 2), (256, 1024, 14, 1),
            (1024, 256, 14, 1), (512, 1024, 14, 1), (2048, 1024, 14, 2), (512, 2048, 7, 1), (2048, 512, 7, 1)]

# Inception-v3's 1 x 1 layers at batch 1 (K, C, input X, stride 1): the 35 x 35, 17 x 17 and 8 x 8 blocks.
INCEPTION3 = [(64, 192, 35, 1), (48, 192, 35, 1), (64, 256, 35, 1), (48, 256, 35, 1), (64, 288, 35, 1),
              (192, 768, 17, 1), (128, 768, 17, 1), (160, 768, 17, 1), (320, 1280, 8, 1), (384, 1280, 8, 1),
              (192, 1280, 8, 1), (448, 1280, 8, 1), (320, 2048, 8, 1), (384, 2048, 8, 1), (192, 2048, 8, 1)]

# Register tiles for a 1 x 1 conv: (k points, k threads, pixels a thread, pixels a block).
SHAPES = {"a": (4, 16, 4, 64), "b": (8, 8, 4, 64), "d": (4, 16, 8, 128)}
# GEMM-like small tiles (the GEMM path's sizes for such products): (k points, k threads, pixels a
# thread, pixels a block, channels a reduced tile), split as the GEMM path splits.
SMALL = {"p2": (2, 16, 2, 32, 32), "p3": (4, 16, 2, 32, 32), "p5": (4, 16, 4, 64, 32), "p6": (8, 8, 2, 32, 32),
         "p7": (4, 16, 2, 32, 16)}


def gemm_program(name, K, C, P):
    return f"""# The 1 x 1 conv's product as a GEMM: K={K} C={C} P={P}.
polyk: program/1
name: {name}
params: {{K: {K}, C: {C}, P: {P}}}
tensors:
  I: {{type: f32, shape: [C, P], role: input}}
  F: {{type: f32, shape: [K, C], role: input}}
  O: {{type: f32, shape: [K, P], role: output}}
statements:
  - O(k, p) +=! F(k, c) * I(c, p)
"""


def batch_program(name, N, K, C, X, s):
    out = (X - 1) // s + 1
    sy, sx = ("y", "x") if s == 1 else (f"{s}*y", f"{s}*x")
    return f"""# A batch of 1 x 1 convs: K={K} C={C} X={X} F=1 stride {s} N={N}.
polyk: program/1
name: {name}
params: {{N: {N}, K: {K}, C: {C}, H: {X}, W: {X}, OH: {out}, OW: {out}}}
tensors:
  I: {{type: f32, shape: [N, C, H, W], role: input, padding: 0}}
  F: {{type: f32, shape: [K, C, 1, 1], role: input}}
  O: {{type: f32, shape: [N, K, OH, OW], role: output}}
statements:
  - O(n, k, y, x) +=! I(n, c, {sy} + fy, {sx} + fx) * F(k, c, fy, fx)
"""


def tiles(K, C, ox, oy, pk, bk, pp, P):
    """A GEMM-like register tile over (k, y, x): pk x bk output channels, whole rows (or 32 of a
    longer one) of about P pixels, pp of them a thread."""
    tx = ox if ox <= 32 else next((t for t in range(32, 15, -1) if ox % t == 0), 32)
    px = next(p for p in (4, 2, 1) if p <= pp and tx % p == 0)
    py = pp // px
    ty = max(py, (P // tx) // py * py)
    ty = min(ty, (oy + py - 1) // py * py)
    tile = [pk * bk, ty, tx]
    block = [bk, ty // py, tx // px]
    blocks = -(-K // tile[0]) * -(-oy // ty) * -(-ox // tx)
    tilesC = -(-C // 8)
    S = max(1, min(2 * 132 // blocks, tilesC, C // 288, 16))
    return tile, block, px, S


def small_tiles(K, C, ox, oy, pk, bk, pp, P, R, sms=132):
    """Rows of the pixel tile: a whole row up to P / pp threads wide (or the largest divisor of
    the row from 8 up), then rows to about P pixels; split as the GEMM path does."""
    w = P // pp
    tx = ox if ox <= w else next((t for t in range(w, 7, -1) if ox % t == 0), w)
    px = pp if tx * pp <= max(P, ox) and ox >= tx * pp else 1
    tx *= px
    py = pp // px
    ty = max(py, (P // tx) // py * py)
    ty = min(ty, (oy + py - 1) // py * py)
    tile, block = [pk * bk, ty, tx], [bk, ty // py, tx // px]
    blocks = -(-K // tile[0]) * -(-oy // ty) * -(-ox // tx)
    points = pk * pp
    slots = (1 if points >= 64 else 2) * sms
    tiles0 = -(-C // R)
    S = min(-(-2 * slots // blocks), tiles0, C // 256)
    if points == 1:
        S = min(-(-C // 128), tiles0, max(1, 16 * sms // blocks))
    S = min(S, 16)
    threads = block[0] * block[1] * block[2]
    if 1 < points < 16 and blocks * threads < sms * 256:
        S = min(-(-4 * slots // blocks), tiles0, C // 256, 16)
    if not (points == 1 or (points >= 16 and 4 * blocks < 3 * slots) or (1 < points < 16 and blocks * threads < sms * 256)):
        S = 1
    return tile, block, S


def sizes(tile, block, vector, split, R=8):
    s = f"kernel[0]->tile[{','.join(map(str, tile))}];kernel[0]->block[{','.join(map(str, block))}];kernel[0]->reduce[{R},1,1]"
    if vector > 1:
        s += f";kernel[0]->vector[{vector}]"
    if split > 1:
        s += f";kernel[0]->split[{split}]"
    return "--sizes={" + s + "}"


def prepare(d, seed, n, which):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    layers = [(f"rn{i}", *l) for i, l in enumerate(RESNET50)]
    if which == "inception":
        layers, which = [(f"in{i}", *l) for i, l in enumerate(INCEPTION3)], "default"
    print(f"seed {seed}, {n} random 1 x 1 layers beside ResNet-50's {len(RESNET50)}")
    for i in range(n):
        K, C, X, _, s = conv_draw.draw(rng)
        layers.append((f"dr{i}", K, C, X, s))
    spec = []
    if which == "default":
        # Batches of 8 of four of ResNet-50's layers (checked at N = 2).
        for i in (3, 7, 11, 13):
            K, C, X, s = RESNET50[i]
            path = os.path.join(d, f"b8rn{i}.yaml")
            with open(path, "w") as fh:
                fh.write(batch_program(f"b8rn{i}", 8, K, C, X, s))
            spec.append(f"b8rn{i} {path} 1 10 check=0 | | |")
            spec.append(f"b8rn{i} {path} 2 2 N=2 C=40 | | |")
    for name, K, C, X, s in layers:
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as fh:
            fh.write(conv_draw.program(name, K, C, X, 1, s))
        out = (X - 1) // s + 1
        print(f"{name}: K={K} C={C} X={X} s={s}  {conv_draw.sizes(path)}")
        spec.append(f"{name} {path} 1 10 check=0 | | |")
        spec.append(f"{name} {path} 2 2 C=12 | | |")
        if s == 1:
            gpath = os.path.join(d, name + "_gemm.yaml.txt")
            with open(gpath, "w") as fh:
                fh.write(gemm_program(name + "_gemm", K, C, out * out))
            spec.append(f"{name}_gemm {gpath} 1 10 check=0 | | |")
        if which != "all":
            continue
        for v, (pk, bk, pp, P, R) in SMALL.items():
            tile, block, S = small_tiles(K, C, out, out, pk, bk, pp, P, R)
            spec.append(f"{name}_{v} {path} 1 10 check=0 | {sizes(tile, block, 1, S, R)} | |")
            spec.append(f"{name}_{v} {path} 2 2 C=70 | | |")
        if which != "big":
            continue
        for v, (pk, bk, pp, P) in SHAPES.items():
            tile, block, px, S = tiles(K, C, out, out, pk, bk, pp, P)
            spec.append(f"{name}_{v} {path} 1 10 check=0 | {sizes(tile, block, px, 1)} | |")
            spec.append(f"{name}_{v} {path} 2 2 C=12 | | |")
            if S > 1 and v != "d":
                spec.append(f"{name}_{v}s {path} 1 10 check=0 | {sizes(tile, block, px, S)} | |")
                spec.append(f"{name}_{v}s {path} 2 2 C=40 | | |")
    with open(os.path.join(d, "spec"), "w") as fh:
        fh.write("\n".join(spec) + "\n")


def peers(d, run):
    import affine_peers as ap  # TF32 off, cudnn.benchmark on, do_bench
    import torch
    times, bad = {}, []
    for line in open(run):
        m = re.match(r"(\S+)\s.*?\s(PASS|FAIL|UNCHECKED) .*median_us=(\S+)", line)
        if not m:
            continue
        if m.group(2) == "UNCHECKED":
            times[m.group(1)] = float(m.group(3))
        elif m.group(2) != "PASS":
            bad.append(m.group(1))
    variants = ["old", "gemm", "t18"] + list(SMALL) + list(SHAPES)
    print(f"{'layer':6} {'K':>5} {'C':>5} {'X':>3} {'s':>2} {'cuDNN':>7} {'default':>8} " + " ".join(f"{v:>6}" for v in variants))
    best, dflt = [], []
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        name = f[:-5]
        text = open(os.path.join(d, f)).read()
        K, C, X, s = map(int, re.search(r"K=(\d+) C=(\d+) X=(\d+) F=1 stride (\d+)", text).groups())
        N = int(re.search(r"N=(\d+)", text).group(1)) if re.search(r" N=(\d+)", text) else 1
        fn, args, _, _ = ap.conv(K, C, X, 1, s, N=N)
        cudnn = ap.do_bench(lambda: fn(*args), return_mode="median") * 1000
        torch.cuda.empty_cache()
        us = times.get(name, float("nan"))
        row = [times.get(f"{name}_{v}", float("nan")) for v in variants]
        dflt.append(cudnn / us)
        best.append(cudnn / min([us] + [t for t, v in zip(row, variants) if v not in ("gemm", "old") and t == t]))
        print(f"{name:6} {K:5} {C:5} {X:3} {s:2} {cudnn:7.1f} {us:8.1f} " + " ".join(f"{t:6.1f}" for t in row) + (f"  N={N}" if N > 1 else ""))
    g = lambda r: math.exp(sum(map(math.log, r)) / len(r))  # noqa: E731
    print(f"geomean cuDNN/polyk: defaults {g(dflt):.3f}, best conv-path variant {g(best):.3f} over {len(dflt)} layers")
    print("checks not PASS: " + (" ".join(bad) if bad else "none"))


def csv(d, peers_txt, run, out, fma_tflops=51.6):
    """The peers table as the benchmark CSV (fraction of the f32 FMA ceiling, cuBLAS sgemm's)."""
    ok = {}
    for line in open(run):
        m = re.match(r"(\S+)\s.*?\s(PASS|FAIL|UNCHECKED) ", line)
        if m and m.group(2) != "UNCHECKED":
            ok[m.group(1)] = ok.get(m.group(1), "PASS") if m.group(2) == "PASS" else "FAIL"
    with open(out, "w") as fh:
        fh.write("case,polyk_us,result,peer,eager_us,compile_us,best_peer_over_polyk,ceiling,polyk_fraction_of_ceiling\n")
        for line in open(peers_txt):
            x = line.split()
            if len(x) < 7 or x[0] == "layer" or not os.path.exists(os.path.join(d, x[0] + ".yaml")):
                continue
            K, C, X, s, cudnn, us = int(x[1]), int(x[2]), int(x[3]), int(x[4]), float(x[5]), float(x[6])
            m = re.search(r" N=(\d+)", open(os.path.join(d, x[0] + ".yaml")).read())
            N = int(m.group(1)) if m else 1
            o = (X - 1) // s + 1
            flops = 2 * N * K * C * o * o
            fh.write(f"conv1x1_{x[0]},{us},{ok.get(x[0], 'UNCHECKED')},cuDNN,{cudnn},nan,{cudnn / us},fma,"
                     f"{flops / (us * 1e-6) / (fma_tflops * 1e12)}\n")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "prepare":
        seed = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else int(time.time())
        prepare(sys.argv[2], seed, int(sys.argv[4]) if len(sys.argv) > 4 else 8, sys.argv[5] if len(sys.argv) > 5 else "all")
    elif len(sys.argv) == 6 and sys.argv[1] == "csv":
        csv(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "peers":
        peers(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
