#!/usr/bin/env bash
# polyk-tune's trials per minute on one GPU and on several (`--gpus`, issue 26): the same program,
# search and seed for SECONDS each, then trials, seconds and trials per minute from each log.
#   here:  bench/tune-gpu.sh prepare        (build/gdir: polyk-tune and its shared libraries)
#   there: bench/tune-gpus-rate.sh OUT SECONDS PROGRAM.yaml [GPUS...]   (default GPUS: 0 0,1)
# TUNE_OPTS adds polyk-tune options (e.g. "--param S=64"). RUNNER=cpu tries it on a machine without a GPU (--gpus then runs that many at once on the CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 OUT SECONDS PROGRAM.yaml [GPUS...]" >&2; exit 2; }
out=$1 seconds=$2 program=$3
shift 3
lists=("$@")
[ ${#lists[@]} -eq 0 ] && lists=(0 0,1)
dir=build/gdir tune=build/gdir/bin/polyk-tune
[ -x "$tune" ] || tune=build/bin/polyk-tune
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name --format=csv,noheader
for gpus in "${lists[@]}"; do
  log=$out/rate-${gpus//,/_}.jsonl
  rm -f "$log"
  "$tune" run "$program" --runner "${RUNNER:-cuda}" --search random --seed 1 --log "$log" --time "$seconds" -j "$(nproc)" \
    --gpus $(echo "$gpus" | tr , ' ') --runtime libcore/runtime ${TUNE_OPTS:-} -o "$out/rate-${gpus//,/_}.best.yaml" 2> "$out/rate-${gpus//,/_}.err"
  echo "gpus $gpus: $(tail -1 "$out/rate-${gpus//,/_}.err")"
done
printf '%-8s %8s %8s %10s %12s\n' gpus trials ok seconds trials/min
for gpus in "${lists[@]}"; do
  log=$out/rate-${gpus//,/_}.jsonl
  /usr/bin/python3 - "$log" "$gpus" <<'PY'
import json, sys
trials = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"trial"')]
ok = sum(t["status"] == "ok" for t in trials)
s = max((t["elapsed_s"] for t in trials), default=0)
print(f"{sys.argv[2]:8} {len(trials):8} {ok:8} {s:10.1f} {60 * len(trials) / s if s else 0:12.1f}")
PY
done | tee "$out/rate.txt"
