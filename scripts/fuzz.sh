#!/usr/bin/env bash
# Fuzzes what qconform reads from users: the case loader, the .npy reader and the report reader
# (fuzz/, docs/development.md "Fuzzing"). The targets run side by side, each for SECONDS (default 60)
# under ASan + UBSan, from the checked-in corpus fuzz/corpus/TARGET (plus the default suites for the
# case loader), adding what they find to build-fuzz/corpus/TARGET, kept between runs. A crash, a
# sanitizer report or any exception other than an input error stops a target: the input is saved as
# build-fuzz/findings/TARGET-*, and this script exits 1. Add a fixed finding to fuzz/corpus/TARGET.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (targets: cases npy report)
#   scripts/fuzz.sh --build-only              (set up and build the targets; run nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
seconds="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(cases npy report); fi

scripts/setup.sh fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
if ((build_only)); then exit 0; fi

# A case may ask for up to 2^28 elements per tensor, which is legal but would trip the fuzzer's
# memory limit; a smaller limit keeps every input an ordinary run.
export QCONFORM_MAX_ELEMENTS=65536
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p build-fuzz/findings
run_target() {
  local t=$1 seeds=("fuzz/corpus/$1")
  if [ "$t" = cases ]; then seeds+=(cases cases/peers docs/examples); fi
  mkdir -p "build-fuzz/corpus/$t"
  "build-fuzz/fuzz/qconform_fuzz_$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/findings/$t-" "build-fuzz/corpus/$t" "${seeds[@]}" 2>"build-fuzz/$t.log"
}
echo "fuzz: ${targets[*]} for ${seconds}s each, side by side"
pids=()
for t in "${targets[@]}"; do
  run_target "$t" &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if ! wait "${pids[$i]}"; then
    echo "fuzz: $t found a problem (build-fuzz/$t.log, build-fuzz/findings/$t-*)"
    tail -40 "build-fuzz/$t.log"
    status=1
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "build-fuzz/$t.log" | sed "s/^/fuzz: $t /" || true
done
exit "$status"
