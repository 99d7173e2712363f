#!/usr/bin/env bash
# psi/1 for map fusion's prediction (issue 21, Fousek's routines): each function of the example
# maps alone at each of its threads per instance, and row copies, timed on the GPU at 31744 and
# 2^20 instances, plus a kernel's launch (a copy of one instance).
#   here:        bench/map/psi.sh prepare      -> build/psi (carry it)
#   on the GPU:  bench/map/psi.sh run          -> $OUT/psi-runs.txt, $OUT/psi.yaml (bench/map/psi-<device>.yaml)
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/psi
bin=${POLYK_BIN:-build/bin}
case ${1:-run} in
  prepare)
    rm -rf "$dir" && mkdir -p "$dir/h"
    : > "$dir/list.txt"
    for p in F skinning mlp; do
      "$bin/polyk-flatten" "examples/fousek/$p.yaml" | "$bin/polyk-schedule" --fusion-routines "$dir/routines/$p" > /dev/null || exit 1
      while read -r name opts; do
        [ -f "$dir/h/$name.cu" ] && continue
        # shellcheck disable=SC2086
        "$bin/polyk-flatten" "$dir/routines/$p/$name.yaml" | "$bin/polyk-schedule" $opts | "$bin/polyk-bind" |
          "$bin/polyk-emit" --harness -o "$dir/h/$name.cu" || exit 1
        for n in 31744 1048576; do echo "$name 1 20 check=0 n=$n" >> "$dir/list.txt"; done
      done < "$dir/routines/$p/list.txt"
    done
    echo "copy_1 1 20 check=0 n=1" >> "$dir/list.txt"
    cp -r libcore/runtime "$dir/h/runtime"
    echo "$(ls "$dir"/h/*.cu | wc -l) routines, $(wc -l < "$dir/list.txt") runs" ;;
  run)
    out=${OUT:-.}
    bench/run-list.sh "$dir/h" "$dir/list.txt" "$out/psi-runs.txt" 60
    python3 bench/map/psi.py "$out/psi-runs.txt" > "$out/psi.yaml" && cat "$out/psi.yaml" ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
