#!/usr/bin/env python3
"""bench/partition-gpus.sh's raw lines -> the partition CSV (the header of the other benchmark
files: suite,case,contender,median_us,bytes) on stdout, and a summary on stderr:

  - the partitioned program on one device against the unpartitioned launcher;
  - Matz §9.2's non-transfer overhead (beta - gamma) / alpha per device count;
  - the bytes copied between devices per run and per step;
  - a PROJECTION of the 2-, 4- and 8-GPU speedups: T_N = T_1 / N + (bytes_N / N) / BW, with T_1
    the one-GPU time, bytes_N the bytes one run copies between N virtual devices (the larger of
    a repeated run's and the first run's, which also redistributes the inputs; each device
    receiving its share over its own link), BW the one-way peer bandwidth (--bw, GB/s) and no
    overlap of copies with compute. It is a model, not a measurement.

  python3 bench/partition_table.py partition-*.txt [--bw 395] [--plot speedup.png] > bench/results/<date>-<device>-partition.csv
"""
import argparse
import re
import statistics
import sys

STEPS = {"hotspot8192": 1500, "hotspot16384": 1500, "hotspot_small": 20, "nbody65536": 96, "nbody131072": 96}


def case_of(section, program):
    """The benchmark case (the first word of the `== case ...` header), else the program."""
    return section.split()[0] if section else program


def parse(paths):
    rows = []  # (case, contender, us, bytes)
    fails = []
    real = {}  # (case, GPUs) -> alpha us, one process driving real GPUs
    first = {}  # (case, virtual devices) -> peer bytes of the first (checked) run
    section = None
    for path in paths:
        for line in open(path, errors="replace"):
            line = line.strip()
            if line.startswith("== "):
                section = line[3:]
                continue
            m = re.match(r"TIME (\S+) (\S+) devices=(\d+) alpha_us=(\S+) beta_us=(\S+) gamma_us=(\S+) peer_bytes_per_run=(\d+)", line)
            if m:
                _, backend, d, a, b, g, peer = m.groups()
                name = case_of(section, m.group(1))
                d = int(d)
                if backend == "mpi":
                    kind = "rank-virtual" if "virtual" in (section or "") else "rank"
                    base = f"polyk-{d}{kind}"
                elif backend == "gpu":
                    base = f"polyk-{d}gpu"
                    real.setdefault((name, d), float(a))
                else:
                    base = f"polyk-virtual-{d}" if d > 1 else "polyk-1gpu"
                for suffix, us in (("", a), ("-beta", b), ("-gamma", g)):
                    rows.append((name, base + suffix, float(us), int(peer)))
                continue
            m = re.match(r"PASS (\S+) \(virtual, (\d+) devices\) bitwise=\d peer_bytes=(\d+)", line)
            if m:
                first.setdefault((case_of(section, m.group(1)), int(m.group(2))), int(m.group(3)))
                continue
            m = re.match(r"TIME (\S+) single us=(\S+)", line)
            if m and "ranks" in (section or ""):
                continue  # every rank times it on GPU 0 at once: not a one-GPU time
            if m:
                rows.append((case_of(section, m.group(1)), "polyk-unpartitioned", float(m.group(2)), 0))
                continue
            m = re.match(r"PEER (\S+) (\S+) us=(\S+)", line)
            if m:
                rows.append((m.group(1), m.group(2), float(m.group(3)), 0))
                continue
            if line.startswith("FAIL") or re.match(r"rc=[1-9]", line) or "nvcc failed" in line:
                fails.append(f"{section}: {line}")
    return rows, fails, real, first


def projection(t, first, c, d, bw):
    """The projected speedup of case c on d GPUs (the model in this file's docstring)."""
    one, within = t[(c, "polyk-1gpu")]
    k = f"polyk-virtual-{d}" if d > 1 else "polyk-1gpu"
    # Between devices: an N-device run's bytes less the one-device run's (an iterated program's
    # copies of its input into its output buffers, within each device). Repeated runs find their
    # inputs in place; a single run (the first) also redistributes them (Matmul's second matrix):
    # the larger of the two.
    between = max(t[(c, k)][1] - within, first.get((c, d), 0) - first.get((c, 1), 0), 0)
    return one / (one / d + (between / d) / (bw * 1e3))  # bytes / (GB/s * 1e3) = us


PLOTTED = {"hotspot16384": "Hotspot 16384² ×1500", "nbody131072": "N-body 131072 ×96",
           "nbS17": "N-body 131072 ×96, split 17 ways (--devices 4)",
           "matmul16384": "Matmul 16384²", "jacobi3d": "Jacobi3D 512³"}


def plot(t, real, first, bw, out, title, device="H100"):
    """GPUs against speedup: measured (one process, real GPUs), projected, and ideal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.plot([1, 8], [1, 8], color="0.6", lw=1, label="ideal")
    for i, (c, label) in enumerate(PLOTTED.items()):
        measured = [(g, real[(c, 1)] / real[(c, g)]) for g in (1, 2, 4, 8) if (c, g) in real and (c, 1) in real]
        if len(measured) > 1:
            ax.plot(*zip(*measured), "o-", color=f"C{i}", label=f"{label}, measured")
        if (c, "polyk-1gpu") in t:
            proj = [(1, 1.0)] + [(d, projection(t, first, c, d, bw)) for d in (2, 4, 8) if (c, f"polyk-virtual-{d}") in t]
            if len(proj) > 1:
                ax.plot(*zip(*proj), "x--", color=f"C{i}", alpha=0.7, label=f"{label}, projected")
    ax.set_xlabel(f"GPUs ({device})")
    ax.set_ylabel("speedup over the same program on 1 GPU")
    ax.set_xticks([1, 2, 4, 8])
    ax.set_yticks([1, 2, 4, 6, 8])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--bw", type=float, default=395.0, help="one-way peer bandwidth, GB/s")
    ap.add_argument("--plot", help="also draw the speedup plot into this PNG (matplotlib)")
    ap.add_argument("--title", default="polyk-partition: measured on real GPUs, projected beyond")
    ap.add_argument("--device", default="H100", help="the GPUs' name on the plot's x axis")
    opt = ap.parse_args()
    rows, fails, real, first = parse(opt.files)
    print("suite,case,contender,median_us,bytes")
    seen = set()
    for case, contender, us, nbytes in rows:
        if (case, contender) in seen:
            continue  # the first measurement of a pair is kept
        seen.add((case, contender))
        print(f"partition,{case},{contender},{us:.1f},{nbytes}")
    t = {}
    for c, k, us, b in rows:
        t.setdefault((c, k), (us, b))  # the first, as in the CSV
    err = sys.stderr
    for f in fails:
        print("FAILED", f, file=err)
    cases = sorted({c for c, _, _, _ in rows})
    overheads = {}
    print(f"{'case':14} {'1dev/unpart':>11} {'virt2 ovh':>9} {'virt4 ovh':>9} {'xfer B/step(2)':>14} "
          f"{'proj x2':>7} {'proj x4':>7} {'proj x8':>7} {'2gpu x':>6} {'torch/1gpu':>10}", file=err)
    for c in cases:
        single = t.get((c, "polyk-unpartitioned"), (None, 0))[0]
        one = t.get((c, "polyk-1gpu"), (None, 0))[0]
        cells = [f"{one / single:11.3f}" if one and single else f"{'-':>11}"]
        for d in (2, 4):
            k = f"polyk-virtual-{d}"
            if (c, k) in t:
                a, b, g = t[(c, k)][0], t[(c, k + "-beta")][0], t[(c, k + "-gamma")][0]
                ovh = (b - g) / a
                overheads.setdefault(d, []).append(ovh)
                cells.append(f"{100 * ovh:8.2f}%")
            else:
                cells.append(f"{'-':>9}")
        steps = STEPS.get(c, 1)
        # Between devices: an N-device run's bytes less the one-device run's (an iterated
        # program's copies of its input into its output buffers, within each device).
        within = t.get((c, "polyk-1gpu"), (0, 0))[1]
        b2 = t.get((c, "polyk-virtual-2"), (0, within))[1] - within
        cells.append(f"{b2 / steps:14.0f}")
        for d in (2, 4, 8):
            k = f"polyk-virtual-{d}" if d > 1 else "polyk-1gpu"
            if one and (c, k) in t:
                cells.append(f"{projection(t, first, c, d, opt.bw):7.2f}")
            else:
                cells.append(f"{'-':>7}")
        g1, g2 = real.get((c, 1)), real.get((c, 2))
        cells.append(f"{g1 / g2:6.2f}" if g1 and g2 else f"{'-':>6}")
        peer = next((t[(c, k)][0] for k in ("torch.compile", "cuBLAS") if (c, k) in t), None)
        cells.append(f"{peer / one:10.2f}" if peer and one else f"{'-':>10}")
        print(f"{c:14} " + " ".join(cells), file=err)
    for (c, d), us in sorted(real.items()):
        if d > 1 and (c, 1) in real:
            print(f"real GPUs: {c} on {d} GPUs {real[(c, 1)] / us:.2f}x the same program on 1 GPU", file=err)
    for d, v in sorted(overheads.items()):
        print(f"median non-transfer overhead (beta - gamma) / alpha on {d} virtual devices: "
              f"{100 * statistics.median(v):.2f}% over {len(v)} workloads", file=err)
    if opt.plot:
        plot(t, real, first, opt.bw, opt.plot, opt.title, opt.device)
    print(f"(projection: T_N = T_1/N + bytes_N/(N * {opt.bw:g} GB/s), copies not overlapped; a model)", file=err)


if __name__ == "__main__":
    main()
