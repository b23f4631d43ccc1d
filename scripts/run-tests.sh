#!/usr/bin/env bash
# All tests: GoogleTest unit tests and conformance runs through ctest, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --label-exclude python
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests
