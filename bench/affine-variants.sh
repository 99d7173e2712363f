#!/usr/bin/env bash
# Stage-option experiments on affine programs: builds one harness per variant here, for
# bench/run-list.sh to compile and time on the GPU machine (one call: carry DIR).
#   here: bench/affine-variants.sh DIR SPEC
# SPEC: one variant a line, `NAME PROGRAM.yaml RUN-ARGS... | SCHEDULE_OPTS | BIND_OPTS | EMIT_OPTS`
# ('|' separates; options without spaces inside an argument; '#' starts a comment), e.g.
#   g4_v4 examples/blas/gemm4096.yaml 1 5 check=0 | --sizes={kernel[0]->vector[4]} | |
# Each NAME becomes DIR/NAME.cu and a line `NAME RUN-ARGS` of DIR/list.txt (the harness's
# arguments: seed, repetitions, NAME=VALUE, check=0). Lines with the same NAME and other RUN-ARGS
# reuse the harness. DIR/runtime holds the device headers.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 DIR SPEC" >&2; exit 2; }
dir=$1 spec=$2
bin=${POLYK_BIN:-build/bin}
mkdir -p "$dir"
: > "$dir/list.txt"
while IFS= read -r line; do
  line=${line%%#*}
  [ -z "${line// /}" ] && continue
  IFS='|' read -r head sched bind emit <<< "$line"
  read -r name program args <<< "$head"
  echo "$name $args" >> "$dir/list.txt"
  [ -f "$dir/$name.cu" ] && continue
  # shellcheck disable=SC2086
  "$bin/polyk-flatten" "$program" | "$bin/polyk-schedule" $sched | "$bin/polyk-bind" $bind |
    "$bin/polyk-emit" --harness $emit -o "$dir/$name.cu"
done < "$spec"
rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
echo "$(ls "$dir"/*.cu | wc -l) harnesses, $(wc -l < "$dir/list.txt") runs in $dir"
