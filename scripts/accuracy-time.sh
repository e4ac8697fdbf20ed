#!/usr/bin/env bash
# Time to an accurate answer, seed 000's second-order differences against fourth-order ones:
# the 2D lid-driven cavity (Re = 1000 and 100) on a range of grids, each converged by the
# implicit method with multigrid, its centreline profiles compared with the Richardson
# extrapolation (order 2) of the second-order profiles on 1025² and 2049²; the 3D cavity at
# Re = 1000 against Albensoeder & Kuhlmann (2005), the deviation the run reports.
#
# Usage (from the repository root): scripts/accuracy-time.sh FERROFLOW_BINARY [BACKEND]
# BACKEND is cuda (default) or cpu. Runs go to $OUT (default ./accuracy-time); the tables go to
# stdout and $OUT/accuracy-time.md.
set -euo pipefail
bin=${1:?usage: scripts/accuracy-time.sh FERROFLOW_BINARY [BACKEND]}
backend=${2:-cuda}
out=${OUT:-$PWD/accuracy-time}
mkdir -p "$out"

# One converged run: CASE ORDER N [N N] (nodes per axis, 2 or 3 of them).
solve() {
  local case=$1 order=$2
  shift 2
  local nodes
  nodes=$(IFS=,; echo "$*")
  "$bin" run -q "cases/$case.toml" --backend "$backend" --out "$out/$case-$order-$1" --overwrite \
    --set "mesh.nodes=[$nodes]" --set "numerics.differences=\"$order\"" \
    --set 'numerics.method="implicit"' --set numerics.multigrid=20 --set numerics.sweeps=32 \
    --set numerics.tolerance=1e-9 --set numerics.check_interval=1
}

for re in 1000 100; do
  for n in 129 257 513 1025 2049; do solve "cavity2d-re$re" second-order "$n" "$n"; done
  for n in 129 257 513; do solve "cavity2d-re$re" fourth-order "$n" "$n"; done
done
for n in 65 129 257; do solve cavity3d-re1000 second-order "$n" "$n" "$n"; done
for n in 65 129; do solve cavity3d-re1000 fourth-order "$n" "$n" "$n"; done

python3 - "$out" <<'EOF' | tee "$out/accuracy-time.md"
import csv, json, sys
out = sys.argv[1]

def profile(run, axis):
    with open(f"{out}/{run}/centerline_{axis}.csv") as f:
        rows = list(csv.reader(f))[1:]
    return [float(r[1]) for r in rows]

def summary(run):
    with open(f"{out}/{run}/summary.json") as f:
        return json.load(f)

print(f"| case | differences | grid | u deviation | v deviation | iterations | solve s | whole s |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for re in (1000, 100):
    case = f"cavity2d-re{re}"
    fine = {a: profile(f"{case}-second-order-2049", a) for a in "uv"}
    mid = {a: profile(f"{case}-second-order-1025", a) for a in "uv"}
    # Richardson extrapolation at the 1025² nodes (every second node of 2049²).
    ref = {a: [(4 * fine[a][2 * i] - mid[a][i]) / 3 for i in range(len(mid[a]))] for a in "uv"}
    grids = {"second-order": (129, 257, 513, 1025), "fourth-order": (129, 257, 513)}
    for order, sizes in grids.items():
        for n in sizes:
            run = f"{case}-{order}-{n}"
            step = 1024 // (n - 1)
            dev = {a: max(abs(x - ref[a][i * step]) for i, x in enumerate(profile(run, a)))
                   for a in "uv"}
            s = summary(run)
            print(f"| {case} | {order} | {n}² | {dev['u']:.3e} | {dev['v']:.3e} "
                  f"| {s['iterations']} | {s['wall_seconds']:.2f} "
                  f"| {s['total_wall_seconds']:.2f} |")
for order, grids in (("second-order", (65, 129, 257)), ("fourth-order", (65, 129))):
    for n in grids:
        s = summary(f"cavity3d-re1000-{order}-{n}")
        dev = [r["max_abs_deviation"] for r in s["reference"]]
        print(f"| cavity3d-re1000 (Albensoeder & Kuhlmann) | {order} | {n}³ | {dev[0]:.3e} "
              f"| {dev[1]:.3e} | {s['iterations']} | {s['wall_seconds']:.2f} "
              f"| {s['total_wall_seconds']:.2f} |")
EOF
