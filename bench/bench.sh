#!/usr/bin/env bash
# Benchmark of polyk against torch eager and torch.compile (bench/reduce_bench.py) on the GPU:
# suite 1 (single f32 sums) and suite 2 (Panamera sub-graphs, softmax, layer norm).
#   here:  bench/bench.sh prepare   -> build/bench/*.cu (launchers only, no harness)
#   there: bench/bench.sh run       -> shared libraries, the driver; CSV to $OUT and bench/results
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build/bench
if [ "${1:-run}" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir/src"
  python3 bench/cases.py "$dir/src" > /dev/null
  for p in "$dir"/src/*.yaml; do
    POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/$(basename "$p" .yaml).cu" || exit 1
  done
  rm -rf "$dir/src" && cp -r libcore/runtime "$dir/runtime"
  ls "$dir"/*.cu | wc -l
  exit 0
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ls "$dir"/*.cu | xargs -P "$(nproc)" -I{} sh -c "n=\$(basename {} .cu); $nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -I$dir/runtime {} -o $dir/lib\$n.so || echo 'nvcc failed: {}'"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9-')
csv=${OUT:-/tmp}/$(date +%F)-$device.csv
PYTHONUNBUFFERED=1 python3 bench/reduce_bench.py "$dir" "$csv"
