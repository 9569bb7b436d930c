"""``capplan plan``: the best cluster per objective across the catalog.

The command resolves the options into a :class:`~planner.engine.inputs.scenario.Scenario`, and
:func:`planner.report.plan_report.plan_report` (its one lazy import, docs/architecture.md)
searches and builds the report; the command writes it.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    SchedulerOption,
    WorkersOption,
    check_output_targets,
    output_format,
    write_report,
)
from planner.cli.rl_options import RL_OPTIONS, refuse_without_grpo
from planner.cli.rl_run import plan_grpo
from planner.cli.scenario_options import resolve_scenario
from planner.cli.workload_options import MaxCandidatesOption, MaxDrawRowsOption, bounded_plan
from planner.errors import CapplanError


def run(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    plot: str = typer.Option(None, "--plot", help="Also write the plan figure (PNG/SVG/PDF)."),
    uncertainty: bool = typer.Option(
        False, help="Propagate input uncertainty: P10/P50/P90 and win probabilities."),
    draws: int = typer.Option(400, help="Monte Carlo draws for --uncertainty and for the "
                              "--confidence quantiles of the plans reported."),
    seed: int = typer.Option(0, help="Random seed of those draws."),
    confidence: float = typer.Option(
        None, help="Quantile of the uncertainty model at which deadline, budget and power "
        "must hold and the plans' numbers are shown, e.g. 0.9 (P90), 0.5 (the median, P50): "
        "each constraint is tightened per accelerator by the quantile multiplier of a "
        "fixed-seed Monte Carlo. Default: the nominal run (every input at its catalog "
        "value; not the P50)."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    max_candidates: MaxCandidatesOption = None,
    max_draw_rows: MaxDrawRowsOption = None,
    **options,
):
    """Find the fastest, cheapest, least-energy and least-carbon cluster for a training run.

    With no options: Llama 3 70B on 15T tokens across the whole catalog, 8 to 16,384 GPUs,
    finishing within 90 days, cheapest first.  When no plan meets the constraints the
    explanation goes to stderr (exit 1) and no -o/--plot file is written.
    """
    format = output_format(format, output)
    from planner.report import plan_report as report  # numpy, the engine: when it runs

    report.check_request(draws=draws, seed=seed, scheduler=scheduler, workers=workers)
    rl = {k: options.pop(k) for k in RL_OPTIONS}
    scenario, v = resolve_scenario(options)
    rl.update({k: v[k] for k in RL_OPTIONS if k in v})  # a scenario file's, under the flags
    if scenario.method == "grpo":
        if v.get("phases") or uncertainty or plot or confidence is not None:
            raise CapplanError("--method grpo takes none of [[phases]], --uncertainty, "
                               "--plot, --confidence yet")
        return plan_grpo(scenario, {**rl, "method": "grpo"}, format, output, force)
    refuse_without_grpo({**rl, "method": scenario.method})
    scenario = scenario.with_(confidence=confidence)
    scenario.validate()
    check_output_targets(output, force, plot)  # a bad -o or --plot fails before the search
    with bounded_plan(scenario, v.get("phases"), max_candidates, max_draw_rows,
                      workers) as passes:
        write_report(report.plan_report(
            scenario, v["uncertainty"], format, uncertainty=uncertainty, draws=draws,
            seed=seed, plot=plot, phases=v.get("phases"), scheduler=scheduler,
            workers=workers, passes=passes), output, force)
