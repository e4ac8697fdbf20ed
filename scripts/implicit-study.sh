#!/usr/bin/env bash
# Seed 003's study repeated: the 2D cavity at Re = 1000 relaxed by each implicit relaxation
# and operator precision (and explicitly, for reference), to the case's tolerance, with
# checkpoints off. Each run keeps its residuals.csv and summary.json in
# OUT/BACKEND-NODES-LABEL/, and OUT/runs-BACKEND-NODES.md gets a Markdown table;
# scripts/plot-residuals.py OUT OUT/*/ draws the curves.
# Usage: scripts/implicit-study.sh BINARY cpu|cuda OUT [NODES]   (NODES: 129 by default)
set -uo pipefail
bin=$(realpath "${1:?usage: scripts/implicit-study.sh BINARY cpu|cuda OUT [NODES]}")
backend=${2:?cpu or cuda}
out=${3:?output directory}
n=${4:-129}
mkdir -p "$out"
table="$out/runs-$backend-$n.md"
echo "| backend | grid | relaxation | iterations | wall s | s/iteration | status |" >"$table"
echo "|---|---|---|---:|---:|---:|---|" >>"$table"
run() { # label settings...
  local label=$1; shift
  local dir="$out/$backend-$n-$label"
  rm -rf "$dir"
  # shellcheck disable=SC2068
  "$bin" run -q cavity2d-re1000 --backend "$backend" --set "mesh.nodes=[$n,$n]" \
    --set output.checkpoint_interval=0 $@ --out "$dir" >/dev/null 2>&1
  # A run that did not converge keeps its files in partial/.
  [[ -f $dir/summary.json ]] || cp "$dir"/partial/{summary.json,residuals.csv} "$dir"/ 2>/dev/null
  python3 - "$dir/summary.json" "$backend" "$n" "$label" >>"$table" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
it, t = s["iterations"], s["wall_seconds"]
print(f"| {sys.argv[2]} | {sys.argv[3]}² | {sys.argv[4]} | {it} | {t:.2f} | {t / it:.2e} | {s['status']} |")
PY
  find "$dir" -mindepth 1 -maxdepth 1 ! -name summary.json ! -name residuals.csv -exec rm -rf {} +
}
imp='--set numerics.method="implicit"'
jac="$imp --set numerics.relaxation=\"jacobi\""
if [[ $backend == cpu ]]; then
  run "sgs-4" "$imp"
  run "sgs-4-f64" "$imp --set numerics.implicit_precision=\"f64\""
  run "lu-sgs" "$imp --set numerics.sweeps=1"
  run "jacobi-32-cfl160" "$jac --set numerics.sweeps=32 --set numerics.implicit_cfl=160"
  run "line-8-cfl80" "$imp --set numerics.relaxation=\"line\" --set numerics.sweeps=8 --set numerics.implicit_cfl=80"
  run "red-black-4-cfl80" "$imp --set numerics.relaxation=\"red-black\" --set numerics.sweeps=4 --set numerics.implicit_cfl=80"
else
  run "jacobi-32-cfl160" "$jac --set numerics.sweeps=32 --set numerics.implicit_cfl=160"
  run "jacobi-32-cfl160-f64" "$jac --set numerics.sweeps=32 --set numerics.implicit_cfl=160 --set numerics.implicit_precision=\"f64\""
  run "jacobi-16-cfl80" "$jac --set numerics.sweeps=16 --set numerics.implicit_cfl=80"
  run "jacobi-64-cfl320" "$jac --set numerics.sweeps=64 --set numerics.implicit_cfl=320"
fi
run "explicit" '--set numerics.method="explicit"'
cat "$table"
