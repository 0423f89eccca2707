#!/usr/bin/env bash
# The test command: installs what is needed, builds (Release) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)"
