#!/usr/bin/env bash
# Set up (packages), configure (once) and build qconform in build/. Fast when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  cmake --preset release >/dev/null
fi
cmake --build build -j "$(nproc)"
