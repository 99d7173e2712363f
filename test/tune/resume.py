#!/usr/bin/env python3
"""polyk-tune's log survives kill -9 (issue 19): a search killed with SIGKILL mid-run, its log's
last record then cut in half (as a kill during the write leaves it), resumes and ends with exactly
the configurations an uninterrupted search with the same seed tries: none lost, none repeated.
Also: a log recorded on another device is refused, and best.yaml feeds polyk-schedule --tuning.
Runs on the CPU stand-in runner (--runner cpu), so CI tests the log without a GPU. The space is
polyk-tune space's with emit.blocks fixed: the search tries emit.blocks's neighbours of each new
best, and which trial is best on a loaded CPU is noise (a CI run once drew other configurations).

Env: POLYK_BIN (the stage tools), POLYK_SRC (the source tree).
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("POLYK_BIN", "build/bin")
SRC = os.environ.get("POLYK_SRC", ".")
PROGRAM = os.path.join(SRC, "examples/blas/gemm.yaml")
ARGS = ["--runner", "cpu", "--search", "random", "--seed", "5", "--trials", "10", "-j", "1",
        "--param", "M=33", "--param", "N=65", "--param", "K=17", "--runtime", os.path.join(SRC, "libcore/runtime")]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def trials(log):
    out = []
    with open(log) as f:
        for line in f:
            r = json.loads(line)
            if "trial" in r:
                out.append(r)
    return out


def tune(log, best, **kw):
    return subprocess.run([f"{BIN}/polyk-tune", "run", PROGRAM, "--log", log, "-o", best, *ARGS],
                          capture_output=True, text=True, **kw)


def fixed_blocks_space(work):
    """polyk-tune space's space with emit.blocks at its default alone: the proposals then depend on
    the seed only, not on which trial measured fastest."""
    params = [a for i, a in enumerate(ARGS) if i and ARGS[i - 1] == "--param"]
    p = subprocess.run([f"{BIN}/polyk-tune", "space", PROGRAM, *[x for q in params for x in ("--param", q)]],
                       capture_output=True, text=True, check=True)
    text, n = re.subn(r"\{name: emit\.blocks, values: \[[^]]*\], default: (\d+)\}",
                      r"{name: emit.blocks, values: [\1], default: \1}", p.stdout)
    if n != 1:
        sys.exit("polyk-tune space printed no emit.blocks parameter:\n" + p.stdout)
    path = os.path.join(work, "space.yaml")
    with open(path, "w") as f:
        f.write(text)
    ARGS.extend(["--space", path])


def main():
    with tempfile.TemporaryDirectory() as work:
        fixed_blocks_space(work)
        whole, cut = os.path.join(work, "whole.jsonl"), os.path.join(work, "cut.jsonl")
        p = tune(whole, os.path.join(work, "whole.yaml"))
        check(p.returncode == 0, f"an uninterrupted search runs (exit {p.returncode}: {p.stderr.strip()[-300:]})")
        reference = [t["config"] for t in trials(whole)]
        check(len(reference) == 10 and len(set(reference)) == 10, "it logs 10 distinct trials")

        # Kill -9 once 4 trials are logged, then cut the last record in half.
        proc = subprocess.Popen([f"{BIN}/polyk-tune", "run", PROGRAM, "--log", cut, "-o", os.path.join(work, "cut.yaml"), *ARGS],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if os.path.exists(cut) and len(trials(cut)) >= 4:
                break
            time.sleep(0.05)
        killed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        check(killed, "the search was killed mid-run")
        before = trials(cut)
        with open(cut) as f:
            last = f.read().splitlines()[-1]
        with open(cut, "a") as f:
            f.write(last[: len(last) // 2])  # the next record, cut by the kill
        p = tune(cut, os.path.join(work, "cut.yaml"))
        check(p.returncode == 0, f"the killed search resumes (exit {p.returncode}: {p.stderr.strip()[-300:]})")
        check("dropped a truncated last record" in p.stderr, "the cut record is dropped, and said so")
        check(f"resuming: {len(before)} trials" in p.stderr, f"it resumes from the {len(before)} trials logged")
        after = trials(cut)
        got = [t["config"] for t in after]
        check(got[: len(before)] == [t["config"] for t in before], "the logged trials are kept as they were")
        check(len(got) == 10 and len(set(got)) == 10, "no trial repeated, 10 in all")
        check(sorted(got) == sorted(reference), "the same configurations as the uninterrupted search")
        check([t["trial"] for t in after] == list(range(10)), "trial numbers 0..9, in order")
        with open(cut) as f:
            check(f.read().endswith("}\n"), "the log ends with a whole record")
        p = tune(cut, os.path.join(work, "again.yaml"))
        check(p.returncode == 0 and len(trials(cut)) == 10, "rerunning a finished search runs nothing more")

        # A log written before emit.mma existed (an older polyk-tune: no tensor cores, keys without
        # the parameter) resumes: its trials count as the configurations with emit.mma=0.
        old = os.path.join(work, "old.jsonl")
        with open(cut) as f:
            lines = f.read().splitlines(True)
        kept = [json.loads(l) for l in lines[1:] if '"trial"' in l and "emit.mma=0" in l]
        with open(old, "w") as g:
            g.write(lines[0])
            for i, t in enumerate(kept):
                t["trial"], t["config"] = i, re.sub(r"(^| )emit\.mma=0( |$)", r"\1", t["config"]).strip()
                g.write(json.dumps(t) + "\n")
        check(len(kept) >= 2 and all("emit.mma" not in t["config"] for t in kept), f"an old log of {len(kept)} trials without emit.mma")
        p = tune(old, os.path.join(work, "old.yaml"))
        check(p.returncode == 0 and f"resuming: {len(kept)} trials" in p.stderr, f"it resumes ({p.stderr.strip()[-300:]})")
        resumed = trials(old)
        canonical = {re.sub(r"(^| )emit\.mma=0( |$)", r"\1", t["config"]).strip() for t in resumed}
        check(len(resumed) == 10 and len(canonical) == 10, "none of its configurations is run again (10 distinct in all)")
        check(os.path.exists(os.path.join(work, "old.yaml")), "and best.yaml is written")

        # Another device: refused.
        other = os.path.join(work, "other.jsonl")
        with open(cut) as f, open(other, "w") as g:
            lines = f.read().splitlines(True)
            head = json.loads(lines[0])
            head["device"] = "cpu: some other machine"
            g.write(json.dumps(head) + "\n" + "".join(lines[1:]))
        p = tune(other, os.path.join(work, "other.yaml"))
        check(p.returncode == 1 and "refusing to resume" in p.stderr and ":1:1: error:" in p.stderr,
              f"a log of another device is refused with file:line:col ({p.stderr.strip()[-200:]})")
        check(not os.path.exists(os.path.join(work, "other.yaml")), "and no best.yaml is written")

        # best.yaml drives polyk-schedule, and the tuned sizes run correctly.
        best = os.path.join(work, "cut.yaml")
        flat = subprocess.run([f"{BIN}/polyk-flatten", PROGRAM], capture_output=True, text=True).stdout
        s = subprocess.run([f"{BIN}/polyk-schedule", "--tuning", best, "--dump-sizes"], input=flat, capture_output=True, text=True)
        with open(best) as f:
            sizes = [l.split(": ", 1)[1].strip().strip('"') for l in f if l.startswith("sizes:")][0]
        # The same items, in either order (the schedule prints a vector of 1, which best.yaml gives
        # so that no default replaces it, as none).
        def items(text):
            return {i for i in re.findall(r"kernel\[\d+\] -> \w+\[[^]]*\]", text) if not re.search(r"-> vector\[1\]$", i)}
        printed = [l for l in s.stderr.splitlines() if l.startswith("{ kernel")]
        check(s.returncode == 0 and len(printed) == 1 and items(printed[0]) == items(sizes),
              f"polyk-schedule --tuning uses best.yaml's sizes {sizes} ({printed})")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
