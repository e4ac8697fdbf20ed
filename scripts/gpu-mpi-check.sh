#!/usr/bin/env bash
# GPU blocks under MPI, on the GPU machine: the buoyancy-driven cube (65³, explicit, 401
# iterations) cut into 2 and 4 blocks over as many MPI processes, halos between processes
# through shared GPU memory (parallel.exchange = "peer") and staged through the host ("host"),
# and a restart of the 2-process checkpoint in 2 processes (each reads its own pieces): every
# profile (*.csv) and the summary's heat transfer must equal those of one block on one GPU,
# and the residual norms (residuals.csv, the summary's) those of one process with the same
# blocks (the norms add the blocks' sums in block order), byte for byte. Then, with --bench,
# the throughput of a 513³ grid cut into one block per GPU of DEVICES, in one process and over
# as many processes (strong; weak: 513³ per block).
#
#   scripts/gpu-mpi-check.sh FERROFLOW_BINARY DEVICES [--bench|--bench-only]   # DEVICES: [0], [0,1]
#
# The binary is built with `cargo build --release -p ferroflow --features mpi`. Prints one
# SAME or DIFFERS line per comparison; the exit status is the number that differ or failed.
set -u
f=${1:?usage: scripts/gpu-mpi-check.sh FERROFLOW_BINARY DEVICES [--bench]}
devices=${2:?DEVICES, e.g. [0,1]}
bench=${3:-}
export FERROFLOW_CUDA_CACHE_DIR=${FERROFLOW_CUDA_CACHE_DIR:-/tmp/ferroflow-gpu-mpi-cache}
out=$(mktemp -d)
mpi=(timeout 300 mpirun --allow-run-as-root --oversubscribe)
common=(run -q bdc3d --backend cuda --set 'mesh.nodes=[65,65,65]' --set 'numerics.method="explicit"'
  --set numerics.tolerance=1e-30 --set "parallel.devices=$devices")
bad=0
same() { # A B LABEL: profiles and heat transfer of A (one block) and the residual norms of
  # A2 (one process, the same blocks: the norms add the blocks' sums) against B
  local ok=1
  for c in $(cd "$1" && ls *.csv); do
    local ref="$1"; [ "$c" = residuals.csv ] && ref="$4"
    cmp -s "$ref/$c" "$2/$c" || { echo "  $c differs"; ok=0; }
  done
  python3 - "$1/summary.json" "$4/summary.json" "$2/summary.json" <<'P' || ok=0
import json, sys
a, a2, b = [json.load(open(p)) for p in sys.argv[1:]]
keys = [k for k in ('heat_transfer', 'iterations') if a.get(k) != b.get(k)]
keys += [k for k in ('residuals',) if a2.get(k) != b.get(k)]
if keys:
    print("  summary differs in", keys)
    sys.exit(1)
P
  if [ $ok = 1 ]; then echo "SAME: $3"; else echo "DIFFERS: $3"; bad=$((bad + 1)); fi
}
checks() {
  "$f" "${common[@]}" --set numerics.max_iterations=401 --out "$out/one" >/dev/null || bad=$((bad + 1))
  for ex in peer host; do
    for cut in "2 [1,2,1]" "2 [2,1,1]" "4 [1,2,2]" "4 [2,2,1]"; do
      set -- $cut
      o="$out/$ex-$1-$(echo "$2" | tr -d '[],')"
      blocks="$out/blocks-$(echo "$2" | tr -d '[],')"
      [ -d "$blocks" ] || "$f" "${common[@]}" --set numerics.max_iterations=401 \
        --set "parallel.blocks=$2" --out "$blocks" >/dev/null || bad=$((bad + 1))
      if "${mpi[@]}" -np "$1" "$f" "${common[@]}" --set numerics.max_iterations=401 \
        --set "parallel.blocks=$2" --set "parallel.exchange=\"$ex\"" \
        --set output.checkpoint_interval=200 --out "$o" >"$o.txt" 2>&1; then
        grep -h "^backend" "$o/run.log" | head -1
        same "$out/one" "$o" "$1 processes, blocks $2, exchange $ex" "$blocks"
      else
        echo "FAILED: $1 processes, blocks $2, exchange $ex"; tail -n 5 "$o.txt"; bad=$((bad + 1))
      fi
    done
  done
  "$f" "${common[@]}" --set numerics.max_iterations=801 --out "$out/one801" >/dev/null || bad=$((bad + 1))
  "$f" "${common[@]}" --set numerics.max_iterations=801 --set 'parallel.blocks=[1,2,1]' \
    --out "$out/blocks801" >/dev/null || bad=$((bad + 1))
  if "${mpi[@]}" -np 2 "$f" run -q --restart "$out/peer-2-121/checkpoint.ffcp" \
    --set numerics.max_iterations=801 --out "$out/restart" >"$out/restart.txt" 2>&1; then
    same "$out/one801" "$out/restart" "restart of 2 processes' checkpoint at 401 to 801 in 2 processes" "$out/blocks801"
  else
    echo "FAILED: restart"; tail -n 5 "$out/restart.txt"; bad=$((bad + 1))
  fi
}
[ "$bench" = --bench-only ] || checks
if [ -n "$bench" ]; then
  # One block per GPU of DEVICES, one process per block under MPI.
  list=$(echo "$devices" | tr -d '[]')
  count=$(echo "$list" | tr ',' '\n' | wc -l)
  case $count in 2) cut=1,2,1 ;; 4) cut=1,2,2 ;; *) cut=1,1,$count ;; esac
  b=(bench --backend cuda --energy --n2d --n3d 513 --blocks "$cut" --precision f64 --repeats 3
    --devices "$list")
  for w in "" --weak; do
    timeout 300 "$f" "${b[@]}" $w 2>&1 | grep -E "^cuda +3D|copy bandwidth|link"
    for ex in peer host; do
      timeout 300 mpirun --allow-run-as-root -np "$count" "$f" "${b[@]}" $w --exchange $ex 2>&1 |
        grep -E "^cuda +3D"
    done
  done
fi
rm -rf "$out"
exit $bad
