#!/usr/bin/env bash
# Grid-convergence study of a buoyancy-driven cavity: runs CASE on three grids of refinement
# ratio 2, prints the hot wall's mean Nusselt number per grid, the observed order, the
# Richardson extrapolation (with the observed order and with the formal order 2) and the
# deviation from the published value. Meant for the GPU machine (no Rust toolchain there: carry
# a release build of the program).
#
#   scripts/bdc-study.sh [CASE [N1 N2 N3]]     default: bdc3d 33 65 129
#
# Environment: FERROFLOW (the program, default target/release/ferroflow, else `ferroflow` on the
# PATH), BACKEND (default cuda; cpu, auto), OUT (default ./bdc-study), EXTRA (more --set
# arguments for every run, e.g. EXTRA="--set numerics.tolerance=1e-9").
set -euo pipefail
case=${1:-bdc3d}
grids=("${@:2}")
[[ ${#grids[@]} -eq 0 ]] && grids=(33 65 129)
[[ ${#grids[@]} -eq 3 ]] || { echo "three grids, coarse to fine (ratio 2)" >&2; exit 2; }
exe=${FERROFLOW:-target/release/ferroflow}
[[ -x $exe ]] || exe=$(command -v ferroflow) || { echo "no ferroflow program: set FERROFLOW" >&2; exit 2; }
backend=${BACKEND:-cuda}
out=${OUT:-$PWD/bdc-study}
mkdir -p "$out"
dim=$("$exe" cases show "$case" | sed -n 's/^dim = //p')
for n in "${grids[@]}"; do
  nodes=$(printf "%s," $(for _ in $(seq "$dim"); do echo "$n"; done))
  echo "== $case on ${n}^$dim ($backend)"
  # shellcheck disable=SC2086
  "$exe" run "$case" --backend "$backend" --set "mesh.nodes=[${nodes%,}]" --quiet \
    --out "$out/$case-$n" ${EXTRA:-}
  grep -E "converged|Ra =|Nusselt" "$out/$case-$n/run.log" | grep -v '^ \{4\}' || true
done
python3 - "$out" "$case" "${grids[@]}" <<'PY'
import json, math, sys
out, case, grids = sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3:]]
runs = [json.load(open(f"{out}/{case}-{n}/summary.json")) for n in grids]
nu = [r["heat_transfer"]["hot_wall"]["mean"] for r in runs]
print(f"\n{case}: mean Nusselt number of the hot wall")
print(f"{'grid':>6} {'Nu_hot':>10} {'Nu_cold':>10} {'imbalance':>10} {'u_max':>9} {'v_max':>9} {'iterations':>10} {'seconds':>8}")
for n, r in zip(grids, runs):
    h = r["heat_transfer"]
    vm = [v["nondimensional"] for v in h["velocity_maxima"]]
    print(f"{n:>6} {h['hot_wall']['mean']:>10.5f} {h['cold_wall']['mean']:>10.5f} "
          f"{h['energy_imbalance']:>10.2e} {vm[0]:>9.3f} {vm[1]:>9.3f} {r['iterations']:>10} "
          f"{r['wall_seconds']:>8.1f}" + ("" if r["converged"] else "  NOT converged"))
ratio = (grids[1] - 1) / (grids[0] - 1)
d1, d2 = nu[0] - nu[1], nu[1] - nu[2]
order = math.log(d1 / d2) / math.log(ratio) if d1 * d2 > 0 else float("nan")
rich_p = nu[2] - d2 / (ratio**order - 1) if order == order else float("nan")
rich_2 = nu[2] - d2 / (ratio**2 - 1)
print(f"observed order {order:.3f}; Richardson extrapolation {rich_p:.5f} (observed order), "
      f"{rich_2:.5f} (order 2)")
ref = runs[-1]["heat_transfer"].get("reference")
if ref:
    for label, value in [(f"finest grid {grids[2]}", nu[2]), ("Richardson (order 2)", rich_2),
                         ("Richardson (observed)", rich_p)]:
        print(f"  {label:<22} {value:.5f}: {100 * (value / ref['nusselt'] - 1):+.2f}% "
              f"from {ref['nusselt']} ({ref['source']})")
PY
