#!/usr/bin/env bash
# End-to-end check without a GPU: compile the sequential C of EXAMPLE's transformed schedule
# (flatten, schedule, tiling, binding) together with the sequential C of the original program,
# run both on random inputs (two seeds) and compare. Usage: check-c.sh EXAMPLE.yaml WORKDIR
set -euo pipefail
example=$1 work=$2
name=$(basename "$example" .yaml)
mkdir -p "$work"
POLYK_BIN=$POLYK_BIN "$POLYK_SRC/pipelines/compile.sh" "$example" "$work/$name.c" --target=c --harness
cc -std=c99 -O1 -Wall -Werror -Wno-unused-function -Wno-unused-variable -I"$POLYK_SRC/libcore/runtime" \
  "$work/$name.c" -o "$work/$name.c.bin" -lm
"$work/$name.c.bin" 1
"$work/$name.c.bin" 7
