#!/usr/bin/env bash
# The CUDA output of EXAMPLE (kernels, launcher and harness) compiles with nvcc for sm_90.
# Usage: check-nvcc.sh EXAMPLE.yaml WORKDIR NVCC
set -euo pipefail
example=$1 work=$2 nvcc=$3
name=$(basename "$example" .yaml)
mkdir -p "$work"
POLYK_BIN=$POLYK_BIN "$POLYK_SRC/pipelines/compile.sh" "$example" "$work/$name.cu" --harness
# (Host code at -O0: the device code nvcc writes is the same as under -O3, compared with cmp on
# conv Y8's cubin; the host compile takes 3.0 s instead of 3.8.)
"$nvcc" -std=c++17 -O0 -arch=sm_90 -I"$POLYK_SRC/libcore/runtime" "$work/$name.cu" -o "$work/$name.cu.bin"
