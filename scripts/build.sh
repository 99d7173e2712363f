#!/usr/bin/env bash
# Configures and builds polyk into build/ (Release with debug info), installing dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Unity batches of 6 files: each parses isl's C++ bindings (29k lines) and the standard library once,
# not once a file; on 2 cores the build takes 144 s instead of 247. (A developer's own build/ may
# leave them off: -DCMAKE_UNITY_BUILD=OFF, for quicker rebuilds of one file.)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=6 > /dev/null
ninja -C build
