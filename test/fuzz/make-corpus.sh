#!/usr/bin/env bash
# Regenerates the fuzzers' seed corpora, corpus/TARGET/, from the examples: each program of
# examples/ and examples/panamera/ as program/1, and what the pipeline makes of it at default
# options (pipelines/compile.sh) as scop/1, schedule/1, bound/1 and kernel/1, and the space/1 of a few. One file per
# example per kind, named after the example, so a rerun after a format change rewrites them in place.
#   test/fuzz/make-corpus.sh [BIN]   BIN: the stage tools, build/bin by default
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/bin}
corpus=test/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$corpus"
mkdir -p "$corpus"/{program,scop,schedule,bound,kernel,space,partition}
for program in examples/*.yaml examples/*/*.yaml; do
  name=$(echo "${program#examples/}" | tr / _)
  cp "$program" "$corpus/program/$name"
  "$bin/polyk-flatten" "$program" -o "$corpus/scop/$name"
  "$bin/polyk-schedule" "$corpus/scop/$name" -o "$corpus/schedule/$name"
  "$bin/polyk-bind" "$corpus/schedule/$name" -o "$corpus/bound/$name"
  "$bin/polyk-emit" "$corpus/bound/$name" -o "$tmp/out.cu" --kernel-info "$corpus/kernel/$name"
done
# polyk-partition's models of a stencil, a GEMM and a reduction that stays on one device.
for program in examples/stencil/hotspot_iter.yaml examples/blas/gemm.yaml examples/sum_i32.yaml; do
  name=$(basename "$program")
  "$bin/polyk-flatten" "$program" | "$bin/polyk-schedule" | "$bin/polyk-bind" | "$bin/polyk-partition" -o "$corpus/partition/$name"
done
# polyk-tune's spaces of a few of them, and a hand-written one.
for program in examples/blas/gemm.yaml examples/contraction/abc_bda_dc.yaml examples/panamera/sg4.yaml examples/softmax.yaml \
               examples/stencil/gaussian2d.yaml examples/conv/d1.yaml; do
  "$bin/polyk-tune" space "$program" -o "$corpus/space/$(echo "${program#examples/}" | tr / _)"
done
cp test/lit/Inputs/tiny.space.yaml "$corpus/space/tiny.yaml"
# The lit stencil too (affine subscripts and a `where` clause on a symbolic extent).
cp test/lit/Inputs/stencil-5pt.yaml "$corpus/program/affine_stencil-5pt.yaml"
echo "$(find "$corpus" -type f | wc -l) files, $(du -sh "$corpus" | cut -f1) in $corpus"
