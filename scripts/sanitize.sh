#!/usr/bin/env bash
# The sanitizer and fuzzing stage of the tests (run by scripts/test.sh after the main build):
#  1. the core and its tests with clang under ASan+UBSan, plus the libFuzzer targets: every
#     kept finding (tests/fuzz/regressions) is replayed, then each target fuzzes briefly from a
#     corpus seeded with real configs and dump files;
#  2. the core tests and the adapter under TSan (writer threads, statistics pool, name mapper,
#     runtime snapshots and op leases; libtorch ops on one thread while another finalizes; three
#     Python threads training one model while it is dumped);
#  3. the PyTorch adapter and Python module under ASan+UBSan (gcc, preloaded into Python),
#     running the adapter, debug-scene and reliability tests (autograd threads, DataLoader
#     workers, two gloo ranks).
# OPDUMP_FUZZ_SECONDS sets the fuzzing time per target (default 10: the kept findings and the
# seeded corpus are replayed every run; longer fuzzing is done by hand, docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${OPDUMP_FUZZ_SECONDS:-10}"
JOBS="$(nproc)"

step() { echo "== sanitize: $* ($(date +%T))"; }
# Every build here is a unity build, as scripts/build.sh explains.

step "clang ASan+UBSan build of the core, its tests and the fuzz targets"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DOPDUMP_BUILD_TORCH=OFF -DOPDUMP_BUILD_BENCH=OFF -DOPDUMP_SANITIZE=address,undefined -DOPDUMP_BUILD_FUZZ=ON >/dev/null
ninja -C build-fuzz
(cd build-fuzz && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$JOBS")

step "fuzzing: kept findings, then ${FUZZ_SECONDS}s per target"
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
PYTHONPATH="$PWD/build/python" /usr/bin/python3 tests/fuzz/make_corpus.py "$corpus"
for target in config npy bin csv opdebug pt msprobe h5; do
  if compgen -G "tests/fuzz/regressions/$target/*" >/dev/null; then
    build-fuzz/fuzz_$target tests/fuzz/regressions/$target/*
  fi
  max_len=8192
  [ "$target" = config ] && max_len=65536
  [ "$target" = pt ] && max_len=16384
  [ "$target" = msprobe ] && max_len=262144
  [ "$target" = h5 ] && max_len=65536
  build-fuzz/fuzz_$target "$corpus/$target" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
    -max_len=$max_len -artifact_prefix="$corpus/crash-$target-" -print_final_stats=1 2>&1 | tail -4
done

step "TSan build of the core tests and the PyTorch adapter"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DOPDUMP_BUILD_BENCH=OFF \
  -DOPDUMP_SANITIZE=thread >/dev/null
ninja -C build-tsan opdump_tests opdump_torch_tests _opdump opdump_py
# die_after_fork=0: the disk-full test forks a child that starts writer threads.
# BoundedWork is left out: single-threaded timing ratios on inputs of 100,000 items, minutes under TSan.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0" build-tsan/tests/opdump_tests --gtest_brief=1 \
  --gtest_filter='-BoundedWork.*'
# The adapter in process: a dump finalized while another thread runs ops.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  build-tsan/tests/opdump_torch_tests --gtest_brief=1
# Python and libtorch are not instrumented; TSan is preloaded with libstdc++ (see below).
# libtorch's own autograd locking is invisible to TSan (not instrumented): tests/tsan.supp.
for mode in full statistic overflow; do
  tsan_dir="$(mktemp -d /tmp/opdump_tsan_XXXXXX)"  # MindSpore paths allow no dots
  LD_PRELOAD="$(gcc -print-file-name=libtsan.so):$(gcc -print-file-name=libstdc++.so)" \
  TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0 suppressions=$PWD/tests/tsan.supp" \
  PYTHONPATH="$PWD/build-tsan/python" /usr/bin/python3 tests/python/threaded_workload.py "$tsan_dir" $mode
  rm -rf "$tsan_dir"
done

step "ASan+UBSan build of the PyTorch adapter, run under Python"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DOPDUMP_BUILD_TESTS=OFF \
  -DOPDUMP_BUILD_BENCH=OFF -DOPDUMP_SANITIZE=address,undefined >/dev/null
# What those tests run: the CLI, the adapter and the Python module (not the replay program or the demo).
ninja -C build-asan opdump opdump_torch _opdump opdump_py
# Python and libtorch are not instrumented: ASan is preloaded (with libstdc++, so that its
# __cxa_throw interceptor finds the real one), leak checks are off (the
# interpreter never frees everything), errors abort the process and fail the test.
LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libstdc++.so)" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:verify_asan_link_order=0" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
OPDUMP_BUILD="$PWD/build-asan" PYTHONPATH="$PWD/build-asan/python" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider -n "$JOBS" tests/python/test_torch_adapter.py \
  tests/python/test_debug_scenes.py tests/python/test_reliability.py \
  --deselect tests/python/test_torch_adapter.py::test_dataloader_workers_and_autograd_threads_are_safe
# That test forks DataLoader workers while opdump's writer threads run: gcc 12's ASan allocator is not
# fork-safe (a worker forked while a writer thread was inside malloc hung in ASan's allocator, seen
# once in a run of this script), where glibc's malloc is. It runs in every other build, on PyTorch 1.13 and 2.6.
step "done"
