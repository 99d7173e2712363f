#!/usr/bin/env bash
# The reduction test matrix on the CPU: each program's CUDA kernels' code (c-mapped: ids, guards,
# partials, single-thread kernels) run thread by thread against the sequential reference, two
# seeds each. Prints one line per failure and `N passed, M failed`. Usage: cpu.sh BIN SRC WORK
set -uo pipefail
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
python3 "$src/test/matrix/gen.py" "$work" > /dev/null
one() {
  p=$1 name=$(basename "$1" .yaml)
  POLYK_BIN=$bin "$src/pipelines/compile.sh" "$p" "$work/$name.c" --target=c-mapped --harness 2> "$work/$name.log" &&
    cc -std=c99 -O1 -I"$src/libcore/runtime" "$work/$name.c" -o "$work/$name.bin" -lm 2>> "$work/$name.log" &&
    "$work/$name.bin" 3 >> "$work/$name.log" && "$work/$name.bin" 11 >> "$work/$name.log" && { echo "ok $name"; return; }
  echo "FAIL $name: $(tail -2 "$work/$name.log" | tr '\n' ' ')"
}
export -f one
export bin src work
ls "$work"/*.yaml | xargs -P "$(nproc)" -I{} bash -c 'one {}' > "$work/results.txt"
grep FAIL "$work/results.txt"
pass=$(grep -c '^ok ' "$work/results.txt")
fail=$(grep -c '^FAIL ' "$work/results.txt")
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
