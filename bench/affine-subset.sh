#!/usr/bin/env bash
# One device call for a subset of the affine examples: runs DIR/list.txt with bench/run-list.sh
# (each line a harness and its arguments; `check=0` rows time sizes whose CPU reference is too
# slow, checked at a smaller size in another row), then the peers of the cases run at full size
# (bench/affine_peers.py --only=PREFIXES), all in one run. Output under OUT.
# Usage (on the GPU machine): bench/affine-subset.sh DIR OUT PREFIXES
set -u
dir=$1 out=$2 only=$3
bash bench/run-list.sh "$dir" "$dir/list.txt" "$out/run.txt" 60
# The peers' table: rows at the program's own sizes (no NAME=VALUE), checked or UNCHECKED.
python3 - "$out/run.txt" > "$out/table.txt" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    if re.search(r"\s[A-Z]=\d+", line): continue
    m = re.match(r"(\S+)\s.*?\s(PASS|UNCHECKED|FAIL) .*median_us=(\S+)", line)
    if m: print(m.group(1), "FAIL" if m.group(2) == "FAIL" else "PASS", "-", m.group(3))
PY
cat "$out/table.txt"
python3 bench/affine_peers.py "$out/table.txt" "$out/affine.csv" --only="$only" 2>&1 | grep -v Warning | grep -v warnings.warn | tail -16
