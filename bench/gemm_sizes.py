#!/usr/bin/env python3
"""GEMM at sizes drawn at random (and a few near 4096), polyk against cuBLAS in one run: each size
is checked against the CPU reference by a harness, then timed by it (check=0) and by triton's
do_bench on torch.mm (median, L2 flushed, TF32 off). Prints one line per size, then the geomean of
cuBLAS / polyk.

  python3 bench/gemm_sizes.py HARNESS SEED COUNT [MAX]
      HARNESS: blas/gemm4096's, compiled: one kernel, compiled for 4096^3, at every size;
      or a directory from `prepare`: a program per size, its sizes chosen for it (DIR/gemm_M_N_K)
  python3 bench/gemm_sizes.py prepare DIR SEED COUNT [MAX]   (here: the programs and their .cu;
      with POLYK_MMA=1, on the tensor cores where the default tile takes them: mma_sizes;
      the GPU machine compiles them: bench/run-list.sh's nvcc line, or nvcc by hand)
  python3 bench/gemm_sizes.py cublas SIZES   (cuBLAS alone at each line `M N K` of SIZES, for
      variants timed by bench/run-list.sh in the same call)
"""
import math
import os
import random
import re
import subprocess
import sys



def polyk(harness, args, check):
    out = subprocess.run([harness, "1", "20" if not check else "2"] + args + ([] if check else ["check=0"]),
                         capture_output=True, text=True, timeout=600).stdout.strip().splitlines()[-1]
    us = float(re.search(r"median_us=([0-9.]+)", out).group(1))
    return out.split()[0], us


def cublas(m, n, k):
    import torch
    from triton.testing import do_bench
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.rand(m, k, device="cuda") * 2 - 1, torch.rand(k, n, device="cuda") * 2 - 1
    return do_bench(lambda: torch.mm(a, b), return_mode="median") * 1000


def drawn(seed, count, top):
    rng = random.Random(seed)
    sizes = [(rng.randint(1, top), rng.randint(1, top), rng.randint(1, top)) for _ in range(count)]
    return sizes + [(4096, 4096, 4096), (4092, 4092, 4092), (4095, 4095, 4095), (1000, 1000, 1000)]


def mma_sizes(sizes):
    """The default sizes reshaped for polyk-emit --mma=tf32x3 (the same tile, blocks of [by, 4]
    threads, by = min(32, tile_y / 2), points cyclic): None where the tile cannot take it."""
    tile = re.search(r"kernel\[0\] -> tile\[(\d+), (\d+)\]", sizes)
    reduce = re.search(r"kernel\[0\] -> reduce\[([\d, ]+)\]", sizes)
    if not tile or not reduce:
        return None
    ty, tx = int(tile.group(1)), int(tile.group(2))
    # (POLYK_MMA_BY=max: as many threads along y as give 2 points each, at most 256 a block.)
    by = min(64, ty // 2) if os.environ.get("POLYK_MMA_BY") == "max" else min(32, ty // 2)
    if by < 8 or by % 8 or ty % (2 * by) or tx % 8 or int(reduce.group(1).split(",")[-1]) % 8:
        return None
    out = re.sub(r"kernel\[0\] -> block\[\d+, \d+\]", f"kernel[0] -> block[{by}, 4]", sizes)
    out = re.sub(r"; kernel\[0\] -> vector\[[\d, ]+\]", "", out)
    return out.replace(" }", "; kernel[0] -> vector[1] }")


def prepare(out, seed, count, top):
    import os
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    program = open(os.path.join(here, "..", "examples", "blas", "gemm.yaml")).read()
    for m, n, k in drawn(seed, count, top):
        name = f"gemm_{m}_{n}_{k}"
        text = re.sub(r"params: \{[^}]*\}", f"params: {{M: {m}, N: {n}, K: {k}}}", program)
        with open(os.path.join(out, name + ".yaml"), "w") as f:
            f.write(text)
        env, emit = dict(os.environ), []
        if os.environ.get("POLYK_MMA"):  # (the tensor cores where the default tile takes them)
            bin = os.environ.get("POLYK_BIN", os.path.join(here, "..", "build", "bin"))
            flat = subprocess.run([os.path.join(bin, "polyk-flatten"), os.path.join(out, name + ".yaml")], capture_output=True, check=True).stdout
            sched = subprocess.run([os.path.join(bin, "polyk-schedule")], input=flat, capture_output=True, check=True).stdout.decode()
            mma = mma_sizes(re.search(r'^sizes: "(.*)"$', sched, re.M).group(1))
            if mma:
                env["SCHEDULE_OPTS"], emit = "--sizes=" + mma.replace(" ", ""), ["--mma=tf32x3"]
            print(name, mma or "(SIMT)")
        subprocess.run([os.path.join(here, "..", "pipelines", "compile.sh"), os.path.join(out, name + ".yaml"),
                        os.path.join(out, name + ".cu"), "--harness"] + emit, check=True, env=env)


def main():
    if sys.argv[1] == "cublas":
        import torch
        print(torch.cuda.get_device_name())
        for line in open(sys.argv[2]):
            m, n, k = map(int, line.split())
            print(f"cublas gemm_{m}_{n}_{k} {cublas(m, n, k):.2f}", flush=True)
        return
    if sys.argv[1] == "prepare":
        out, seed, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        return prepare(out, seed, count, int(sys.argv[5]) if len(sys.argv) > 5 else 2500)
    harness, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 2500
    import os
    import torch
    perSize = os.path.isdir(harness)
    sizes = drawn(seed, count, top)
    print(f"{torch.cuda.get_device_name()}; sizes: random.Random({seed}), {count} drawn uniform in [1, {top}], then 4 near 4096 / 1000;"
          f" {'a program per size' if perSize else 'one harness: ' + harness}")
    print(f"{'M':>5} {'N':>5} {'K':>5} {'check':>6} {'polyk_us':>9} {'cublas_us':>9} {'ratio':>6} {'TFLOP/s':>7}")
    ratios = []
    for m, n, k in sizes:
        args = [f"M={m}", f"N={n}", f"K={k}"]
        exe = os.path.join(harness, f"gemm_{m}_{n}_{k}") if perSize else harness
        status, _ = polyk(exe, args, True) if m * n * k <= 2500 ** 3 else ("-", 0)
        _, us = polyk(exe, args, False)
        peer = cublas(m, n, k)
        ratios.append(peer / us)
        print(f"{m:5d} {n:5d} {k:5d} {status:>6} {us:9.1f} {peer:9.1f} {peer / us:6.2f} {2 * m * n * k / us / 1e6:7.1f}", flush=True)
    print(f"geomean cuBLAS / polyk over {len(ratios)} sizes: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    main()
