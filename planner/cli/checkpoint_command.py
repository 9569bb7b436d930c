"""``capplan checkpoint``: what faster checkpointing is worth, from 128 to 16,384 GPUs."""

from __future__ import annotations

import typer

from planner.cli.common import (
    CatalogOption,
    ForceOption,
    FormatOption,
    ModelOption,
    OutputOption,
    check_output_targets,
    output_format,
)
from planner.cli.numbers import si_float
from planner.version import version


def checkpoint(
    model: ModelOption = "llama3.1-405b",
    hardware: str = typer.Option("h100-sxm", "--hardware", "-H",
                                 help="Accelerator id or TOML file."),
    gpus: str = typer.Option(
        "128,1024,4096,16384", "--gpus", "-n",
        help="GPU counts: a list (128,1024,4096) or a doubling range (128..16384)."),
    schemes: str = typer.Option(
        "all", help="Checkpoint schemes, comma list or all: sync, async, in-memory, gockpt "
        "(GoCkpt, arXiv:2511.07035)."),
    gpu_mtbf_hours: str = typer.Option(
        None, help="Per-GPU MTBF [h], one value or a comma list (one study each); default: "
        "the reliability profile's."),
    tokens: float = typer.Option(None, parser=si_float,
                                 help="Training tokens D (default: as plan, 15T = 15e12)."),
    reliability: str = typer.Option(
        None, help="Reliability profile (`capplan catalog list reliability`): failure "
        "domains, restarts, storage bandwidth."),
    node_mtbf_hours: float = typer.Option(None, help="Per-node MTBF beyond its GPUs [h]."),
    bytes_per_param: float = typer.Option(
        None, help="Checkpointed bytes per parameter [B] (default 14: bf16 weights + fp32 "
        "Adam states)."),
    storage_write_gbps: float = typer.Option(
        None, help="Aggregate storage write bandwidth [GB/s] (Llama 3: 2 TB/s)."),
    storage_read_gbps: float = typer.Option(
        None, help="Aggregate storage read bandwidth [GB/s]."),
    host_copy_gbps: float = typer.Option(
        None, help="Per-GPU device-to-host bandwidth [GB/s] (async snapshot, GoCkpt)."),
    restart_minutes: float = typer.Option(
        None, help="Restart overhead before reloading: detect, re-queue, warm up [min]."),
    gockpt_steps: int = typer.Option(
        None, help="Steps one GoCkpt checkpoint is spread over (default 7, the paper's)."),
    catalog: CatalogOption = None,
    plot: str = typer.Option(
        None, "--plot", help="Also draw wall time, energy and cost against GPU count, one "
        "line per scheme (PNG/SVG/PDF; needs matplotlib)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
):
    """Compare checkpoint schemes (sync, async, in-memory, GoCkpt) across GPU counts and
    MTBFs through the run model: wall time, ETTR, energy, cost, carbon, the energy spent on
    fault tolerance, and each scheme's savings against asynchronous checkpointing."""

    from planner.analysis.checkpoint_study import (
        Study,
        parse_gpu_counts,
        parse_schemes,
        run_study,
    )
    from planner.engine.inputs.domains import check
    from planner.report.output import render, write

    format = output_format(format, output)
    counts = parse_gpu_counts(gpus)
    chosen = parse_schemes(schemes)
    mtbfs = _mtbf_list(gpu_mtbf_hours)
    flags = {"tokens": tokens, "node_mtbf_hours": node_mtbf_hours,
             "bytes_per_param": bytes_per_param, "storage_write_gbps": storage_write_gbps,
             "storage_read_gbps": storage_read_gbps, "host_copy_gbps": host_copy_gbps,
             "restart_minutes": restart_minutes, "gockpt_steps": gockpt_steps}
    check({k: v for k, v in flags.items() if v is not None})
    check_output_targets(output, force, plot)
    scale = {"node_mtbf_hours": ("node_mtbf_s", 3600.0),
             "bytes_per_param": ("checkpoint_bytes_per_param", 1.0),
             "storage_write_gbps": ("storage_write_cap_bytes_per_s", 1e9),
             "storage_read_gbps": ("storage_read_cap_bytes_per_s", 1e9),
             "host_copy_gbps": ("host_copy_bytes_per_s_per_gpu", 1e9),
             "restart_minutes": ("restart_overhead_s", 60.0),
             "gockpt_steps": ("gockpt_steps", 1.0)}
    overrides = {name: float(flags[flag]) * factor for flag, (name, factor) in scale.items()
                 if flags[flag] is not None}
    if restart_minutes is not None:  # a re-queue is no faster than the stated restart
        overrides["requeue_restart_s"] = overrides["restart_overhead_s"]
    from hardware_catalog import load_catalog

    cat = load_catalog(tuple(catalog or ()))
    model, hardware = cat.canonical("model", model), cat.canonical("accelerator", hardware)
    study = Study(model=model, hardware=hardware, gpus=counts, schemes=chosen,
                  gpu_mtbf_s=mtbfs, tokens=tokens, reliability=reliability,
                  overrides=overrides)
    rows = run_study(study, cat)
    from dataclasses import asdict

    payload = {"study": {**asdict(study), "gpus": list(counts), "schemes": list(chosen),
                         "gpu_mtbf_s": list(mtbfs)},
               "rows": rows, "version": version()}
    first = rows[0]
    title = (f"Checkpointing {model} on {hardware}: {first['checkpoint_bytes'] / 1e12:.2f} TB "
             f"checkpoint; savings against async")
    shown_rows = rows if format != "table" else [_table_row(r) for r in rows]
    from planner.report.output import committed_together

    with committed_together(force):  # -o and --plot together or not at all
        write(render(shown_rows, format, title=title, payload=payload), output, force)
        if plot:
            from planner.analysis.checkpoint_study import figure_title
            from planner.report.plot import plot_checkpoint_study

            plot_checkpoint_study(rows, plot, title=figure_title(study), force=force)


def _mtbf_list(text: str | None) -> tuple[float | None, ...]:
    """Per-GPU MTBFs in seconds from ``--gpu-mtbf-hours`` (``(None,)``: the profile's)."""
    if text is None:
        return (None,)
    from planner.engine.inputs.domains import check
    from planner.errors import CapplanError, shown

    try:
        hours = [float(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        hours = []
    if not hours or len(hours) > 16:
        raise CapplanError(f"--gpu-mtbf-hours takes up to 16 MTBFs in hours as a comma list, "
                           f"got {shown(text)}")
    for value in hours:
        check({"gpu_mtbf_hours": value})
    return tuple(dict.fromkeys(h * 3600.0 for h in hours))


def _table_row(r: dict) -> dict:
    return {"GPUs": r["gpus"], "scheme": r["scheme"], "MTBF/GPU h": r["gpu_mtbf_hours"],
            "stall s": r["stall_s"], "k steps": r["checkpoint_steps"],
            "interval min": r["interval_s"] / 60, "commit s": r["commit_latency_s"],
            "failures": r["expected_failures"], "wall days": r["wall_days"], "ETTR": r["ettr"],
            "MWh": r["energy_mwh"], "FT MWh": r["fault_tolerance_mwh"],
            "M USD": r["cost_usd"] / 1e6, "tCO2e": r["co2e_t"],
            "days saved": r.get("days_saved_vs_async"),
            "MWh saved": r.get("mwh_saved_vs_async"),
            "k USD saved": (r["usd_saved_vs_async"] / 1e3
                            if "usd_saved_vs_async" in r else None)}
