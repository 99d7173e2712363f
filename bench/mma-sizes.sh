#!/usr/bin/env bash
# GEMM at sizes drawn at random: the default kernels (SIMT) against the same tiles on the tensor
# cores (bench/gemm_sizes.py mma_sizes: blocks of [by, 4], polyk-emit --mma=tf32x3), and cuBLAS,
# in one device call. The table's "old" is SIMT, "new" the tensor cores (SIMT where the tile
# cannot take them).
#   here:     bench/mma-sizes.sh prepare DIR [SEED COUNT MAX]...
#   GPU:      bench/mma-sizes.sh run DIR OUT   (carry DIR) -> OUT/run.txt, OUT/cublas.txt, OUT/table.txt
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1 dir=$2
if [ "$mode" = run ]; then
  bash bench/split-k.sh run "$dir" "$3" > /dev/null
  sed -i 's/, with split-K/, on the tensor cores/' "$3/table.txt"
  cat "$3/table.txt"
  exit 0
fi
shift 2
mkdir -p "$dir"
: > "$dir/list.txt"
bench/draw-sizes.sh "$@" > "$dir/sizes.txt"
bin=${POLYK_BIN:-build/bin}
while read -r m n k; do
  name=gemm_${m}_${n}_${k}
  sed "s/params: {[^}]*}/params: {M: $m, N: $n, K: $k}/" examples/blas/gemm.yaml > "$dir/$name.yaml"
  POLYK_BIN=$bin pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_old.cu" --harness
  sizes=$("$bin/polyk-flatten" "$dir/$name.yaml" | "$bin/polyk-schedule" | sed -n 's/^sizes: "\(.*\)"$/\1/p')
  mma=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import gemm_sizes; print(gemm_sizes.mma_sizes(sys.argv[1]) or '')" "$sizes")
  echo "$name ${mma:-(SIMT)}" >> "$dir/mma.txt"
  if [ -n "$mma" ]; then
    SCHEDULE_OPTS="--sizes=${mma// /}" POLYK_BIN=$bin pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_new.cu" --harness --mma=tf32x3
    echo "${name}_old 1 20 check=0" >> "$dir/list.txt"
  else
    mv "$dir/${name}_old.cu" "$dir/${name}_new.cu"
  fi
  echo "${name}_new 1 20 check=0" >> "$dir/list.txt"
  [ $((m * n * k)) -le $((2500 * 2500 * 2500)) ] && echo "${name}_new 1 2" >> "$dir/list.txt"
done < "$dir/sizes.txt"
rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
echo "$(wc -l < "$dir/sizes.txt") sizes, $(ls "$dir"/*.cu | wc -l) harnesses"
