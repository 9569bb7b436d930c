"""``capplan sensitivity``: which input moves the answer most.

The command resolves the options into an evaluated run and
:mod:`planner.report.sensitivity_report` (its one lazy import, docs/architecture.md)
builds the report; the command writes it.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    check_output_targets,
    output_format,
    write_report,
)
from planner.cli.layout_options import resolve


def run(
    top: int = typer.Option(15, help="Show the inputs with the largest elasticities."),
    plot: str = typer.Option(None, "--plot", help="Write a tornado plot (PNG/SVG/PDF)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    **options,
):
    """Elasticities d ln(output)/d ln(input) of days, cost, energy and CO2e, ranked.

    Derived symbolically from the run model (sympy derivatives compiled to numpy):
    0.5 means 1% more of the input gives 0.5% more of the output.
    """
    format = output_format(format, output)
    from planner.report import sensitivity_report as report  # numpy, the engine: when it runs

    check_output_targets(output, force, plot)
    write_report(report.sensitivity_report(resolve(options), format, top=top, plot=plot),
                 output, force)
