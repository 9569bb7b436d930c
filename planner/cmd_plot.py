"""``capplan plot KIND``: figures of a plan (scaling, Pareto front, time breakdown, all three)."""

from __future__ import annotations

import typer

from .cli_app import app
from .scenario_options import with_scenario_options

KINDS = ("scaling", "pareto", "breakdown", "plan")


@app.command()
@with_scenario_options
def plot(
    kind: str = typer.Argument(..., metavar="KIND", help="scaling | pareto | breakdown | plan.",
                               show_default=False),
    output: str = typer.Option(..., "--output", "-o",
                               help="Figure file; the suffix picks the format: .png, .svg, .pdf.",
                               show_default=False),
    force: bool = typer.Option(False, help="Overwrite --output if it exists."),
    **options,
):
    """Plot a plan: scaling curves, Pareto front, time breakdown of the winners, or all three.

    scaling: wall days, cost and energy against the GPU count, one line per accelerator,
    optima and knees marked. pareto: cost against energy of the Pareto-optimal plans,
    coloured by wall days. breakdown: where the step time and the whole-run time of each
    winner go. plan: the three in one figure. Takes the scenario options of `capplan plan`.
    """
    import sys

    from .errors import did_you_mean
    from .optimize import plan as run_plan
    from .plot import PLOTS, check_target
    from .progress import search_progress
    from .scenario_options import resolve_scenario

    if kind not in KINDS:
        raise did_you_mean("plot kind", kind, KINDS)
    check_target(output, force)  # fail before the search
    scenario, _ = resolve_scenario(options)
    with search_progress() as progress:
        result = run_plan(scenario, progress=progress)
    PLOTS[kind](result, output, force=force)
    print(f"capplan: wrote {output}", file=sys.stderr)
