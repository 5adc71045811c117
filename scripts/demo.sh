#!/usr/bin/env bash
# The main job: install, build, and run the demo (a built-in model dumped and summarized).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rm -rf opdump-demo-out
build/opdump demo -o opdump-demo-out "$@"
