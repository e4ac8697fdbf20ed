#!/usr/bin/env bash
# Time to solution, explicit against implicit relaxations, on the CPU backend: each run to the
# case's tolerance (1e-7), checkpoints off, one after another on a quiet machine.
# Usage: scripts/implicit-bench.sh BINARY [OUT_DIR]   (prints a Markdown table)
set -uo pipefail
bin=$(realpath "${1:?usage: scripts/implicit-bench.sh BINARY [OUT_DIR]}")
out=${2:-implicit-bench}
mkdir -p "$out"
cd "$out" || exit 1
echo "| case | grid | method | iterations | wall s | status |"
echo "|---|---|---|---:|---:|---|"
run() { # label grid method-args case-args...
  local label=$1 grid=$2 method=$3; shift 3
  local dir="r-$RANDOM"
  # shellcheck disable=SC2086
  "$bin" run -q "$@" --set "mesh.nodes=$grid" --set output.checkpoint_interval=0 $method \
    --out "$dir" >/dev/null 2>&1
  local f="$dir/summary.json"; [[ -f $f ]] || f="$dir/partial/summary.json"
  python3 - "$f" "$label" "$grid" "$method" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = sys.argv[4].replace("--set numerics.", "").replace('"', "") or "explicit"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {m} | {s['iterations']} | {s['wall_seconds']:.2f} | {s['status']} |")
PY
  rm -rf "$dir"
}
imp='--set numerics.method="implicit"'
exp='--set numerics.method="explicit"'
for c in "cavity2d-re100 [129,129]" "cavity2d-re1000 [129,129]" "cavity2d-re1000 [257,257]" \
         "bdc2d [129,129]" "cavity3d-re100 [65,65,65]" "bdc3d [41,41,41]"; do
  set -- $c
  run "$1" "$2" "$exp" "$1"
  run "$1" "$2" "$imp" "$1"
done
# The relaxations and the implicit precision compared: scripts/implicit-study.sh.
