#!/usr/bin/env bash
# The CUDA output of EXAMPLE at SIZES (polyk-schedule --sizes; polyk-emit with EMIT-OPTIONS) holds
# PATTERN (a fixed string) and compiles with nvcc for each of ARCHS, e.g. the tensor-core path (--mma=tf32x3) for
# sm_90 (mma.sync) and sm_75 (the warp-shuffle stand-in of runtime.cuh).
# Usage: check-nvcc-sizes.sh EXAMPLE.yaml SIZES WORKDIR NVCC PATTERN "ARCH..." [EMIT-OPTIONS...]
set -euo pipefail
example=$1 sizes=$2 work=$3 nvcc=$4 pattern=$5 archs=$6
shift 6
name=$(basename "$example" .yaml)
mkdir -p "$work"
"$POLYK_BIN/polyk-flatten" "$example" | "$POLYK_BIN/polyk-schedule" --sizes "$sizes" | "$POLYK_BIN/polyk-bind" |
  "$POLYK_BIN/polyk-emit" "$@" --harness -o "$work/$name.cu"
grep -qF -- "$pattern" "$work/$name.cu"
for arch in $archs; do
  "$nvcc" -std=c++17 -O0 -arch="$arch" -I"$POLYK_SRC/libcore/runtime" -c "$work/$name.cu" -o "$work/$name.$arch.o"
done
