"""``capplan sweep``: the scaling table over a GPU-count range."""

from __future__ import annotations

import typer

from planner.cli.common import (
    CheckpointOption,
    ForceOption,
    FormatOption,
    GlobalBatchOption,
    ModelOption,
    OutputOption,
    PrecisionOption,
    SchedulerOption,
    SiteClassOption,
    SiteOption,
    StackOption,
    TokensOption,
    WorkersOption,
    check_output_targets,
    output_format,
)
from planner.cli.numbers import si_count
from planner.cli.scenario_options import scenario_of
from planner.engine.defaults import DEFAULTS
from planner.errors import CapplanError
from planner.version import version


def sweep_rows(result, objective: str = "time", counts=None) -> list[dict]:
    """Best layout per accelerator and GPU count, with scaling efficiencies."""
    import numpy as np

    from planner.engine.optimize import OBJECTIVE_COLUMNS, marginal_efficiency, scaling_curve
    from planner.report.tables import layout_text

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
    counts, n = [], lo
    while n <= hi:
        counts.append(n)
        n *= 2
    return counts


def run(
    model: ModelOption = "llama3-70b",
    tokens: TokensOption = 15e12,
    hardware: str = typer.Option("h100-sxm", "--hardware", "-H",
                                 help="Comma-separated accelerator ids, or 'all'."),
    min_gpus: int = typer.Option(DEFAULTS["min_gpus"], parser=si_count,
                                 help="Smallest cluster (as plan's)."),
    max_gpus: int = typer.Option(DEFAULTS["max_gpus"], parser=si_count,
                                 help="Largest cluster (as plan's; 16k = 16,000)."),
    every: bool = typer.Option(False, help="Every feasible GPU count, not only doublings."),
    objective: str = typer.Option("time", help="Layout chosen per row by: time | cost | "
                                  "energy | carbon."),
    global_batch: GlobalBatchOption = None,
    site: SiteOption = "us-average",
    site_class: SiteClassOption = DEFAULTS["site_class"],
    precision: PrecisionOption = "bf16",
    stack: StackOption = DEFAULTS["stack"],
    checkpoint: CheckpointOption = "async",
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    plot: str = typer.Option(None, "--plot", help="Also write the scaling figure (PNG/SVG/PDF)."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    **prices,
):
    """Scaling table: days, USD, MWh and scaling efficiency per GPU count."""
    # every option (the price and method ones arrive in ``prices``), as plan's scenario
    scenario = scenario_of({**locals(), **prices}, deadline_days=None)
    format = output_format(format, output)
    from planner.engine.optimize import plan as run_plan
    from planner.report.output import render, write

    scenario.validate()  # the method and its options: one line before the search
    check_output_targets(output, force, plot)  # before the search, not after -o is written
    from planner.engine.distributed import check_scheduler

    check_scheduler(scheduler, workers)
    from planner.report.progress import search_progress

    with search_progress() as progress:
        result = run_plan(scenario, progress=progress, scheduler=scheduler, workers=workers)
    rows = [{"method": scenario.method, **row} for row in
            sweep_rows(result, objective, None if every else doubling(min_gpus, max_gpus))]
    if not rows:
        raise CapplanError(f"no layout of {model} fits between {min_gpus} and {max_gpus} GPUs",
                           exit_code=1)
    from dataclasses import asdict

    payload = {"scenario": {k: v for k, v in asdict(scenario).items() if k != "extra"},
               "rows": rows, "prices": result.prices, "version": version(),
               "catalog_version": result.catalog_version}
    from planner.report.output import committed_together

    with committed_together(force):  # -o and --plot together or not at all
        write(render(rows, format, title=f"Scaling {model} ({objective}-optimal layout per "
                     "row)", payload=payload), output, force)
        if plot:
            from planner.report.plot import plot_scaling

            plot_scaling(result, plot, force=force)

