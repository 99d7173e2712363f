#!/usr/bin/env bash
# The C runtime header (f16 / bf16 conversions) compiles as C99 and passes its own test.
# Usage: check-host-runtime.sh RUNTIME_DIR TEST.c WORKDIR
set -euo pipefail
mkdir -p "$3"
cc -std=c99 -O1 -Wall -Werror -I"$1" "$2" -o "$3/host_test" -lm
"$3/host_test"
