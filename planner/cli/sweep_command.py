"""``capplan sweep``: the scaling table over a GPU-count range.

The command builds the scenario (scenario_options.scenario_of) and
:mod:`planner.report.sweep_report` (its one lazy import, docs/architecture.md) searches and
builds the report; the command writes it.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    CheckpointOption,
    ForceOption,
    FormatOption,
    GlobalBatchOption,
    ModelOption,
    OutputOption,
    PrecisionOption,
    SchedulerOption,
    SiteClassOption,
    SiteOption,
    StackOption,
    TokensOption,
    WorkersOption,
    check_output_targets,
    output_format,
    write_report,
)
from planner.cli.numbers import si_count
from planner.cli.scenario_options import canonical_names, scenario_of
from planner.engine.inputs.defaults import DEFAULTS


def run(
    model: ModelOption = "llama3-70b",
    tokens: TokensOption = 15e12,
    hardware: str = typer.Option("h100-sxm", "--hardware", "-H",
                                 help="Comma-separated accelerator ids, or 'all'."),
    min_gpus: int = typer.Option(DEFAULTS["min_gpus"], parser=si_count,
                                 help="Smallest cluster (as plan's)."),
    max_gpus: int = typer.Option(DEFAULTS["max_gpus"], parser=si_count,
                                 help="Largest cluster (as plan's; 16k = 16,000)."),
    every: bool = typer.Option(False, help="Every feasible GPU count, not only doublings."),
    objective: str = typer.Option("time", help="Layout chosen per row by: time | cost | "
                                  "energy | carbon."),
    global_batch: GlobalBatchOption = None,
    site: SiteOption = "us-average",
    site_class: SiteClassOption = DEFAULTS["site_class"],
    precision: PrecisionOption = "bf16",
    stack: StackOption = None,
    checkpoint: CheckpointOption = "async",
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    plot: str = typer.Option(None, "--plot", help="Also write the scaling figure (PNG/SVG/PDF)."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    **prices,
):
    """Scaling table: days, USD, MWh and scaling efficiency per GPU count."""
    # every option (the price and method ones arrive in ``prices``), as plan's scenario
    scenario = scenario_of(canonical_names({**locals(), **prices}), deadline_days=None)
    format = output_format(format, output)
    from planner.report import sweep_report as report  # numpy, the engine: when it runs

    scenario.validate()  # the method and its options: one line before the search
    check_output_targets(output, force, plot)  # before the search, not after -o is written
    report.check_request(scheduler=scheduler, workers=workers)
    write_report(report.sweep_report(scenario, format, every=every, plot=plot,
                                     scheduler=scheduler, workers=workers), output, force)
