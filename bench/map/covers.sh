#!/usr/bin/env bash
# Map fusion's search against measurement (issue 21): every cover polyk-schedule --fusion=search
# finds (--fusion-covers 1000: all of them for the example maps), predicted from
# bench/map/psi-h100.yaml at 31744 and at 2^20 instances, each built and timed on the GPU at both
# sizes (checked against the reference at 31744). bench/map/covers.py joins them: the rank
# correlation, the best against no fusion and against everything fused (the paper's 2.49x, 1.46x).
#   here:        bench/map/covers.sh prepare      -> build/covers (carry it)
#   on the GPU:  bench/map/covers.sh run          -> $OUT/covers-runs.txt, $OUT/covers.csv
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/covers
bin=${POLYK_BIN:-build/bin}
psi=${PSI:-bench/map/psi-h100.yaml}
programs=${PROGRAMS:-F skinning mlp}
case ${1:-run} in
  prepare)
    rm -rf "$dir" && mkdir -p "$dir/h"
    : > "$dir/list.txt"
    for p in $programs; do
      for n in 31744 1048576; do
        sed "s/^params: {n: 31744}/params: {n: $n}/" "examples/fousek/$p.yaml" > "$dir/${p}_$n.yaml"
        "$bin/polyk-flatten" "$dir/${p}_$n.yaml" | "$bin/polyk-schedule" --fusion=search --psi "$psi" --fusion-covers 1000 \
          --fusion-candidates "$dir/${p}_$n.fusion.yaml" > /dev/null || exit 1
      done
      covers=$(grep -c "^    - {cover:" "$dir/${p}_31744.fusion.yaml")
      for ((r = 0; r < covers; r++)); do
        "$bin/polyk-flatten" "$dir/${p}_31744.yaml" | "$bin/polyk-schedule" --fusion=search --psi "$psi" --fusion-covers 1000 --fusion-rank $r |
          "$bin/polyk-bind" | "$bin/polyk-emit" --harness -o "$dir/h/${p}_$r.cu" || exit 1
        echo "${p}_$r 1 20 n=31744" >> "$dir/list.txt"
        echo "${p}_$r 1 20 n=1048576 check=0" >> "$dir/list.txt"
      done
    done
    cp -r libcore/runtime "$dir/h/runtime"
    echo "$(ls "$dir"/h/*.cu | wc -l) covers, $(wc -l < "$dir/list.txt") runs" ;;
  run)
    out=${OUT:-.}
    bench/run-list.sh "$dir/h" "$dir/list.txt" "$out/covers-runs.txt" 60 > /dev/null
    python3 bench/map/covers.py "$dir" "$out/covers-runs.txt" "$out/covers.csv" | tee "$out/covers-table.txt" ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
