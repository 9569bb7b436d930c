"""The report of ``capplan sensitivity``: which input moves the answer most.

:func:`sensitivity_report` ranks the elasticities d ln(output)/d ln(input) of one evaluated
run (:func:`planner.analysis.sensitivity.elasticity_table`) as a
:class:`~planner.report.output.Report`, with the tornado figure of ``--plot``; the command
resolves the options and writes it (planner/cli/sensitivity_command.py).
"""

from __future__ import annotations

from planner.analysis.sensitivity import elasticity_table
from planner.engine.run.readable import count_text
from planner.report import tornado as figures
from planner.report.output import Report, render
from planner.version import version


def sensitivity_report(run, format: str, *, top: int = 15, plot: str | None = None) -> Report:
    """The ``top`` largest elasticities of the evaluated ``run`` in ``format``."""
    rows = elasticity_table(run.inputs)[:max(top, 1)]
    payload = {"inputs": run.echo, "elasticities": rows, "version": version(),
               "catalog_version": run.catalog_version}
    e = run.echo
    cp = f" CP{e['cp']}" if (e.get('cp') or 1) > 1 else ""
    title = (f"Elasticities for {e['model']} on {count_text(e['tokens'])} tokens, "
             f"{e['gpus']:,} x {e['hardware']} (TP{e['tp']} PP{e['pp']} DP{e['dp']}"
             f"{cp}), "
             f"{e['site']} (d ln output / d ln input)")
    return Report(text=render(rows, format, title=title, payload=payload),
                  figure=(lambda force: figures.tornado(rows, plot, title=title, force=force))
                  if plot else None)
