#!/usr/bin/env python3
"""One process, one method: times polyk's launchers (loaded from shared libraries), torch eager
and torch.compile on the same inputs with triton.testing.do_bench (CUDA events, warm-up, L2
flushed, median), plus a device copy (bandwidth ceiling) and an empty kernel (launch floor).
Writes bench/results/<date>-<device>.csv (suite,case,contender,median_us,bytes), prints a table.
Usage: reduce_bench.py LIBDIR CSV"""
import ctypes
import datetime
import math
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "i32": torch.int32, "bool": torch.bool}


def median_us(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1000.0


def main():
    libdir, csv = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    rows, table = [], []
    # Ceilings measured in this run: a 1 GiB device copy and an empty kernel.
    a = torch.empty(1 << 28, device="cuda", dtype=torch.float32).uniform_()
    b = torch.empty_like(a)
    t_copy = median_us(lambda: b.copy_(a))
    copy_bw = 2 * a.numel() * 4 / (t_copy * 1e-6)
    rows.append(("ceiling", "copy_1GiB", "copy", t_copy, 2 * a.numel() * 4))
    empty = torch.empty(0, device="cuda")
    t_empty = median_us(lambda: empty.add_(1))
    rows.append(("ceiling", "empty", "empty", t_empty, 0))
    del a, b
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for c in cases.single_cases():
        name = c["name"]
        lib = ctypes.CDLL(os.path.join(libdir, f"lib{name}.so"))
        launch = getattr(lib, f"polyk_{name}")
        (_, dtype, shape), = c["inputs"]
        x = torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(-1, 1).to(DT[dtype])
        fn = eval(c["torch"])
        ref = fn(x)
        out = torch.empty_like(ref)
        call = lambda: launch(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()), stream)
        call()
        torch.cuda.synchronize()
        err = ((out.double() - ref.double()).abs().max() / ref.double().abs().max().clamp_min(1e-30)).item()
        ok = err < 1e-4
        nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        t_polyk = median_us(call)
        t_torch = median_us(lambda: fn(x))
        compiled = torch.compile(fn)
        compiled(x)
        t_comp = median_us(lambda: compiled(x))
        for who, t in (("polyk", t_polyk), ("torch", t_torch), ("torch.compile", t_comp)):
            rows.append((c["suite"], name, who, t, nbytes))
        best = min(t_torch, t_comp)
        table.append((name, t_polyk, t_torch, t_comp, best / t_polyk, nbytes / (t_polyk * 1e-6) / copy_bw, ok, err))
    with open(csv, "w") as f:
        f.write("suite,case,contender,median_us,bytes\n")
        for r in rows:
            f.write("%s,%s,%s,%.3f,%d\n" % r)
    print(f"copy bandwidth {copy_bw / 1e12:.2f} TB/s (read + write), empty kernel {t_empty:.2f} us")
    print("%-34s %9s %9s %13s %7s %6s %s" % ("case", "polyk", "torch", "torch.compile", "ratio", "bw", "check"))
    for n, tp, tt, tc, ratio, frac, ok, err in table:
        print("%-34s %9.2f %9.2f %13.2f %7.2f %5.0f%% %s" % (n, tp, tt, tc, ratio, 100 * frac, "ok" if ok else "WRONG %.2g" % err))
    ratios = [t[4] for t in table]
    print("geomean best-peer/polyk: %.2f; slowest case %.2fx" % (math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios)))


if __name__ == "__main__":
    main()
