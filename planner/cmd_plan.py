"""``capplan plan``: the best cluster per objective across the catalog."""

from __future__ import annotations

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
    model: str = typer.Option("llama3-70b", "--model", "-m", help="Model id or TOML file."),
    tokens: float = typer.Option(15e12, help="Training tokens D."),
    hardware: str = typer.Option("all", "--hardware", "-H",
                                 help="Comma-separated accelerator ids, or 'all'."),
    min_gpus: int = typer.Option(8, help="Smallest cluster considered."),
    max_gpus: int = typer.Option(16384, help="Largest cluster considered."),
    global_batch: int = typer.Option(None, help="Global batch [sequences] (default ~16M tokens)."),
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    deadline_days: float = typer.Option(None, help="Finish within this many days."),
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
):
    """Find the fastest, cheapest, least-energy and least-carbon cluster for a training run.

    With no options: Llama 3 70B on 15T tokens across the whole catalog, 8 to 16,384 GPUs.
    """
    check_format(format)
    from .optimize import plan as run_plan
    from .optimize import require
    from .output import render, write
    from .scenario import Scenario

    scenario = Scenario(
        model=model, tokens=tokens, global_batch=global_batch, seq_len=seq_len,
        hardware=tuple(h.strip() for h in hardware.split(",") if h.strip()), site=site,
        reliability=reliability, precision=precision, checkpoint=checkpoint,
        cost_basis=cost_basis, min_gpus=min_gpus, max_gpus=max_gpus,
        deadline_days=deadline_days, budget_usd=budget_usd, max_power_mw=max_power_mw,
        objective=objective, knee_threshold=knee_threshold,
        catalog_dirs=tuple(catalog or ()))
    result = run_plan(scenario)
    payload = plan_payload(result)
    rows = [{"objective": obj, **(summarize(row) or {})} for obj, row in result.best.items()
            if row is not None]
    text = render(rows, format, title=f"Best plans for {model} on {tokens:.3g} tokens",
                  payload=payload)
    write(text, output, force)
    require(result, objective)
