#!/usr/bin/env bash
# The tensor cores by default (polyk-schedule's mma[1] for large f32 GEMM-like tiles) against the
# defaults before them and cuBLAS, on GEMM sizes drawn at random, in one device call.
#   here:     bench/mma-default.sh prepare DIR OLD_BIN [SEED COUNT MAX]...
#             (OLD_BIN: the tools of the commit before, e.g. a worktree's build/bin)
#   GPU:      bench/mma-default.sh run DIR OUT   (carry DIR) -> OUT/run.txt, OUT/cublas.txt, OUT/table.txt
# Each size whose new default differs from the old is checked against the CPU reference at M = 520,
# N = 650 and a K of its own remainder mod 64 plus 192 (the same kernel: the sizes are compiled in,
# the extents are not), so the check stays affordable; the others are the old kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1 dir=$2
if [ "$mode" = run ]; then
  bash bench/split-k.sh run "$dir" "$3" > /dev/null
  sed -i 's/, with split-K/, tensor cores by default/' "$3/table.txt"
  cat "$3/table.txt"
  exit 0
fi
old=$3
shift 3
mkdir -p "$dir"
: > "$dir/list.txt"
bench/draw-sizes.sh "$@" > "$dir/sizes.txt"
while read -r m n k; do
  name=gemm_${m}_${n}_${k}
  sed "s/params: {[^}]*}/params: {M: $m, N: $n, K: $k}/" examples/blas/gemm.yaml > "$dir/$name.yaml"
  POLYK_BIN=build/bin pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_new.cu" --harness
  POLYK_BIN=$old pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_old.cu" --harness
  echo "${name}_new 1 20 check=0" >> "$dir/list.txt"
  if cmp -s "$dir/${name}_new.cu" "$dir/${name}_old.cu"; then
    rm "$dir/${name}_old.cu"
  else
    echo "${name}_old 1 20 check=0" >> "$dir/list.txt"
    echo "${name}_new 1 2 M=520 N=650 K=$((k % 64 + 192))" >> "$dir/list.txt"
  fi
done < "$dir/sizes.txt"
rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
echo "$(wc -l < "$dir/sizes.txt") sizes, $(ls "$dir"/*_old.cu 2>/dev/null | wc -l) changed, $(ls "$dir"/*.cu | wc -l) harnesses"
