"""``capplan sensitivity``: which input moves the answer most."""

from __future__ import annotations

import typer

from .cli_app import app
from .cmd_evaluate import check_format
from .layout_options import with_layout_options


@app.command()
@with_layout_options
def sensitivity(
    top: int = typer.Option(15, help="Show the inputs with the largest elasticities."),
    plot: str = typer.Option(None, "--plot", help="Write a tornado plot (PNG/SVG/PDF)."),
    format: str = typer.Option("table", "--format", "-f", help="table | json | csv | markdown."),
    output: str = typer.Option(None, "--output", "-o", help="Write to FILE ('-' = stdout)."),
    force: bool = typer.Option(False, help="Overwrite --output/--plot if they exist."),
    **options,
):
    """Elasticities d ln(output)/d ln(input) of days, cost, energy and CO2e, ranked.

    Derived symbolically from the run model (sympy derivatives compiled to numpy):
    0.5 means 1% more of the input gives 0.5% more of the output.
    """
    check_format(format)
    from .cli import _version
    from .layout_options import resolve
    from .output import render, write
    from .sensitivity import elasticity_table

    run = resolve(options)
    rows = elasticity_table(run.inputs)[:max(top, 1)]
    payload = {"inputs": run.echo, "elasticities": rows, "version": _version(),
               "catalog_version": run.catalog_version}
    title = (f"Elasticities for {run.echo['model']} on {run.echo['gpus']:,} x "
             f"{run.echo['hardware']} (d ln output / d ln input)")
    write(render(rows, format, title=title, payload=payload), output, force)
    if plot:
        from .plot_tornado import tornado

        tornado(rows, plot, title=title, force=force)
