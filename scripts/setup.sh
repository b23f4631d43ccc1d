#!/usr/bin/env bash
# Installs, only when missing, every Debian package qconform's build and tests need.
# Idempotent: a second run installs nothing and takes well under a second.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build git pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev   # GoogleTest, Google Benchmark
  libeigen3-dev                                # Eigen (cpu-ref integer GEMM)
  libboost-dev libgmp-dev                      # Boost.Multiprecision and its GMP backend (the slow exact path)
  libfmt-dev nlohmann-json3-dev libcli11-dev   # formatting, JSON, command line
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pybind11  # /usr/bin/python3 module and tests
  python3-jsonschema                           # validates report.json against reports/report.schema.json
  hipcc libamdhip64-dev rocm-device-libs       # the AMD compile check of the hip backend's kernels (gfx90a)
  chromium                                     # headless: the HTML report test (tests/reports) and its screenshot
)

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
