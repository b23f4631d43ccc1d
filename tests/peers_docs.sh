#!/usr/bin/env bash
# The commands docs/peers.md shows, run as written (each must stand in the doc word for word) from a
# scratch folder that sees the source tree's build/, cases/ and the installed test data; the table
# update is checked, not run (peers.docs_table). Usage: tests/peers_docs.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
doc="$src/docs/peers.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$2" "$work/build"
ln -s "$src/cases" "$work/cases"
commands=(
  'build/cli/qconform list backends'
  'build/cli/qconform run --backend onednn --backend torch-qnnpack cases/peers -o peers-report'
  'PYTHONPATH=build/python /usr/bin/python3 -m qconform.onnx_node /usr/share/libonnx-testdata/data/node/test_* -o onnx_node.json --check'
  'build/cli/qconform run onnx_node.json --backend cpu-ref --backend onnxruntime-cpu -o onnx-node-report'
  'ONEDNN_MAX_CPU_ISA=AVX2 build/cli/qconform run cases/peers/peers_onednn.json --backend onednn --expect claim -o onednn-avx2-report'
)
# ONNX Runtime on the emulated AVX2 CPU, where the build found qemu-x86_64 (peers/CMakeLists.txt).
emulated='QCONFORM_PEERS=build/peers/peers-x86-avx2-emulated.json build/cli/qconform run cases/peers/peers_ort.json --backend onnxruntime-cpu -o avx2-report'
if [[ -f "$2/peers/peers-x86-avx2-emulated.json" ]]; then
  commands+=("$emulated")
else
  grep -qF -- "$emulated" "$doc" || { echo "$doc no longer shows: $emulated" >&2; exit 1; }
  echo "peers_docs: no emulated-AVX2 manifest in $2 (no qemu-x86_64): not running $emulated"
fi
for c in "${commands[@]}"; do
  grep -qF -- "$c" "$doc" || { echo "$doc no longer shows: $c" >&2; exit 1; }
done
cd "$work"
for c in "${commands[@]}"; do
  echo "+ $c"
  eval "$c" >out.log 2>&1 || { rc=$?; tail -20 out.log; echo "failed ($rc): $c" >&2; exit 1; }
done
grep -q 'onednn  claims onednn@2.6' <(build/cli/qconform list backends) || { echo "list backends shows no onednn peer" >&2; exit 1; }
echo "peers_docs: ${#commands[@]} commands of docs/peers.md ran"
