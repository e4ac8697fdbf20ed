#!/usr/bin/env python3
"""Multigrid convergence against the grid: the largest relative residual of each run against
its cycles, one panel per Reynolds number, one line per grid. Each RUN_DIR holds residuals.csv
and summary.json of a `ferroflow run` with `numerics.multigrid` and
`numerics.check_interval = 1`. Needs matplotlib (pip install matplotlib).
Usage: scripts/plot-multigrid.py OUT.png RUN_DIR..."""
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def history(run):
    with open(run / "residuals.csv") as f:
        rows = list(csv.DictReader(f))
    cycles = [int(r["iteration"]) for r in rows]
    worst = [max(float(v) for k, v in r.items() if k != "iteration") for r in rows]
    return cycles, worst


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, runs = Path(sys.argv[1]), [Path(d) for d in sys.argv[2:]]
    panels = defaultdict(list)
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        panels[summary["physics"]["reynolds"]].append((summary["grid"], run))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (re, grids) in zip(axes[0], sorted(panels.items())):
        for grid, run in sorted(grids):
            cycles, worst = history(run)
            ax.semilogy(cycles, worst, label="×".join(map(str, grid)))
        ax.set_title(f"Re = {re:g}")
        ax.set_xlabel("cycle")
        ax.set_ylabel("largest relative residual")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
