#!/usr/bin/env python3
"""The user's single-GPU alternative to bench/partition.sh's workloads: torch.compile of each
(cuBLAS for the matrix product), timed as bench/affine_peers.py times its peers (do_bench median,
L2 flushed). Prints `PEER name us=...` lines.

  python3 bench/partition_peers.py
"""
import sys
import os

sys.path.insert(0, os.path.dirname(__file__))
import torch  # noqa: E402
from affine_peers import do_bench, gemm, hotspot_iter, jacobi3d, nbody  # noqa: E402

CASES = {
    "hotspot8192": lambda: hotspot_iter(8192, 1500),
    "hotspot16384": lambda: hotspot_iter(16384, 1500),
    "jacobi3d": lambda: jacobi3d(512),
    "nbody65536": lambda: nbody(65536),
    "nbody131072": lambda: nbody(131072),
    "matmul8192": lambda: gemm(8192, 8192, 8192),
    "matmul16384": lambda: gemm(16384, 16384, 16384),
}

for name, make in CASES.items():
    try:
        fn, args, _, _ = make()
        if name.startswith("matmul"):
            f, peer = fn, "cuBLAS"
        else:
            f = fn.compiled() if hasattr(fn, "compiled") else torch.compile(fn)
            peer = "torch.compile"
        f(*args)
        us = do_bench(lambda: f(*args), return_mode="median", warmup=1, rep=1) * 1000
    except torch.OutOfMemoryError as e:
        # (N-body 131072: torch.compile materialises the N x N distances, 64 GiB)
        print(f"PEER {name} none: out of memory ({str(e).splitlines()[0]})", flush=True)
        fn = args = f = None
        torch.cuda.empty_cache()
        continue
    # N-body: one step compiled and timed; examples/nbody_steps.yaml runs 96 (the update is
    # negligible next to the forces).
    steps = 96 if name.startswith("nbody") else 1
    print(f"PEER {name} {peer} us={us * steps:.1f}" + (f" (one step {us:.1f} us x {steps})" if steps > 1 else ""), flush=True)
    fn = args = f = None
    torch.cuda.empty_cache()
