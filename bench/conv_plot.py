#!/usr/bin/env python3
"""TFLOP/s bars of polyk and cuDNN per conv layer, from a conv benchmark CSV (bench/conv.sh:
case, polyk_us, result, peer, eager_us = cuDNN, ...) and the layers' shapes in examples/conv/.
  /usr/bin/python3 bench/conv_plot.py bench/results/2026-11-27-h100-conv-split-rs.csv docs/conv-tflops.png
(Debian's python3-matplotlib.)"""
import csv
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def flops(layer):
    """2 K C F^2 OH OW from examples/conv/LAYER.yaml (batch 1)."""
    text = open(os.path.join(ROOT, "examples", "conv", layer + ".yaml")).read()
    params = dict((k, int(v)) for k, v in re.findall(r"(\w+): (\d+)", re.search(r"params: \{([^}]*)\}", text).group(1)))
    f = int(re.search(r"F: \{type: \w+, shape: \[K, C, (\d+), \d+\]", text).group(1))
    return 2 * params["K"] * params["C"] * f * f * params["OH"] * params["OW"]


def main():
    src, out = sys.argv[1], sys.argv[2]
    rows = [r for r in csv.DictReader(open(src)) if r["case"].startswith("conv_") and r["result"] == "PASS"]
    names, polyk, cudnn = [], [], []
    for r in rows:
        layer = r["case"][len("conv_"):]
        n = flops(layer)
        names.append(layer.upper())
        polyk.append(n / float(r["polyk_us"]) / 1e6)
        cudnn.append(n / float(r["eager_us"]) / 1e6)
    geo = math.exp(sum(math.log(c / p) for p, c in zip(polyk, cudnn)) / len(names))
    fig, ax = plt.subplots(figsize=(11, 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], polyk, width=0.4, label="polyk (default sizes)")
    ax.bar([i + 0.2 for i in x], cudnn, width=0.4, label="cuDNN (torch, TF32 off, benchmark mode)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names)
    ax.set_ylabel("TFLOP/s (f32)")
    ax.set_title(f"CNNOpt's 20 conv layers, batch 1, NCHW ({os.path.basename(src)}): polyk {1 / geo:.2f}x cuDNN (geomean)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    for n, p, c in zip(names, polyk, cudnn):
        print(f"{n:5s} polyk {p:6.2f} cuDNN {c:6.2f} TFLOP/s  {p / c:5.2f}x")
    print(f"geomean polyk / cuDNN {1 / geo:.3f}")


if __name__ == "__main__":
    main()
