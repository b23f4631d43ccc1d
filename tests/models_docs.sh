#!/usr/bin/env bash
# The commands docs/models.md shows, run as written (each must stand in the doc word for word) from a
# scratch folder that sees the source tree's build/ and cases/; the tables are checked, not run
# (models.docs_table). Usage: tests/models_docs.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
doc="$src/docs/models.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$2" "$work/build"
ln -s "$src/cases" "$work/cases"
commands=(
  'build/cli/qconform model cases/models/digits_cnn_qdq.model.json --no-peers'
  'build/cli/qconform model cases/models/digits_cnn_qop.onnx --input image=cases/models/digits_test_images.npy --labels cases/models/digits_test_labels.npy --backend cpu-ref --backend vnni512 --expect claim -o model-report'
  'build/cli/qconform model cases/models/digits_cnn_qdq.onnx --input image=cases/models/digits_test_images.npy --emit-cases model-cases --backend cpu-ref -o model-report'
  'build/cli/qconform run model-cases --backend cpu-ref -o model-cases-report'
)
for c in "${commands[@]}"; do
  grep -qF -- "$c" "$doc" || { echo "$doc no longer shows: $c" >&2; exit 1; }
done
cd "$work"
for c in "${commands[@]}"; do
  echo "+ $c"
  eval "$c" >out.log 2>&1 || { rc=$?; tail -20 out.log; echo "failed ($rc): $c" >&2; exit 1; }
done
# The emitted cases are the model's node cases: as many as the model run judged.
emitted=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' model-cases/digits_cnn_qdq.json)
judged=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' model-cases-report/report.json)
[ "$emitted" = "$judged" ] && [ "$emitted" -gt 0 ] || { echo "emitted $emitted cases, the re-run judged $judged" >&2; exit 1; }
echo "models_docs: 4 commands of docs/models.md ran; $emitted node cases re-ran from model-cases/"
