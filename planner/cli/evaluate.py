"""``capplan evaluate``: one layout, every number of the run model."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption, FormatOption, OutputOption, output_format
from planner.cli.layout_options import with_layout_options
from planner.version import version

BREAKDOWN_KEYS = ("compute_s", "launch_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s",
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




def evaluation_payload(row: dict, inputs: dict) -> dict:
    """The JSON object of one evaluated layout (SI units, ratios in 0..1)."""

    payload = {k: row[k] for k in SUMMARY_KEYS}
    payload["fits"] = bool(payload["fits"])
    payload["breakdown"] = {k: row[k] for k in BREAKDOWN_KEYS}
    payload["memory_breakdown"] = {k: row[k] for k in MEMORY_KEYS}
    payload["inputs"] = inputs
    payload["version"] = version()
    return payload


@with_layout_options
def evaluate(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    uncertainty: bool = typer.Option(False, help="Add P10/P50/P90 from input uncertainty."),
    draws: int = typer.Option(2000, help="Monte Carlo draws for --uncertainty."),
    seed: int = typer.Option(0, help="Random seed for --uncertainty."),
    **options,
):
    """Evaluate one layout: step time and breakdown, memory, MFU, checkpointing, totals."""
    format = output_format(format, output)
    from planner.cli.layout_options import resolve
    from planner.engine.domains import check
    from planner.report.output import render, write

    check({"draws": draws, "seed": seed})
    run = resolve(options)
    payload = evaluation_payload(run.row, run.echo)
    payload["catalog_version"] = run.catalog_version
    rows = [{"quantity": k, "value": v} for k, v in payload.items()
            if k not in ("breakdown", "memory_breakdown", "inputs")]
    if uncertainty:
        from planner.analysis.uncertainty import default_spreads, run_uncertainty

        bands = run_uncertainty(run.inputs, default_spreads(), draws=draws, seed=seed)
        payload["uncertainty"] = {"draws": draws, "seed": seed, **bands}
        rows += [{"quantity": f"{q}.{p}", "value": v} for q, band in bands.items()
                 for p, v in band.items()]
    rows += [{"quantity": f"breakdown.{k}", "value": v} for k, v in payload["breakdown"].items()]
    e = run.echo
    title = (f"{e['model']} on {e['gpus']:,} x {e['hardware']}: TP{e['tp']} PP{e['pp']} "
             f"DP{e['dp']} CP{e['cp']} EP{e['ep']} VP{e['vp']}, micro-batch "
             f"{e['micro_batch']}, recompute {e['recompute']}, ZeRO-{e['zero']}")
    write(render(rows, format, title=title, payload=payload), output, force)
