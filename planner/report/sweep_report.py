"""The report of ``capplan sweep``: the scaling table over a GPU-count range.

:func:`sweep_report` searches the scenario, takes per accelerator and GPU count the layout
best for the objective, and adds the scaling efficiencies (whole and marginal), as a
:class:`~planner.report.output.Report` with the scaling figure of ``--plot``; the command
builds the scenario and writes the report (planner/cli/sweep_command.py).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from planner.engine.search import optimize
from planner.engine.search.distributed import check_scheduler
from planner.engine.search.optimize import OBJECTIVE_COLUMNS, marginal_efficiency, scaling_curve
from planner.errors import CapplanError
from planner.report import plot as figures
from planner.report.output import Report, render
from planner.report.progress import search_progress
from planner.report.tables import layout_text
from planner.version import version


def check_request(*, scheduler, workers) -> None:
    """CapplanError (one line) for a bad ``--scheduler`` or ``--workers``."""
    check_scheduler(scheduler, workers)


def sweep_report(scenario, format: str, *, every: bool = False, plot: str | None = None,
                 scheduler=None, workers=None) -> Report:
    """The scaling table of a checked ``scenario``: one row per accelerator and GPU count
    (doublings of ``--min-gpus``, or ``every`` feasible count), the objective's best layout;
    none fitting: CapplanError (exit 1)."""
    with search_progress() as progress:
        result = optimize.plan(scenario, progress=progress, scheduler=scheduler,
                               workers=workers)
    objective = scenario.objective
    counts = None if every else doubling(scenario.min_gpus, scenario.max_gpus)
    rows = [{"method": scenario.method, **row} for row in sweep_rows(result, objective, counts)]
    if not rows:
        raise CapplanError(f"no layout of {scenario.model} fits between {scenario.min_gpus} "
                           f"and {scenario.max_gpus} GPUs", exit_code=1)
    # the stack each accelerator ran on (a stack left out: each part's own)
    stack = (result.assumptions or {}).get("stack", scenario.stack)
    payload = {"scenario": {k: v for k, v in asdict(scenario).items() if k != "extra"},
               "stack": stack, "rows": rows, "prices": result.prices, "version": version(),
               "catalog_version": result.catalog_version}
    return Report(text=render(rows, format, title=f"Scaling {scenario.model} ({objective}"
                              f"-optimal layout per row; stack {stack})", payload=payload),
                  figure=(lambda force: figures.plot_scaling(result, plot, force=force))
                  if plot else None)


def sweep_rows(result, objective: str = "time", counts=None) -> list[dict]:
    """Best layout per accelerator and GPU count, with scaling efficiencies."""
    column = OBJECTIVE_COLUMNS[objective]
    rows = []
    frontier = result.frontier.loc[result.frontier["fits"].astype(bool)]
    for hw, group in frontier.groupby("hardware", sort=True):
        best = group.loc[group.groupby("gpus")[column].idxmin()].sort_values("gpus")
        if counts is not None:
            best = best[best["gpus"].isin(counts)]
        if best.empty:
            continue
        gpus_curve, times_curve = scaling_curve(group)
        eff = dict(zip(gpus_curve, marginal_efficiency(gpus_curve, times_curve), strict=True))
        base = best.iloc[0]
        for _, r in best.iterrows():
            speedup = base["wall_time_s"] / r["wall_time_s"]
            rows.append({
                "hardware": hw, "gpus": int(r["gpus"]), "layout": layout_text(r),
                "days": float(r["wall_days"]), "usd": float(r["cost_usd"]),
                "mwh": float(r["energy_mwh"]), "mfu": float(r["mfu"]),
                "scaling_efficiency": float(speedup * base["gpus"] / r["gpus"]),
                "marginal_efficiency": float(eff.get(r["gpus"], np.nan)),
            })
    return rows


def doubling(lo: int, hi: int) -> list[int]:
    """``lo``, ``2 lo``, ``4 lo`` ... up to ``hi``: the GPU counts of the table's rows."""
    counts, n = [], lo
    while n <= hi:
        counts.append(n)
        n *= 2
    return counts
