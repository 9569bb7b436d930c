"""``capplan plot KIND``: figures of a plan (scaling, Pareto front, time breakdown, all three)."""

from __future__ import annotations

import typer

from .cli_app import app

KINDS = ("scaling", "pareto", "breakdown", "plan")


@app.command()
def plot(
    ctx: typer.Context,
    kind: str = typer.Argument(..., metavar="KIND", help="scaling | pareto | breakdown | plan.",
                               show_default=False),
    output: str = typer.Option(..., "--output", "-o",
                               help="Figure file; the suffix picks the format: .png, .svg, .pdf.",
                               show_default=False),
    force: bool = typer.Option(False, help="Overwrite --output if it exists."),
    scenario_file: str = typer.Option(None, "--scenario", "-s",
                                      help="TOML scenario file (flags override it)."),
    model: str = typer.Option("llama3-70b", "--model", "-m", help="Model id or TOML file."),
    tokens: float = typer.Option(15e12, help="Training tokens D."),
    hardware: str = typer.Option("all", "--hardware", "-H",
                                 help="Comma-separated accelerator ids, or 'all'."),
    min_gpus: int = typer.Option(8, help="Smallest cluster considered."),
    max_gpus: int = typer.Option(16384, help="Largest cluster considered."),
    global_batch: int = typer.Option(None, help="Global batch [sequences] (default ~16M tokens)."),
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    deadline_days: float = typer.Option(
        90.0, help="Finish within this many days ('inf' for no deadline)."),
    budget_usd: float = typer.Option(None, help="Spend at most this [USD]."),
    max_power_mw: float = typer.Option(None, help="Facility peak power cap [MW]."),
    site: str = typer.Option("us-average", help="Site id (PUE, price, grid carbon)."),
    objective: str = typer.Option("cost", help="time | cost | energy | carbon (the headline)."),
    precision: str = typer.Option("bf16", help="bf16 | fp8 | tf32."),
    checkpoint: str = typer.Option("async", help="sync | async | in-memory."),
    cost_basis: str = typer.Option("cloud", help="cloud | tco."),
    reliability: str = typer.Option("default", help="Reliability profile id."),
    knee_threshold: float = typer.Option(0.8, help="Marginal scaling efficiency of the knee."),
    catalog: list[str] = typer.Option(None, "--catalog", help="Extra catalog directory."),
):
    """Plot a plan: scaling curves, Pareto front, time breakdown of the winners, or all three.

    scaling: wall days, cost and energy against the GPU count, one line per accelerator,
    optima and knees marked. pareto: cost against energy of the Pareto-optimal plans,
    coloured by wall days. breakdown: where the step time and the whole-run time of each
    winner go. plan: the three in one figure. Takes the scenario options of `capplan plan`.
    """
    import sys

    from . import scenario_file as sf
    from .errors import did_you_mean
    from .optimize import plan as run_plan
    from .plot import PLOTS, check_target
    from .progress import search_progress
    from .scenario import Scenario

    if kind not in KINDS:
        raise did_you_mean("plot kind", kind, KINDS)
    check_target(output, force)  # fail before the search
    v = sf.merge(ctx, dict(model=model, tokens=tokens, hardware=hardware, min_gpus=min_gpus,
                           max_gpus=max_gpus, global_batch=global_batch, seq_len=seq_len,
                           deadline_days=deadline_days, budget_usd=budget_usd,
                           max_power_mw=max_power_mw, site=site, objective=objective,
                           precision=precision, checkpoint=checkpoint, cost_basis=cost_basis,
                           reliability=reliability, knee_threshold=knee_threshold,
                           catalog=catalog), scenario_file)
    scenario = Scenario(
        model=v["model"], tokens=v["tokens"], global_batch=v["global_batch"],
        seq_len=v["seq_len"],
        hardware=tuple(h.strip() for h in v["hardware"].split(",") if h.strip()),
        site=v["site"], reliability=v["reliability"], precision=v["precision"],
        checkpoint=v["checkpoint"], cost_basis=v["cost_basis"], min_gpus=v["min_gpus"],
        max_gpus=v["max_gpus"],
        deadline_days=None if v["deadline_days"] in (None, float("inf")) else v["deadline_days"],
        budget_usd=v["budget_usd"], max_power_mw=v["max_power_mw"], objective=v["objective"],
        knee_threshold=v["knee_threshold"], catalog_dirs=tuple(v["catalog"] or ()))
    with search_progress() as progress:
        result = run_plan(scenario, progress=progress)
    PLOTS[kind](result, output, force=force)
    print(f"capplan: wrote {output}", file=sys.stderr)
