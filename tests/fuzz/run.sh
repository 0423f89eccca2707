#!/usr/bin/env bash
# Builds and runs tickgate's libFuzzer targets, then replays the regression
# inputs. Targets run one after another (the fuzzers are single-threaded).
#
# usage: tests/fuzz/run.sh SECONDS [TARGET...]
#   SECONDS  fuzzing time per target (-max_total_time); 0 = only build,
#            check the seeds and replay the regressions
#   TARGET   fuzz_datagram, fuzz_capture, fuzz_config, fuzz_itch50, fuzz_mdp3, fuzz_glimpse, fuzz_fanout (default: all)
#
# environment:
#   FUZZ_BUILD_DIR  build directory (default: <repo>/build-fuzz)
#   FUZZ_FORK=N     libFuzzer fork mode with N workers that keeps going after
#                   a crash/leak/timeout (-fork=N -ignore_crashes=1 ...);
#                   every finding is still saved and still fails the run
#   FUZZ_ARGS       extra libFuzzer flags, e.g. "-max_len=32768"
#
# Exit status: 0 clean; 1 a crash, leak, sanitizer report, invariant failure
# or timeout (in fuzzing or in a regression input); 2 build/usage error.
# New corpus entries go to build-fuzz/corpus-<target>; findings to
# build-fuzz/artifacts-<target>/; logs to build-fuzz/<target>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
all_targets=(fuzz_datagram fuzz_capture fuzz_config fuzz_itch50 fuzz_mdp3 fuzz_glimpse fuzz_fanout)

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || usage
secs=$1
shift
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "run.sh: unknown target '$t'" >&2; usage; }
done

# ------------------------------------------------------------ toolchain
need=()
for p in clang libclang-rt-14-dev nlohmann-json3-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "run.sh: installing ${need[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq || exit 2
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || exit 2
fi

# ---------------------------------------------------------------- build
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
echo "run.sh: building into $build" >&2
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S "$here" -B "$build" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
cmake --build "$build" -j"$(nproc)" >/dev/null || { cmake --build "$build" -j1; exit 2; }

# Seeds: regenerated into a scratch directory on every run; the committed
# corpus (tests/fuzz/corpus) is only ever read.
seed=$build/seed
rm -rf "$seed"
"$build/make_corpus" "$seed" "$root" >&2 || exit 2

export ASAN_OPTIONS=${ASAN_OPTIONS:-"detect_leaks=1:symbolize=1:detect_stack_use_after_return=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1:symbolize=1"}
common=(-detect_leaks=1 -rss_limit_mb=2048 -timeout=10)
fork=()
if [[ -n ${FUZZ_FORK:-} ]]; then
  fork=(-fork="$FUZZ_FORK" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
read -r -a extra <<<"${FUZZ_ARGS:-}"

declare -A max_len=([fuzz_datagram]=16384 [fuzz_capture]=16384 [fuzz_config]=4096 [fuzz_itch50]=16384 [fuzz_mdp3]=16384 [fuzz_glimpse]=8192 [fuzz_fanout]=4096)
report_pattern='ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|INVARIANT FAILED|Sanitizer CHECK failed|==ERROR'
failed=0
summary=()

for t in "${targets[@]}"; do
  bin=$build/$t
  corpus=$build/corpus-$t
  art=$build/artifacts-$t
  log=$build/$t.log
  mkdir -p "$corpus" "$art" "$seed/$t"  # make_corpus writes no seeds for some targets (fuzz_itch50: committed corpus)
  dict=()
  [[ -f $here/$t.dict ]] && dict=(-dict="$here/$t.dict")
  dirs=("$corpus" "$seed/$t")
  [[ -d $here/corpus/$t ]] && dirs+=("$here/corpus/$t")
  status=ok

  if ((secs > 0)); then
    marker=$(mktemp)
    echo "run.sh: $t for ${secs}s (log: $log)" >&2
    "$bin" "${common[@]}" "${fork[@]}" -max_total_time="$secs" -max_len="${max_len[$t]}" \
      -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "${extra[@]}" "${dirs[@]}" >"$log" 2>&1
    rc=$?
    new_artifacts=$(find "$art" -type f -newer "$marker" ! -name 'slow-unit-*' ! -name '*.txt' | sort)
    rm -f "$marker"
    n_art=0
    [[ -n $new_artifacts ]] && n_art=$(wc -l <<<"$new_artifacts")
    if ((rc != 0)) || grep -Eq "$report_pattern" "$log" || ((n_art > 0)); then
      status=FAIL
      failed=1
      echo "run.sh: $t: FINDING (exit $rc, $n_art new artifact(s)); full log: $log" >&2
      # Distinct reports (numbers masked) with how often each was hit.
      grep -Eo "[^ ]+:[0-9]+:[0-9]+: runtime error: [^:]+|INVARIANT FAILED .*|ERROR: (AddressSanitizer|LeakSanitizer): [a-z-]+|ERROR: libFuzzer: [a-z -]+|ALARM: .*" "$log" |
        sed -E 's/-?[0-9]{3,}/N/g' | sort | uniq -c | sort -rn | head -20 >&2
      # The first finding's stack.
      grep -E -m 1 -A 14 "$report_pattern|deadly signal" "$log" | head -16 >&2
      # The first few findings once more without the block cache: ASan's
      # full report (allocation/free stacks) next to each as <artifact>.txt.
      k=0
      for a in $new_artifacts; do
        ((k++ < 10)) || break
        FUZZ_NO_BLOCK_CACHE=1 "$bin" "${common[@]}" "$a" >"$a.txt" 2>&1
      done
      ((n_art > 0)) && printf 'run.sh: artifact %s\n' $new_artifacts | head -10 >&2
      ((n_art > 10)) && echo "run.sh: ... and $((n_art - 10)) more in $art/" >&2
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [[ -n $execs ]] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    ft=$(grep -Eo 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    corp=$(grep -Eo 'corp: [0-9]+(/[0-9]+[a-zA-Z]*)?' "$log" | tail -1 | awk '{print $2}')
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    [[ -n $eps || -z $execs ]] || eps=$((execs / secs))
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    line="$t: ${status} execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?} exec/s=${eps:-?}"
    [[ -n $rss ]] && line+=" peak_rss=${rss}MB"
    ((n_art > 0)) && line+=" new_artifacts=$n_art"
  else
    # No fuzzing: every seed and committed corpus input must still run clean.
    "$bin" "${common[@]}" -runs=0 "${dirs[@]}" >"$log" 2>&1 || { status=FAIL; failed=1; tail -40 "$log" >&2; }
    line="$t: seeds ${status}"
  fi

  # Regression inputs: each must run clean.
  regs=0
  reg_fail=0
  if [[ -d $here/regressions/$t ]]; then
    while IFS= read -r -d '' f; do
      regs=$((regs + 1))
      if ! "$bin" "${common[@]}" "$f" >"$log.regression" 2>&1; then
        reg_fail=$((reg_fail + 1))
        failed=1
        echo "run.sh: $t: regression input FAILS: $f" >&2
        grep -E -m 1 -A 8 "$report_pattern|deadly signal|ALARM" "$log.regression" | head -10 >&2
      fi
    done < <(find "$here/regressions/$t" -type f ! -name '*.md' ! -name '*.txt' ! -name '.*' -print0 | sort -z)
  fi
  rm -f "$log.regression"
  line+=" regressions=$((regs - reg_fail))/$regs"
  summary+=("$line")
done

# fuzz_capture's temp files of processes that died on a finding (atexit did not run).
for f in /tmp/fuzz_capture_*.bin; do
  [[ -e $f ]] || continue
  pid=${f#/tmp/fuzz_capture_}
  pid=${pid%.bin}
  [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -f "$f"
done

echo
echo "==== fuzz summary ===="
printf '%s\n' "${summary[@]}"
exit "$failed"
