#!/usr/bin/env bash
# The multi-device CUDA output of EXAMPLE (polyk-partition's model, polyk-emit --partition
# --harness: the clone, enumerators, polyk_NAME_multi over CudaBackend) compiles with nvcc for sm_90.
# Usage: check-nvcc-multi.sh EXAMPLE.yaml WORKDIR NVCC [mpi]
# SCHEDULE_OPTS: polyk-schedule's options (default --time-tile=0).
set -euo pipefail
example=$1 work=$2 nvcc=$3
name=$(basename "$example" .yaml).multi
mkdir -p "$work"
# shellcheck disable=SC2086
"$POLYK_BIN/polyk-flatten" "$example" | "$POLYK_BIN/polyk-schedule" ${SCHEDULE_OPTS:---time-tile=0} | "$POLYK_BIN/polyk-bind" -o "$work/$name.bound.yaml"
"$POLYK_BIN/polyk-partition" "$work/$name.bound.yaml" -o "$work/$name.partition.yaml"
"$POLYK_BIN/polyk-emit" "$work/$name.bound.yaml" --partition "$work/$name.partition.yaml" --harness -o "$work/$name.cu"
"$nvcc" -std=c++17 -O0 -arch=sm_90 -I"$POLYK_SRC/libcore/runtime" "$work/$name.cu" -o "$work/$name.cu.bin"
# With `mpi`: also the MPI build (polyk/multi_mpi.hpp over CudaBackend), compiled only.
if [ "${4:-}" = mpi ] && command -v mpicxx > /dev/null; then
  # shellcheck disable=SC2046
  "$nvcc" -std=c++17 -O0 -arch=sm_90 -DPOLYK_MULTI_MPI $(mpicxx --showme:compile) -I"$POLYK_SRC/libcore/runtime" -c "$work/$name.cu" -o "$work/$name.mpi.o"
fi
