"""``capplan export xlsx``: a workbook whose Model sheet recomputes in Excel."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption
from planner.cli.environment_options import price_files

#: Run-model input -> (catalog kind, field) for provenance in the Inputs sheet.
CATALOG_FIELDS = {
    "peak_flops_per_s": ("accelerator", None), "gemm_max_efficiency": ("accelerator", None),
    "attention_peak_flops_per_s": ("accelerator", None),
    "gemm_half_efficiency_dim": ("accelerator", None), "hbm_bytes": ("accelerator", None),
    "hbm_bandwidth_bytes_per_s": ("accelerator", None), "hbm_efficiency": ("accelerator", None),
    "scale_up_bandwidth_bytes_per_s": ("accelerator", None),
    "scale_up_bus_efficiency": ("accelerator", None),
    "scale_out_bus_efficiency": ("accelerator", None), "idle_power_w": ("accelerator", None),
    "max_power_w": ("accelerator", None),
    "price_usd_per_gpu_hour": ("accelerator", "cloud_price_usd_per_gpu_hour"),
    "capex_usd_per_gpu": ("accelerator", "purchase_price_usd"),  # x (1 + ownership fractions)
    "embodied_kg_per_gpu": ("accelerator", "embodied_kg_co2e"),
    "intra_latency_s": ("node", "intra_node_latency_s"),
    "inter_latency_s": ("node", "inter_node_latency_s"),
    "node_overhead_power_w": ("node", None),
    "network_mtbf_s": ("reliability", "domain_network_mtbf_s"),
    "rack_mtbf_s": ("reliability", "domain_rack_mtbf_s"),
    "software_mtbf_s": ("reliability", "domain_software_mtbf_s"),
    "software_internode_mtbf_s": ("reliability", "domain_software_internode_mtbf_s"),
    "software_node_exponent": ("reliability", "domain_software_node_exponent"),
    "failure_detection_s": ("reliability", None), "requeue_restart_s": ("reliability", None),
    "node_repair_s": ("reliability", None), "manual_restart_fraction": ("reliability", None),
    "manual_restart_s": ("reliability", None),
    "storage_write_bytes_per_s_per_node": ("node", "storage_write_bytes_per_s"),
    "storage_read_bytes_per_s_per_node": ("node", "storage_read_bytes_per_s"),
    "host_copy_bytes_per_s_per_gpu": ("node", None),
    "scale_out_bandwidth_bytes_per_s": ("node", "nic_bandwidth_bits_per_s"),
    "pue": ("site_class", "pue"), "electricity_usd_per_kwh": ("site", None),
    "grid_intensity_g_per_kwh": ("site", None), "gpu_mtbf_s": ("reliability", None),
    "restart_overhead_s": ("reliability", None), "step_time_cv": ("reliability", None),
    "pause_probability": ("reliability", "pause_probability_per_step"),
    "pause_duration_s": ("reliability", None),
}


#: Run-model inputs of an owned cluster set from hardware_catalog/data/prices/ownership.csv.
OWNERSHIP_INPUTS = frozenset({"opex_fraction_per_year", "residual_value_fraction",
                              "facility_usd_per_kw_month", "utilisation"})


def _efficiency_field(acc, precision: str) -> str:
    """The accelerator field the GEMM efficiency at ``precision`` comes from."""
    from planner.engine.scenario import EFFICIENCY_FALLBACK

    while precision in EFFICIENCY_FALLBACK:
        if getattr(acc, f"gemm_max_efficiency_{precision}", None) is not None:
            return f"gemm_max_efficiency_{precision}"
        precision = EFFICIENCY_FALLBACK[precision]
    return "gemm_max_efficiency"


def input_sources(catalog, echo: dict, precision: str) -> dict[str, str]:
    """Where each run-model input comes from (catalog source text, defaults file, layout)."""
    from planner.engine.model import INPUTS
    from planner.engine.scenario import (
        DEFAULTS,
        STACK_INPUTS,
        attention_precision,
        execution_defaults,
        gemm_precision,
        stack_factor,
    )

    acc = catalog.accelerator(echo["hardware"])
    site = catalog.site(echo["site"])
    entries = {"accelerator": acc, "node": catalog.node(acc.node), "site": site,
               "site_class": catalog.pue_entry(echo.get("site_class", DEFAULTS["site_class"]),
                                               site),
               "reliability": catalog.reliability_profile(echo["reliability"])}
    stack = catalog.stack(echo["stack"])
    out = {}
    for name in INPUTS:
        if name in STACK_INPUTS:
            quantity = (stack_factor(stack, name, acc.id) if name.endswith("_factor")
                        else getattr(stack, name))
            out[name] = (f"stack '{stack.id}'.{name}: {quantity.source}" if quantity is not None
                         else f"planner/engine/execution.toml ({name}: stack '{stack.id}' "
                              "does not set it)")
        elif name in CATALOG_FIELDS:
            kind, field = CATALOG_FIELDS[name]
            field = field or {"peak_flops_per_s": f"peak_{gemm_precision(precision)}_flops_per_s",
                              "attention_peak_flops_per_s":
                                  f"peak_{attention_precision(precision)}_flops_per_s",
                              "gemm_max_efficiency":
                                  _efficiency_field(acc, gemm_precision(precision))
                              }.get(name, name)
            quantity = getattr(entries[kind], field, None)
            source = getattr(quantity, "source", "")
            out[name] = f"{kind} '{entries[kind].id}'.{field}: {source}".strip()
        elif name in OWNERSHIP_INPUTS:
            out[name] = ("hardware_catalog/data/prices/ownership.csv (owned-cluster defaults, "
                         "[ownership] of a scenario file)")
        elif name in execution_defaults():
            out[name] = "planner/execution.toml (execution defaults)"
        else:
            out[name] = "model architecture / layout / derived from the command line"
    return out


def run(
    output: str = typer.Option(..., "--output", "-o", help="Workbook to write (.xlsx)."),
    force: ForceOption = False,
    scenario_file: str = typer.Option(
        None, "--scenario", "-s", help="TOML scenario file (flags override it); with "
        "[[phases]]: a Phases sheet (each phase, live totals), the model of the longest."),
    **options,
):
    """Write an .xlsx workbook: named inputs, the whole model as live Excel formulas
    generated from the sympy expressions, and a GPU-count sweep."""
    import sys

    import numpy as np

    from hardware_catalog import load_catalog
    from planner.cli.layout_options import layout_defaults, resolve
    from planner.engine.evaluator import evaluate
    from planner.report.xlsx import check_workbook_target, write_workbook

    check_workbook_target(output, force)  # before the run: one error line, no layout notice
    from planner.cli.fault_options import fault_inputs
    from planner.cli.scenario_phases import apply_scenario_file
    from planner.engine.readable import count_text
    from planner.engine.spares import resolve_spares

    options, phases = apply_scenario_file(layout_defaults(), options, scenario_file)
    phase_rows = None
    if phases:  # each phase's run; the Model and Sweep sheets hold the longest phase's
        from planner.cli.scenario_phases import resolve_phases
        from planner.engine.phases import sum_phases
        from planner.report.evaluate_report import phase_table

        runs = resolve_phases(options, phases)
        phase_rows = phase_table(phases, runs, sum_phases([r.row for r in runs]))[:-1]
        longest = max(range(len(phases)), key=lambda i: phases[i].tokens)
        options = {**options, **phases[longest].options()}
        run = runs[longest]
    else:
        run = resolve(options)
    e = run.echo
    _progress("sweeping the layout over GPU counts")
    catalog = load_catalog(tuple(options.get("catalog") or ()),
                           price_files(options.get("prices")))
    per_replica = e["tp"] * e["pp"] * e["cp"]
    dps = [d for d in 2 ** np.arange(0, 16) if e["global_batch"] % (d * e["micro_batch"]) == 0
           and (e["tp"] * e["cp"] * d) % (e["ep"] * e["etp"]) == 0]
    sweep = evaluate(catalog=catalog, model=e["model"], hardware=e["hardware"],
                     gpus=np.array(dps) * per_replica, tp=e["tp"], pp=e["pp"], cp=e["cp"],
                     ep=e["ep"], etp=e["etp"], vp=e["vp"], global_batch=e["global_batch"],
                     micro_batch=e["micro_batch"], seq_len=e["seq_len"],
                     recompute=e["recompute"], zero=e["zero"],
                     # HSDP: the run's shard group wherever it divides the swept DP
                     shard_group=_swept_shard_groups(np.array(dps), e.get("shard_group")),
                     sequence_parallel=e["sequence_parallel"],
                     flash_attention=e["flash_attention"], precision=e["precision"],
                     site=e["site"], site_class=e["site_class"], tokens=e["tokens"],
                     checkpoint=e["checkpoint"],
                     cost_basis=e["cost_basis"], reliability=e["reliability"],
                     pricing=e["pricing"], provider=e["provider"],
                     spot_interruption=e["spot_interruption"], stack=e["stack"],
                     overrides={**fault_inputs(options), **(e["network"] or {})})
    columns = ["gpus", "dp", "step_time_s", "mfu", "fits", "wall_days", "gpu_hours",
               "energy_gpu_kwh", "energy_it_kwh", "energy_kwh", "cost_usd", "co2e_kg",
               "checkpoint_interval_s"]
    sweep_rows = [{c: (bool(r[c]) if c == "fits" else float(r[c])) for c in columns}
                  for _, r in sweep.iterrows()]
    title = (f"capplan: {e['model']} on {e['gpus']:,} x {e['hardware']}, TP{e['tp']} "
             f"PP{e['pp']} DP{e['dp']}, {count_text(e['tokens'])} tokens")
    if phases:
        title += (f" (phase {phases[longest].name!r} of {len(phases)}; all phases on the "
                  "Phases sheet)")
    values = {name: run.row[name] for name in run.row}
    from planner.engine.pricing import PriceQuote

    sources = input_sources(catalog, e, e["precision"])
    sources["price_usd_per_gpu_hour"] = (f"{PriceQuote(**run.price).label()}; "
                                         f"{run.price['source']}")
    _progress("writing the workbook's live formulas")
    # the workbook holds the chosen spare count (--spares auto is resolved per run)
    path = write_workbook(output, resolve_spares(run.inputs), sources, values, sweep_rows,
                          title, force=force, phase_rows=phase_rows)
    print(f"capplan: wrote {path}", file=sys.stderr)


def _progress(stage: str) -> None:
    """One stderr line per export stage, on a terminal only (the export takes a few
    seconds; redirected, stderr stays the one ``wrote`` line or the one error line)."""
    import sys

    if sys.stderr.isatty():
        print(f"capplan: export: {stage} ...", file=sys.stderr, flush=True)


def _swept_shard_groups(dps, shard_group):
    """Per swept data-parallel size: the run's HSDP shard group where it divides it, else
    every DP rank (None: every DP rank throughout)."""
    import numpy as np

    if shard_group is None:
        return None
    return np.where(dps % shard_group == 0, shard_group, dps)
