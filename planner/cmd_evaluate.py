"""``capplan evaluate``: one layout, every number of the run model."""

from __future__ import annotations

import typer

from .cli_app import app
from .errors import CapplanError
from .output import FORMATS

BREAKDOWN_KEYS = ("compute_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s",
                  "dp_comm_s", "bubble_s", "optimizer_s", "straggler_s")
MEMORY_KEYS = ("weights_bytes", "grads_bytes", "optimizer_state_bytes", "activation_bytes",
               "reserve_bytes")
SUMMARY_KEYS = (
    "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "hfu", "memory_per_gpu_bytes",
    "hbm_bytes", "fits", "largest_memory_term", "params", "active_params", "steps",
    "system_mtbf_s", "checkpoint_bytes", "checkpoint_stall_s", "checkpoint_interval_s",
    "young_interval_s", "restart_s", "expected_failures", "waste_fraction", "ettr",
    "solve_time_s", "wall_time_s", "wall_days", "gpu_hours", "energy_kwh", "energy_it_kwh",
    "avg_power_mw", "peak_power_mw", "cost_usd", "cost_cloud_usd", "cost_tco_usd", "co2e_kg",
    "co2e_operational_kg", "co2e_embodied_kg",
)


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        import difflib

        close = difflib.get_close_matches(fmt, FORMATS, n=1)
        hint = f"; did you mean: {close[0]}?" if close else ""
        raise CapplanError(f"unknown format '{fmt}'; allowed: {', '.join(FORMATS)}{hint}")


def evaluation_payload(row: dict, inputs: dict) -> dict:
    """The JSON object of one evaluated layout (SI units, ratios in 0..1)."""
    from .cli import _version

    payload = {k: row[k] for k in SUMMARY_KEYS}
    payload["fits"] = bool(payload["fits"])
    payload["breakdown"] = {k: row[k] for k in BREAKDOWN_KEYS}
    payload["memory_breakdown"] = {k: row[k] for k in MEMORY_KEYS}
    payload["inputs"] = inputs
    payload["version"] = _version()
    return payload


@app.command()
def evaluate(
    model: str = typer.Option("llama3-70b", "--model", "-m", help="Model id or TOML file."),
    hardware: str = typer.Option("h100-sxm", "--hardware", "-H",
                                 help="Accelerator id or TOML file."),
    gpus: int = typer.Option(1024, "--gpus", "-n", help="GPUs in the job."),
    tp: int = typer.Option(8, help="Tensor-parallel size."),
    pp: int = typer.Option(4, help="Pipeline-parallel size."),
    vp: int = typer.Option(1, help="Virtual pipeline stages per rank."),
    cp: int = typer.Option(1, help="Context-parallel size."),
    ep: int = typer.Option(1, help="Expert-parallel size (MoE)."),
    global_batch: int = typer.Option(None, help="Global batch [sequences] (default ~16M tokens)."),
    micro_batch: int = typer.Option(1, help="Micro-batch [sequences]."),
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    recompute: str = typer.Option("selective", help="none | selective | full."),
    zero: int = typer.Option(1, help="ZeRO stage 0-3 (3 = FSDP)."),
    sequence_parallel: bool = typer.Option(None, "--sequence-parallel/--no-sequence-parallel",
                                           help="Sequence parallelism (default: on when tp>1)."),
    flash_attention: bool = typer.Option(True, "--flash-attention/--no-flash-attention"),
    precision: str = typer.Option("bf16", help="bf16 | fp8 | tf32."),
    site: str = typer.Option("us-average", help="Site id (PUE, price, grid carbon)."),
    tokens: float = typer.Option(15e12, help="Training tokens D."),
    checkpoint: str = typer.Option("async", help="sync | async | in-memory."),
    cost_basis: str = typer.Option("cloud", help="cloud | tco."),
    reliability: str = typer.Option("default", help="Reliability profile id."),
    catalog: list[str] = typer.Option(None, "--catalog", help="Extra catalog directory."),
    format: str = typer.Option("table", "--format", "-f", help="table | json | csv | markdown."),
    output: str = typer.Option(None, "--output", "-o", help="Write to FILE ('-' = stdout)."),
    force: bool = typer.Option(False, help="Overwrite --output if it exists."),
):
    """Evaluate one layout: step time and breakdown, memory, MFU, checkpointing, totals."""
    check_format(format)
    from .evaluator import evaluate as run
    from .output import render, write
    from .scenario import CHECKPOINT_SCHEMES, COST_BASES, PRECISIONS

    for name, val, allowed in [("precision", precision, PRECISIONS),
                               ("checkpoint", checkpoint, CHECKPOINT_SCHEMES),
                               ("cost-basis", cost_basis, COST_BASES)]:
        if val not in allowed:
            raise CapplanError(f"--{name} '{val}' is not one of: {', '.join(allowed)}")
    if zero not in (0, 1, 2, 3):
        raise CapplanError(f"--zero must be 0, 1, 2 or 3, got {zero}")
    frame = run(model=model, hardware=hardware, gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, vp=vp,
                global_batch=global_batch, micro_batch=micro_batch, seq_len=seq_len,
                recompute=recompute, zero=zero, sequence_parallel=sequence_parallel,
                precision=precision, site=site, tokens=tokens, checkpoint=checkpoint,
                cost_basis=cost_basis, flash_attention=flash_attention,
                reliability=reliability, catalog_dirs=tuple(catalog or ()))
    row = frame.iloc[0].to_dict()
    inputs = {"model": model, "hardware": hardware, "gpus": gpus, "tp": tp, "pp": pp,
              "dp": int(row["dp"]), "cp": cp, "ep": ep, "vp": vp,
              "global_batch": int(row["global_batch"]), "micro_batch": micro_batch,
              "seq_len": int(row["seq_len"]), "recompute": recompute,
              "zero": zero, "sequence_parallel": bool(row["sequence_parallel"]),
              "flash_attention": flash_attention, "precision": precision, "site": site,
              "tokens": tokens, "checkpoint": checkpoint, "cost_basis": cost_basis,
              "reliability": reliability}
    payload = evaluation_payload(row, inputs)
    rows = [{"quantity": k, "value": v} for k, v in payload.items()
            if k not in ("breakdown", "memory_breakdown", "inputs")]
    rows += [{"quantity": f"breakdown.{k}", "value": v} for k, v in payload["breakdown"].items()]
    title = (f"{model} on {gpus:,} x {hardware}: TP{tp} PP{pp} DP{int(row['dp'])} CP{cp}"
             f" EP{ep} VP{vp}, micro-batch {micro_batch}, recompute {recompute}, ZeRO-{zero}")
    write(render(rows, format, title=title, payload=payload), output, force)
