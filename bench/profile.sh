#!/usr/bin/env bash
# Nsight Compute's view of chosen benchmark cases (the cases that miss a target): speed of light,
# memory workload, occupancy and warp stalls of each polyk kernel, one launch each after warm-up.
#   there: bench/profile.sh CASE [CASE ...]     (after bench/bench.sh run built the libraries)
set -uo pipefail
cd "$(dirname "$0")/.."
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || echo ncu)
regex=$(printf '%s|' "$@"); regex=${regex%|}
only=$(printf '%s,' "$@"); only=${only%,}
"$ncu" --target-processes all -k "regex:^($regex)_k[0-9]+" --launch-skip 2 --launch-count "$#" \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
  python3 bench/reduce_bench.py build/bench /tmp/profile.csv --only "$only" --no-compile 2>&1 |
  grep -vE '^\s*$|^==PROF==|^\[' 
