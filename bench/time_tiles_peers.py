#!/usr/bin/env python3
"""torch's iterated Hotspot beside polyk's time tiling (bench/time-tiles.sh): S steps of the
5-point update with the buffers swapped, the boundary keeping T's values (as polyk's `iterate`).

  python3 bench/time_tiles_peers.py N:S ...

Per case: the step compiled by torch.compile and called S times from Python (`compile`), the
same S calls captured once in a CUDA graph and replayed (`compile+graph`: the GPU time of
torch.compile's kernels without Python's launches), and the copy floor of S steps (3 N^2 floats
moved a step at the copy bandwidth measured now). Times in us (triton's do_bench median)."""
import sys

import torch
from triton.testing import do_bench

dev = "cuda"


def step(T, P, out):
    c = T[1:-1, 1:-1]
    out[1:-1, 1:-1] = c + 0.0546 * (P[1:-1, 1:-1] + (T[2:, 1:-1] + T[:-2, 1:-1] - 2.0 * c) * 0.1 +
                                     (T[1:-1, 2:] + T[1:-1, :-2] - 2.0 * c) * 0.1 + (80.0 - c) * 0.0003)
    return out


def main():
    n = 1 << 28
    a, b = torch.empty(n, device=dev), torch.empty(n, device=dev)
    bw = 2 * 4 * n / (do_bench(lambda: b.copy_(a), return_mode="median") * 1000)  # bytes / us
    del a, b
    print(f"copy bandwidth {bw / 1e6:.2f} TB/s")
    print(f"{'case':16} {'compile us':>12} {'compile+graph us':>17} {'copy floor us':>14}")
    cstep = torch.compile(step)
    for case in sys.argv[1:]:
        N, S = (int(x) for x in case.split(":"))
        T, P = torch.rand(N, N, device=dev) * 2 - 1, torch.rand(N, N, device=dev) * 2 - 1
        bufs = [T.clone(), T.clone()]

        def run():
            bufs[0].copy_(T)
            bufs[1].copy_(T)
            cur = T
            for s in range(S):
                out = bufs[s % 2]
                cstep(cur, P, out)
                cur = out
            return cur
        run()
        plain = do_bench(run, return_mode="median") * 1000
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            run()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            run()
        graphed = do_bench(g.replay, return_mode="median") * 1000
        floor = S * 3 * N * N * 4 / bw
        print(f"{N}^2x{S:<8} {plain:12.1f} {graphed:17.1f} {floor:14.1f}")
        del T, P, bufs, g
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
