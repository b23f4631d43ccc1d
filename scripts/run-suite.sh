#!/usr/bin/env bash
# The main job: the default conformance suites (cases/) on every available backend.
# Writes out/report.json and out/report.html and prints a summary. Extra arguments go to
# `qconform run` (e.g. --backend cpu-ref). Exit code: see README "Exit codes".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec build/cli/qconform run cases/ --report-dir out "$@"
