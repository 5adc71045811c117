#!/usr/bin/env bash
# Install, build, and run every test: the C++ tests (ctest) and the Python tests (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
set +e
/usr/bin/python3 -m pytest -q tests/python
rc=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure here, not a pass.
exit $rc
