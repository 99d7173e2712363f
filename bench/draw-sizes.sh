#!/usr/bin/env bash
# GEMM sizes drawn at random: for each SEED COUNT MAX, COUNT lines `M N K` uniform in [1, MAX]
# (Python's random.Random(SEED)), printed in order. Usage: bench/draw-sizes.sh [SEED COUNT MAX]...
set -euo pipefail
while [ $# -ge 3 ]; do
  python3 -c "import random,sys; r=random.Random(int(sys.argv[1])); [print(r.randint(1,int(sys.argv[3])), r.randint(1,int(sys.argv[3])), r.randint(1,int(sys.argv[3]))) for _ in range(int(sys.argv[2]))]" "$1" "$2" "$3"
  shift 3
done
