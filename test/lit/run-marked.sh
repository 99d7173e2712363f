#!/bin/sh
# lit on the stage tests marked `UNSUPPORTED: sanitized` only (the release build's ctest entry
# lit/unsanitized): LIT SUITE_BUILD_DIR SUITE_SOURCE_DIR
set -eu
lit=$1 build=$2 src=$3
names=$(cd "$src" && grep -l '^# UNSUPPORTED: sanitized' ./*.test | sed 's|^\./||; s|\.test$||' | paste -sd '|' -)
rm -f "$build/.lit_test_times.txt"
exec python3 "$lit" -v --filter "^polyk :: ($names)\.test\$" "$build"
