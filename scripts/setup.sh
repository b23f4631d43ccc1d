#!/usr/bin/env bash
# Installs, only when missing, every Debian package qconform's build and tests need
# (`scripts/setup.sh fuzz` adds clang and libFuzzer for scripts/fuzz.sh).
# Idempotent: a second run installs nothing and takes well under a second.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build git pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev   # GoogleTest, Google Benchmark
  libeigen3-dev                                # Eigen (cpu-ref integer GEMM)
  libboost-dev libgmp-dev                      # Boost.Multiprecision and its GMP backend (the slow exact path)
  nlohmann-json3-dev libcli11-dev   # JSON, command line
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pybind11  # /usr/bin/python3 module and tests
  python3-jsonschema                           # validates report.json against reports/report.schema.json
  hipcc libamdhip64-dev rocm-device-libs       # the AMD compile check of the hip backend's kernels (gfx90a)
  chromium                                     # headless: the HTML report test (tests/reports) and its screenshot
  # The peers (docs/peers.md): the real libraries, run as backends
  libdnnl-dev ocl-icd-opencl-dev               # oneDNN 2.x (its CMake config needs OpenCL's)
  libxnnpack-dev libpthreadpool-dev            # XNNPACK
  libgemmlowp-dev                              # gemmlowp (headers)
  python3-torch                                # PyTorch's quantized engines (onednn, qnnpack)
  python3-onnx libonnx-testdata                # ONNX node tests, imported as a suite
  python3-sklearn                              # the digits data the shipped models are trained on (cases/models)
  qemu-user                                    # ONNX Runtime on an emulated AVX2 CPU without VNNI
)
if [ "${1:-}" = fuzz ]; then PACKAGES+=(clang libclang-rt-dev); fi  # libFuzzer, ASan, UBSan
# ONNX Runtime ships its Linux CPU library on the npm registry only: node and npm, from Debian unless
# the machine has them already (an image's own Node.js conflicts with Debian's npm package).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then PACKAGES+=(nodejs npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime's CPU library comes with the npm package onnxruntime-node. Its install script
# downloads GPU parts from outside, so it is skipped (--ignore-scripts): the CPU library is in the
# package itself. Installed into .deps/ (ignored by git), where the build looks for it.
ORT_NODE_VERSION=1.30.0
ORT_DIR="$(cd "$(dirname "$0")/.." && pwd)/.deps"
if [ "$(node -p "try { require('$ORT_DIR/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }" 2>/dev/null)" != "$ORT_NODE_VERSION" ]; then
  echo "setup: installing onnxruntime-node@$ORT_NODE_VERSION into $ORT_DIR"
  mkdir -p "$ORT_DIR"
  npm install --prefix "$ORT_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$ORT_NODE_VERSION" >/dev/null
fi
