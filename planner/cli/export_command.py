"""``capplan export xlsx``: a workbook whose Model sheet recomputes in Excel.

The command resolves the options into an evaluated run and :mod:`planner.report.
export_report` (its one lazy import, docs/architecture.md) builds the workbook and writes
it.
"""

from __future__ import annotations

import sys

import typer

from planner.cli.common import ForceOption
from planner.cli.environment_options import price_files
from planner.cli.fault_options import fault_inputs
from planner.cli.layout_options import layout_defaults, resolve
from planner.cli.scenario_phases import apply_scenario_file, resolve_phases


def run(
    output: str = typer.Option(..., "--output", "-o", help="Workbook to write (.xlsx)."),
    force: ForceOption = False,
    scenario_file: str = typer.Option(
        None, "--scenario", "-s", help="TOML scenario file (flags override it); with "
        "[[phases]]: a Phases sheet (each phase, live totals), the model of the longest."),
    **options,
):
    """Write an .xlsx workbook: named inputs, the whole model as live Excel formulas
    generated from the sympy expressions, and a GPU-count sweep."""
    from planner.report import export_report as report  # numpy, openpyxl: when it runs

    report.check_target(output, force)  # before the run: one error line, no layout notice
    options, phases = apply_scenario_file(layout_defaults(), options, scenario_file)
    runs = ()
    if phases:  # each phase's run; the Model and Sweep sheets hold the longest phase's
        runs = resolve_phases(options, phases)
        longest = report.longest_phase(phases)
        options = {**options, **phases[longest].options()}
        run = runs[longest]
    else:
        run = resolve(options)
    book = report.workbook(run, catalog_dirs=options.get("catalog") or (),
                           price_files=price_files(options.get("prices")),
                           overrides=fault_inputs(options), phases=phases, runs=runs)
    print(f"capplan: wrote {report.write(book, output, force)}", file=sys.stderr)
