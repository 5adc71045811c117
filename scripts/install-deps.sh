#!/usr/bin/env bash
# Installs opdump's build and test dependencies from Debian's archive (idempotent), on Debian 12
# (PyTorch 1.13) or Debian 13 (PyTorch 2.6): the names below exist in both.
# Safe to run repeatedly: packages already present are skipped by apt.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev        # config parsing (JSON with line/column errors)
  libre2-dev                # kernels name-regex(...) matching in linear time
  libprotobuf-dev protobuf-compiler  # Ascend bin dump header (DumpData message)
  libcli11-dev              # CLI argument parsing
  libfmt-dev                # formatting of messages and CSV numbers
  libssl-dev                # MD5 statistic category (OpenSSL EVP)
  libxxhash-dev             # fast hash statistic category
  libgtest-dev libgmock-dev # C++ unit tests
  libxlsxwriter-dev libminizip-dev  # xlsx compare reports (Debian 13's xlsxwriter.pc requires minizip)
  libhdf5-dev               # the torch_npu 1.5 dumper's .h5 files (written and read through HDF5's C library)
  python3-h5py hdf5-tools   # tests read .h5 dumps back with h5py, h5dump and h5copy, as users do
  pybind11-dev              # Python module
  libtorch-dev              # PyTorch C++ adapter
  python3-torch python3-torchvision python3-numpy python3-pytest
  python3-pytest-xdist      # the Python tests run on every core (pytest -n)
  python3-pandas python3-openpyxl  # tests read the compare reports as users would
  python3-pil               # tests check the HTML reports' screenshots pixel by pixel
  python3-pip python3-venv python3-setuptools python3-wheel  # pip install . (setuptools backend) and its test in a venv
  chromium                  # tests render the HTML compare report headless
  clang libclang-rt-dev     # libFuzzer targets and the sanitizer builds of CI (scripts/sanitize.sh)
  debootstrap               # the Debian 13 chroot in which scripts/torch2.sh tests against PyTorch 2.x
  valgrind                  # bench/cache_profile.py counts a step's instructions and cache misses (callgrind)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
