#!/usr/bin/env bash
# End-to-end check without a GPU, on random inputs (two seeds), against the sequential C of the
# original program: (1) the sequential C of EXAMPLE's transformed schedule (flatten, schedule,
# tiling, binding), (2) the CUDA kernels' own code (block / thread ids, guards, partials) run on
# the CPU block by block and thread by thread. Usage: check-c.sh EXAMPLE.yaml WORKDIR [NAME=VALUE...]
set -euo pipefail
example=$1 work=$2
shift 2
name=$(basename "$example" .yaml)
mkdir -p "$work"
# `# ci-params: N=40 ...` in the example: the parameters' values for this check (the harness takes
# NAME=VALUE arguments), where the program's own would take too long on the CPU; NAME=VALUE
# arguments replace them.
ci_params=$(sed -n 's/^# ci-params://p' "$example")
if [ $# -gt 0 ]; then ci_params="$*"; fi
for target in c c-mapped; do
  POLYK_BIN=$POLYK_BIN "$POLYK_SRC/pipelines/compile.sh" "$example" "$work/$name.$target.c" --target=$target --harness
  cc -std=c99 -O1 -Wall -Werror -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable -Wno-maybe-uninitialized \
    -I"$POLYK_SRC/libcore/runtime" "$work/$name.$target.c" -o "$work/$name.$target.bin" -lm
  # shellcheck disable=SC2086
  "$work/$name.$target.bin" 1 $ci_params
  # shellcheck disable=SC2086
  "$work/$name.$target.bin" 7 $ci_params
done
