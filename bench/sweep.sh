#!/usr/bin/env bash
# Tile / block size sweep for the default-size rule (docs/sizes.md): each case compiled with several
# `polyk-schedule --sizes` choices, each harness checked and timed (median, L2 flushed).
#   here:  bench/sweep.sh prepare   -> build/sweep/*.cu
#   there: bench/sweep.sh run       -> table: case, sizes, result, median_us
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build/sweep
if [ "${1:-run}" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir/src"
  python3 bench/cases.py "$dir/src" > /dev/null
  v=0
  emit() { # case kernel-sizes...
    local c=$1; shift
    for s in "$@"; do
      v=$((v + 1))
      SCHEDULE_OPTS="--sizes $s" POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$dir/src/$c.yaml" "$dir/$c.v$v.cu" --harness || continue
      echo "$c.v$v $s" >> "$dir/variants.txt"
    done
  }
  : > "$dir/variants.txt"
  # all-reduce of 16226304 f32: blocks x threads x items per thread
  emit sum_f32_16226304_d0 '{kernel[1]->tile[61952];kernel[1]->block[512]}' '{kernel[1]->tile[30720];kernel[1]->block[512]}' \
    '{kernel[1]->tile[15360];kernel[1]->block[256]}' '{kernel[1]->tile[123904];kernel[1]->block[1024]}' '{kernel[1]->tile[7680];kernel[1]->block[256]}'
  # rows of 1024 (x-reduce, 1024 rows)
  emit sum_f32_1024x1024_d1 '{kernel[1]->tile[8,1024];kernel[1]->block[8,32]}' '{kernel[1]->tile[4,1024];kernel[1]->block[4,64]}' \
    '{kernel[1]->tile[2,1024];kernel[1]->block[2,128]}' '{kernel[1]->tile[1,1024];kernel[1]->block[1,256]}' '{kernel[1]->tile[16,1024];kernel[1]->block[16,32]}'
  # columns of 131072 rows x 1024 (y-reduce)
  emit sum_f32_131072x1024_d0 '{kernel[1]->tile[32,4096];kernel[1]->block[32,8]}' '{kernel[1]->tile[32,2048];kernel[1]->block[32,16]}' \
    '{kernel[1]->tile[32,8192];kernel[1]->block[32,16]}' '{kernel[1]->tile[64,4096];kernel[1]->block[64,8]}' '{kernel[1]->tile[128,2048];kernel[1]->block[128,4]}'
  rm -rf "$dir/src" && cp -r libcore/runtime "$dir/runtime"
  wc -l < "$dir/variants.txt"
  exit 0
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ls "$dir"/*.cu | xargs -P "$(nproc)" -I{} sh -c "$nvcc -std=c++17 -O3 -arch=sm_90 -I$dir/runtime {} -o \$(echo {} | sed 's/\\.cu\$//') 2> {}.log || echo 'nvcc failed: {}'"
while read -r name sizes; do
  line=$("$dir/$name" 42 100 2>&1 | tail -1)
  printf '%-32s %-60s %s\n' "$name" "$sizes" "$(echo "$line" | awk '{print $1, $4}')"
done < "$dir/variants.txt"
