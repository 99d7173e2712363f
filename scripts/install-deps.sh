#!/usr/bin/env bash
# Installs polyk's build and test dependencies from Debian 12 packages (run as root).
# The CUDA toolkit is not a Debian package here: it is expected at /usr/local/cuda (or nvcc on
# PATH); without it the nvcc compile tests are skipped and everything else still runs.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config python3
  libisl-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  googletest libgtest-dev
  libxgboost-dev   # polyk-tune's cost model (gradient-boosted trees)
  libglpk-dev      # map fusion's cover by an ILP (polyk-schedule --fusion=search)
  libboost-dev     # polyk-partition's runtime: the segment tracker (Boost.ICL, header-only)
  libopenmpi-dev openmpi-bin   # polyk-partition's runtime past one process (MPI)
  llvm-14-tools   # lit and FileCheck
  python3-yaml python3-jsonschema   # schema validation test
  clang-14 libclang-rt-14-dev llvm-14   # build-san: ASan, UBSan, libFuzzer runtimes, llvm-symbolizer
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
