"""The workbook of ``capplan export xlsx``: built here, written by the command.

:func:`workbook` gathers what the workbook holds for one evaluated run (its run-model
inputs with where each comes from, the run's values, a sweep of its layout over GPU counts
and, for a run of ``[[phases]]``, each phase's row) as a :class:`Workbook`;
:func:`write` writes it with live Excel formulas (:mod:`planner.report.xlsx`).  The
command resolves the options and calls both (planner/cli/export_command.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from hardware_catalog import load_catalog
from planner.engine.economics.pricing import PriceQuote
from planner.engine.inputs.phases import sum_phases
from planner.engine.inputs.scenario import (
    DEFAULTS,
    EFFICIENCY_FALLBACK,
    STACK_INPUTS,
    attention_precision,
    execution_defaults,
    gemm_precision,
    stack_factor,
)
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run.model import INPUTS
from planner.engine.run.readable import count_text
from planner.engine.run.spares import resolve_spares
from planner.report import xlsx
from planner.report.evaluate_report import phase_table

#: The swept columns of the Sweep sheet.
SWEEP_COLUMNS = ("gpus", "dp", "step_time_s", "mfu", "fits", "wall_days", "gpu_hours",
                 "energy_gpu_kwh", "energy_it_kwh", "energy_kwh", "cost_usd", "co2e_kg",
                 "checkpoint_interval_s")


@dataclass
class Workbook:
    """What ``capplan export xlsx`` writes: the run-model inputs (spares resolved), where
    each comes from, the run's values, the swept rows, the title and the phases' rows."""

    inputs: dict
    sources: dict[str, str]
    values: dict
    sweep_rows: list[dict]
    title: str
    phase_rows: list[dict] | None = None


def check_target(output: str, force: bool) -> None:
    """CapplanError (one line) when ``output`` is no workbook that may be written."""
    xlsx.check_workbook_target(output, force)


def longest_phase(phases) -> int:
    """The index of the phase with the most tokens: the Model and Sweep sheets hold it."""
    return max(range(len(phases)), key=lambda i: phases[i].tokens)


def workbook(run, *, catalog_dirs=(), price_files=(), overrides=None, phases=(),
             runs=()) -> Workbook:
    """The workbook of the evaluated ``run`` (of the longest of ``phases``, whose evaluated
    runs are ``runs``); ``overrides``: the run-model inputs of the command's flags (faults,
    network), which the sweep keeps."""
    e = run.echo
    _progress("sweeping the layout over GPU counts")
    catalog = load_catalog(tuple(catalog_dirs or ()), tuple(price_files or ()))
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
                     overrides={**(overrides or {}), **(e["network"] or {})})
    sweep_rows = [{c: (bool(r[c]) if c == "fits" else float(r[c])) for c in SWEEP_COLUMNS}
                  for _, r in sweep.iterrows()]
    title = (f"capplan: {e['model']} on {e['gpus']:,} x {e['hardware']}, TP{e['tp']} "
             f"PP{e['pp']} DP{e['dp']}, {count_text(e['tokens'])} tokens")
    phase_rows = None
    if phases:
        phase_rows = phase_table(phases, runs, sum_phases([r.row for r in runs]))[:-1]
        title += (f" (phase {phases[longest_phase(phases)].name!r} of {len(phases)}; all "
                  "phases on the Phases sheet)")
    sources = input_sources(catalog, e, e["precision"])
    sources["price_usd_per_gpu_hour"] = (f"{PriceQuote(**run.price).label()}; "
                                         f"{run.price['source']}")
    # the workbook holds the chosen spare count (--spares auto is resolved per run)
    return Workbook(inputs=resolve_spares(run.inputs), sources=sources,
                    values={name: run.row[name] for name in run.row}, sweep_rows=sweep_rows,
                    title=title, phase_rows=phase_rows)


def write(book: Workbook, output: str, force: bool = False):
    """Write ``book`` to ``output`` (live formulas); its path."""
    _progress("writing the workbook's live formulas")
    return xlsx.write_workbook(output, book.inputs, book.sources, book.values,
                               book.sweep_rows, book.title, force=force,
                               phase_rows=book.phase_rows)


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
    while precision in EFFICIENCY_FALLBACK:
        if getattr(acc, f"gemm_max_efficiency_{precision}", None) is not None:
            return f"gemm_max_efficiency_{precision}"
        precision = EFFICIENCY_FALLBACK[precision]
    return "gemm_max_efficiency"


def input_sources(catalog, echo: dict, precision: str) -> dict[str, str]:
    """Where each run-model input comes from (catalog source text, defaults file, layout)."""
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
                         else f"planner/engine/inputs/execution.toml ({name}: stack '{stack.id}' "
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


def _progress(stage: str) -> None:
    """One stderr line per export stage, on a terminal only (the export takes a few
    seconds; redirected, stderr stays the one ``wrote`` line or the one error line)."""
    if sys.stderr.isatty():
        print(f"capplan: export: {stage} ...", file=sys.stderr, flush=True)


def _swept_shard_groups(dps, shard_group):
    """Per swept data-parallel size: the run's HSDP shard group where it divides it, else
    every DP rank (None: every DP rank throughout)."""
    if shard_group is None:
        return None
    return np.where(dps % shard_group == 0, shard_group, dps)
