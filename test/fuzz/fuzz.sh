#!/usr/bin/env bash
# Fuzzes one polyk reader for a bounded time: FUZZER from the seed corpus SEEDS, with the shared
# dictionary, for SECONDS. ctest's fuzz/TARGET and scripts/fuzz.sh run it.
#   fuzz.sh FUZZER SECONDS SEEDS WORKDIR [libFuzzer options...]
# WORKDIR is emptied; new inputs go to WORKDIR/corpus (libFuzzer adds them to its first corpus
# directory, so SEEDS, the second, is only read) and a finding to WORKDIR/artifacts/. Exits
# non-zero on a finding (crash, sanitizer report, leak, abort, timeout, out of memory) after
# printing the saved input's path. A timeout is an input taking over 25 s: the seed of the 4-d
# contraction (abcd-aebf-dfce) takes about 9 s under ASan on an idle 2-core machine, and went past
# the 10 s this used to allow on a busy one.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 FUZZER SECONDS SEEDS WORKDIR [libFuzzer options...]" >&2
  exit 2
fi
fuzzer=$1 seconds=$2 seeds=$3 work=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
  -dict="$here/polyk.dict" -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds" || status=$?
if [ $status -ne 0 ]; then
  echo "$(basename "$fuzzer"): finding (exit $status); input saved as:"
  find "$work/artifacts" -type f | sed 's/^/  /'
fi
exit $status
