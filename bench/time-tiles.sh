#!/usr/bin/env bash
# Time tiling of iterated Hotspot (issue 18; polyk-schedule --time-tile), with torch beside it:
#   here:               bench/time-tiles.sh prepare [DIR]   (DIR: build/tt; carry it)
#       one harness per variant: steps a launch T (0: one step a launch, the default) x tile
#   on the GPU machine: bench/time-tiles.sh run [DIR]       -> compiles, checks, times; peers
# Each variant is checked against the CPU reference at 1024^2 x 1500 (the example) and at
# 1031^2 x 37 (partial tiles, a last launch of fewer steps), then timed unchecked at 8192^2 and
# 16384^2 x 150 steps. The peers (bench/time_tiles_peers.py) run the same cases in the same call.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
dir=${2:-build/tt}
# name:steps-a-launch:tile:block (steps 0: one step a launch; auto: polyk-schedule's own choice;
# tile empty: the default of time tiling; block: 8,32 by default)
variants="step:0: auto:auto: t2:2: t4:4: t6:6: t8:8: t12:12: t16:16:16,64 t8m:8:32,80:16,32 t6m:6:36,84:16,32"
if [ "$mode" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  for v in $variants; do
    IFS=: read -r name steps tile block <<< "$v"
    opts="--time-tile=$steps"
    [ -n "$tile" ] && opts="$opts --sizes {kernel[0]->tile[$tile];kernel[0]->block[${block:-8,32}]}"
    # shellcheck disable=SC2086
    POLYK_BIN=${POLYK_BIN:-build/bin} SCHEDULE_OPTS="$opts" pipelines/compile.sh examples/stencil/hotspot_iter.yaml "$dir/$name.cu" --harness || exit 1
  done
  cp -r libcore/runtime "$dir/runtime"
  ls "$dir"
  exit 0
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
ls "$dir"/*.cu | xargs -P 16 -I{} sh -c "$nvcc -std=c++17 -O3 -arch=sm_90 -I$dir/runtime {} -o \$(echo {} | sed 's/\\.cu\$//') 2> {}.log || echo 'nvcc failed: {}'"
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
printf '%-6s %-8s %-8s %14s %14s %14s\n' variant 1024c 1031c "1024^2x1500" "8192^2x150" "16384^2x150"
for v in $variants; do
  name=${v%%:*}
  bin=$dir/$name
  c1=$("$bin" 42 0 N=1024 S=1500 ref=$dir/ref1024 | tail -1)
  c2=$("$bin" 7 0 N=1031 S=37 ref=$dir/ref1031 | tail -1)
  t1=$("$bin" 42 20 N=1024 S=1500 check=0 | tail -1 | field median_us)
  t2=$("$bin" 42 5 N=8192 S=150 check=0 | tail -1 | field median_us)
  t3=$("$bin" 42 5 N=16384 S=150 check=0 | tail -1 | field median_us)
  printf '%-6s %-8s %-8s %14s %14s %14s\n' "$name" "$(echo "$c1" | awk '{print $1}')" "$(echo "$c2" | awk '{print $1}')" "$t1" "$t2" "$t3"
done
python3 bench/time_tiles_peers.py 1024:1500 8192:150 16384:150
