#!/usr/bin/env bash
# Floating max / min reductions on signed zeros and NaNs, bit for bit (test/e2e/specials.c): every
# float dtype x max / min x reduced over dim 1, dim 0 and both, of a [37, 1000] tensor.
#   check-specials.sh WORKDIR c c-mapped   the sequential C of the transformed schedule, and the
#                                          CUDA kernels' code run on the CPU thread by thread
#   check-specials.sh WORKDIR cuda         only writes WORKDIR/*.cu (the default return and
#                                          --combine=atomic), the driver and the runtime
#   check-specials.sh WORKDIR run-cuda     on the GPU machine: builds them with nvcc and runs them
# POLYK_BIN / POLYK_SRC as for check-c.sh (POLYK_SRC only for run-cuda's own copy of the runtime).
set -euo pipefail
work=$1
shift
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
src=${POLYK_SRC:-$here/../..}
declare -A ctype=([f16]=__half [bf16]=__nv_bfloat16 [f32]=float [f64]=double)
declare -A dtype=([f16]=POLYK_F16 [bf16]=POLYK_BF16 [f32]=POLYK_F32 [f64]=POLYK_F64)
programs() {  # name type op red
  for t in f16 bf16 f32 f64; do
    for op in max min; do
      for red in 0 1 2; do echo "sz_${op}_${t}_d$red $t $op $red"; done
    done
  done
}
# The driver's -D flags for program NAME (type T, op OP, reduced dims RED) built as GEN, calling FN.
defs() {  # GEN FN LABEL T OP RED
  echo "-DPOLYK_GEN=\"$1\" -DPOLYK_FN=$2 -DPOLYK_NAME=\"$3\" -DDTYPE=${dtype[$4]}" \
    "-DIS_MAX=$([ "$5" = max ] && echo 1 || echo 0) -DRED=$6"
}
status=0
for target in "$@"; do
  if [ "$target" = run-cuda ]; then
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    while read -r name t op red; do
      for v in "" .atomic; do
        flags="$(defs "$name$v.cu" "polyk_$name" "$name$v.cuda" "$t" "$op" "$red") -DPOLYK_CUDA -DSTORE=${ctype[$t]}"
        # shellcheck disable=SC2086
        "$nvcc" -std=c++17 -O3 -arch=sm_90 -x cu -I"$work/runtime" -I"$work" $flags "$work/specials.c" \
          -o "$work/$name$v.cuda.bin" 2> "$work/$name$v.cuda.log" &
      done
    done < <(programs)
    wait
    while read -r name t op red; do
      for v in "" .atomic; do
        if [ -x "$work/$name$v.cuda.bin" ]; then "$work/$name$v.cuda.bin" || status=1
        else echo "FAIL $name$v.cuda (nvcc)"; status=1; fi
      done
    done < <(programs)
    continue
  fi
  while read -r name t op red; do
    case $red in 0) lhs="out(b)" n=1000 ;; 1) lhs="out(a)" n=37 ;; *) lhs="out()" n= ;; esac
    cat > "$work/$name.yaml" << EOT
polyk: program/1
name: $name
tensors:
  x:   {type: $t, shape: [37, 1000], role: input}
  out: {type: $t, shape: [$n], role: output}
statements:
  - $lhs $op=! x(a, b)
EOT
    if [ "$target" = cuda ]; then  # the default return, and the atomic one where blocks share an output
      POLYK_BIN=$POLYK_BIN "$src/pipelines/compile.sh" "$work/$name.yaml" "$work/$name.cu"
      POLYK_BIN=$POLYK_BIN "$src/pipelines/compile.sh" "$work/$name.yaml" "$work/$name.atomic.cu" --combine=atomic
      continue
    fi
    POLYK_BIN=$POLYK_BIN "$src/pipelines/compile.sh" "$work/$name.yaml" "$work/$name.$target.c" --target="$target"
    fn=polyk_${name}_$([ "$target" = c ] && echo c || echo mapped)
    # shellcheck disable=SC2046
    cc -std=c99 -O1 -Wall -Werror -Wno-unused-function -I"$src/libcore/runtime" -I"$work" \
      $(defs "$name.$target.c" "$fn" "$name.$target" "$t" "$op" "$red") "$here/specials.c" -o "$work/$name.$target.bin" -lm
    "$work/$name.$target.bin" || status=1
  done < <(programs)
  if [ "$target" = cuda ]; then
    cp "$here/specials.c" "$work/" && rm -rf "$work/runtime" && cp -r "$src/libcore/runtime" "$work/runtime"
  fi
done
exit $status
