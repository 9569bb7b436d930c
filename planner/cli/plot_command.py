"""``capplan plot KIND``: figures of a plan (scaling, Pareto front, time breakdown, all three)."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption

KINDS = ("scaling", "pareto", "breakdown", "plan")


def run(
    kind: str = typer.Argument(..., metavar="KIND", help="scaling | pareto | breakdown | plan.",
                               show_default=False),
    output: str = typer.Option(..., "--output", "-o",
                               help="Figure file; the suffix picks the format: .png, .svg, .pdf.",
                               show_default=False),
    force: ForceOption = False,
    **options,
):
    """Plot a plan: scaling curves, Pareto front, time breakdown of the winners, or all three.

    scaling: wall days, cost and energy against the GPU count, one line per accelerator,
    optima and knees marked. pareto: cost against energy of the Pareto-optimal plans,
    coloured by wall days. breakdown: where the step time and the whole-run time of each
    winner go. plan: the three in one figure. Takes the scenario options of `capplan plan`.
    """
    import sys

    from planner.cli.scenario_options import resolve_scenario
    from planner.engine.optimize import plan as run_plan
    from planner.errors import did_you_mean
    from planner.report.plot import PLOTS, check_target
    from planner.report.progress import search_progress

    if kind not in KINDS:
        raise did_you_mean("plot kind", kind, KINDS)
    check_target(output, force)  # fail before the search
    scenario, _ = resolve_scenario(options)
    from planner.engine.sites import is_several

    if is_several(scenario.site):
        from planner.errors import CapplanError

        raise CapplanError(f"capplan plot takes one site; got --site {scenario.site!r} "
                           "(capplan plan ranks several)")
    with search_progress() as progress:
        result = run_plan(scenario, progress=progress)
    PLOTS[kind](result, output, force=force)
    print(f"capplan: wrote {output}", file=sys.stderr)
