#!/usr/bin/env bash
# The main job: install, build, train the demo CNN with dumping on, train it again with a planted
# bug, and let `opdump compare` name the op where the two runs part.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rm -rf opdump-demo-out opdump-demo-bug opdump-compare
build/opdump demo -o opdump-demo-out "$@"
echo
build/opdump demo -o opdump-demo-bug --plant-bug "$@"
echo
echo "opdump compare opdump-demo-bug opdump-demo-out -o opdump-compare"
build/opdump compare opdump-demo-bug opdump-demo-out -o opdump-compare -q
