#!/usr/bin/env bash
# Everything polyk does on the GPU machine, in one call: every example's harness (PASS / FAIL
# against the sequential reference), the runtime library's device test, float max / min on signed
# zeros and NaNs bit for bit (test/e2e/check-specials.sh), the benchmark against
# CUB / torch / torch.compile, and bench/flush_probe.py (the fixed cost of a launch after the flush).
# The device machine has nvcc but not polyk's build dependencies, so CUDA is generated here and
# travels (carry build/gpu and build/bench).
#   here:  bench/gpu.sh prepare [VARIANT=EMIT_OPTS ...]     (after scripts/build.sh)
#   there: bench/gpu.sh run [reduce_bench.py options]       -> logs and CSVs in $OUT (or /tmp)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-run}" = prepare ]; then
  shift
  bench/gpu-check.sh prepare > /dev/null &&
    POLYK_BIN=${POLYK_BIN:-build/bin} test/e2e/check-specials.sh build/gpu/specials cuda &&
    bench/bench.sh prepare "$@"
  exit
fi
shift || true
out=${OUT:-/tmp}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$nvcc -std=c++17 -O2 -arch=sm_90 -Ilibcore/runtime test/runtime/runtime_test.cu -o /tmp/runtime_test 2> "$out/runtime-build.log" &
bench/gpu-check.sh run > "$out/gpu-check.txt" 2>&1
check=$?
wait
/tmp/runtime_test > "$out/runtime.txt" 2>&1
runtime=$?
test/e2e/check-specials.sh build/gpu/specials run-cuda > "$out/specials.txt" 2>&1
specials=$?
bench/bench.sh run "$@" 2>&1 | grep -v '^\[' > "$out/bench.txt"
python3 bench/flush_probe.py build/bench > "$out/flush-probe.txt" 2>&1
echo "== examples (bench/gpu-check.sh): exit $check; $(grep -c ' PASS ' "$out/gpu-check.txt") PASS, $(grep -cE ' (FAIL|ERROR|NOBUILD|PASS!)' "$out/gpu-check.txt") not"
grep -E ' (FAIL|ERROR|NOBUILD|PASS!)' "$out/gpu-check.txt" | head -20
echo "== runtime device test: exit $runtime; $(tail -1 "$out/runtime.txt")"
echo "== max / min on signed zeros and NaNs (test/e2e/check-specials.sh): exit $specials; $(grep -c '^PASS' "$out/specials.txt") PASS, $(grep -vc '^PASS' "$out/specials.txt") other lines"
grep -v '^PASS' "$out/specials.txt" | head -10
echo "== benchmark"
sed -n '/^copy bandwidth/,$p' "$out/bench.txt"
echo "== the fixed cost of a launch after do_bench's flush (bench/flush_probe.py)"
cat "$out/flush-probe.txt"
