#!/usr/bin/env bash
# Install, build, and run every test: the C++ tests (ctest), the Python tests (pytest), the same
# against PyTorch 2.x in a Debian 13 chroot (scripts/torch2.sh; OPDUMP_SKIP_TORCH2=1 skips it),
# then the sanitizer builds and fuzzing (scripts/sanitize.sh; OPDUMP_SKIP_SANITIZE=1 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== test: $* ($(date +%T))"; }  # CI's log shows where the time went
stage "install and build"
bash scripts/build.sh
# The PyTorch 2.x build first: bench/localize.py (run by the host's tests) pairs 2.x runs with 1.13 ones.
if [ "${OPDUMP_SKIP_TORCH2:-0}" != 1 ]; then
  stage "PyTorch 2.x chroot and build"
  bash scripts/torch2.sh --build
fi
stage "C++ tests"
(cd build && ctest --output-on-failure -j "$(nproc)")
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
# pytest exits 5 when it collected nothing: that is a failure here too. -n: one worker per core (most
# tests wait on subprocesses that import torch and train); --dist loadfile: a file's tests on one
# worker, and tests/python/conftest.py puts the two longest files first, so each starts on its own.
stage "Python tests"
/usr/bin/python3 -m pytest -q -n "$(nproc)" --dist loadfile tests/python
if [ "${OPDUMP_SKIP_TORCH2:-0}" != 1 ]; then
  stage "C++ and Python tests against PyTorch 2.x"
  bash scripts/torch2.sh
fi
if [ "${OPDUMP_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
stage "done"
