#!/usr/bin/env bash
# Screenshots an HTML report with headless Chromium (offline: no network, throwaway profile).
# Usage: scripts/screenshot-report.sh REPORT.html OUT.png [WIDTH,HEIGHT]
# Refreshes docs/img/report.png: scripts/screenshot-report.sh out/report.html docs/img/report.png
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 REPORT.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
report=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1400,1800}
[ -f "$report" ] || { echo "$0: no such file: $1" >&2; exit 2; }
chromium=${QCONFORM_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || { echo "$0: chromium not found; run scripts/setup.sh" >&2; exit 1; }

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
rm -f "$out"
timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$out" --window-size="$size" "file://$report" 2>"$profile/log" || {
  cat "$profile/log" >&2
  exit 1
}
[ -s "$out" ] || { echo "$0: chromium wrote no screenshot" >&2; cat "$profile/log" >&2; exit 1; }
echo "$out"
