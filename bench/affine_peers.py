#!/usr/bin/env python3
"""The peers of the affine examples on the GPU: cuBLAS (torch.mm / torch.mv), cuDNN
(torch.nn.functional.conv2d, cudnn.benchmark, TF32 off), torch.einsum and torch.compile of each
program, timed like the reduction benchmark (triton's do_bench: median, L2 flushed). Joins them
with polyk's times from bench/gpu-check.sh's table and writes a CSV and a table with each case's
ratio best-peer / polyk and its fraction of the relevant ceiling (copy bandwidth for stencils and
GEMV, the card's f32 FMA peak for the rest), both measured in the same run.

  python3 bench/affine_peers.py GPU_CHECK_TABLE OUT.csv [--no-compile] [--only=PREFIX,...]
"""
import csv
import re
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"


def rnd(*shape):
    return torch.rand(*shape, device=dev) * 2 - 1


def hotspot(N=8192):
    T, P = rnd(N, N), rnd(N, N)

    def f(T, P):
        c = T[1:-1, 1:-1]
        out = T.clone()
        out[1:-1, 1:-1] = c + 0.0546 * (P[1:-1, 1:-1] + (T[2:, 1:-1] + T[:-2, 1:-1] - 2.0 * c) * 0.1 +
                                         (T[1:-1, 2:] + T[1:-1, :-2] - 2.0 * c) * 0.1 + (80.0 - c) * 0.0003)
        return out
    return f, (T, P), 0, 3 * N * N * 4


def hotspot_iter(N=1024, S=1500):
    """S steps, buffers swapped (the boundary keeps T's values, as polyk's iterate does)."""
    T, P = rnd(N, N), rnd(N, N)

    def step(T, P, out):
        c = T[1:-1, 1:-1]
        out[1:-1, 1:-1] = c + 0.0546 * (P[1:-1, 1:-1] + (T[2:, 1:-1] + T[:-2, 1:-1] - 2.0 * c) * 0.1 +
                                         (T[1:-1, 2:] + T[1:-1, :-2] - 2.0 * c) * 0.1 + (80.0 - c) * 0.0003)
        return out

    def run(step):
        def f(T, P):
            a, b = T.clone(), T.clone()
            cur = T
            for s in range(S):
                out = a if s % 2 == 0 else b
                step(cur, P, out)
                cur = out
            return cur
        return f
    f = run(step)
    f.compiled = lambda: run(torch.compile(step))  # the step compiled; 1500 steps unrolled would not be
    return f, (T, P), 0, S * 3 * N * N * 4


def jacobi3d(N=512):
    A = rnd(N, N, N)

    def f(A):
        out = A.clone()
        out[1:-1, 1:-1, 1:-1] = 0.142857 * (A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1] + A[2:, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1] +
                                             A[1:-1, 2:, 1:-1] + A[1:-1, 1:-1, :-2] + A[1:-1, 1:-1, 2:])
        return out
    return f, (A,), 0, 2 * N ** 3 * 4


def gaussian2d(N=8192):
    """Eager: cuDNN's conv2d. Compiled: torch.compile of the sum of 25 weighted shifted slices of
    the zero-padded input (inductor fuses it into one kernel; compiling conv2d only calls cuDNN)."""
    A, G = rnd(1, 1, N, N), rnd(1, 1, 5, 5)

    def slices(A, G):
        P = F.pad(A[0, 0], (2, 2, 2, 2))
        out = G[0, 0, 0, 0] * P[0:N, 0:N]
        for u in range(5):
            for v in range(5):
                if u or v:
                    out = out + G[0, 0, u, v] * P[u:u + N, v:v + N]
        return out

    def f(A, G):
        return F.conv2d(A, G, padding=2)
    f.compiled = lambda: torch.compile(slices)
    return f, (A, G), 2 * 25 * N * N, 2 * N * N * 4


def gemm(M, N, K):
    A, B = rnd(M, K), rnd(K, N)
    return torch.mm, (A, B), 2 * M * N * K, 4 * (M * K + K * N + M * N)


def gemv(M, K):
    A, x = rnd(M, K), rnd(K)
    return torch.mv, (A, x), 2 * M * K, 4 * (M * K + K + M)


def einsum(spec, shapes, flops):
    """torch.einsum with its result in the program's layout: the output row-major in the order
    its subscripts name (polyk's C(a, b, c, d, e, f)). einsum may return a view with other strides
    (gdab,efgc->abcdef gives c and d swapped: strides (1048576, 65536, 256, 4096, 16, 1)); such a
    result is made contiguous, as a user of the named layout needs it. The view's own times are
    printed beside (`fn.view`)."""
    ts = [rnd(*s) for s in shapes]

    def f(*a):
        return torch.einsum(spec, *a).contiguous()
    f.view = lambda *a: torch.einsum(spec, *a)
    return f, tuple(ts), flops, 0


def conv(K, C, X, Fs, s, N=1, nhwc=False):
    """cuDNN's conv2d; N images; NHWC: input and weights channels_last (cuDNN's NHWC kernels)."""
    p = Fs // 2
    out = (X + 2 * p - Fs) // s + 1
    I, W = rnd(N, C, X, X), rnd(K, C, Fs, Fs)
    if nhwc:
        I, W = I.to(memory_format=torch.channels_last), W.to(memory_format=torch.channels_last)
    return (lambda I, W: F.conv2d(I, W, stride=s, padding=p)), (I, W), 2 * N * K * C * Fs * Fs * out * out, 0


def resnet_block(K=64, C=64, X=56):
    """examples/conv/resnet_block.yaml: conv (R2's shape), bias, ReLU, then a second conv; cuDNN
    for the convs and torch's bias + ReLU between them (eager), or torch.compile of the whole."""
    I, W1, b1, W2 = rnd(1, C, X, X), rnd(K, C, 3, 3), rnd(K), rnd(K, K, 3, 3)

    def f(I, W1, b1, W2):
        return F.conv2d(torch.relu(F.conv2d(I, W1, padding=1) + b1[None, :, None, None]), W2, padding=1)
    return f, (I, W1, b1, W2), 2 * 2 * K * C * 9 * X * X, 0


def nbody(N=65536):
    """All-pairs accelerations as examples/nbody.yaml writes them (20 flops a pair, the usual
    count). Eager would materialise N^2 x 3 differences (51 GB): torch.compile only."""
    P, M = rnd(N, 3), torch.rand(N, device=dev)

    def f(P, M):
        d = P[None, :, :] - P[:, None, :]
        r2 = (d * d).sum(-1) + 0.01
        return ((M[None, :] * r2.pow(-1.5))[:, :, None] * d).sum(1)
    return f, (P, M), 20 * N * N, 0


def fousek_F(n=31744):
    """Fousek et al.'s F = ||A B v||_2 (C D + C) over n instances (examples/fousek/F.yaml)."""
    A, B, v, C, D = rnd(n, 3, 3), rnd(n, 3, 3), rnd(n, 3), rnd(n, 5, 5), rnd(n, 5, 5)

    def f(A, B, v, C, D):
        w = torch.bmm(torch.bmm(A, B), v[..., None]).squeeze(-1)
        return torch.linalg.vector_norm(w, dim=-1)[:, None, None] * (torch.bmm(C, D) + C)
    return f, (A, B, v, C, D), 0, 4 * n * (9 + 9 + 3 + 25 + 25 + 25)


def fousek_skinning(n=31744):
    M1, M2, M3, x = rnd(n, 4, 4), rnd(n, 4, 4), rnd(n, 4, 4), rnd(n, 4)

    def f(M1, M2, M3, x):
        return torch.bmm(torch.bmm(torch.bmm(M1, M2), M3), x[..., None]).squeeze(-1)
    return f, (M1, M2, M3, x), 0, 4 * n * (3 * 16 + 4 + 4)


def fousek_mlp(n=31744):
    x, W1, b1, W2, b2 = rnd(n, 16), rnd(16, 16), rnd(16), rnd(16, 16), rnd(16)

    def f(x, W1, b1, W2, b2):
        return torch.tanh(x @ W1.T + b1) @ W2.T + b2
    return f, (x, W1, b1, W2, b2), 0, 4 * n * (16 + 16) + 4 * 2 * (256 + 16)


LAYERS = [("d1", 32, 3, 108, 3, 1), ("d2", 32, 32, 108, 3, 1), ("d3", 64, 32, 54, 3, 1), ("d4", 64, 64, 54, 3, 1),
          ("d5", 128, 64, 27, 3, 1), ("d6", 128, 128, 27, 3, 1), ("y0", 32, 3, 544, 3, 1), ("y2", 64, 32, 272, 3, 1),
          ("y4", 128, 64, 136, 3, 1), ("y8", 256, 128, 68, 3, 1), ("y12", 512, 256, 34, 3, 1), ("y18", 1024, 512, 17, 3, 1),
          ("r1", 64, 3, 224, 7, 2), ("r2", 64, 64, 56, 3, 1), ("r4", 128, 64, 56, 3, 2), ("r6", 128, 128, 28, 3, 1),
          ("r7", 256, 128, 28, 3, 2), ("r9", 256, 256, 14, 3, 1), ("r10", 512, 512, 14, 3, 2), ("r12", 512, 512, 7, 3, 1)]

CASES = {
    "stencil_hotspot": (hotspot, "eager+compile"),
    "stencil_hotspot16384": (lambda: hotspot(16384), "eager+compile"),
    "stencil_jacobi3d": (jacobi3d, "eager+compile"),
    "stencil_hotspot_iter": (hotspot_iter, "eager+compile"),
    "stencil_gaussian2d": (gaussian2d, "cuDNN+compile"),
    "blas_gemm": (lambda: gemm(1024, 1024, 1024), "cuBLAS"),
    "blas_gemm_mdh": (lambda: gemm(10, 500, 64), "cuBLAS"),
    "blas_gemm4096": (lambda: gemm(4096, 4096, 4096), "cuBLAS"),
    "blas_gemm_splitk": (lambda: gemm(512, 512, 16384), "cuBLAS"),
    "blas_gemv": (lambda: gemv(4096, 4096), "cuBLAS"),
    "blas_gemv8192": (lambda: gemv(8192, 8192), "cuBLAS"),
    "contraction_ab_bc": (lambda: einsum("ab,bc->ac", [(2048, 2048)] * 2, 2 * 2048 ** 3), "einsum+compile"),
    "contraction_abc_bda_dc": (lambda: einsum("bda,dc->abc", [(256,) * 3, (256, 256)], 2 * 256 ** 4), "einsum+compile"),
    "contraction_abcd_aebf_dfce": (lambda: einsum("aebf,dfce->abcd", [(48,) * 4] * 2, 2 * 48 ** 6), "einsum+compile"),
    "contraction_abcdef_gdab_efgc": (lambda: einsum("gdab,efgc->abcdef", [(32, 16, 16, 16), (16, 16, 32, 16)], 2 * 16 ** 6 * 32),
                                     "einsum+compile"),
    "nbody": (nbody, "compile"),
    "fousek_F": (fousek_F, "eager+compile"),
    "fousek_F_1m": (lambda: fousek_F(1 << 20), "eager+compile"),
    "fousek_skinning": (fousek_skinning, "eager+compile"),
    "fousek_skinning_1m": (lambda: fousek_skinning(1 << 20), "eager+compile"),
    "fousek_mlp": (fousek_mlp, "eager+compile"),
    "fousek_mlp_1m": (lambda: fousek_mlp(1 << 20), "eager+compile"),
}
CASES["conv_resnet_block"] = (resnet_block, "eager+compile")
for name, K, C, X, Fs, s in LAYERS:
    CASES["conv_" + name] = ((lambda K=K, C=C, X=X, Fs=Fs, s=s: conv(K, C, X, Fs, s)), "cuDNN")
    if name in ("r2", "r9", "r12", "y8"):  # examples/conv/layouts
        CASES[f"conv_{name}_n8"] = ((lambda K=K, C=C, X=X, Fs=Fs, s=s: conv(K, C, X, Fs, s, N=8)), "cuDNN")
        CASES[f"conv_{name}_nhwc"] = ((lambda K=K, C=C, X=X, Fs=Fs, s=s: conv(K, C, X, Fs, s, nhwc=True)), "cuDNN")


def ceilings():
    """Copy bandwidth (bytes/us) and f32 FMA peak (flop/us), measured now."""
    n = 1 << 28
    a, b = torch.empty(n, device=dev), torch.empty(n, device=dev)
    copy_us = do_bench(lambda: b.copy_(a), return_mode="median") * 1000
    bw = 2 * 4 * n / copy_us
    A, B = rnd(8192, 8192), rnd(8192, 8192)
    mm_us = do_bench(lambda: torch.mm(A, B), return_mode="median") * 1000
    return bw, 2 * 8192 ** 3 / mm_us


def main():
    table, out_csv = sys.argv[1], sys.argv[2]
    use_compile = "--no-compile" not in sys.argv
    only = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")]
    exact = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--exact=")]
    polyk = {}
    for line in open(table):
        m = re.match(r"(\S+)\s+(PASS|FAIL|UNCHECKED)\S*\s+(\S+)\s+(\S+)", line)
        if m and not m.group(1).endswith(".det"):
            # A size too large for the CPU reference is timed unchecked (gpu-check.sh) at the
            # program's own sizes: `name[check=0]`.
            name = m.group(1).removesuffix("[check=0]")
            if "[" not in name:
                polyk[name] = ("PASS" if m.group(2) == "UNCHECKED" else m.group(2), float(m.group(4)))
    bw, fma = ceilings()
    print(f"ceilings: copy {bw / 1e6:.2f} TB/s, f32 (cuBLAS sgemm 8192^3, TF32 off) {fma / 1e6:.1f} TFLOP/s")
    rows = []
    for name, (make, peer) in CASES.items():
        if only and not any(name.startswith(p) for p in only[0]):
            continue
        if exact and name not in exact[0]:
            continue
        fn, args, flops, nbytes = make()
        eager = float("nan") if peer == "compile" else do_bench(lambda: fn(*args), return_mode="median") * 1000
        comp = float("nan")
        if use_compile and "compile" in peer:
            try:
                torch._dynamo.reset()  # a fresh compile per case (no shapes made symbolic by earlier cases)
                cf = fn.compiled() if hasattr(fn, "compiled") else torch.compile(fn, dynamic=False)
                cf(*args)
                comp = do_bench(lambda: cf(*args), return_mode="median") * 1000
            except Exception as e:  # noqa: BLE001 - a peer that fails to compile is reported, not fatal
                print(f"{name}: torch.compile failed: {e}", file=sys.stderr)
        if hasattr(fn, "view"):
            v = fn.view(*args)
            if not v.is_contiguous():
                ve = do_bench(lambda: fn.view(*args), return_mode="median") * 1000
                vc = float("nan")
                if use_compile:
                    cv = torch.compile(fn.view)
                    cv(*args)
                    vc = do_bench(lambda: cv(*args), return_mode="median") * 1000
                print(f"{name}: einsum's own result is a view of strides {tuple(v.stride())}, not the program's layout: "
                      f"eager {ve:.1f} us, compile {vc:.1f} us as that view; made contiguous (the CSV): eager {eager:.1f}, compile {comp:.1f}")
        result, us = polyk.get(name, ("MISSING", float("nan")))
        best = min((x for x in (eager, comp) if x == x), default=float("nan"))
        ceiling_us = nbytes / bw if nbytes else flops / fma
        rows.append(dict(case=name, polyk_us=us, result=result, peer=peer, eager_us=eager, compile_us=comp,
                         best_peer_over_polyk=best / us if us == us else float("nan"),
                         ceiling=("copy" if nbytes else "fma"), polyk_fraction_of_ceiling=ceiling_us / us if us == us else float("nan")))
        torch.cuda.empty_cache()
    with open(out_csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{'case':32} {'polyk us':>10} {'eager us':>10} {'compile us':>10} {'peer/polyk':>10} {'of ceiling':>10}  peer")
    for r in rows:
        print(f"{r['case']:32} {r['polyk_us']:10.1f} {r['eager_us']:10.1f} {r['compile_us']:10.1f} "
              f"{r['best_peer_over_polyk']:10.3f} {r['polyk_fraction_of_ceiling']:10.3f}  {r['peer']} ({r['result']})")


if __name__ == "__main__":
    main()
