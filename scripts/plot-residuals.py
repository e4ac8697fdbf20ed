#!/usr/bin/env python3
"""Residual histories of the runs under the given directories (each holding residuals.csv
and summary.json, as scripts/implicit-study.sh leaves them), plotted against iterations and
against wall time, one PNG of two panels per directory's backend and grid: OUT/residuals-*.png.
The largest relative residual of the equations is plotted; wall time is the iteration count
times the run's mean time per iteration (a fixed number of sweeps costs the same every
iteration). Needs matplotlib (pip install matplotlib).
Usage: scripts/plot-residuals.py OUT RUN_DIR..."""
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
    its = [int(r["iteration"]) for r in rows]
    worst = [max(float(v) for k, v in r.items() if k != "iteration") for r in rows]
    return its, worst


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    groups = defaultdict(list)
    for d in sys.argv[2:]:
        run = Path(d)
        if not (run / "residuals.csv").is_file():
            continue
        backend, n, label = run.name.split("-", 2)
        groups[(backend, n)].append((label, run))
    for (backend, n), runs in sorted(groups.items()):
        fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
        for label, run in sorted(runs):
            s = json.loads((run / "summary.json").read_text())
            its, worst = history(run)
            per = s["wall_seconds"] / max(s["iterations"], 1)
            a.semilogy(its, worst, label=label)
            b.semilogy([i * per for i in its], worst, label=label)
        a.set_xscale("log")
        a.set_xlabel("iteration")
        b.set_xscale("log")
        b.set_xlabel("wall time (s)")
        for ax in (a, b):
            ax.set_ylabel("largest relative residual")
            ax.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
        fig.suptitle(f"cavity2d-re1000 {n}², {backend}")
        fig.tight_layout()
        path = out / f"residuals-{backend}-{n}.png"
        fig.savefig(path, dpi=110)
        print(path)


if __name__ == "__main__":
    main()
