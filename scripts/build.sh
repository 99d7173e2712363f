#!/usr/bin/env bash
# Configures and builds polyk into build/ (Release with debug info), installing dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build
