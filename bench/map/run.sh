#!/usr/bin/env bash
# The map benchmark (issue 21): the variants of bench/map/variants.spec, each checked against the
# sequential reference and timed, then bench/map/table.py (peers and the floor, same process).
#   here:        bench/map/run.sh prepare          -> build/mapv (carry it)
#   on the GPU:  bench/map/run.sh run              -> $OUT/map-runs.txt, $OUT/map.csv
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/mapv
case ${1:-run} in
  prepare) rm -rf "$dir" && bench/affine-variants.sh "$dir" bench/map/variants.spec ;;
  run)
    out=${OUT:-.}
    bench/run-list.sh "$dir" "$dir/list.txt" "$out/map-runs.txt" 60
    python3 bench/map/table.py "$out/map-runs.txt" "$out/map.csv" 2>&1 | tee "$out/map-table.txt" ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
