"""``capplan evaluate``: one layout, every number of the run model.

The command resolves the options into an evaluated run (planner.cli.layout_options.resolve)
and :mod:`planner.report.evaluate_report` (its one lazy import, docs/architecture.md)
builds the report; the command writes it.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    output_format,
    pending_notices,
    write_report,
)
from planner.cli.layout_options import layout_defaults, resolve
from planner.cli.rl_options import RL_OPTIONS, refuse_without_grpo
from planner.cli.rl_run import evaluate_grpo
from planner.cli.scenario_options import canonical_names
from planner.cli.scenario_phases import apply_scenario_file, resolve_phases, scenario_spreads
from planner.errors import CapplanError


def run(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    uncertainty: bool = typer.Option(False, help="Add P10/P50/P90 from input uncertainty."),
    draws: int = typer.Option(2000, help="Monte Carlo draws for --uncertainty."),
    seed: int = typer.Option(0, help="Random seed for --uncertainty."),
    scenario_file: str = typer.Option(
        None, "--scenario", "-s", help="TOML scenario file (flags override it); its "
        "[[phases]] make a run of several phases, summed with a per-phase breakdown."),
    **options,
):
    """Evaluate one layout: step time and breakdown, memory, MFU, checkpointing, totals."""
    format = output_format(format, output)
    from planner.report import evaluate_report as report  # numpy, the engine: when it runs

    report.check_request(draws=draws, seed=seed)
    options, phases = apply_scenario_file(layout_defaults(), options, scenario_file)
    options = canonical_names(options)
    spreads = scenario_spreads(scenario_file) if uncertainty else None
    grpo_phases = any(dict(p.method).get("method") == "grpo" for p in phases)
    if uncertainty and (grpo_phases or options.get("method") == "grpo"):
        raise CapplanError("--method grpo (and a method = \"grpo\" phase) takes no "
                           "--uncertainty yet")
    if options.get("method") == "grpo" and not phases:
        return evaluate_grpo(options, format, output, force)
    if options.get("method") != "grpo":
        refuse_without_grpo(options)
    rl = {k: options[k] for k in RL_OPTIONS}
    options = {k: v for k, v in options.items() if k not in RL_OPTIONS}
    if phases:
        runs = resolve_phases(options, phases, rl=rl)
        answer = report.phases_report(phases, runs, format, spreads=spreads, draws=draws,
                                      seed=seed)
    else:
        answer = report.evaluation_report(resolve(options), format, options=options,
                                          resolve=quiet_resolve, spreads=spreads,
                                          draws=draws, seed=seed)
    write_report(answer, output, force)


def quiet_resolve(options: dict):
    """:func:`~planner.cli.layout_options.resolve` with its notices dropped (an
    alternative's layout and split notices repeat the run's)."""
    asked = len(pending_notices)
    try:
        return resolve(options)
    finally:
        del pending_notices[asked:]
