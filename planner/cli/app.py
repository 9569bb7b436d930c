"""The typer application and the explicit registration of every command.

Each command lives in its own module of :mod:`planner.cli` and is registered here,
in the order ``capplan --help`` lists them.  Command modules import only typer at
module level (numpy, pandas, the catalog and the engine load inside the command),
so building the app stays cheap and ``capplan --help`` fast.
"""

from __future__ import annotations

import typer

from planner.cli.common import CONTEXT


def _root():
    """Closed-form capacity planner for LLM training clusters.

    Every command takes --format table|json|csv|markdown and -o FILE; data goes to
    stdout, diagnostics to stderr. Add --debug for a traceback on errors.
    """


def build_app() -> typer.Typer:
    """The ``capplan`` app with every command registered."""
    from planner.cli import (
        catalog,
        checkpoint,
        codesign,
        evaluate,
        export,
        formula,
        init,
        plan,
        plot,
        prices,
        sensitivity,
        simulate,
        stragglers,
        sweep,
        validate,
    )

    app = typer.Typer(
        name="capplan",
        help="Closed-form capacity planner for LLM training clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT,
    )
    app.callback()(_root)
    app.command()(checkpoint.checkpoint)
    app.add_typer(formula.formula_app, name="formula")
    app.add_typer(catalog.catalog_app, name="catalog")
    app.add_typer(prices.prices_app, name="prices")
    app.command()(evaluate.evaluate)
    app.command()(plan.plan)
    app.command()(sweep.sweep)
    app.command()(codesign.codesign)
    app.command()(init.init)
    app.command()(sensitivity.sensitivity)
    app.command()(simulate.simulate)
    app.command()(stragglers.stragglers)
    app.command()(validate.validate)
    app.add_typer(export.export_app, name="export")
    app.command()(plot.plot)
    return app


app = build_app()
