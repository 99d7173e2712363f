#!/usr/bin/env bash
# Capacity pruning from NVRTC's report (polyk-tune run --max-spill), measured: each edited space of
# bench/tune/spaces searched whole on the GPU three ways, one after the other in one call:
#   plain    (nvcc only: the searches of bench/tune-exhaustive.sh),
#   nvrtc    (--resources nvrtc: each variant's kernels through NVRTC first, registers and spills logged),
#   pruned   (--max-spill 0: a variant whose kernels spill is neither built nor run).
# Prints, per space and way: wall seconds, trials run, trials pruned, the best and its trial.
#   here:  bench/tune-gpu.sh prepare
#   there: [WAYS='plain pruned'] bench/tune-spill.sh OUT [SPACE.yaml...]
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [SPACE.yaml...]" >&2; exit 2; }
out=$1
shift
spaces=("$@")
[ ${#spaces[@]} -eq 0 ] && spaces=(bench/tune/spaces/conv_r4.yaml)
dir=build/gdir tune=build/gdir/bin/polyk-tune
. bench/tune/program-of.sh
[ -x "$tune" ] || tune=build/bin/polyk-tune
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
printf '%-10s %-7s %7s %6s %7s %10s %8s\n' space way wall_s trials pruned best_us at_trial > "$out/table.txt"
for space in "${spaces[@]}"; do
  n=$(basename "$space" .yaml)
  program_of "$n" || continue
  args=()
  for c in "${check[@]}"; do args+=(--check-param "$c"); done
  for way in ${WAYS:-plain nvrtc pruned}; do
    case $way in plain) opts=() ;; nvrtc) opts=(--resources nvrtc) ;; pruned) opts=(--max-spill 0) ;; esac
    log=$out/$n.$way.jsonl
    rm -f "$log"
    start=$(date +%s)
    "$tune" run "$program" --space "$space" --runner cuda --search exhaustive --log "$log" -j "$(nproc)" \
      --runtime libcore/runtime "${args[@]}" ${opts[@]+"${opts[@]}"} -o "$out/$n.$way.best.yaml" 2> "$out/$n.$way.err"
    wall=$(($(date +%s) - start))
    echo "$n $way: $(tail -1 "$out/$n.$way.err")"
    best=$(sed -n 's/^median_us: //p' "$out/$n.$way.best.yaml")
    at=$(sed -n 's/^trials_to_best: //p' "$out/$n.$way.best.yaml")
    runs=$(sed -n 's/^trials: //p' "$out/$n.$way.best.yaml")
    pruned=$(grep -c '"status": "violated"' "$log")
    printf '%-10s %-7s %7s %6s %7s %10s %8s\n' "$n" "$way" "$wall" "$runs" "$pruned" "$best" "$at" >> "$out/table.txt"
  done
done
cat "$out/table.txt"
