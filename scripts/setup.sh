#!/usr/bin/env bash
# Installs tickgate's Debian build dependencies (idempotent) and builds it.
# usage: [SETUP_EXTRA_PACKAGES="pkg ..."] [SETUP_TARGETS="target ..."] scripts/setup.sh [BUILD_DIR] [extra cmake args...]
#        SETUP_TARGETS: build only these (the demo builds the CLI alone); default: everything
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git python3
          libboost-dev libfmt-dev libspdlog-dev libtomlplusplus-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev libpcap-dev libpugixml-dev
          libxdp-dev libbpf-dev clang
          iproute2 tcpreplay prometheus prometheus-cpp-dev curl ca-certificates
          nats-server libnats-dev)
# Callers needing more (bench/run.sh: gnuplot-nox for the latency plot) name them here.
read -r -a extra <<< "${SETUP_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${1:-build}
shift || true
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
read -r -a targets <<< "${SETUP_TARGETS:-}"
cmake --build "$build_dir" -j"$(nproc)" ${targets[@]+--target "${targets[@]}"}
