"""``capplan plot KIND``: figures of a plan (scaling, Pareto front, time breakdown, all three).

The command resolves the options into a scenario and :mod:`planner.report.plot_report`
(its one lazy import, docs/architecture.md) searches and draws the figure.
"""

from __future__ import annotations

import sys

import typer

from planner.cli.common import ForceOption
from planner.cli.scenario_options import resolve_scenario


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
    from planner.report import plot_report as report  # numpy, matplotlib: when it runs

    report.check_request(kind, output, force)  # fail before the search
    scenario, _ = resolve_scenario(options)
    report.draw(scenario, kind, output, force)
    print(f"capplan: wrote {output}", file=sys.stderr)
