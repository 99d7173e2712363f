#!/usr/bin/env bash
# The whole test suite: build (installing dependencies if needed), then the tests through ctest;
# then the same stages built with clang under ASan + UBSan, with one libFuzzer target per reader
# (build-san/, cmake/Sanitizers.cmake), and the tests of hostile and edited inputs run under them:
# unit, lit, the random edits, and every reader's seeds plus 10 s of fuzzing and its regression
# inputs. The sweeps over every example (label `sweep`: e2e/c, the float specials, the tuning log's
# resume, the CPU matrix, the schemas, the random affine programs and tuning configurations) check
# what the stages compute on valid inputs and run in the release build only; the nvcc compiles
# and the host runtime test compile the same text with nvcc / cc, which the sanitizers do not see.
# The stage tests (lit) and the random edits (label `hostile`) run in the sanitizer build only,
# except the stage tests marked `UNSUPPORTED: sanitized` (valid programs whose time goes to the
# generated code), which the release build runs as lit/unsanitized.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp() { echo "== $(date +%T) $*"; }
timed() {  # LABEL COMMAND...: runs COMMAND, then prints how long it took, failed or not
  local label=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  stamp "$label took $((SECONDS - start)) s$([ $status -eq 0 ] || echo ", failed (exit $status)")"
  return $status
}
timed "build" scripts/build.sh
cd build
timed "ctest (build)" ctest --output-on-failure -j"$(nproc)" -LE hostile
cd ..

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Debug: it builds in 47 s against RelWithDebInfo's 76 s on 2 cores, and the tests take as long,
# since most of their time is spent in isl, which is Debian's optimised build either way.
CC=clang-14 CXX=clang++-14 cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DPOLYK_SANITIZE=ON -DPOLYK_FUZZ=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=6 > /dev/null
timed "build (build-san, sanitizers + fuzzers)" ninja -C build-san
cd build-san
# (ScopRoundTrip's sweeps over every example run in the release build only: valid programs, 140 s
# under the sanitizers against 18.)
timed "ctest (build-san)" ctest --output-on-failure -j"$(nproc)" -LE sweep \
  -E 'nvcc|runtime/|ScopRoundTrip.(EveryKindOfEveryExample|OutputIsDeterministic|CudaKernelInfoWithDynamicShared)'
