#!/usr/bin/env bash
# What coupling blocks by Jacobi across their interfaces costs the implicit method: each case
# to its tolerance (1e-7) on one block and cut into blocks, in one process and, where mpirun
# and an MPI build are given, in two; checkpoints off, one run after another.
# Usage: scripts/implicit-blocks.sh BINARY [MPI_BINARY]   (prints a Markdown table)
set -uo pipefail
bin=$(realpath "${1:?usage: scripts/implicit-blocks.sh BINARY [MPI_BINARY]}")
mpi=${2:+$(realpath "$2")}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out" || exit 1
echo "| case | grid | blocks | processes | iterations | wall s | status |"
echo "|---|---|---|---:|---:|---:|---|"
run() { # case grid blocks processes
  local dir="r-$RANDOM" cmd=("$bin")
  if [[ $4 -gt 1 ]]; then
    cmd=(mpirun --allow-run-as-root --oversubscribe -np "$4" "$mpi")
  fi
  "${cmd[@]}" run -q "$1" --set "mesh.nodes=$2" --blocks "$3" \
    --set 'numerics.method="implicit"' --set output.checkpoint_interval=0 \
    --out "$dir" >/dev/null 2>&1
  local f="$dir/summary.json"; [[ -f $f ]] || f="$dir/partial/summary.json"
  python3 - "$f" "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {s['iterations']} "
      f"| {s['wall_seconds']:.2f} | {s['status']} |")
PY
  rm -rf "$dir"
}
for c in "cavity2d-re1000 [129,129]" "bdc2d [129,129]"; do
  set -- $c
  for b in 1,1 2,1 2,2 4,4; do run "$1" "$2" "$b" 1; done
  [[ -n $mpi ]] && run "$1" "$2" 1,2 2
done
for c in "cavity3d-re100 [33,33,33]" "bdc3d [41,41,41]"; do
  set -- $c
  for b in 1,1,1 2,1,1 2,2,2; do run "$1" "$2" "$b" 1; done
  [[ -n $mpi ]] && run "$1" "$2" 1,1,2 2
done
