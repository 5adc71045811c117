#!/usr/bin/env bash
# Installs a build of opdump into a fresh prefix, then builds and runs the consumers of
# tests/find-package-test against it with find_package(opdump CONFIG REQUIRED), and imports the
# installed Python package. Usage: run.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
# Only the API is installed: no engine header.
test -f "$work/prefix/include/opdump/opdump.h" -a -f "$work/prefix/include/opdump/c_api.h"
if ls "$work/prefix/include/opdump" | grep -qE '^(dumper|runtime|config|npy)\.h$'; then
  echo "engine headers were installed: $(ls "$work/prefix/include/opdump")" >&2
  exit 1
fi
with_torch=OFF
[ -f "$work/prefix/include/opdump/torch.h" ] && with_torch=ON
cmake -S "$here" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCONSUMER_WITH_TORCH=$with_torch > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
# The consumers run from the install alone: the build tree is out of their way.
"$work/consumer/consumer_c"
if [ $with_torch = ON ]; then
  "$work/consumer/consumer_torch" "$work/torch_dump"
  # The installed Python package and CLI, from outside the source and build trees.
  site=$(cd "$work/prefix" && find . -path '*/opdump/__init__.py' | head -1)
  (cd "$work" && PYTHONPATH="$work/prefix/$(dirname "$(dirname "$site")")" /usr/bin/python3 - "$work/prefix" <<'PY'
import os, subprocess, sys
import opdump
prefix = sys.argv[1]
assert opdump.__file__.startswith(prefix), opdump.__file__
print("installed python package", opdump.__version__, "at", os.path.dirname(opdump.__file__))
out = subprocess.run([sys.executable, "-m", "opdump", "--version"], capture_output=True, text=True, check=True).stdout
assert opdump.__version__ in out, out
PY
  )
  "$work/prefix/bin/opdump" --version
fi
echo "find-package-test: passed"
