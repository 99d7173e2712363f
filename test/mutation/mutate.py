#!/usr/bin/env python3
"""Random small edits of the examples' intermediate files, fed to the stage that reads them, as a
user editing a file by hand would (the issue's own experiment, repeatable by seed). Every run must
end with exit 0, or exit 1 and one located error (`tool: file:line:col: error: ...`), or exit 1
when it gives up at its --time-limit (isl's scheduler has no deadline of its own), and write no
output file on error. Anything else (a signal, an abort, an 'internal
error', a hang, a half-written output) is reported with the edit that caused it.

Usage: mutate.py BIN_DIR WORK_DIR FILES... [--edits N] [--seed S] [--timeout T]
FILES are scop/schedule/bound/kernel/program files; the stage is chosen by each file's kind."""
import argparse, os, random, re, subprocess, sys

STAGE = {"program/1": ["polyk-flatten"], "scop/1": ["polyk-schedule"], "schedule/1": ["polyk-bind"],
         "bound/1": ["polyk-emit"], "kernel/1": ["polyk-emit"]}
LOCATED = re.compile(r"^polyk-[a-z]+: [^:]+:\d+:\d+: error: (?!internal error)")
GAVE_UP = re.compile(r"^polyk-[a-z]+: [^:]+: error: gave up after \d+ s \(--time-limit\)$")
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|\S")

def mutate(text, rng):
    lines = text.split("\n")
    kind = rng.randrange(9)
    i = rng.randrange(len(lines))
    line = lines[i]
    toks = [m for m in TOKEN.finditer(line)]
    if kind == 0 and len(lines) > 2:  # drop a line
        del lines[i]
    elif kind == 1:  # duplicate a line
        lines.insert(i, line)
    elif kind == 2 and toks:  # drop a token
        m = rng.choice(toks); lines[i] = line[:m.start()] + line[m.end():]
    elif kind == 3 and toks:  # change a number
        nums = [m for m in toks if m.group().isdigit()]
        if nums:
            m = rng.choice(nums)
            new = rng.choice(["0", "1", "-1", "2", "3", "7", "65536", "1023", "4294967296", "99999999999999999999", str(int(m.group()) + 1)])
            lines[i] = line[:m.start()] + new + line[m.end():]
    elif kind == 4 and toks:  # replace a name by another name of the file
        names = sorted(set(TOKEN.findall(text)) - {"and", "or", "mod", "floor"})
        idents = [m for m in toks if m.group()[0].isalpha()]
        if idents and names:
            m = rng.choice(idents); lines[i] = line[:m.start()] + rng.choice(names) + line[m.end():]
    elif kind == 5 and toks:  # swap two tokens
        a, b = rng.choice(toks), rng.choice(toks)
        if a.start() > b.start(): a, b = b, a
        if a.end() <= b.start():
            lines[i] = line[:a.start()] + b.group() + line[a.end():b.start()] + a.group() + line[b.end():]
    elif kind == 6:  # move a line elsewhere
        j = rng.randrange(len(lines)); lines.insert(j, lines.pop(i))
    elif kind == 7 and toks:  # insert an isl-ish or YAML-ish token
        m = rng.choice(toks)
        ins = rng.choice([" and ", " or ", "[", "]", "{", "}", ":", " -> ", ";", ", ", "0", "i", "-", "'", '"', "\\", "\t", "#"])
        lines[i] = line[:m.start()] + ins + line[m.start():]
    elif kind == 8:  # truncate the file
        return "\n".join(lines[:i])
    return "\n".join(lines)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin"); ap.add_argument("work"); ap.add_argument("files", nargs="+")
    ap.add_argument("--edits", type=int, default=200); ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-limit", type=int, default=10, help="the stages' own --time-limit")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.work, exist_ok=True)
    sources = [(f, open(f).read()) for f in a.files]
    bad = counts = gave_up = 0
    results = {0: 0, 1: 0}
    for n in range(a.edits):
        f, text = rng.choice(sources)
        m = mutate(text, rng)
        for _ in range(rng.randrange(3)):
            m = mutate(m, rng)
        kind = re.search(r"^polyk: *(\S+)", text, re.M).group(1)
        path = os.path.join(a.work, "edit-%d%s" % (n, os.path.splitext(f)[1]))
        out = os.path.join(a.work, "out-%d" % n)
        open(path, "w").write(m)
        cmd = [os.path.join(a.bin, STAGE[kind][0]), path, "-o", out, "--time-limit", str(a.time_limit)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=a.time_limit + 20)
            rc, err = r.returncode, r.stderr.strip()
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        counts += 1
        one = rc == 1 and len(err.splitlines()) == 1 and not os.path.exists(out)
        ok = rc == 0 or (one and (LOCATED.match(err) or GAVE_UP.match(err)))
        if one and GAVE_UP.match(err): gave_up += 1
        elif rc in results: results[rc] += 1
        if not ok:
            bad += 1
            print("FAIL %s (from %s): exit %s: %s" % (path, os.path.basename(f), rc, err[:300]))
        else:
            os.remove(path)
        if os.path.exists(out): os.remove(out)
    print("%d edits (seed %d): %d exit 0, %d located errors, %d gave up (--time-limit %d), %d failures" %
          (counts, a.seed, results[0], results[1], gave_up, a.time_limit, bad))
    print("%d passed, %d failed" % (counts - bad, bad))
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
