#!/usr/bin/env python3
"""Where the benchmark's fixed cost per launch comes from: the floor kernel (move_launch in
bench/cub_peer.cu, reads only) and chosen polyk cases, each timed after three kinds of flush:
  dirty: do_bench's flush, a memset of 256 MiB, which leaves L2 full of dirty lines that the timed
         kernel's reads must write back to DRAM before they can use the space;
  clean: the same memset, then (untimed) a read of another 256 MiB, which leaves L2 full of clean
         lines of a buffer the timed kernel never touches;
  none:  no flush (inputs up to L2's size may still be in L2 from the previous repetition).
Each timed by reduce_bench.median_us (do_bench's method with the host kept ahead) with that flush.
Last, torch.compile on the sub-graphs timed by triton.testing.do_bench itself and by median_us:
where its host time per call exceeds the flush's GPU time, do_bench times the host.

Usage: flush_probe.py LIBDIR [CASE ...]      (after bench/bench.sh run built LIBDIR's libraries)
"""
import ctypes
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402
import reduce_bench as rb  # noqa: E402

MiB = 1 << 20


def main():
    libdir = sys.argv[1]
    names = sys.argv[2:] or ["sum_f32_1024x1024_d1", "sum_f32_768x21128_d1", "sum_f16_1024x131072_d1",
                             "and_bool_131072x1024_d0", "sum_f32_131072x1024_d1", "sg2"]
    lib = ctypes.CDLL(os.path.join(libdir, "libcub_peer.so"))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    other = torch.empty(256 * MiB, device="cuda", dtype=torch.uint8).random_()
    sink = torch.zeros(1, device="cuda", dtype=torch.int32)
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731

    def read(buf, nbytes):
        return lib.move_launch(0, ptr(buf), ctypes.c_longlong(nbytes), ptr(sink), ctypes.c_longlong(0), ptr(sink), stream)

    flushes = {
        "dirty": rb.l2_flush,
        "clean": lambda: (rb.l2_flush(), read(other, other.numel())),
        "none": lambda: None,
    }
    a = torch.empty(1 << 28, device="cuda", dtype=torch.float32).uniform_()
    b = torch.empty_like(a)
    t_copy = rb.median_us(lambda: b.copy_(a))
    bw = 2 * a.numel() * 4 / t_copy  # bytes per us
    del a, b
    print("1 GiB copy after the dirty flush %.2f us: %.2f TB/s (read + write)" % (t_copy, bw / 1e6))
    print("%-28s %9s %9s %9s %7s %7s   (us; bw = bytes / time over the copy's bandwidth)" % (
        "floor kernel, read only", "dirty", "clean", "none", "bw.d", "bw.c"))
    for mib in (4, 16, 64, 128, 256, 512, 1024):
        src = torch.empty(mib * MiB, device="cuda", dtype=torch.uint8).random_()
        t = {k: rb.median_us(lambda: read(src, src.numel()), f) for k, f in flushes.items()}
        print("%-28s %9.2f %9.2f %9.2f %6.0f%% %6.0f%%" % (
            "%d MiB" % mib, t["dirty"], t["clean"], t["none"], 100 * mib * MiB / t["dirty"] / bw,
            100 * mib * MiB / t["clean"] / bw))
        del src

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print("%-28s %9s %9s %9s %7s %7s" % ("polyk case", "dirty", "clean", "none", "bw.d", "bw.c"))
    for c in cases.all_cases(root):
        if c["name"] not in names:
            continue
        ins, outs, cargs = rb.case_tensors(c, gen)
        nbytes = sum(t.numel() * t.element_size() for t in ins + outs)
        launch = rb.Lib(os.path.join(libdir, "default", "lib%s.so" % c["name"]), c["name"]).fn
        t = {k: rb.median_us(lambda: launch(*cargs, stream), f) for k, f in flushes.items()}
        print("%-28s %9.2f %9.2f %9.2f %6.0f%% %6.0f%%" % (
            c["name"], t["dirty"], t["clean"], t["none"], 100 * nbytes / t["dirty"] / bw, 100 * nbytes / t["clean"] / bw))

    print("%-28s %9s %9s %9s" % ("torch.compile", "do_bench", "median_us", "host/call"))
    for c in cases.all_cases(root):
        if c["suite"] != "subgraph":
            continue
        ins = rb.case_tensors(c, gen)[0]
        compiled = torch.compile(eval(c["torch"]))
        compiled(*ins)
        call = lambda: compiled(*ins)  # noqa: E731
        print("%-28s %9.2f %9.2f %9.1f" % (c["name"], triton.testing.do_bench(call, return_mode="median") * 1000.0,
                                           rb.median_us(call), rb.host_us(call)))


if __name__ == "__main__":
    main()
