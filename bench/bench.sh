#!/usr/bin/env bash
# Benchmark of polyk against CUB, torch eager and torch.compile (bench/reduce_bench.py) on the GPU:
# suite 1 (single reductions) and suite 2 (Panamera's sub-graphs, softmax, layer norm).
#   here:  bench/bench.sh prepare [VARIANT=EMIT_OPTS | VARIANT=flatten:FLATTEN_OPTS ...]
#            -> build/bench/default/*.cu (the toolchain's defaults) and build/bench/VARIANT/*.cu;
#               build/bench/programs/*.yaml (the cases); POLYK_TUNED=DIR adds build/bench/tuned/*.cu
#               from polyk-tune's DIR/<case>.best.yaml; POLYK_BENCH_RANDOM / _SUITES: bench/cases.py
#   there: bench/bench.sh run [reduce_bench.py options]   (POLYK_BENCH_DIR: another dir than build/bench)
#            -> shared libraries, the driver; CSV to $OUT (or /tmp), table on stdout
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${POLYK_BENCH_DIR:-build/bench}
if [ "${1:-run}" = prepare ]; then
  shift
  rm -rf "$dir" && mkdir -p "$dir/src" "$dir/default"
  python3 bench/cases.py "$dir/src" > /dev/null
  for p in "$dir"/src/*.yaml; do
    POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/default/$(basename "$p" .yaml).cu" || exit 1
  done
  for spec in "$@"; do  # VARIANT=EMIT_OPTS, e.g. shfl=--block-reduce=shfl; VARIANT=flatten:OPTS for polyk-flatten's
    v=${spec%%=*} opts=${spec#*=} fopts=
    case "$opts" in flatten:*) fopts=${opts#flatten:} opts= ;; esac
    mkdir -p "$dir/$v"
    for p in "$dir"/src/*.yaml; do
      # shellcheck disable=SC2086
      FLATTEN_OPTS=$fopts POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/$v/$(basename "$p" .yaml).cu" $opts || exit 1
    done
  done
  # POLYK_TUNED=DIR: a variant `tuned` from the best.yaml files polyk-tune wrote there (DIR/<case>.best.yaml).
  if [ -n "${POLYK_TUNED:-}" ]; then
    mkdir -p "$dir/tuned"
    for p in "$dir"/src/*.yaml; do
      n=$(basename "$p" .yaml)
      [ -f "$POLYK_TUNED/$n.best.yaml" ] || continue
      SCHEDULE_OPTS="--tuning $POLYK_TUNED/$n.best.yaml" POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/tuned/$n.cu" || exit 1
    done
  fi
  rm -rf "$dir/programs" && mv "$dir/src" "$dir/programs" && cp -r libcore/runtime "$dir/runtime" && cp bench/cub_peer.cu "$dir/"
  ls "$dir"/*/*.cu | wc -l
  exit 0
fi
shift || true
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
flags="-std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared"
# shellcheck disable=SC2086
[ "$dir/libcub_peer.so" -nt "$dir/cub_peer.cu" ] || $nvcc $flags "$dir/cub_peer.cu" -o "$dir/libcub_peer.so" &
ls "$dir"/*/*.cu | xargs -P "$(nproc)" -I{} sh -c \
  "n=\$(basename {} .cu); d=\$(dirname {}); [ \$d/lib\$n.so -nt {} ] || $nvcc $flags -I$dir/runtime {} -o \$d/lib\$n.so || echo 'nvcc failed: {}'"
wait
variants=$(cd "$dir" && ls -d */ | tr -d / | grep -v -e '^default$' -e '^runtime$' | paste -sd, -)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9-')
csv=${OUT:-/tmp}/$(date +%F)-$device.csv
PYTHONUNBUFFERED=1 python3 bench/reduce_bench.py "$dir" "$csv" --variants "$variants" "$@"
