#!/usr/bin/env bash
# The test command: installs what is needed, builds (Release, warnings are
# errors: the build is warning-free) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DTICKGATE_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
