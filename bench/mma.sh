#!/usr/bin/env bash
# The tensor-core path (polyk-emit --mma=tf32x3) against the default SIMT kernels and cuBLAS, in one
# device call.
#   here:        bench/mma.sh prepare DIR      (the harnesses: DIR/*.cu, DIR/list.txt)
#   GPU machine: bench/mma.sh run DIR OUT      (carry DIR; compiles, checks, times; cuBLAS beside)
# The GEMM sizes checked are drawn at random (seed 20261127, sides up to 3000).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${POLYK_BIN:-build/bin}
case ${1:-} in
prepare)
  dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  mma="{kernel[0]->tile[128,128];kernel[0]->block[32,4];kernel[0]->reduce[16];kernel[0]->vector[1]}"
  for p in blas/gemm4096 contraction/ab_bc; do
    n=$(basename $p)
    "$bin/polyk-flatten" examples/$p.yaml | "$bin/polyk-schedule" | "$bin/polyk-bind" | "$bin/polyk-emit" --harness -o "$dir/${n}_simt.cu"
    "$bin/polyk-flatten" examples/$p.yaml | "$bin/polyk-schedule" --sizes "$mma" | "$bin/polyk-bind" |
      "$bin/polyk-emit" --mma=tf32x3 --harness -o "$dir/${n}_mma.cu"
  done
  {
    for v in gemm4096_simt gemm4096_mma; do echo "$v 1 10 check=0"; done
    for v in ab_bc_simt ab_bc_mma; do echo "$v 1 10 check=0"; echo "$v 2 2 S=300"; done
    python3 -c "
import random
r = random.Random(20261127)
for _ in range(6): print('gemm4096_mma 5 2 M=%d N=%d K=%d' % (r.randint(1, 3000), r.randint(1, 3000), r.randint(1, 3000)))"
  } > "$dir/list.txt"
  printf "4096 4096 4096\n2048 2048 2048\n" > "$dir/sizes.txt"
  rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
  echo "$(ls "$dir"/*.cu | wc -l) harnesses, $(wc -l < "$dir/list.txt") runs in $dir"
  ;;
run)
  dir=$2 out=$3
  bench/run-list.sh "$dir" "$dir/list.txt" "$out" 120 > /dev/null
  python3 bench/gemm_sizes.py cublas "$dir/sizes.txt" | tee -a "$out"
  cat "$out"
  ;;
*) echo "usage: $0 prepare DIR | run DIR OUT" >&2; exit 2 ;;
esac
