#!/bin/sh
# A stand-in compiler for tune-run.test: writes, as the "binary", a script that behaves as asked
# ($1: wrong, crash or hang), so each trial status of polyk-tune run can be checked.
mode=$1
shift
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out=$2; fi
  shift
done
case $mode in
wrong) printf '#!/bin/sh\necho "FAIL gemm (mapped) max_err=1 time_us=3"\nexit 1\n' > "$out" ;;
crash) printf '#!/bin/sh\necho "Segmentation fault"\nexit 139\n' > "$out" ;;
hang) printf '#!/bin/sh\nsleep 30\n' > "$out" ;;
*) echo "fake-cc: error: cannot compile" >&2; exit 1 ;;
esac
chmod +x "$out"
