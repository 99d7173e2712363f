#!/usr/bin/env bash
# The 20 conv layers of CNNOpt's Table 2 (examples/conv) at polyk's default sizes, cuDNN in the
# same call (bench/affine_peers.py: fp32, TF32 off, cudnn.benchmark, do_bench median, L2 flushed).
#   here:               bench/conv.sh prepare [DIR]   (DIR: build/conv; carry it)
#       each layer's harness at the defaults, and with OLD_BIN=DIR2 (another build's tools) the
#       same layers as NAME_old, timed beside them (a before / after in one call)
#   on the GPU machine: bench/conv.sh run [DIR] [OUT]  -> checks each layer against the CPU
#       reference at full size (both --determinism modes), times it, then cuDNN; writes
#       OUT/conv.csv (the affine benchmark's header) and prints the table, geomean last
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
dir=${2:-build/conv}
# CONV_SRC: the programs' folder (examples/conv/layouts: batch 8 and NHWC of four layers).
src=${CONV_SRC:-examples/conv}
layers=$(ls "$src"/[a-z][0-9]*.yaml | xargs -n1 basename | sed 's/\.yaml$//')
if [ "$mode" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  : > "$dir/list.txt"
  for l in $layers; do
    POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$src/$l.yaml" "$dir/conv_$l.cu" --harness || exit 1
    POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$src/$l.yaml" "$dir/conv_$l.det.cu" --harness --determinism=run_to_run || exit 1
    echo "conv_$l 1 10" >> "$dir/list.txt"
    echo "conv_$l.det 1 3" >> "$dir/list.txt"
    if [ -n "${OLD_BIN:-}" ]; then
      POLYK_BIN=$OLD_BIN pipelines/compile.sh "$src/$l.yaml" "$dir/conv_${l}_old.cu" --harness || exit 1
      echo "conv_${l}_old 1 10 check=0" >> "$dir/list.txt"
    fi
  done
  rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
  echo "$(ls "$dir"/*.cu | wc -l) harnesses in $dir"
  exit 0
fi
out=${3:-${OUT:-.}}
bash bench/run-list.sh "$dir" "$dir/list.txt" "$out/conv-run.txt" 300 > /dev/null
echo "$(grep -c ' PASS ' "$out/conv-run.txt") PASS, $(grep -c ' FAIL \|TIMEOUT\|nvcc failed' "$out/conv-run.txt") FAIL"
grep ' FAIL \|TIMEOUT' "$out/conv-run.txt"
# The table bench/affine_peers.py reads: NAME RESULT MAX_ERR MEDIAN_US.
awk '{r=""; e=""; t=""; for (i = 2; i <= NF; i++) { if ($i ~ /^(PASS|FAIL|UNCHECKED)$/ && r == "") r = $i; if ($i ~ /^max_err=/) e = substr($i, 9); if ($i ~ /^median_us=/) t = substr($i, 11) }
      if ($1 !~ /_old$/) print $1, r, e, t}' "$out/conv-run.txt" > "$out/conv-table.txt"
python3 bench/affine_peers.py "$out/conv-table.txt" "$out/conv.csv" --no-compile --exact="$(echo $layers | sed 's/\([^ ]*\)/conv_\1/g; s/ /,/g')" | tail -21
python3 - "$out/conv.csv" "$out/conv-run.txt" <<'EOF'
import csv, math, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
old = {}
for line in open(sys.argv[2]):
    m = re.match(r"(conv_\S+)_old\s.*median_us=(\S+)", line)
    if m:
        old[m.group(1)] = float(m.group(2))
ratios = [float(r["best_peer_over_polyk"]) for r in rows]
print(f"geomean cuDNN/polyk over {len(ratios)} layers: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")
if old:
    print(f"{'layer':10} {'before us':>10} {'after us':>10} {'speedup':>8}")
    for r in rows:
        if r["case"] in old:
            print(f"{r['case']:10} {old[r['case']]:10.1f} {float(r['polyk_us']):10.1f} {old[r['case']] / float(r['polyk_us']):8.2f}")
    g = [old[r["case"]] / float(r["polyk_us"]) for r in rows if r["case"] in old]
    print(f"geomean speedup over the old defaults: {math.exp(sum(map(math.log, g)) / len(g)):.3f}")
EOF
