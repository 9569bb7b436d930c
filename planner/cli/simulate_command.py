"""``capplan simulate``: Monte Carlo check of the closed forms for one configuration.

The command resolves the options into evaluated runs (one, or one per ``[[phases]]``
entry) and :mod:`planner.report.simulate_report` (its one lazy import,
docs/architecture.md) simulates them and builds the report; the command writes it.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    output_format,
    write_report,
)
from planner.cli.layout_options import layout_defaults, resolve
from planner.cli.scenario_phases import apply_scenario_file, resolve_phases


def run(
    replicas: int = typer.Option(
        10_000, help="Independent simulated runs (at most about 2e6 simulated failures in "
        "all: a pilot of 32 runs measures the failures per run)."),
    seed: int = typer.Option(0, help="Random seed (reported)."),
    weibull_shape: float = typer.Option(
        1.0, help="Shape k of per-GPU failure times, 0.2 to 20 (1 = exponential; < 1 infant "
        "mortality)."),
    component_age: str = typer.Option(
        "stationary", help="stationary (components in service) | new (all new at start; "
        "Weibull k < 1 then front-loads failures)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    scenario_file: str = typer.Option(
        None, "--scenario", "-s", help="TOML scenario file (flags override it); its "
        "[[phases]] are simulated one after the other and summed per simulated run."),
    **options,
):
    """Simulate the whole run (stragglers, failures, checkpoints, restarts) and compare
    the distribution of wall time, GPU-hours, energy and failures with the closed forms."""
    format = output_format(format, output)
    from planner.report import simulate_report as report  # numpy, the engine: when it runs

    options, phases = apply_scenario_file(layout_defaults(), options, scenario_file)
    report.check_request(replicas=replicas, seed=seed, weibull_shape=weibull_shape,
                         component_age=component_age)
    runs = resolve_phases(options, phases) if phases else [resolve(options)]
    write_report(report.simulation_report(
        runs, phases, format, replicas=replicas, seed=seed, weibull_shape=weibull_shape,
        component_age=component_age), output, force)
