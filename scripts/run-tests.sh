#!/usr/bin/env bash
# All tests: GoogleTest unit tests and conformance runs through ctest, the client example against
# the installed package, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --label-exclude python
scripts/check-client-example.sh  # the installed package, used by examples/client (docs/integrate.md)
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests
