#!/usr/bin/env bash
# All tests: GoogleTest unit tests and conformance runs through ctest, then the client example
# against the installed package and pytest, side by side (each is mostly one process, and CI has two
# cores); pytest's output is printed when both have finished.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --label-exclude python
pytest_log=$(mktemp "${TMPDIR:-/tmp}/qconform-pytest.XXXXXX")
trap 'rm -f "$pytest_log"' EXIT
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests >"$pytest_log" 2>&1 &
pytest_pid=$!
client_rc=0
scripts/check-client-example.sh || client_rc=$?  # the installed package, used by examples/client (docs/integrate.md)
pytest_rc=0
wait "$pytest_pid" || pytest_rc=$?
cat "$pytest_log"
[ "$client_rc" -eq 0 ] && [ "$pytest_rc" -eq 0 ]
