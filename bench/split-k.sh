#!/usr/bin/env bash
# Split-K by default against the defaults before it, and cuBLAS, on GEMM sizes drawn at random (a
# program per size, its sizes chosen for it), in one device call.
#   here:     bench/split-k.sh prepare DIR OLD_BIN [SEED COUNT MAX]...
#             (OLD_BIN: the tools of the commit before, e.g. a worktree's build/bin; each SEED
#             COUNT MAX draws COUNT sizes uniform in [1, MAX] with random.Random(SEED))
#   GPU:      bench/split-k.sh run DIR OUT   (carry DIR) -> OUT/run.txt, OUT/cublas.txt, OUT/table.txt
# Every size whose CPU reference is affordable (M N K <= 2500^3) is checked with the new defaults;
# with CHECK=changed (bench/mma-default.sh), each size whose new kernel differs from the old is
# checked instead at M = 520, N = 650 and a K of its own remainder mod 64 plus 192 (the same kernel:
# the sizes are compiled in, the extents are not).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1 dir=$2
if [ "$mode" = prepare ]; then
  old=$3
  shift 3
  mkdir -p "$dir"
  : > "$dir/list.txt"
  bench/draw-sizes.sh "$@" > "$dir/sizes.txt"
  while read -r m n k; do
    name=gemm_${m}_${n}_${k}
    sed "s/params: {[^}]*}/params: {M: $m, N: $n, K: $k}/" examples/blas/gemm.yaml > "$dir/$name.yaml"
    POLYK_BIN=build/bin pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_new.cu" --harness
    POLYK_BIN=$old pipelines/compile.sh "$dir/$name.yaml" "$dir/${name}_old.cu" --harness
    echo "${name}_new 1 20 check=0" >> "$dir/list.txt"
    if cmp -s "$dir/${name}_new.cu" "$dir/${name}_old.cu"; then
      rm "$dir/${name}_old.cu"
    else
      echo "${name}_old 1 20 check=0" >> "$dir/list.txt"
      [ "${CHECK:-}" = changed ] && echo "${name}_new 1 2 M=520 N=650 K=$((k % 64 + 192))" >> "$dir/list.txt"
    fi
    [ "${CHECK:-}" != changed ] && [ $((m * n * k)) -le $((2500 * 2500 * 2500)) ] && echo "${name}_new 1 2" >> "$dir/list.txt"
  done < "$dir/sizes.txt"
  rm -rf "$dir/runtime" && cp -r libcore/runtime "$dir/runtime"
  echo "$(wc -l < "$dir/sizes.txt") sizes, $(ls "$dir"/*.cu | wc -l) harnesses"
  exit 0
fi
out=$3
bash bench/run-list.sh "$dir" "$dir/list.txt" "$out/run.txt" 60 > /dev/null
python3 bench/gemm_sizes.py cublas "$dir/sizes.txt" > "$out/cublas.txt"
python3 - "$dir" "$out" > "$out/table.txt" <<'PY'
import math, re, sys
d, out = sys.argv[1], sys.argv[2]
t, checks = {}, {}
for line in open(f"{out}/run.txt"):
    m = re.match(r"(gemm_\d+_\d+_\d+)_(new|old)\s+(.*?)\s(PASS|FAIL|UNCHECKED) .*median_us=([0-9.]+)", line)
    if not m: continue
    if "check=0" in m.group(3): t.setdefault(m.group(1), {})[m.group(2)] = float(m.group(5))
    else: checks[m.group(1)] = m.group(4)
cub = {l.split()[1]: float(l.split()[2]) for l in open(f"{out}/cublas.txt") if l.startswith("cublas")}
split = {}
for l in open(f"{d}/list.txt"):
    pass
print(f"{'M':>5} {'N':>5} {'K':>5} {'check':>6} {'old_us':>8} {'new_us':>8} {'cublas':>8} {'old/new':>7} {'cub/old':>7} {'cub/new':>7}")
ro, rn = [], []
for name, v in t.items():
    m, n, k = map(int, name.split("_")[1:])
    new = v["new"]; old = v.get("old", new); c = cub[name]
    ro.append(c / old); rn.append(c / new)
    print(f"{m:5d} {n:5d} {k:5d} {checks.get(name, '-'):>6} {old:8.1f} {new:8.1f} {c:8.1f} {old / new:7.2f} {c / old:7.2f} {c / new:7.2f}")
g = lambda r: math.exp(sum(map(math.log, r)) / len(r))
print(f"geomean cuBLAS / polyk over {len(rn)} sizes: before {g(ro):.3f}, with split-K {g(rn):.3f}")
PY
cat "$out/table.txt"
