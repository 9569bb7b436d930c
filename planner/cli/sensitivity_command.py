"""``capplan sensitivity``: which input moves the answer most."""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    check_output_targets,
    output_format,
)
from planner.version import version


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
    from planner.analysis.sensitivity import elasticity_table
    from planner.cli.layout_options import resolve
    from planner.report.output import render, write

    check_output_targets(output, force, plot)
    run = resolve(options)
    rows = elasticity_table(run.inputs)[:max(top, 1)]
    payload = {"inputs": run.echo, "elasticities": rows, "version": version(),
               "catalog_version": run.catalog_version}
    from planner.engine.readable import count_text

    e = run.echo
    cp = f" CP{e['cp']}" if (e.get('cp') or 1) > 1 else ""
    title = (f"Elasticities for {e['model']} on {count_text(e['tokens'])} tokens, "
             f"{e['gpus']:,} x {e['hardware']} (TP{e['tp']} PP{e['pp']} DP{e['dp']}"
             f"{cp}), "
             f"{e['site']} (d ln output / d ln input)")
    from planner.report.output import committed_together

    with committed_together(force):  # -o and --plot together or not at all
        write(render(rows, format, title=title, payload=payload), output, force)
        if plot:
            from planner.report.tornado import tornado

            tornado(rows, plot, title=title, force=force)
