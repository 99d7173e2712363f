#!/usr/bin/env bash
# The reduction test matrix on the GPU (forms x ops x dtypes x sizes, and an f32 sum over more than
# 2^31 elements): every program PASSes against the sequential reference; the run_to_run builds
# (floating-point dtypes; integer and bool results do not depend on order) give identical bits
# over their runs. The matrix uses the warp-shuffle block reduction (faster to compile; the
# examples exercise CUB's).
#   here:  bench/matrix-gpu.sh prepare      -> build/matrix/*.cu
#   there: bench/matrix-gpu.sh run          -> compile, run, table; details in $OUT/matrix.txt
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
dir=build/matrix
if [ "$mode" = prepare ]; then
  rm -rf "$dir" && mkdir -p "$dir/src"
  python3 test/matrix/gen.py "$dir/src" --huge > /dev/null
  for p in "$dir"/src/*.yaml; do
    name=$(basename "$p" .yaml)
    POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/$name.cu" --harness --block-reduce=shfl || exit 1
    case "$name" in *_f16_*|*_bf16_*|*_f32_*|*_f64_*)
      POLYK_BIN=${POLYK_BIN:-build/bin} pipelines/compile.sh "$p" "$dir/$name.det.cu" --harness --block-reduce=shfl \
        --determinism=run_to_run || exit 1 ;;
    esac
  done
  rm -rf "$dir/src" "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
  ls "$dir"/*.cu | wc -l
  exit 0
fi
out=${OUT:-/tmp}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ls "$dir"/*.cu | xargs -P "$(nproc)" -I{} sh -c "$nvcc -std=c++17 -O3 -arch=sm_90 -I$dir/runtime {} -o \$(echo {} | sed 's/\\.cu\$//') 2> {}.log || echo 'nvcc failed: {}'"
: > "$out/matrix.txt"
# Correctness only (timings of concurrent runs mean nothing): eight harnesses at a time.
export out
ls "$dir"/*.cu | sed 's/\.cu$//' | xargs -P 8 -I{} sh -c 'n=$(basename {}); if [ -x {} ]; then l=$({} 5 5 2>&1 | tail -1); else l=NOBUILD; fi; echo "$n $l" >> "$out/matrix.txt"'
python3 - "$out/matrix.txt" <<'PY'
import collections, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = collections.Counter(); total = collections.Counter(); bad = []
for r in rows:
    name, res = r[0], r[1]
    det = name.endswith(".det")
    parts = name.replace(".det", "").split("_")  # m_FORM_OP_DTYPE_SIZE
    form, op, dtype, size = parts[1], parts[2], parts[3], parts[4]
    stable = next((f.split("=")[1] for f in r if f.startswith("bits_stable=")), "?")
    good = res == "PASS" and (not det or stable == "1")
    key = (form + "-reduce", "run_to_run" if det else "not_guaranteed")
    total[key] += 1; ok[key] += good
    if not good: bad.append(" ".join(r))
print("%-10s %-15s %s" % ("form", "determinism", "passed/total"))
for key in sorted(total):
    print("%-10s %-15s %d/%d" % (key[0], key[1], ok[key], total[key]))
for r in rows:
    if "2147483653" in r[0]: print("huge:", " ".join(r))
streams = collections.Counter(next((f.split("=")[1] for f in r if f.startswith("streams=")), "?") for r in rows)
print("two-stream check (streams=): %d agreed, %d failed, %d skipped (inputs over 256 MiB)" % (streams["1"], streams["0"], streams["-1"]))
for b in bad[:40]: print("FAIL:", b)
print("%d passed, %d failed" % (sum(ok.values()), sum(total.values()) - sum(ok.values())))
PY
