#!/usr/bin/env bash
# Issue 19's target 3, the data: each edited space of bench/tune/spaces searched whole (exhaustive)
# on the GPU(s), every variant checked at small sizes (--check-param) and timed at full size; the
# logs go to OUT. Model-ranked searches are then judged on them here, with no GPU
# (bench/tune-model-eval.sh: leave-one-out training, trials to 95% of the exhaustive best, LoP).
#   here:  bench/tune-gpu.sh prepare     (build/gdir: polyk-tune and its shared libraries)
#   there: bench/tune-exhaustive.sh OUT GPUS [SPACE.yaml...]   (GPUS: e.g. 0,1,2,3)
# A space's file name names its program: gemm1024 -> examples/blas/gemm.yaml, conv_X -> examples/conv/X.yaml.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OUT GPUS [SPACE.yaml...]" >&2; exit 2; }
out=$1 gpus=$2
shift 2
spaces=("$@")
[ ${#spaces[@]} -eq 0 ] && spaces=(bench/tune/spaces/*.yaml)
dir=build/gdir tune=build/gdir/bin/polyk-tune
. bench/tune/program-of.sh
[ -x "$tune" ] || tune=build/bin/polyk-tune
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name --format=csv,noheader
for space in "${spaces[@]}"; do
  n=$(basename "$space" .yaml)
  program_of "$n" || continue
  args=()
  for c in "${check[@]}"; do args+=(--check-param "$c"); done
  start=$(date +%s)
  "$tune" run "$program" --space "$space" --runner "${RUNNER:-cuda}" --search exhaustive --log "$out/$n.jsonl" -j "$(nproc)" \
    --gpus $(echo "$gpus" | tr , ' ') --runtime libcore/runtime "${args[@]}" ${TUNE_OPTS:-} -o "$out/$n.best.yaml" 2> "$out/$n.err"
  echo "$n: $(tail -1 "$out/$n.err") ($(($(date +%s) - start)) s)"
done
