#!/usr/bin/env bash
# Packaging check: configure/build/install tickgate (Release, no tests/bench)
# into a temporary prefix, then build and run two consumers:
#   installed/ - find_package(tickgate 0.1) from that prefix, links tickgate::feed
#   subdir/    - add_subdirectory(<repo root>), links tickgate::core
# Exits non-zero on any failure.
#
# Usage: tests/consumer/run.sh [BUILD_ROOT]   (default: <repo>/build-consumer)
# Environment: JOBS (parallel build jobs, default nproc), CMAKE_GENERATOR is honoured;
#   CONSUMER_INSTALL_FROM=DIR installs from that existing tickgate build tree
#   (brought up to date first) instead of configuring a Release tree of its own:
#   scripts/check.sh passes the test command's build/, which CI has just built.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build-consumer}
jobs=${JOBS:-$(nproc)}
prefix=$out/prefix

step() { printf '\n==> %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

step "clean $out"
run rm -rf "$out"
mkdir -p "$out"

tree=${CONSUMER_INSTALL_FROM:-}
if [[ -z $tree ]]; then
    tree=$out/tickgate
    step "configure tickgate (Release, tests/bench off) -> $tree"
    run cmake -S "$root" -B "$tree" -DCMAKE_BUILD_TYPE=Release \
        -DTICKGATE_BUILD_TESTS=OFF -DTICKGATE_BUILD_BENCH=OFF
fi
step "build tickgate ($tree)"
run cmake --build "$tree" -j "$jobs"
step "install tickgate -> $prefix"
run cmake --install "$tree" --prefix "$prefix"

step "check the install tree"
for f in include/tickgate/feed/handler.hpp include/tickgate/feed/capture.hpp include/tickgate/fanout/consumer.hpp \
         lib/libtickgate_core.a lib/libtickgate_feed.a lib/libtickgate_fanout.a bin/tickgate \
         lib/cmake/tickgate/tickgateConfig.cmake lib/cmake/tickgate/tickgateConfigVersion.cmake \
         lib/cmake/tickgate/tickgateTargets.cmake; do
    # GNUInstallDirs may pick lib64 or lib/<multiarch> on some hosts.
    g=$(ls -d "$prefix"/${f/#lib\//lib*/} 2>/dev/null | head -1 || true)
    if [[ -z "$g" ]]; then echo "missing from install tree: $f" >&2; exit 1; fi
    echo "present: ${g#$prefix/}"
done
if grep -rlE '#include *<(boost|fmt|spdlog|toml\+\+|pcap|nlohmann|nats)' "$prefix/include"; then
    echo "an installed public header includes a private third-party header" >&2
    exit 1
fi

step "consumer 1: find_package(tickgate) from $prefix"
run cmake -S "$here/installed" -B "$out/installed" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
run cmake --build "$out/installed" -j "$jobs"
run "$out/installed/consumer_installed"

step "consumer 2: add_subdirectory(tickgate)"
run cmake -S "$here/subdir" -B "$out/subdir" -DCMAKE_BUILD_TYPE=Release -DTICKGATE_SOURCE_DIR="$root"
# tickgate must not have brought its tests, benchmarks or CLI along.
if cmake --build "$out/subdir" --target help | grep -E '(_tests|_bench|tickgate)$' | grep -vE 'tickgate_(core|feed|fanout)$'; then
    echo "subdir build has tickgate test/bench/tool targets" >&2
    exit 1
fi
run cmake --build "$out/subdir" -j "$jobs"
run "$out/subdir/consumer_subdir"

step "consumer checks passed"
