#!/usr/bin/env bash
# polyk-partition on one GPU (issue 25): each workload's multi-device harness (polyk-emit
# --partition --harness) checked on N virtual devices against the one-GPU run (bit for bit), then
# timed: the unpartitioned launcher, and per device count Matz §9.2's alpha (full run), beta
# (transfers off, tracking on) and gamma (tracking off), with the bytes copied between devices.
#   here (no GPU needed):  bench/partition.sh prepare   -> build/partition/*.cu (+ runtime, Boost.ICL headers)
#   on the GPU machine:    bench/partition.sh run       -> compiles, runs; raw lines to $OUT/partition.txt
# ONLY="a b": just those cases (both steps).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
dir=${2:-build/partition}
bin=${POLYK_BIN:-build/bin}
# name  example  run arguments (seed, params, device counts, timed repetitions)
cases() {
  cat <<'LIST'
hotspot_small examples/stencil/hotspot_iter.yaml 1 N=300 S=20 devices=1,2,3,4,8
hotspot8192 examples/stencil/hotspot_iter.yaml 1 N=8192 S=1500 check=0 devices=1,2,4 time=2
hotspot16384 examples/stencil/hotspot_iter.yaml 1 N=16384 S=1500 check=0 devices=1,2,4,8 time=2
jacobi3d examples/stencil/jacobi3d.yaml 1 check=0 devices=1,2,4 time=10
nbody65536 examples/nbody_steps.yaml 1 check=0 devices=1,2,4 time=2
nbody131072 examples/nbody_steps.yaml 1 N=131072 check=0 devices=1,2,4,8 time=1
nbody131072s examples/nbody_steps.yaml 1 N=131072 check=0 devices=1,2,4,8 time=1
matmul8192 examples/blas/gemm4096.yaml 1 M=8192 N=8192 K=8192 check=0 devices=1,2,4,8 time=3
matmul16384 examples/blas/gemm4096.yaml 1 M=16384 N=16384 K=16384 check=0 devices=1,2,4,8 time=1
sg7_b2048 examples/panamera/sg7.yaml 1 B=2048 devices=1,2,4,8 time=10
grad_bf16 examples/batch_grad_bf16.yaml 1 B=1024 H=65536 devices=1,2,4,8 time=10
LIST
}
# polyk-schedule's options per case: nbody131072s is N-body sized for 4 GPUs (--devices 4: one
# thread a body leaves 4 GPUs' SMs short of threads, so its sum over bodies is split 17 ways, on
# every device count alike). The others have blocks enough at their sizes.
sched_opts() {
  case $1 in
    nbody131072s) echo "--devices 4" ;;
  esac
}
if [ "$mode" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  cases | while read -r name example _; do
    if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then continue; fi
    # shellcheck disable=SC2046
    "$bin/polyk-flatten" "$example" | "$bin/polyk-schedule" --time-tile=0 $(sched_opts "$name") | "$bin/polyk-bind" > "$dir/$name.bound.yaml" || exit 1
    "$bin/polyk-partition" "$dir/$name.bound.yaml" -o "$dir/$name.partition.yaml" || exit 1
    "$bin/polyk-emit" "$dir/$name.bound.yaml" --partition "$dir/$name.partition.yaml" --harness -o "$dir/$name.cu" || exit 1
  done
  cp -r libcore/runtime "$dir/runtime"
  # Boost.ICL is header-only; the GPU machine may lack libboost-dev, so the headers a harness
  # includes travel with it (those nvcc reports).
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" -std=c++17 -arch=sm_90 -I libcore/runtime -M "$(ls "$dir"/*.cu | head -1)" | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
    while read -r h; do mkdir -p "$dir/boost/$(dirname "${h#/usr/include/}")" && cp "$h" "$dir/boost/${h#/usr/include/}"; done
  du -sh "$dir"
  exit 0
fi
out=${OUT:-.}/partition.txt
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee "$out"
# Binaries built beforehand (bench/partition-gpus.sh prepare builds them where nvcc is) are kept.
for f in "$dir"/*.cu; do [ -x "${f%.cu}" ] || echo "$f"; done | xargs -r -P 8 -I{} sh -c "$nvcc -std=c++17 -O3 -arch=sm_90 -I$dir/runtime -I$dir/boost {} -o \$(echo {} | sed 's/\\.cu\$//') 2> {}.log || { echo 'nvcc failed: {}'; head -20 {}.log; }"
# ONLY="a b": just those cases.
cases | while read -r name _ args; do
  if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then continue; fi
  echo "== $name $args" | tee -a "$out"
  # shellcheck disable=SC2086
  timeout 150 "$dir/$name" $args 2>&1 | tee -a "$out"
done
