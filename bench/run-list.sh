#!/usr/bin/env bash
# Compiles DIR/*.cu with nvcc (in parallel; a binary newer than its source is kept), then runs the lines of LIST, each `BINARY ARGS...`
# (a harness and its arguments: seed, repetitions, NAME=VALUE, check=0), one at a time with a
# time limit, appending each result line to OUT (so a run cut short keeps what it measured).
# Usage (on the GPU machine): bench/run-list.sh DIR LIST OUT [SECONDS]
set -uo pipefail
dir=$1 list=$2 out=$3 limit=${4:-120}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | tee -a "$out"
# (A binary newer than its source, compiled where the harnesses were built, is kept.)
ls "$dir"/*.cu | xargs -P 16 -I{} sh -c "b=\$(echo {} | sed 's/\\.cu\$//'); [ \"\$b\" -nt {} ] || $nvcc -std=c++17 -O3 -arch=sm_90 -I$dir/runtime {} -o \$b 2> {}.log || echo 'nvcc failed: {}'"
while read -r bin args; do
  [ -z "$bin" ] && continue
  start=$(date +%s)
  # shellcheck disable=SC2086
  line=$(timeout "$limit" "$dir/$bin" $args 2>&1 | tail -1)
  rc=$?
  printf '%-40s %-28s %s (%d s)\n' "$bin" "$args" "${line:-TIMEOUT rc=$rc}" "$(($(date +%s) - start))" | tee -a "$out"
done < "$list"
