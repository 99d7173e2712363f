#!/usr/bin/env bash
# Issue 19's target 3, judged with no GPU: for each exhaustive log of bench/tune-exhaustive.sh, a
# model trained on the other logs alone (leave one out), then polyk-tune report on the held-out
# log: the trial, in the model's order, that reaches 95% / 100% of the exhaustive best, the loss of
# performance of the model's top 10 / top 30, Spearman's rank correlation; beside it, the trials a
# random order takes to 95% (the mean over 1000 shuffles) and where the defaults stand.
#   bench/tune-model-eval.sh DIR [OUT]   (DIR: the logs, NAME.jsonl; OUT: the models and report dirs)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 out=${2:-$1/eval}
tune=${POLYK_BIN:-build/bin}/polyk-tune
mkdir -p "$out"
program() { case $1 in gemm1024) echo examples/blas/gemm.yaml ;; conv_*) echo "examples/conv/${1#conv_}.yaml" ;; esac; }
names=$(ls "$dir"/*.jsonl | xargs -n1 basename | sed 's/\.jsonl$//')
for held in $names; do
  train=() first=
  for n in $names; do
    [ "$n" = "$held" ] && continue
    if [ -z "$first" ]; then first=$n; else train+=(--also "$(program "$n")=$dir/$n.jsonl"); fi
  done
  "$tune" train "$(program "$first")" --log "$dir/$first.jsonl" "${train[@]}" -o "$out/without-$held.model" 2> "$out/without-$held.train.txt"
  "$tune" report "$(program "$held")" --log "$dir/$held.jsonl" --model "$out/without-$held.model" --dir "$out/$held" 2>&1 | tail -1
  python3 - "$dir/$held.jsonl" <<'PY'
import json, random, sys
t = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"trial"')]
ok = [x["us"] for x in t if x["status"] == "ok"]
best = min(ok)
times = [x["us"] if x["status"] == "ok" else float("inf") for x in t]
rng = random.Random(1)
steps = []
for _ in range(1000):
    order = times[:]
    rng.shuffle(order)
    steps.append(next(i + 1 for i, v in enumerate(order) if v <= best / 0.95))
d = times[0]
print(f"  random order: 95% at trial {sum(steps) / len(steps):.1f} (mean of 1000 shuffles); "
      f"{sum(v <= best / 0.95 for v in times)} of {len(times)} configurations within 95%; defaults at {best / d:.1%} of the best")
PY
done
