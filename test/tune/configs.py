#!/usr/bin/env python3
"""Configurations drawn uniformly at random (`polyk-tune generate --random`) from the spaces of examples (reductions and affine
programs) go through the whole pipeline with `--sizes`, and the kernels' code run on the CPU
(`--target=c-mapped`) matches the sequential reference at the example's ci-params, two seeds.
A space whose configurations the stages reject, or that compute wrong results, fails here.

  configs.py [PER_EXAMPLE]     POLYK_RANDOM_SEED=N draws others (default 1)
Env: POLYK_BIN (the stage tools), POLYK_SRC (the source tree).
"""
import os
import random
import re
import subprocess
import sys
import tempfile

BIN = os.environ.get("POLYK_BIN", "build/bin")
SRC = os.environ.get("POLYK_SRC", ".")
EXAMPLES = ["blas/gemm", "blas/gemv", "contraction/abc_bda_dc", "stencil/gaussian2d", "stencil/hotspot", "stencil/hotspot_iter",
            "conv/d1", "sum_i32", "yreduce", "colsum_f16", "panamera/sg4", "panamera/sg7", "softmax"]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    per = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    seed = int(os.environ.get("POLYK_RANDOM_SEED", "1"))
    r = random.Random(seed)
    failed = total = 0
    with tempfile.TemporaryDirectory() as work:
        for ex in EXAMPLES:
            prog = os.path.join(SRC, "examples", ex + ".yaml")
            params = re.findall(r"^# ci-params:(.*)$", open(prog).read(), re.M)
            params = params[0].split() if params else []
            space = os.path.join(work, "space.yaml")
            p = run([f"{BIN}/polyk-tune", "space", prog, "-o", space])
            if p.returncode:
                print(f"FAIL {ex}: polyk-tune space: {p.stderr.strip()}")
                failed += 1
                continue
            lines = run([f"{BIN}/polyk-tune", "generate", space, "--list", str(per), "--random",
                         "--seed", str(r.randint(1, 1 << 30))]).stdout.splitlines()
            for sizes in lines[1:]:
                total += 1
                flat = run([f"{BIN}/polyk-flatten", prog]).stdout
                s = run([f"{BIN}/polyk-schedule", "--sizes", sizes], input=flat)
                b = run([f"{BIN}/polyk-bind"], input=s.stdout) if s.returncode == 0 else s
                c = os.path.join(work, "k.c")
                e = run([f"{BIN}/polyk-emit", "--target=c-mapped", "--harness", "-o", c], input=b.stdout) if b.returncode == 0 else b
                err = e.stderr.strip() if e.returncode else ""
                if not err:
                    cc = run(["cc", "-std=c99", "-O1", f"-I{SRC}/libcore/runtime", c, "-o", c + ".bin", "-lm"])
                    err = cc.stderr.strip()[:500] if cc.returncode else ""
                for sd in ["1", "7"] if not err else []:
                    out = run([c + ".bin", sd, *params], timeout=120)
                    if out.returncode or "PASS" not in out.stdout:
                        err = f"seed {sd}: {out.stdout.strip()} {out.stderr.strip()}"
                        break
                if err:
                    failed += 1
                    print(f"FAIL {ex} --sizes '{sizes}': {err}")
                else:
                    print(f"PASS {ex} --sizes '{sizes}'")
    print(f"{total - failed} of {total} random configurations of {len(EXAMPLES)} spaces passed (POLYK_RANDOM_SEED={seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
