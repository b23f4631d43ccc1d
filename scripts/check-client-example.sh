#!/usr/bin/env bash
# The client example against the installed package, run by the test command (docs/integrate.md):
# installs the build into a temporary prefix and moves it (the package is relocatable), then
# configures, builds and tests examples/client with only that prefix (its ctest conformance tests gate
# against the checked-in baseline), then builds it again with the planted regression and checks that
# the gate fails. The commands docs/integrate.md shows are run here as written (checked below).
# Usage: scripts/check-client-example.sh (from a configured and built build/)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/qconform-client.XXXXXX")
trap 'rm -rf "$work"' EXIT

# shows DOC COMMAND...: each command must stand in the doc word for word (the doc shows what runs here).
shows() {
  local doc=$1
  shift
  for c in "$@"; do
    grep -qF -- "$c" "$doc" || { echo "$doc no longer shows: $c" >&2; exit 1; }
  done
}

# Each command of docs/integrate.md that this script runs, word for word.
doc_commands=(
  'cmake --install build --prefix "$PREFIX"'
  'PYTHONPATH="$PREFIX/python" /usr/bin/python3 -c "import qconform"'
  'cmake -S examples/client -B client-build -DCMAKE_PREFIX_PATH="$PREFIX"'
  'cmake --build client-build'
  'ctest --test-dir client-build'
  '"$PREFIX/bin/qconform" run --plugin client-build/libclient_plugin.so --backend client-kernels --preset-file examples/client/presets/client-kernels.json -o client-report'
  '"$PREFIX/bin/qconform" run --backend "exec:client-build/client_runner" --preset-file examples/client/presets/client-kernels.json -o client-report-exec'
)
shows docs/integrate.md "${doc_commands[@]}"
run_doc() { (cd "$work/tree" && eval "${doc_commands[$1]}"); }

# A tree with the build and the example, as a client's checkout would have them.
mkdir -p "$work/tree/examples"
ln -s "$PWD/build" "$work/tree/build"
cp -r examples/client "$work/tree/examples/client"
export PREFIX=$work/installed
run_doc 0 >/dev/null
mv "$PREFIX" "$work/moved" && export PREFIX=$work/moved  # relocatable: used from elsewhere
run_doc 1
"$PREFIX/bin/qconform" list cases | grep -F "share/qconform/cases" >/dev/null  # the installed suites (grep -q would end the pipe early)

echo "client example: plugin and exec runner against the installed package (the gate passes)"
run_doc 2 >/dev/null
run_doc 3 >/dev/null
(cd "$work/tree" && ctest --test-dir client-build --output-on-failure -j "$(nproc)") | grep -E "tests passed|tests failed"
# The plugin and the exec runner on every default suite: the same verdicts (exit 1: the FAILs the
# baseline lists, against specs the kernels deliberately do not follow).
set +e
run_doc 5 >/dev/null; rc_plugin=$?
run_doc 6 >/dev/null; rc_exec=$?
set -e
[ "$rc_plugin" -eq 1 ] && [ "$rc_exec" -eq 1 ] || { echo "client example: exits $rc_plugin, $rc_exec, expected 1" >&2; exit 1; }
/usr/bin/python3 - "$work/tree/client-report/report.json" "$work/tree/client-report-exec/report.json" <<'PY'
import json, sys
def verdicts(p):
    return {c["id"]: [(b["verdict"], b["reason"], b.get("causes")) for b in c["backends"]] for c in json.load(open(p))["cases"]}
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
assert a == b, "the plugin and the exec runner disagree"
print(f"client example: plugin and exec runner agree on {len(a)} cases")
PY

# docs/ci.md's baseline, gate and shrink commands, on the example's plugin, as written.
ci_commands=(
  'export QCONFORM_PLUGINS=client-build/libclient_plugin.so QCONFORM_PRESETS=examples/client/presets/client-kernels.json'
  'build/cli/qconform run cases/ --backend client-kernels -o out'
  'build/cli/qconform baseline out/report.json -o qconform-baseline.json'
  'build/cli/qconform run cases/ --backend client-kernels --baseline qconform-baseline.json --gate -o out'
  'build/cli/qconform shrink cases/quantize_linear.json --case ties_at_half_integers --backend client-kernels -o small.json'
)
shows docs/ci.md "${ci_commands[@]}"
ln -s "$PWD/cases" "$work/tree/cases"
(
  cd "$work/tree"
  eval "${ci_commands[0]}"
  set +e
  eval "${ci_commands[1]}" >/dev/null; rc=$?
  set -e
  [ "$rc" -eq 1 ] || { echo "docs/ci.md: the first run exited $rc, expected 1" >&2; exit 1; }
  eval "${ci_commands[2]}" >/dev/null
  eval "${ci_commands[3]}" >/dev/null  # the gate: exit 0, nothing changed
  eval "${ci_commands[4]}" >/dev/null
  test -s small.json
)
echo "client example: docs/ci.md's baseline, gate and shrink commands run as written"

echo "client example: the planted regression (the gate fails)"
cmake -S "$work/tree/examples/client" -B "$work/planted" -DCMAKE_PREFIX_PATH="$PREFIX" -DCLIENT_PLANT_REGRESSION=ON >/dev/null
cmake --build "$work/planted" >/dev/null
if ctest --test-dir "$work/planted" -j "$(nproc)" >"$work/planted.log" 2>&1; then
  echo "client example: the planted regression passed the gate" >&2
  exit 1
fi
# Said in our own words: ctest's summary line of an expected failure would read as a failed run.
failed=$(grep -cE "\(Failed\)" "$work/planted.log" || true)
echo "client example: $failed gated test(s) fail on the planted regression, as they must"
[ "$failed" -gt 0 ]
# The gate's own exit code on one suite: 1 (a change against the baseline), not 2 or a crash.
set +e
"$PREFIX/bin/qconform" run "$PREFIX/share/qconform/cases/qgemm.json" --plugin "$work/planted/libclient_plugin.so" \
  --backend client-kernels --preset-file examples/client/presets/client-kernels.json \
  --baseline examples/client/baseline.json --gate --quiet -o "$work/gate" >/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "client example: the gate exited $rc on the planted regression, expected 1" >&2; exit 1; }
echo "client example: the planted regression flips the gate (exit 1)"
