#!/usr/bin/env bash
# Random hand edits of the intermediate files of a few examples (program, scop, schedule, bound),
# each fed to the stage that reads it: every run must end in exit 0 or one located error, exit 1,
# no output file. Usage: run.sh BIN_DIR SRC_DIR WORK_DIR [EDITS] [SEED]
set -euo pipefail
bin=$1 src=$2 work=$3 edits=${4:-300} seed=${5:-1}
rm -rf "$work" && mkdir -p "$work/files"
files=()
for e in softmax yreduce symbolic colmax_mid panamera/sg7 panamera/fig4 panamera/sg8; do
  n=$(basename "$e")
  "$bin/polyk-flatten" "$src/examples/$e.yaml" -o "$work/files/$n.scop.yaml"
  "$bin/polyk-schedule" "$work/files/$n.scop.yaml" -o "$work/files/$n.sched.yaml"
  "$bin/polyk-bind" "$work/files/$n.sched.yaml" -o "$work/files/$n.bound.yaml"
  files+=("$src/examples/$e.yaml" "$work/files/$n.scop.yaml" "$work/files/$n.sched.yaml" "$work/files/$n.bound.yaml")
done
exec python3 "$(dirname "$0")/mutate.py" "$bin" "$work/edits" "${files[@]}" --edits "$edits" --seed "$seed"
