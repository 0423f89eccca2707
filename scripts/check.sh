#!/usr/bin/env bash
# The deeper checks CI runs after scripts/test.sh:
#  1. the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer,
#  2. the threaded tests (ring, live path, end to end) under ThreadSanitizer,
#  3. a fuzzing smoke run of every libFuzzer target (FUZZ_SECONDS each, default 30),
#  4. consumer projects built against the installed package and with add_subdirectory.
# usage: scripts/check.sh [asan|tsan|fuzz|consumer ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
((${#steps[@]})) || steps=(asan tsan fuzz consumer)
jobs=$(nproc)

for step in "${steps[@]}"; do
  start=$SECONDS
  case "$step" in
    asan)
      echo "== ASan + UBSan: full suite"
      scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTICKGATE_SANITIZE=address,undefined \
        -DTICKGATE_BUILD_BENCH=OFF
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j"$jobs"
      ;;
    tsan)
      echo "== TSan: ring, live path, end to end"
      scripts/setup.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTICKGATE_SANITIZE=thread \
        -DTICKGATE_BUILD_BENCH=OFF
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R 'SpscRing|Live|LineFaults|Overload|SourceFilter|Metrics|StateLog|Fanout'
      ;;
    fuzz)
      echo "== fuzzing smoke run"
      tests/fuzz/run.sh "${FUZZ_SECONDS:-30}"
      ;;
    consumer)
      echo "== consumer projects (installed package, add_subdirectory)"
      tests/consumer/run.sh
      ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  echo "== $step: $((SECONDS - start)) s"
done
