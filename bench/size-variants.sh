#!/usr/bin/env bash
# Size experiments (spaces in SIZES are dropped: compile.sh splits SCHEDULE_OPTS): builds of chosen benchmark cases with explicit --sizes, timed by bench.sh run
# as variants (into the CSV's *-variants.csv) beside the default rule.
#   here: bench/size-variants.sh NAME 'CASE,CASE,...' 'SIZES' [NAME 'CASES' 'SIZES' ...]
#         (after bench/bench.sh prepare) -> build/bench/NAME/CASE.cu
# e.g. bench/size-variants.sh r4 sum_f32_1024x1024_d1 '{ kernel[1] -> tile[4, 1024]; kernel[1] -> block[4, 32]; kernel[1] -> vector[4] }'
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/bench
[ -d "$dir/default" ] || { echo "run bench/bench.sh prepare first" >&2; exit 2; }
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
python3 bench/cases.py "$src" > /dev/null
while [ $# -ge 3 ]; do
  name=$1 cases=$2 sizes=$3
  shift 3
  mkdir -p "$dir/$name"
  for c in ${cases//,/ }; do
    [ -f "$src/$c.yaml" ] || { echo "no case $c" >&2; exit 2; }
    SCHEDULE_OPTS="--sizes ${sizes// /}" POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$src/$c.yaml" "$dir/$name/$c.cu"
  done
done
