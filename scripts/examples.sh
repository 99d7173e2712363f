#!/usr/bin/env bash
# The main job: build polyk, compile every program in examples/ to CUDA through
# pipelines/compile.sh and nvcc; where a GPU is present, run each harness (PASS/FAIL, max error,
# median time).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
export PATH=$PATH:/usr/local/cuda/bin
make -f Makefile.examples -j"$(nproc)" all
if command -v nvidia-smi > /dev/null && nvidia-smi > /dev/null 2>&1; then
  make -f Makefile.examples run
else
  echo "no GPU here: examples compiled to build/examples/, not run (bench/gpu-check.sh runs them on a GPU machine)"
fi
