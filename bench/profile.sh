#!/usr/bin/env bash
# Nsight Compute's view of chosen benchmark cases (those that miss a target): speed of light,
# memory workload, occupancy and warp stalls of a polyk kernel of each case, one launch after
# warm-up.
#   there: bench/profile.sh CASE [CASE ...]     (after bench/bench.sh run built the libraries)
set -uo pipefail
cd "$(dirname "$0")/.."
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || echo ncu)
for c in "$@"; do
  echo "=== $c"
  "$ncu" --target-processes all -k "regex:^${c}_k[0-9]+" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    python3 bench/reduce_bench.py build/bench /tmp/profile.csv --only "$c" --no-compile 2>&1 |
    grep -E 'Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers|Block Limit|Warp Cycles Per Issued|Compute \(SM\)|L1/TEX Hit|L2 Hit|OPT|Stall' | head -40
done
