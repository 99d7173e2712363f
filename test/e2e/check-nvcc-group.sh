#!/usr/bin/env bash
# The CUDA output of each EXAMPLE (kernels, launcher and harness) compiles with nvcc for sm_90,
# a group of examples in one nvcc call. Each example's text is included whole into a namespace of
# its own, after the headers every generated file includes (cuda_runtime, fp16, bf16, stdio...,
# polyk/runtime.cuh, polyk/harness.h, all include-guarded), so nvcc parses those headers once for
# the group instead of once per example: they are 5-9 s of an example's 6-10 s. The examples that
# use CUB's block reductions (#define POLYK_BLOCK_REDUCE_CUB) and those that do not compile in two
# separate calls, so a file that used CUB without asking for it would still fail. An error names
# the example's own file and line. check-nvcc.sh compiles one example alone (its includes).
# Usage: check-nvcc-group.sh WORKDIR NVCC NAME=EXAMPLE.yaml...
set -euo pipefail
work=$1 nvcc=$2
shift 2
mkdir -p "$work"
cub=() plain=()
for arg in "$@"; do
  name=${arg%%=*} example=${arg#*=}
  POLYK_BIN=$POLYK_BIN "$POLYK_SRC/pipelines/compile.sh" "$example" "$work/$name.cu" --harness
  if grep -q '^#define POLYK_BLOCK_REDUCE_CUB' "$work/$name.cu"; then cub+=("$name"); else plain+=("$name"); fi
done

compile() {  # KIND NAME...: one translation unit of the named examples, compiled and linked
  local kind=$1 unit
  shift
  [ $# -gt 0 ] || return 0
  unit="$work/group-$(printf '%s\n' "$@" | md5sum | cut -c1-12)-$kind.cu"
  {
    echo "// check-nvcc-group.sh: $*"
    printf '#include <%s>\n' cuda_runtime.h cuda_fp16.h cuda_bf16.h stdint.h stdio.h stdlib.h string.h
    [ "$kind" = plain ] || echo '#define POLYK_BLOCK_REDUCE_CUB 1'
    echo '#include "polyk/runtime.cuh"'
    echo '#include "polyk/harness.h"'
    for name in "$@"; do
      printf 'namespace polyk_group_%s {\n#include "%s"\n}\n' "$name" "$work/$name.cu"
    done
    echo 'int main() { return 0; }'
  } > "$unit"
  echo "nvcc ($kind): $*"
  "$nvcc" -std=c++17 -O0 -arch=sm_90 -I"$POLYK_SRC/libcore/runtime" "$unit" -o "$unit.bin"
}
compile cub "${cub[@]}"
compile plain "${plain[@]}"
