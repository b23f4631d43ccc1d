#!/usr/bin/env bash
# The client example against the installed package (docs/integrate.md): installs the build into a
# temporary prefix, then configures, builds and tests examples/client with only that prefix (its
# ctest conformance tests gate against the checked-in baseline), then builds it again with the planted
# regression and checks that the gate fails. Usage: scripts/check-client-example.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/qconform-client.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
# The package is relocatable: use it from another folder than the one it was installed to.
mv "$prefix" "$work/moved" && prefix=$work/moved

echo "client example: plugin and exec runner against $prefix (the gate passes)"
cmake -S examples/client -B "$work/client" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/client" >/dev/null
ctest --test-dir "$work/client" --output-on-failure -j "$(nproc)" | tail -n 3

echo "client example: the planted regression (the gate fails)"
cmake -S examples/client -B "$work/planted" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCLIENT_PLANT_REGRESSION=ON >/dev/null
cmake --build "$work/planted" >/dev/null
if ctest --test-dir "$work/planted" -j "$(nproc)" >"$work/planted.log" 2>&1; then
  echo "client example: the planted regression passed the gate" >&2
  exit 1
fi
grep -E "tests passed|tests failed" "$work/planted.log"
# The gate's own exit code, on one suite: 1 (a change against the baseline), not 2 or a crash.
set +e
"$prefix/bin/qconform" run "$prefix/share/qconform/cases/qgemm.json" --plugin "$work/planted/libclient_plugin.so" \
  --backend client-kernels --preset-file examples/client/presets/client-kernels.json \
  --baseline examples/client/baseline.json --gate --quiet -o "$work/gate" >/dev/null
rc=$?
set -e
if [ "$rc" -ne 1 ]; then
  echo "client example: the gate exited $rc on the planted regression, expected 1" >&2
  exit 1
fi
echo "client example: the planted regression flips the gate (exit 1)"
