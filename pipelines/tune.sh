#!/usr/bin/env bash
# Tunes a program (polyk-tune run), then compiles it with the sizes found:
#   pipelines/tune.sh PROGRAM.yaml OUT.cu [polyk-tune run options...] [-- polyk-emit options...]
# The tuning log is OUT's stem + .tune.jsonl (a rerun resumes it), best.yaml OUT's stem +
# .best.yaml; then polyk-flatten | polyk-schedule --tuning best.yaml | polyk-bind --tuning best.yaml |
# polyk-emit --tuning best.yaml (the sizes, the points and the prefetch found).
# The runner is cuda where nvidia-smi finds a GPU, else cpu (the stand-in), unless --runner says.
# The tools are found on PATH, or in $POLYK_BIN.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 PROGRAM.yaml OUT.cu [polyk-tune run options...] [-- polyk-emit options...]" >&2
  exit 2
fi
program=$1 out=$2
shift 2
tune=() emit=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; emit=("$@"); break; fi
  tune+=("$1")
  shift
done
bin=${POLYK_BIN:+$POLYK_BIN/}
stem=${out%.*}
runner=()
case " ${tune[*]:-} " in
*" --runner"*) ;;
*) if nvidia-smi -L > /dev/null 2>&1; then runner=(--runner cuda); else runner=(--runner cpu); fi ;;
esac
"${bin}polyk-tune" run "$program" --log "$stem.tune.jsonl" "${runner[@]}" ${tune[@]+"${tune[@]}"} -o "$stem.best.yaml"
"${bin}polyk-flatten" "$program" | "${bin}polyk-schedule" --tuning "$stem.best.yaml" | "${bin}polyk-bind" --tuning "$stem.best.yaml" |
  "${bin}polyk-emit" --tuning "$stem.best.yaml" ${emit[@]+"${emit[@]}"} -o "$out"
