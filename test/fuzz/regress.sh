#!/usr/bin/env bash
# Runs FUZZER once on every file of the given directories (regressions/TARGET/, corpus/TARGET/),
# each in its own process so that every failing input is named and a leak is blamed on its input.
#   regress.sh FUZZER DIR...
set -uo pipefail
fuzzer=$1
shift
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
failed=()
count=0
for dir in "$@"; do
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    count=$((count + 1))
    "$fuzzer" -timeout=25 -rss_limit_mb=4096 "$f" > "${TMPDIR:-/tmp}/polyk-regress.$$" 2>&1 || {
      cat "${TMPDIR:-/tmp}/polyk-regress.$$"
      failed+=("$f")
    }
  done
done
rm -f "${TMPDIR:-/tmp}/polyk-regress.$$"
echo "$(basename "$fuzzer"): $count inputs, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "FAIL $f"; done
[ ${#failed[@]} -eq 0 ]
