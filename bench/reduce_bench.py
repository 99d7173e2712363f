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
import yaml

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}


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
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    for c in cases.all_cases(root):
        name = c["name"]
        prog = yaml.safe_load(c["program"])
        params = prog.get("params") or {}
        lib = ctypes.CDLL(os.path.join(libdir, f"lib{name}.so"))
        launch = getattr(lib, f"polyk_{name}")
        ins, outs = [], []
        for tname, t in prog["tensors"].items():
            shape = [params[e] if isinstance(e, str) else e for e in t["shape"]]
            if t["role"] == "input":
                ins.append(torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(-1, 1).to(DT[t["type"]]))
            elif t["role"] == "output":
                outs.append(torch.empty(shape, device="cuda", dtype=DT[t["type"]]))
        fn = eval(c["torch"])
        ref = fn(*ins)
        ref = ref if isinstance(ref, tuple) else (ref,)
        args = [ctypes.c_longlong(v) for v in params.values()] + [ctypes.c_void_p(t.data_ptr()) for t in ins + outs]
        call = lambda: launch(*args, stream)
        assert call() == 0, name
        torch.cuda.synchronize()
        err = max(((o.double() - r.double()).abs().max() / r.double().abs().max().clamp_min(1e-30)).item()
                  for o, r in zip(outs, ref))
        ok = err < (2e-2 if any(t.dtype == torch.float16 for t in outs) else 1e-4)
        nbytes = sum(t.numel() * t.element_size() for t in ins + outs)
        t_polyk = median_us(call)
        t_torch = median_us(lambda: fn(*ins))
        compiled = torch.compile(fn)
        compiled(*ins)
        t_comp = median_us(lambda: compiled(*ins))
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
    big = [(n, f) for n, tp, tt, tc, r, f, ok, e in table if f * copy_bw * tp * 1e-6 >= 64 * 2**20]
    print("cases reading >= 64 MiB at >= 92%% of copy bandwidth: %d of %d" % (sum(f >= 0.92 for n, f in big), len(big)))


if __name__ == "__main__":
    main()
