#!/usr/bin/env bash
# A/B of runtime.cuh without <cuda/atomic> (new) against with it (old): the same .cu, each built with both.
# Its directory (build/hdr on 2026-11-26): runtime_new/ (libcore/runtime), runtime_old/ (the same with
# 82bc64d's polyk/runtime.cuh), and NAME.cu / NAME_det.cu from bench/gpu-check.sh prepare. Run there
# on the GPU machine; prints old / new medians and a checked run of each new build.
cd "$(dirname "$0")"
for f in *.cu; do b=${f%.cu}; echo "$b"; done | xargs -P 16 -I{} sh -c 'nvcc -std=c++17 -O3 -arch=sm_90 -Iruntime_new {}.cu -o {}.new 2> {}.new.log; nvcc -std=c++17 -O3 -arch=sm_90 -Iruntime_old {}.cu -o {}.old 2> {}.old.log'
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for f in *.cu; do b=${f%.cu}
  for r in 1 2; do for v in old new; do
    line=$(timeout 60 ./$b.$v 1 50 check=0 2>&1 | tail -1); echo "$b $v $(echo "$line" | grep -o 'median_us=[0-9.]*')"
  done; done
  echo "$b checked-new: $(timeout 60 ./$b.new 7 3 2>&1 | tail -1 | awk '{print $1}')"
done
