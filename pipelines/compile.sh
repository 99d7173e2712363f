#!/usr/bin/env bash
# The whole compiler as one pipeline (DESIGN.md):
#   polyk-flatten PROGRAM | polyk-schedule | polyk-bind | polyk-emit -o OUT
# Usage: pipelines/compile.sh PROGRAM.yaml OUT.cu [polyk-emit options...]
# Stage options come from the environment: FLATTEN_OPTS, SCHEDULE_OPTS, BIND_OPTS (e.g. SCHEDULE_OPTS="--sizes ...").
# The tools are found on PATH, or in $POLYK_BIN.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 PROGRAM.yaml OUT.cu [polyk-emit options...]" >&2
  exit 2
fi
program=$1 out=$2
shift 2
bin=${POLYK_BIN:+$POLYK_BIN/}
# shellcheck disable=SC2086
"${bin}polyk-flatten" ${FLATTEN_OPTS:-} "$program" | "${bin}polyk-schedule" ${SCHEDULE_OPTS:-} | "${bin}polyk-bind" ${BIND_OPTS:-} |
  "${bin}polyk-emit" "$@" -o "$out"
