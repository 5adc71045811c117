#!/usr/bin/env bash
# Builds opdump against PyTorch 2.x and runs every C++ and Python test there: Debian 13 (trixie)
# has python3-torch / libtorch-dev 2.6 (Python 3.13, gcc 14); on a Debian 12 host it runs in a
# chroot made here with debootstrap, from Debian's own archive. The checkout is bind-mounted into
# the chroot (its build goes to build-torch2/). On a host whose own torch is 2.x already, the main
# test run covered it and this script only says so.
#
#   scripts/torch2.sh              build against 2.x and run every test there
#   scripts/torch2.sh --build      only make the chroot and build (build-torch2/)
#   scripts/torch2.sh --exec CMD   run CMD (one shell command line) in the chroot, from the checkout
#                                  (/opdump), after --build; bench/localize.py runs 2.x sides this way
#
#   OPDUMP_TORCH2_ROOT  where the chroot lives (default /var/tmp/opdump-trixie; reused when complete)
#   OPDUMP_DEBIAN_MIRROR  the archive (default http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
mode="${1:-test}"
case "$mode" in
  test | --build) ;;
  --exec) [ $# -eq 2 ] || { echo "usage: scripts/torch2.sh --exec 'COMMAND'" >&2; exit 2; } ;;
  *) echo "usage: scripts/torch2.sh [--build | --exec 'COMMAND']" >&2; exit 2 ;;
esac

host_torch=$(/usr/bin/python3 -c 'import torch; print(torch.__version__.split(".")[0])' 2>/dev/null || echo none)
if [ "$host_torch" != 1 ] && [ "$host_torch" != none ]; then
  echo "torch2: this host's own torch is ${host_torch}.x: the main test run covered it"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
root="${OPDUMP_TORCH2_ROOT:-/var/tmp/opdump-trixie}"
mirror="${OPDUMP_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# The build and test dependencies of scripts/install-deps.sh that the 2.x run needs (no sanitizers,
# no browser: those runs do not depend on the torch version). trixie's xlsxwriter.pc requires minizip.
packages=(build-essential cmake ninja-build pkg-config nlohmann-json3-dev libre2-dev libprotobuf-dev
          protobuf-compiler libcli11-dev libfmt-dev libssl-dev libxxhash-dev libgtest-dev libgmock-dev
          libxlsxwriter-dev libminizip-dev libhdf5-dev python3-h5py hdf5-tools pybind11-dev libtorch-dev python3-torch python3-torchvision
          python3-numpy python3-pytest python3-pytest-xdist python3-pandas python3-openpyxl python3-pip python3-venv python3-setuptools
          python3-wheel)
stamp="$root/.opdump-packages"

# Each session mounts in a mount namespace of its own: two sessions at once (the host's localization
# benchmark enters the chroot while a 2.x test run is in it) would otherwise share /proc, /dev and the
# checkout, and the first to end would unmount them under the other. The namespace's mounts end with it.
if [ -z "${OPDUMP_TORCH2_PRIVATE_MOUNTS:-}" ] && $SUDO unshare --mount --propagation private true 2>/dev/null; then
  exec $SUDO env OPDUMP_TORCH2_PRIVATE_MOUNTS=1 OPDUMP_TORCH2_ROOT="$root" OPDUMP_DEBIAN_MIRROR="$mirror" \
    unshare --mount --propagation private -- bash "$repo/scripts/torch2.sh" "$@"
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do $SUDO umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount_in() {  # mount_in ARGS... TARGET
  local target="${*: -1}"
  $SUDO mkdir -p "$target"
  $SUDO mount "$@"
  mounted+=("$target")
}

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "torch2: debootstrap trixie into $root"
  $SUDO rm -rf "$root"
  $SUDO debootstrap --variant=minbase trixie "$root" "$mirror" >/dev/null
fi
mount_in -t proc proc "$root/proc"
mount_in --bind /dev "$root/dev"
$SUDO cp /etc/resolv.conf "$root/etc/resolv.conf"
if [ "$(cat "$stamp" 2>/dev/null)" != "${packages[*]}" ]; then
  echo "torch2: installing ${#packages[@]} packages in the chroot"
  $SUDO chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive /bin/sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${packages[*]} >/dev/null"
  echo "${packages[*]}" | $SUDO tee "$stamp" >/dev/null
fi
mount_in --bind "$repo" "$root/opdump"

in_chroot() {  # in_chroot SCRIPT: runs a bash script in the chroot, from the checkout
  $SUDO chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 /bin/bash -c "set -euo pipefail; cd /opdump; $1"
}
if [ "$mode" = --exec ]; then
  in_chroot "$2"
  exit
fi
in_chroot '
  echo "torch2: $(python3 -c "import sys, torch; print(\"PyTorch\", torch.__version__, \"Python\", sys.version.split()[0])"), $(g++ --version | head -1)"
  cmake -S . -B build-torch2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DOPDUMP_PYTHON=/usr/bin/python3 >/dev/null
  ninja -C build-torch2 -j "$(nproc)" > /tmp/opdump-torch2-build.log || { tail -60 /tmp/opdump-torch2-build.log; exit 1; }'
[ "$mode" = --build ] && exit 0
# Two tests run on the host only: the pip route (a full build of its own, the same packaging on 2.x)
# and the localization benchmark (the host's run already takes its PyTorch 2.x sides from this
# chroot; run here it would repeat every scenario on 2.x alone). Together they took over 20 minutes.
in_chroot '
  (cd build-torch2 && ctest --output-on-failure -j "$(nproc)")
  OPDUMP_BUILD=/opdump/build-torch2 PYTHONPATH=/opdump/build-torch2/python python3 -m pytest -q -p no:cacheprovider -n "$(nproc)" \
    --deselect tests/python/test_pip_install.py --deselect tests/python/test_localize.py tests/python'
