#!/usr/bin/env bash
# The CUDA output of EXAMPLE (kernels, launcher and harness) compiles with nvcc for sm_90.
# Usage: check-nvcc.sh EXAMPLE.yaml WORKDIR NVCC
set -euo pipefail
example=$1 work=$2 nvcc=$3
name=$(basename "$example" .yaml)
mkdir -p "$work"
POLYK_BIN=$POLYK_BIN "$POLYK_SRC/pipelines/compile.sh" "$example" "$work/$name.cu" --harness
"$nvcc" -std=c++17 -O3 -arch=sm_90 -I"$POLYK_SRC/libcore/runtime" "$work/$name.cu" -o "$work/$name.cu.bin"
