#!/usr/bin/env python3
"""One process, one method: times polyk's launchers (loaded from shared libraries), CUB
(bench/cub_peer.cu), torch eager and torch.compile on the same inputs with
triton.testing.do_bench's method (CUDA events, warm-up, L2 flushed between repetitions, median of
at least 100; median_us says what it adds), plus a device copy (bandwidth ceiling), an empty
kernel (launch floor) and, for each case, a kernel that only reads its inputs' bytes and writes
its outputs' (the floor at its size).
torch.compile's host time per call is measured too (column c.host): where it exceeds the flush's
GPU time, do_bench alone would time the host, not the kernel (median_us keeps the host ahead).

Usage: reduce_bench.py LIBDIR CSV [--variants a,b,..] [--only SUBSTR,..] [--no-compile]
  LIBDIR/default/lib<case>.so is polyk as the toolchain builds it by default; LIBDIR/<v>/lib<case>.so
  are builds with other options (bench/bench.sh), timed too and written to CSV's *-variants.csv.
Writes CSV (suite,case,contender,median_us,bytes) as it goes and prints a table last.
"""
import argparse
import ctypes
import math
import os
import sys
import time

import torch
import yaml

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}
CUB_OP = {"sum": 0, "max": 1, "and": 2}
CUB_DT = {"f32": 0, "f16": 1, "i32": 2, "bool": 3}


# About 100 us at the H100's clocks. The host stays ahead while its time per repetition (launching
# the sleep, the flush and the call: up to ~125 us with torch.compile here) is below the GPU's (the
# sleep, the flush's ~85 us and the call).
LEAD_CYCLES = 200_000
_flush = []


def l2_flush():
    """do_bench's L2 flush: a memset of a 256 MB buffer (the one do_bench allocates)."""
    if not _flush:
        _flush.append(torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda"))
    _flush[0].zero_()


def median_us(fn, flush=l2_flush):
    """triton.testing.do_bench's method: a warm-up of ~10 ms, then CUDA events around each call with
    an L2 flush before it, median of at least 120 repetitions (~40 ms). One addition: a sleep
    kernel of ~100 us before each flush keeps the host's launches ahead of the GPU, so a call's host
    time (torch.compile's guards and wrapper took 35-115 us a call, more than the flush's ~85 us)
    never stands between the two events. Without it, do_bench timed the host on such calls:
    torch.compile's sg5 took 34.24 us by do_bench and 4.86 us by this in one process
    (bench/flush_probe.py; bench/results/2026-11-23-NVIDIA-H100-80GB-HBM3.txt)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush()
        fn()
    end.record()
    torch.cuda.synchronize()
    est_ms = start.elapsed_time(end) / 5
    for _ in range(max(1, int(10 / est_ms))):
        fn()
    n = max(120, int(40 / est_ms))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    torch.cuda.synchronize()
    for s, e in ev:
        torch.cuda._sleep(LEAD_CYCLES)
        flush()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in ev)[n // 2] * 1000.0


def host_us(fn, calls=100):
    """Host time of one call: `calls` back-to-back calls without waiting for the GPU (the launch
    queue holds them), over `calls`."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def case_tensors(c, gen):
    """Case c's parameters, inputs (random), outputs (uninitialised) and the launcher's argument
    list (parameters, then inputs and outputs in declaration order, as ctypes values)."""
    prog = yaml.safe_load(c["program"])
    params = prog.get("params") or {}
    ins, outs, order = [], [], []
    for t in prog["tensors"].values():
        shape = [params[e] if isinstance(e, str) else e for e in t["shape"]]
        if t["role"] == "input":
            ins.append(make_input(t["type"], shape, gen, c.get("op")))
            order.append(ins[-1])
        elif t["role"] == "output":
            outs.append(torch.empty(shape, device="cuda", dtype=DT[t["type"]]))
            order.append(outs[-1])
    cargs = [ctypes.c_longlong(v) for v in params.values()] + [ctypes.c_void_p(t.data_ptr()) for t in order]
    return ins, outs, cargs


def make_input(dtype, shape, gen, op=None):
    if op == "prod":
        # Near 1 (signs random for integers), so long products neither vanish nor overflow.
        if dtype in ("i32", "i64"):
            return torch.randint(0, 2, shape, device="cuda", generator=gen, dtype=DT[dtype]) * 2 - 1
        return torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(0.999, 1.001, generator=gen).to(DT[dtype])
    if dtype == "bool":
        # Mostly true, so logical-and results are not all false.
        return torch.rand(shape, device="cuda", generator=gen) < 0.999
    if dtype in ("i32", "i64"):
        return torch.randint(-100, 101, shape, device="cuda", generator=gen, dtype=DT[dtype])
    return torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(-1, 1, generator=gen).to(DT[dtype])


def rel_error(outs, ref):
    """The largest error relative to the reference's largest magnitude, which counts as at least
    the output dtype's smallest normal number: results in the subnormal range hold no relative
    precision (prod f16 over 80M factors near 1: 1.2e-7 against torch's 0, seed 53764's r30)."""
    err = 0.0
    for o, r in zip(outs, ref):
        tiny = torch.finfo(o.dtype).tiny if o.dtype.is_floating_point else 1e-30
        o, r = o.double(), r.double()
        if not torch.isfinite(o).all():
            return float("inf")
        err = max(err, ((o - r).abs().max() / r.abs().max().clamp_min(tiny)).item())
    return err


def tolerance(outs, op=None):
    if any(t.dtype in (torch.float16, torch.bfloat16) for t in outs):
        return 2e-2
    if op == "prod" and any(t.dtype == torch.float32 for t in outs):
        return 1e-3  # a product's rounding errors add up relative to the result itself
    if all(t.dtype in (torch.int32, torch.int64, torch.bool) for t in outs):
        return 0.0
    return 1e-4


class Lib:
    def __init__(self, path, name):
        self.lib = ctypes.CDLL(path)
        self.fn = getattr(self.lib, f"polyk_{name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libdir")
    ap.add_argument("csv")
    ap.add_argument("--variants", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    only = [s for s in args.only.split(",") if s]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    cub = ctypes.CDLL(os.path.join(args.libdir, "libcub_peer.so"))

    csv = open(args.csv, "w")
    csv.write("suite,case,contender,median_us,bytes\n")
    vcsv = open(args.csv.replace(".csv", "-variants.csv"), "w")
    vcsv.write("suite,case,variant,median_us,bytes,max_rel_err\n")

    def row(f, *r):
        f.write(",".join(str(x) if not isinstance(x, float) else "%.3f" % x for x in r) + "\n")
        f.flush()

    # Ceilings measured in this run: a 1 GiB device copy (read + write) and an empty kernel.
    a = torch.empty(1 << 28, device="cuda", dtype=torch.float32).uniform_()
    b = torch.empty_like(a)
    t_copy = median_us(lambda: b.copy_(a))
    copy_bw = 2 * a.numel() * 4 / (t_copy * 1e-6)
    row(csv, "ceiling", "copy_1GiB", "copy", t_copy, 2 * a.numel() * 4)
    del a, b
    # An empty kernel of one thread (bench/cub_peer.cu). Printed beside it, not written: torch's
    # add_ on an empty tensor, which launches nothing (the events' overhead alone).
    t_empty = median_us(lambda: cub.empty_launch(stream))
    row(csv, "ceiling", "empty", "empty", t_empty, 0)
    nothing = torch.empty(0, device="cuda")
    t_nothing = median_us(lambda: nothing.add_(1))
    # The flush before each repetition, on the GPU.
    t_flush = median_us(l2_flush, flush=lambda: None)

    # The floor at a case's size (move_launch in bench/cub_peer.cu): a kernel that reads the case's
    # input bytes and writes its output bytes and does nothing else, under the same method, so the
    # fixed costs of one launch after the flush (events, launch, the flush's dirty lines in L2) weigh
    # on it as on the case; the faster of its two launch shapes.
    floors = {}
    sink = torch.zeros(1, device="cuda", dtype=torch.int32)

    def floor_us(rbytes, wbytes):
        key = (rbytes // 16 * 16, wbytes // 16 * 16)
        if key not in floors:
            src = torch.empty(max(key[0], 16), device="cuda", dtype=torch.uint8).random_()
            dst = torch.empty(max(key[1], 16), device="cuda", dtype=torch.uint8)
            margs = [ctypes.c_void_p(src.data_ptr()), ctypes.c_longlong(key[0]), ctypes.c_void_p(dst.data_ptr()),
                     ctypes.c_longlong(key[1]), ctypes.c_void_p(sink.data_ptr()), stream]
            floors[key] = min(median_us(lambda: cub.move_launch(cfg, *margs)) for cfg in (0, 1))  # noqa: B023
            row(csv, "ceiling", "floor_%d_%d" % key, "floor", floors[key], key[0] + key[1])
            del src, dst
        return floors[key]

    # The floor kernel against torch's copy at the 1 GiB copy's shape (1 GiB read, 1 GiB written).
    t_floor_copy = floor_us(1 << 30, 1 << 30)

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    table = []
    vtimes = {}  # variant -> case -> (median_us, correct)
    for c in cases.all_cases(root):
        name = c["name"]
        if only and not any(s in name for s in only):
            continue
        if not os.path.exists(os.path.join(args.libdir, "default", f"lib{name}.so")):
            print("%-34s no polyk build in %s/default: left out" % (name, args.libdir), flush=True)
            continue
        ins, outs, cargs = case_tensors(c, gen)
        fn = eval(c["torch"])
        ref = fn(*ins)
        ref = ref if isinstance(ref, tuple) else (ref,)
        if c.get("op") == "prod" and any(t.dtype == torch.float32 for t in ins):
            # torch multiplies f32 in f32: over a million factors near 1 its rounding drifts by 1e-3
            # (seed 42629's prod f32 [1490504]); polyk accumulates f32 products in f64. The
            # reference is the product of the same inputs in f64, rounded to f32.
            exact = fn(*[t.double() if t.dtype == torch.float32 else t for t in ins])
            exact = exact if isinstance(exact, tuple) else (exact,)
            ref = tuple(e.to(r.dtype) for e, r in zip(exact, ref))
        rbytes = sum(t.numel() * t.element_size() for t in ins)
        wbytes = sum(t.numel() * t.element_size() for t in outs)
        nbytes = rbytes + wbytes

        def polyk_time(sub):
            path = os.path.join(args.libdir, sub, f"lib{name}.so")
            if not os.path.exists(path):
                return None, None
            launch = Lib(path, name).fn
            for o, r in zip(outs, ref):  # poison: every element must be written
                if o.dtype == torch.bool:
                    o.copy_(~r)
                else:
                    o.reshape(-1).view(torch.uint8).fill_(0xFF)
            call = lambda: launch(*cargs, stream)  # noqa: E731
            if call() != 0:
                return None, float("inf")
            torch.cuda.synchronize()
            err = rel_error(outs, ref)
            return median_us(call), err

        t_polyk, err = polyk_time("default")
        ok = err is not None and err <= tolerance(outs, c.get("op"))
        for v in variants:
            tv, ev = polyk_time(v)
            if tv is not None:
                row(vcsv, c["suite"], name, v, tv, nbytes, "%.3g" % ev)
                vtimes.setdefault(v, {})[name] = (tv, ev is not None and ev <= tolerance(outs, c.get("op")))
        t_torch = median_us(lambda: fn(*ins))
        t_comp = h_comp = None
        if not args.no_compile:
            # A fresh, static compile per case: the cases' lambdas share one code id ("<string>",
            # line 1), so dynamo's automatic dynamic shapes would otherwise compile later cases for
            # symbolic sizes (sum f32 [4000, 4000, 4] 69.6 us static, 119.3 us dynamic, H200).
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=False)
            compiled(*ins)
            t_comp = median_us(lambda: compiled(*ins))
            h_comp = host_us(lambda: compiled(*ins))
        t_cub = None
        if c["cub"] is not None:
            o = torch.empty_like(ref[0]) if ref[0].dtype == DT[c["dtype"]] else torch.empty(ref[0].shape, device="cuda", dtype=DT[c["dtype"]])
            if c["cub"][0] == "all":
                call = lambda: cub.cub_all(CUB_OP[c["op"]], CUB_DT[c["dtype"]], ctypes.c_void_p(ins[0].data_ptr()),  # noqa: E731
                                           ctypes.c_void_p(o.data_ptr()), ctypes.c_longlong(c["cub"][1]), stream)
            else:
                call = lambda: cub.cub_rows(CUB_OP[c["op"]], CUB_DT[c["dtype"]], ctypes.c_void_p(ins[0].data_ptr()),  # noqa: E731
                                            ctypes.c_void_p(o.data_ptr()), ctypes.c_longlong(c["cub"][1]),
                                            ctypes.c_longlong(c["cub"][2]), stream)
            if call() == 0:
                t_cub = median_us(call)
        for who, t in (("polyk", t_polyk), ("torch", t_torch), ("torch.compile", t_comp), ("cub", t_cub)):
            if t is not None:
                row(csv, c["suite"], name, who, t, nbytes)
        peers = [t for t in (t_torch, t_comp, t_cub) if t is not None]
        best = min(peers)
        ratio = best / t_polyk if t_polyk else 0.0
        frac = nbytes / (t_polyk * 1e-6) / copy_bw if t_polyk else 0.0
        t_floor = floor_us(rbytes, wbytes)
        table.append((c["suite"], name, t_polyk, t_torch, t_comp, t_cub, ratio, frac, nbytes, ok, err, t_floor, h_comp,
                      best))
        print("%-34s %s" % (name, "polyk %.2f torch %.2f compile %s cub %s" % (
            t_polyk or -1, t_torch, "%.2f" % t_comp if t_comp else "-", "%.2f" % t_cub if t_cub else "-")), flush=True)

    fmt = lambda t: "%9.2f" % t if t else "%9s" % "-"  # noqa: E731
    print(f"\ncopy bandwidth {copy_bw / 1e12:.2f} TB/s (read + write), empty kernel {t_empty:.2f} us"
          f" (no kernel: {t_nothing:.2f} us); the floor kernel at the copy's shape {t_floor_copy:.2f} us,"
          f" torch's copy {t_copy:.2f} us; the flush {t_flush:.2f} us on the GPU")
    print("%-30s %9s %9s %9s %9s %6s %5s %9s %6s %6s %7s %s" % (
        "case", "polyk", "torch", "compile", "cub", "ratio", "bw", "floor", "/floor", "/empty", "c.host", "check"))
    for suite, n, tp, tt, tc, tb, ratio, frac, nb, ok, err, tf, hc, best in table:
        print("%-30s %s %s %s %s %6.2f %4.0f%% %s %6.2f %6.1f %7s %s" % (
            n, fmt(tp), fmt(tt), fmt(tc), fmt(tb), ratio, 100 * frac, fmt(tf), (tp or 0) / tf, (tp or 0) / t_empty,
            "%.1f" % hc if hc else "-", "ok" if ok else "WRONG %.2g" % (err or -1)))
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    for suite in ("single", "subgraph", "random", None):
        rs = [t for t in table if suite is None or t[0] == suite]
        if not rs:
            continue
        slow = min(rs, key=lambda t: t[6])
        print("%-9s geomean best-peer/polyk %.2f over %d cases; slowest %s %.2fx; wrong %d;"
              " a kernel at the floor would score %.2f" % (
                  suite or "all", geo([max(t[6], 1e-9) for t in rs]), len(rs), slow[1], slow[6],
                  sum(not t[9] for t in rs), geo([t[13] / t[11] for t in rs])))
    for v, times in vtimes.items():  # e.g. tuned: the sizes polyk-tune found
        rs = [(t, times[t[1]]) for t in table if t[1] in times]
        if not rs:
            continue
        ratios = [(t[13] / tv[0], t[1]) for t, tv in rs]
        print("variant %-9s geomean best-peer/%s %.2f over %d cases (min %.2f, %s); %s/default geomean %.3f; wrong %d" % (
            v, v, geo([r for r, _ in ratios]), len(rs), min(ratios)[0], min(ratios)[1], v,
            geo([tv[0] / t[2] for t, tv in rs if t[2]]), sum(not tv[1] for _, tv in rs)))
    big = [t for t in table if t[8] >= 64 * 2**20]
    print("cases moving >= 64 MiB at >= 92%% of copy bandwidth: polyk %d of %d, the floor kernel %d of %d" % (
        sum(t[7] >= 0.92 for t in big), len(big), sum(t[8] / (t[11] * 1e-6) / copy_bw >= 0.92 for t in big), len(big)))
    print("cases within 92%% of the floor's speed: %d of %d (>= 64 MiB: %d of %d)" % (
        sum(bool(t[2]) and t[11] / t[2] >= 0.92 for t in table), len(table),
        sum(bool(t[2]) and t[11] / t[2] >= 0.92 for t in big), len(big)))
    host_bound = [t[1] for t in table if t[12] and t[12] >= t_flush]
    print("torch.compile's host time per call >= the flush's GPU time (%.1f us; do_bench alone would time the host"
          " there): %d cases%s" % (t_flush, len(host_bound), (": " + " ".join(host_bound)) if host_bound else ""))

if __name__ == "__main__":
    main()
