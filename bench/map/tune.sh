#!/usr/bin/env bash
# polyk-tune run --fusion-search on the GPU (issue 21, step 6): each map's top K covers of the
# search, built, checked and timed, the fastest kept; at 31744 and at 2^20 instances (checked at
# 31744). Needs bench/tune-gpu.sh prepare (polyk-tune and its libraries in build/gdir).
#   on the GPU:  bench/map/tune.sh [K]   -> $OUT/map-tune/*.{jsonl,err,best.yaml}, a table
set -uo pipefail
cd "$(dirname "$0")/../.."
k=${1:-8}
out=${OUT:-.}/map-tune
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/build/gdir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
for p in F skinning mlp; do
  for n in 31744 1048576; do
    check=()
    [ "$n" != 31744 ] && check=(--check-param n=31744)
    build/gdir/bin/polyk-tune run "examples/fousek/$p.yaml" --fusion-search "$k" --psi bench/map/psi-h100.yaml --runner cuda \
      --search exhaustive --param "n=$n" "${check[@]}" -j "$(nproc)" --runtime libcore/runtime --log "$out/${p}_$n.jsonl" \
      -o "$out/${p}_$n.best.yaml" 2> "$out/${p}_$n.err"
    printf '%-9s %8s  %s  cover %s %s\n' "$p" "$n" "$(tail -1 "$out/${p}_$n.err")" "$(sed -n 's/^cover: //p' "$out/${p}_$n.best.yaml")" \
      "$(sed -n 's/^sizes: //p' "$out/${p}_$n.best.yaml" | grep -o 'threads\[[^]]*\]' | tr '\n' ' ')"
  done
done
