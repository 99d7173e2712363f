#!/usr/bin/env bash
# A long fuzzing run of one reader, beyond CI's 20 s: builds build-san (clang, ASan + UBSan,
# libFuzzer) if needed, then fuzzes TARGET (program, scop, schedule, bound or kernel) for SECONDS
# from a scratch copy of its seed corpus with the shared dictionary (test/fuzz/fuzz.sh). Prints
# libFuzzer's final stats; on a finding exits non-zero and prints the path of the saved input,
# which belongs in test/fuzz/regressions/TARGET/ under a name saying what it exercises.
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]   e.g. scripts/fuzz.sh bound 3600 -jobs=2
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 TARGET SECONDS [libFuzzer options...]   (TARGET: program, scop, schedule, bound, kernel)" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
if [ ! -d "test/fuzz/corpus/$target" ]; then
  echo "$0: no fuzz target '$target' (program, scop, schedule, bound, kernel)" >&2
  exit 2
fi
if [ ! -f build-san/build.ninja ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DPOLYK_SANITIZE=ON -DPOLYK_FUZZ=ON > /dev/null
fi
# Several long runs may start at once (one per core): one build at a time.
flock build-san/.fuzz-build.lock ninja -C build-san "polyk-fuzz-$target"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec test/fuzz/fuzz.sh "build-san/fuzz/polyk-fuzz-$target" "$seconds" "test/fuzz/corpus/$target" \
  "build-san/fuzz-runs/$target-$(date +%Y%m%d-%H%M%S)" "$@"
