#!/usr/bin/env bash
# Install, build, and run every test: the C++ tests (ctest), the Python tests (pytest), then the
# sanitizer builds and fuzzing (scripts/sanitize.sh; OPDUMP_SKIP_SANITIZE=1 skips them locally).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
# pytest exits 5 when it collected nothing: that is a failure here too.
/usr/bin/python3 -m pytest -q tests/python
if [ "${OPDUMP_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
