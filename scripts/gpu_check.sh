#!/usr/bin/env bash
# opdump's CUDA checks on a GPU machine that has PyTorch, CUDA, CMake, ninja and a compiler but none of
# Debian's packages and no package registry (the GPU machines this project is lent now and then).
#
#   bash scripts/gpu_check.sh pack DIR       here, on Debian 12 after scripts/install-deps.sh: copies the headers,
#                                            libraries and tools of opdump's build dependencies into DIR
#   bash scripts/gpu_check.sh run DIR OUT    there: builds opdump against DIR and that machine's own torch, then
#                                            runs the CUDA tests (C++ and Python) and the GPU overhead bench;
#                                            logs and results in OUT
# Environment of run: GPU_CHECK_BENCH (more arguments of bench/bench_torch.py, "none" skips it; GPU_CHECK_BENCH_S
# its time limit), GPU_CHECK_PROFILE ("none" skips bench/step_profile.py, where a GPU step's time goes; its time
# limit GPU_CHECK_PROFILE_S), GPU_CHECK_TESTS (the last stage's pytest files; GPU_CHECK_REST_S its time limit),
# GPU_CHECK_BASELINE (another checkout, e.g. `git archive` of an earlier commit: built beside this one and measured
# by the bench in the same rounds).
set -euo pipefail
cd "$(dirname "$0")/.."

DEV_PACKAGES=(nlohmann-json3-dev libre2-dev libprotobuf-dev protobuf-compiler libcli11-dev libfmt-dev libssl-dev
              libxxhash-dev libxlsxwriter-dev libminizip-dev zlib1g-dev libhdf5-dev libgtest-dev libgmock-dev
              pkgconf-bin libpkgconf3)

pack() {
  local dir=$1
  rm -rf "$dir" && mkdir -p "$dir/prefix" "$dir/runtime"
  # The packages' files; static archives only where there is no shared library (GoogleTest).
  for p in "${DEV_PACKAGES[@]}"; do dpkg -L "$p"; done | sort -u | while read -r f; do
    [ -f "$f" ] || continue
    case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/src/* | /usr/share/lintian/*) continue ;; esac
    case "$f" in *gtest*.a | *gmock*.a) ;; *.a) continue ;; esac
    case "$f" in *fortran* | *hdf5*_cpp* | *hdf5*hl* | *protobuf-lite*) continue ;; esac  # parts opdump does not use
    echo "${f#/}"
  done >"$dir/files"
  echo usr/lib/x86_64-linux-gnu/pkgconfig/hdf5.pc >>"$dir/files"  # an alternatives link, in no package's list
  tar -C / -chf - -T "$dir/files" | tar -C "$dir/prefix" -xf -
  # What runs needs these by soname: the packed libraries themselves and every library they load, except
  # the C and C++ runtimes (the GPU machine's own are newer). `run` uses one only where the machine has none.
  local f soname real
  for f in $(find "$dir/prefix" -type f -name '*.so*'); do
    soname=$(objdump -p "$f" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
    [ -n "$soname" ] || continue
    [ -e "$dir/runtime/$soname" ] || mv "$f" "$dir/runtime/$soname"
    # One copy of each library: the link name a build uses and the file name CMake packages name point at it.
    ln -sfr "$dir/runtime/$soname" "$f"
    real=$(readlink -f "/${f#"$dir/prefix/"}")
    [ "${real##*/}" = "${f##*/}" ] || ln -sfr "$dir/runtime/$soname" "${f%/*}/${real##*/}"
  done
  { find "$dir/prefix" "$dir/runtime" -type f \( -name '*.so*' -o -perm -u+x \) -exec ldd {} + 2>/dev/null || true; } |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
      case "$name" in libc.so* | libm.so* | libstdc++* | libgcc_s* | ld-linux* | libpthread* | libdl.so* | librt.so* | libresolv*) continue ;; esac
      [ -e "$dir/runtime/$name" ] || cp -L "$path" "$dir/runtime/$name"
    done
  echo "gpu_check pack: $(du -sh "$dir" | cut -f1) in $dir ($(ls "$dir/runtime" | wc -l) runtime libraries)"
}

# Configures and builds the checkout at $1 into $1/build-gpu against the packed prefix $4 and the torch of the
# Python $3; logs named $2configure-cxxN.log and $2build-cxxN.log.
build_tree() {
  local src=$1 logs=$2 py=$3 P=$4 torch_cmake pybind_cmake std
  torch_cmake=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  pybind_cmake=$("$py" -m pybind11 --cmakedir 2>/dev/null || true)  # pip's pybind11; Debian's is found by CMake itself
  # C++17 first; PyTorch 2.13 and later need C++20 to include ATen.
  for std in 17 20; do
    if cmake -S "$src" -B "$src/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_STANDARD=$std \
      -DCMAKE_PREFIX_PATH="$P;$torch_cmake;$pybind_cmake" -DOPDUMP_PYTHON="$py" -DPKG_CONFIG_EXECUTABLE="$P/bin/pkgconf" \
      -DOPENSSL_ROOT_DIR="$P" -DProtobuf_PROTOC_EXECUTABLE="$P/bin/protoc" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
      -DOPDUMP_BUILD_BENCH=OFF -DOPDUMP_INSTALL=OFF >"${logs}configure-cxx$std.log" 2>&1 &&
      ninja -C "$src/build-gpu" >"${logs}build-cxx$std.log" 2>&1; then
      echo "$src built with C++$std"
      return 0
    fi
    { cat "${logs}configure-cxx$std.log" "${logs}build-cxx$std.log" 2>/dev/null || true; } | grep -v '^\[' | tail -60
    rm -rf "$src/build-gpu"
  done
  return 1
}

run() {
  local dir out
  dir=$(cd "$1" && pwd)
  out=$(mkdir -p "$2" && cd "$2" && pwd)
  local P=$dir/prefix/usr
  local L=$P/lib/x86_64-linux-gnu
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/machine.txt" || true
  # Debian's runtime libraries only where this machine has no library of that soname.
  rm -rf "$dir/lib" && mkdir -p "$dir/lib"
  ldconfig -p | awk 'NR > 1 {print $1}' | sort -u >"$dir/have"
  local f n
  for f in "$dir"/runtime/*; do
    n=${f##*/}
    grep -qxF "$n" "$dir/have" || ln -s "$f" "$dir/lib/$n"
  done
  echo "Debian libraries used: $(ls "$dir/lib" | tr '\n' ' ')" | tee -a "$out/machine.txt"
  # The .pc files name /usr (or the prefix of an earlier run elsewhere): point them at the prefix.
  { grep -rlE '(=|-I|-L)(/usr|[^ ]*/prefix/usr)' "$L/pkgconfig" "$P/share/pkgconfig" || true; } | xargs -r sed -i -E "s#(=|-I|-L)(/usr|[^ ]*/prefix/usr)#\\1$P#g"
  export PATH=$P/bin:$PATH
  export LD_LIBRARY_PATH=$dir/lib:$L:$L/hdf5/serial${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_PATH=$L/pkgconfig:$P/share/pkgconfig
  local py
  py=$(command -v python3)
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")' |
    tee -a "$out/machine.txt"
  # Another checkout (GPU_CHECK_BASELINE) is built beside this one, for the bench to measure both in the same rounds.
  local base_pid=
  if [ -n "${GPU_CHECK_BASELINE:-}" ]; then
    build_tree "$GPU_CHECK_BASELINE" "$out/baseline-" "$py" "$P" &
    base_pid=$!
  fi
  build_tree . "$out/" "$py" "$P" || return 1
  if [ -n "$base_pid" ] && ! wait "$base_pid"; then
    echo "the baseline $GPU_CHECK_BASELINE did not build" >&2
    return 1
  fi
  local rc=0
  export OPDUMP_BUILD=$PWD/build-gpu OPDUMP_TEST_PYTHON=$py PYTHONPATH=$PWD/build-gpu/python
  local adapter_tests="tests/python/test_torch_adapter.py tests/python/test_debug_scenes.py"
  # 1. The adapter's C++ tests on this machine's libtorch (its pip wheels export the libstdc++ they link
  # statically, which a libtorch program binds to: a std::filesystem call of the tests crashed there), the
  # device reduction against the host kernels on the CPU and the GPU among them.
  (cd build-gpu && timeout 120 ./tests/opdump_torch_tests 2>&1) | tee "$out/torch-tests.log" | grep -E 'FAILED|PASSED|tests ran' || rc=1
  # 2. The Python tests that train on the GPU.
  # shellcheck disable=SC2086
  timeout 300 "$py" -m pytest -q -p no:cacheprovider -p no:benchmark -n 4 $adapter_tests -k cuda -rs 2>&1 | tee "$out/pytest-cuda.log" |
    tail -25 || rc=1
  # 3. What dumping costs a GPU training step (each mode in a process of its own, rounds interleaved).
  if [ "${GPU_CHECK_BENCH:-}" != none ]; then
    local baseline=()
    [ -z "${GPU_CHECK_BASELINE:-}" ] || baseline=(--baseline "$(cd "$GPU_CHECK_BASELINE" && pwd)/build-gpu/python")
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "${GPU_CHECK_BENCH_S:-240}" "$py" bench/bench_torch.py --device cuda --modes off,stats,overflow \
      --steps 10 --rounds 2 --dir /tmp "${baseline[@]}" ${GPU_CHECK_BENCH:-} 2>&1 | tee "$out/bench.log" | tail -25 || rc=1
  fi
  # 3b. Where a dumped GPU step's time goes: threads, launches, the ops whose self time grew.
  if [ "${GPU_CHECK_PROFILE:-}" != none ]; then
    PYTHONUNBUFFERED=1 timeout "${GPU_CHECK_PROFILE_S:-150}" "$py" bench/step_profile.py --device cuda 2>&1 |
      tee "$out/step_profile.log" | tail -40 || rc=1
  fi
  # 4. The rest of the adapter's tests on this machine's PyTorch (CPU and GPU), in what time is left.
  # shellcheck disable=SC2086
  timeout "${GPU_CHECK_REST_S:-300}" "$py" -m pytest -v -p no:cacheprovider -p no:benchmark -n 8 --dist loadfile \
    ${GPU_CHECK_TESTS:-$adapter_tests tests/python/test_data_routes.py} -k "not cuda" 2>&1 |
    tee "$out/pytest-rest.log" | tail -25 || rc=1
  return $rc
}

case "${1:-}" in
  pack) pack "${2:?pack DIR}" ;;
  run) run "${2:?run DIR OUT}" "${3:?run DIR OUT}" ;;
  *) sed -n 2,12p "$0" >&2; exit 2 ;;
esac
