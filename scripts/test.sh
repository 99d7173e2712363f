#!/usr/bin/env bash
# The whole test suite: build (installing dependencies if needed), then every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
