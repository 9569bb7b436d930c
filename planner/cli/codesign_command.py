"""``capplan codesign``: which hypothetical accelerator trains a model best (a grid around a catalog entry).

The command builds the scenario (scenario_options.scenario_of) and
:mod:`planner.report.codesign_report` (its one lazy import, docs/architecture.md)
searches the grid and builds the report; the command writes it.
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
    TokensOption,
    WorkersOption,
    check_output_targets,
    output_format,
    write_report,
)
from planner.cli.numbers import si_count, si_float
from planner.cli.scenario_options import canonical_names, scenario_of
from planner.engine.inputs.defaults import DEFAULTS


def run(
    accelerator: str = typer.Option("h100-sxm", "--accelerator", "-a",
                                    help="Catalog accelerator the grid varies around."),
    vary: list[str] = typer.Option(
        None, "--vary", help="NAME=VALUES (repeatable): an accelerator field (or nic_gbps, "
        "peak_bf16, hbm_bandwidth, scale_up_domain, scale_up_bandwidth, price) and values "
        "v1,v2,... or lo..hi:n (n geometric steps); 'x' marks a multiple of the catalog "
        "value, e.g. peak_bf16=0.5x..2x:5 hbm_bytes=80e9,141e9 scale_up_domain=8,72."),
    model: ModelOption = DEFAULTS["model"],
    tokens: TokensOption = DEFAULTS["tokens"],
    min_gpus: int = typer.Option(DEFAULTS["min_gpus"], parser=si_count,
                                 help="Smallest cluster considered."),
    max_gpus: int = typer.Option(DEFAULTS["max_gpus"], parser=si_count,
                                 help="Largest cluster considered (16k = 16,000)."),
    global_batch: GlobalBatchOption = None,
    deadline_days: float = typer.Option(
        DEFAULTS["deadline_days"], help="Finish within this many days ('inf' for no deadline)."),
    budget_usd: float = typer.Option(None, parser=si_float,
                                     help="Spend at most this [USD] (5M = 5e6)."),
    max_power_mw: float = typer.Option(None, help="Facility peak power cap [MW]."),
    confidence: float = typer.Option(
        None, help="Quantile at which deadline, budget and power must hold (as `capplan plan "
        "--confidence`; 0.5 is the median): the catalog accelerator's multipliers tighten "
        "them for every point. Default: the nominal run."),
    objective: str = typer.Option(DEFAULTS["objective"],
                                  help="time | cost | energy | carbon (layout and gain shown)."),
    site: SiteOption = DEFAULTS["site"],
    site_class: SiteClassOption = DEFAULTS["site_class"],
    precision: PrecisionOption = DEFAULTS["precision"],
    checkpoint: CheckpointOption = DEFAULTS["checkpoint"],
    pareto: bool = typer.Option(False, "--pareto", help="JSON: list every point's Pareto rows "
                                "(time, cost, energy), not only their number."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    **prices,
):
    """Co-design: plan a run on a grid of hypothetical accelerators around a catalog entry.

    Every point of the grid (the product of the --vary axes) is searched over every
    layout and GPU count like `capplan plan`; each row is the point's --objective winner
    (its GPUs, layout, days, USD, MWh and t CO2e: one plan, never several objectives'
    winners mixed) and its gain over the catalog accelerator (the row 'catalog'; > 1 is
    better; the other objectives' winners are in -f json).  Example: which change to an H100
    buys most for a 70B model?  --vary hbm_bytes=1x,2x --vary hbm_bandwidth=1x,2x
    --vary scale_up_domain=8,72.
    """
    # every option (the price ones arrive in ``prices``), as plan's scenario
    values = canonical_names({**locals(), **prices, "hardware": accelerator})
    scenario = scenario_of(values, hardware=(values["hardware"],))
    format = output_format(format, output)
    from planner.report import codesign_report as report  # numpy, the engine: when it runs

    report.check_request(objective=objective, vary=vary, scheduler=scheduler,
                         workers=workers)
    check_output_targets(output, force)
    scenario.validate()
    write_report(report.codesign_report(scenario, values["hardware"], vary, format, pareto=pareto,
                                        scheduler=scheduler, workers=workers), output, force)
