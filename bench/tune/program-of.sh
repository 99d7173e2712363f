# Sourced by bench/tune-exhaustive.sh and bench/tune-spill.sh: the program a space of bench/tune/spaces
# names (gemm1024 -> examples/blas/gemm.yaml, conv_X -> examples/conv/X.yaml) in $program, and the
# small sizes its variants are checked at (--check-param) in $check; returns 1 for an unknown name.
program_of() {
  case $1 in
    gemm1024) program=examples/blas/gemm.yaml check=(M=129 N=200 K=67) ;;
    conv_*) program=examples/conv/${1#conv_}.yaml
            if grep -q '2\*y' "$program"; then check=(K=13 C=6 H=30 W=30 OH=15 OW=15); else check=(K=13 C=6 H=29 W=29 OH=29 OW=29); fi ;;
    *) echo "$1: no program known for this space" >&2; return 1 ;;
  esac
}
