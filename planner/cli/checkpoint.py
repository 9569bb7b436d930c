"""``capplan checkpoint``: what faster checkpointing is worth at scale."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption, FormatOption, OutputOption, output_format
from planner.version import version


def checkpoint(
    ctx: typer.Context,
    gpus: int = typer.Option(16384, help="GPUs in the job."),
    reliability: str = typer.Option(
        None, help="Take MTBF, restart overhead and storage bandwidth from this catalog "
        "reliability profile (`capplan catalog list reliability`); flags override it."),
    catalog: list[str] = typer.Option(None, "--catalog", help="Extra catalog directory."),
    gpu_mtbf_hours: float = typer.Option(
        50_675.0, help="Mean time between job-stopping failures per GPU [h] "
        "(default: Llama 3 405B, 419 unexpected interruptions in 54 days on 16,384 H100, "
        "arXiv:2407.21783 s3.3.4)."),
    node_mtbf_hours: float = typer.Option(
        None, help="Per-node MTBF [h] instead of per GPU (8 GPUs per node unless --gpus-per-node)."),
    gpus_per_node: int = typer.Option(8, help="GPUs per node, with --node-mtbf-hours."),
    params: float = typer.Option(405e9, help="Model parameters."),
    bytes_per_param: float = typer.Option(
        14.0, help="Checkpointed bytes per parameter [B] (bf16 weights + fp32 Adam states)."),
    storage_write_gbps: float = typer.Option(
        2000.0, help="Aggregate storage write bandwidth [GB/s] (Llama 3: 2 TB/s sustained)."),
    storage_read_gbps: float = typer.Option(2000.0, help="Aggregate storage read bandwidth [GB/s]."),
    host_copy_gbps: float = typer.Option(
        25.0, help="Per-GPU device-to-host copy bandwidth [GB/s] (async snapshot)."),
    peer_copy_gbps: float = typer.Option(
        25.0, help="Per-GPU bandwidth to a peer's memory [GB/s] (in-memory scheme)."),
    restart_minutes: float = typer.Option(
        10.0, help="Restart overhead before reloading: detect, re-queue, warm up [min] "
        "(Meta RSC: 5-20 min, arXiv:2410.21680)."),
    train_days: float = typer.Option(54.0, help="Failure-free compute time of the job [days]."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
):
    """Compare synchronous, asynchronous and in-memory checkpointing: stall, optimal
    interval (Young, Daly), waste, expected failures and wall time."""
    from planner.engine.checkpointing import CheckpointInputs, compare_schemes
    from planner.report.output import render, write

    format = output_format(format, output)
    if reliability:
        from hardware_catalog import load_catalog
        from planner.engine.scenario import value

        profile = load_catalog(tuple(catalog or ())).reliability_profile(reliability)
        typed = {name for name in ("gpu_mtbf_hours", "node_mtbf_hours", "restart_minutes",
                                   "storage_write_gbps", "storage_read_gbps")
                 if ctx.get_parameter_source(name).name not in ("DEFAULT", "DEFAULT_MAP")}
        taken = {"gpu_mtbf_hours": value(profile.gpu_mtbf_s) / 3600,
                 "restart_minutes": value(profile.restart_overhead_s) / 60}
        if getattr(profile, "node_mtbf_s", None) is not None:
            taken["node_mtbf_hours"] = value(profile.node_mtbf_s) / 3600
        for field, option in (("checkpoint_write_bytes_per_s", "storage_write_gbps"),
                              ("checkpoint_read_bytes_per_s", "storage_read_gbps")):
            if getattr(profile, field, None) is not None:
                taken[option] = value(getattr(profile, field)) / 1e9
        taken = {k: v for k, v in taken.items() if k not in typed}
        gpu_mtbf_hours = taken.get("gpu_mtbf_hours", gpu_mtbf_hours)
        restart_minutes = taken.get("restart_minutes", restart_minutes)
        storage_write_gbps = taken.get("storage_write_gbps", storage_write_gbps)
        storage_read_gbps = taken.get("storage_read_gbps", storage_read_gbps)
        if "node_mtbf_hours" in taken:  # both sources fail the job: rates add per GPU
            gpu_mtbf_hours = 1 / (1 / gpu_mtbf_hours
                                  + 1 / (taken["node_mtbf_hours"] * gpus_per_node))
    from planner.engine.domains import check

    check({"gpus": gpus, "gpu_mtbf_hours": gpu_mtbf_hours, "node_mtbf_hours": node_mtbf_hours,
           "gpus_per_node": gpus_per_node, "params": params, "bytes_per_param": bytes_per_param,
           "storage_write_gbps": storage_write_gbps, "storage_read_gbps": storage_read_gbps,
           "host_copy_gbps": host_copy_gbps, "peer_copy_gbps": peer_copy_gbps,
           "restart_minutes": restart_minutes, "train_days": train_days})
    if node_mtbf_hours is not None:
        gpu_mtbf_hours = node_mtbf_hours * gpus_per_node
    inputs = CheckpointInputs(
        gpus=gpus, gpu_mtbf_s=gpu_mtbf_hours * 3600, params=params,
        bytes_per_param=bytes_per_param, storage_write_bytes_per_s=storage_write_gbps * 1e9,
        storage_read_bytes_per_s=storage_read_gbps * 1e9,
        host_copy_bytes_per_s_per_gpu=host_copy_gbps * 1e9,
        peer_copy_bytes_per_s_per_gpu=peer_copy_gbps * 1e9,
        restart_overhead_s=restart_minutes * 60, train_days=train_days)
    rows = compare_schemes(inputs)
    from dataclasses import asdict

    payload = {"inputs": asdict(inputs), "schemes": rows, "version": version()}
    title = (f"Checkpointing {gpus:,} GPUs: {rows[0]['checkpoint_size_bytes'] / 1e12:.2f} TB "
             f"checkpoint, system MTBF {rows[0]['system_mtbf_s'] / 3600:.2f} h, "
             f"{train_days:g} days of compute")
    shown = rows if format != "table" else [{
        "scheme": r["scheme"], "stall s": r["stall_s"], "restart min": r["restart_s"] / 60,
        "Young interval min": r["young_interval_s"] / 60,
        "Daly interval min": r["daly_interval_s"] / 60,
        "used interval min": r["interval_s"] / 60, "waste %": 100 * r["waste_fraction"],
        "failures": r["expected_failures"], "wall days": r["wall_days"], "ETTR": r["ettr"],
        "days saved vs sync": r["days_saved_vs_sync"]} for r in rows]
    write(render(shown, format, title=title, payload=payload), output, force)
