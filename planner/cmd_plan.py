"""``capplan plan``: the best cluster per objective across the catalog."""

from __future__ import annotations

import sys

import typer

from .cli_app import app
from .cmd_evaluate import check_format

SUMMARY = ("hardware", "gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "recompute",
           "zero", "wall_days", "cost_usd", "energy_mwh", "co2e_t", "mfu", "step_time_s",
           "memory_per_gpu_bytes", "peak_power_mw", "expected_failures", "ettr")


def summarize(row: dict | None) -> dict | None:
    """The user-facing fields of one plan row (plain Python values)."""
    if row is None:
        return None
    out = {}
    for key in SUMMARY:
        value = row[key]
        out[key] = value if isinstance(value, str) else (
            int(value) if key in ("gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch",
                                  "zero") else float(value))
    return out


def plan_payload(result) -> dict:
    from dataclasses import asdict

    from .cli import _version

    scenario = asdict(result.scenario)
    scenario.pop("extra", None)
    return {
        "scenario": scenario,
        "best": {obj: summarize(row) for obj, row in result.best.items()},
        "per_hardware": {hw: {obj: summarize(r) for obj, r in rows.items()}
                         for hw, rows in result.per_hardware.items()},
        "pareto": [summarize(r) for r in result.pareto],
        "knee": {hw: (None if r is None else {**summarize(r),
                                             "marginal_efficiency": r["marginal_efficiency"]})
                 for hw, r in result.knee.items()},
        "skipped": result.skipped,
        "binding": result.binding,
        "evaluated": result.evaluated,
        "fitting": result.fitting,
        "seconds": result.seconds,
        "version": _version(),
        "catalog_version": result.catalog_version,
    }


@app.command()
def plan(
    ctx: typer.Context,
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
    format: str = typer.Option("table", "--format", "-f", help="table | json | csv | markdown."),
    output: str = typer.Option(None, "--output", "-o", help="Write to FILE ('-' = stdout)."),
    force: bool = typer.Option(False, help="Overwrite --output if it exists."),
    plot: str = typer.Option(None, "--plot", help="Also write the plan figure (PNG/SVG/PDF)."),
    uncertainty: bool = typer.Option(
        False, help="Propagate input uncertainty: P10/P50/P90 and win probabilities."),
    draws: int = typer.Option(400, help="Monte Carlo draws for --uncertainty."),
    seed: int = typer.Option(0, help="Random seed for --uncertainty."),
):
    """Find the fastest, cheapest, least-energy and least-carbon cluster for a training run.

    With no options: Llama 3 70B on 15T tokens across the whole catalog, 8 to 16,384 GPUs,
    finishing within 90 days, cheapest first.
    """
    from . import scenario_file as sf
    from .optimize import plan as run_plan
    from .optimize import require
    from .output import render, write
    from .scenario import Scenario

    v = sf.merge(ctx, dict(model=model, tokens=tokens, hardware=hardware, min_gpus=min_gpus,
                           max_gpus=max_gpus, global_batch=global_batch, seq_len=seq_len,
                           deadline_days=deadline_days, budget_usd=budget_usd,
                           max_power_mw=max_power_mw, site=site, objective=objective,
                           precision=precision, checkpoint=checkpoint, cost_basis=cost_basis,
                           reliability=reliability, knee_threshold=knee_threshold,
                           catalog=catalog, uncertainty=None), scenario_file)
    check_format(format)
    model, tokens, hardware, catalog = v["model"], v["tokens"], v["hardware"], v["catalog"]

    scenario = Scenario(
        model=model, tokens=tokens, global_batch=v["global_batch"], seq_len=v["seq_len"],
        hardware=tuple(h.strip() for h in hardware.split(",") if h.strip()), site=v["site"],
        reliability=v["reliability"], precision=v["precision"], checkpoint=v["checkpoint"],
        cost_basis=v["cost_basis"], min_gpus=v["min_gpus"], max_gpus=v["max_gpus"],
        deadline_days=None if v["deadline_days"] in (None, float("inf")) else v["deadline_days"],
        budget_usd=v["budget_usd"],
        max_power_mw=v["max_power_mw"], objective=v["objective"],
        knee_threshold=v["knee_threshold"], catalog_dirs=tuple(catalog or ()))
    from .progress import search_progress

    with search_progress() as progress:
        result = run_plan(scenario, progress=progress)
    payload = plan_payload(result)
    if uncertainty and any(row is not None for row in result.best.values()):
        from hardware_catalog import load_catalog

        from .uncertainty import plan_uncertainty, spreads_from

        payload["uncertainty"] = plan_uncertainty(
            result, load_catalog(tuple(catalog or ())), spreads_from(v["uncertainty"]),
            draws=draws, seed=seed)
    if format == "table":
        from .report import render_plan, render_uncertainty

        text = render_plan(result)
        if "uncertainty" in payload:
            text += render_uncertainty(payload["uncertainty"])
    else:
        from .report import winner_rows

        text = render(winner_rows(result), format,
                      title=f"Best plans for {model} on {tokens:.3g} tokens", payload=payload)
    write(text, output, force)
    if plot:
        from .plot import plot_plan

        plot_plan(result, plot, force=force)
        print(f"capplan: wrote {plot}", file=sys.stderr)
    require(result, scenario.objective)
