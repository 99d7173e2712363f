#!/usr/bin/env bash
# polyk-tune on the GPU (--runner cuda): each PROGRAM searched for at most TRIALS trials or SECONDS
# seconds, its log, stderr and best.yaml in OUT/tune.tgz, then a table of the defaults' and the
# best's medians (the harness's timing: CUDA events, L2 flushed, median of --reps).
#   here:  bench/tune-gpu.sh prepare     -> build/gdir/{bin,lib}: polyk-tune and its shared libraries
#   there: bench/tune-gpu.sh run OUT TRIALS SECONDS [SEARCH] PROGRAM.yaml[@NAME=VALUE,...]...
#          (SEARCH: random (default), exhaustive, anneal or model: TUNE_MODEL's ranking)
#          (@...: polyk-tune's --check-param sizes, for programs whose CPU reference is slow)
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build/gdir
if [ "${1:-}" = prepare ]; then
  mkdir -p "$dir/bin" "$dir/lib"
  strip -o "$dir/bin/polyk-tune" build/bin/polyk-tune
  for l in $(ldd build/bin/polyk-tune | awk '/=> \// { print $3 }' | grep -E 'isl|yaml|spdlog|fmt|gmp|stdc\+\+|gcc_s|xgboost|gomp|dmlc|glpk|amd|ltdl|suitesparse|libz'); do cp -L "$l" "$dir/lib/"; done
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 prepare | run OUT TRIALS SECONDS [SEARCH] PROGRAM.yaml..." >&2; exit 2; }
dest=$2 trials=$3 seconds=$4 out=/tmp/polyk-tune-out
shift 4
search=random
case ${1:-} in exhaustive|random|anneal|model) search=$1; shift ;; esac
# (model: ranked by TUNE_MODEL, default bench/tune/h100.model.)
model=()
[ "$search" = model ] && model=(--model "${TUNE_MODEL:-bench/tune/h100.model}")
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rm -rf "$out" && mkdir -p "$out" "$dest"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
start=$(date +%s)
for arg in "$@"; do
  p=${arg%%@*} check=()
  [ "$p" != "$arg" ] && for c in $(echo "${arg#*@}" | tr , ' '); do check+=(--check-param "$c"); done
  n=$(basename "$p" .yaml)
  # TUNE_BUDGET=S: no new program after S seconds (the rest are listed as skipped).
  if [ -n "${TUNE_BUDGET:-}" ] && [ $(($(date +%s) - start)) -ge "$TUNE_BUDGET" ]; then echo "skipped $n (TUNE_BUDGET)"; continue; fi
  "$dir/bin/polyk-tune" run "$p" --runner cuda --search "$search" ${model[@]+"${model[@]}"} --log "$out/$n.jsonl" --trials "$trials" --time "$seconds" \
    -j "$(nproc)" --runtime libcore/runtime ${check[@]+"${check[@]}"} -o "$out/$n.best.yaml" 2> "$out/$n.err"
  tail -1 "$out/$n.err"
done
for p in program "${@%%@*}"; do
  [ "$p" = program ] && { printf '%-22s %12s %12s %8s %8s %8s %-16s %s\n' program default_us tuned_us speedup trials to_best points/prefetch sizes; continue; }
  n=$(basename "$p" .yaml) f=$out/$n.best.yaml
  [ -f "$f" ] || { printf '%-22s (no result: %s)\n' "$n" "$(tail -1 "$out/$n.err")"; continue; }
  v() { sed -n "s/^$1: //p" "$f" | tr -d '"'; }
  printf '%-22s %12s %12s %8s %8s %8s %-16s %s\n' "$n" "$(v default_us)" "$(v median_us)" "$(v speedup)" "$(v trials)" "$(v trials_to_best)" \
    "$(v points)/$(v prefetch)" "$(v sizes)"
done | tee "$out/table.txt"
tar czf "$dest/tune.tgz" -C "$out" .
