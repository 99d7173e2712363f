#!/usr/bin/env bash
# The tensor cores by default (polyk-schedule's mma[1] for large f32 GEMM-like tiles) against the
# defaults before them and cuBLAS, on GEMM sizes drawn at random, in one device call.
#   here:     bench/mma-default.sh prepare DIR OLD_BIN [SEED COUNT MAX]...
#             (OLD_BIN: the tools of the commit before, e.g. a worktree's build/bin)
#   GPU:      bench/mma-default.sh run DIR OUT   (carry DIR) -> OUT/run.txt, OUT/cublas.txt, OUT/table.txt
# Prepared by bench/split-k.sh with CHECK=changed: each size whose new default differs from the old
# is checked against the CPU reference at a smaller size with the same kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1 dir=$2
if [ "$mode" = run ]; then
  bash bench/split-k.sh run "$dir" "$3" > /dev/null
  sed -i 's/, with split-K/, tensor cores by default/' "$3/table.txt"
  cat "$3/table.txt"
  exit 0
fi
CHECK=changed bash bench/split-k.sh prepare "$dir" "${@:3}"
echo "$(ls "$dir"/*_old.cu 2>/dev/null | wc -l) changed"
