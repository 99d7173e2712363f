#!/usr/bin/env bash
# The tensor-core CUDA output (polyk-emit --mma=tf32x3) of EXAMPLE at SIZES compiles with nvcc:
# for sm_90 (mma.sync) and for sm_75 (the warp-shuffle stand-in of runtime.cuh).
# Usage: check-nvcc-mma.sh EXAMPLE.yaml SIZES WORKDIR NVCC
set -euo pipefail
example=$1 sizes=$2 work=$3 nvcc=$4
name=$(basename "$example" .yaml)
mkdir -p "$work"
"$POLYK_BIN/polyk-flatten" "$example" | "$POLYK_BIN/polyk-schedule" --sizes "$sizes" | "$POLYK_BIN/polyk-bind" |
  "$POLYK_BIN/polyk-emit" --mma=tf32x3 --harness -o "$work/$name.cu"
grep -q "polyk::mma_tf32x3" "$work/$name.cu"
for arch in sm_90 sm_75; do
  "$nvcc" -std=c++17 -O3 -arch=$arch -I"$POLYK_SRC/libcore/runtime" -c "$work/$name.cu" -o "$work/$name.$arch.o"
done
