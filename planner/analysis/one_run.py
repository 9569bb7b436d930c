"""One run evaluated as the one-layout commands answer it (``capplan evaluate``,
``sensitivity``, ``simulate``, ``export``).

:func:`evaluate_one` turns a command's run options into :class:`RunChoices` and a
:class:`LayoutRequest`, evaluates the run (the vectorised path, as a plan's, without
pandas: one-shot queries start fast) and adds what every one-shot answer reports: the
price paid, the owned-cluster cost beside it, the assumptions, and the lines the user is
told (the layout chosen when the preferred one does not fit, an uneven pipeline split).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hardware_catalog import load_catalog
from planner.engine.economics.ownership import rent_vs_buy
from planner.engine.economics.pricing import price_quote
from planner.engine.inputs.assumptions import assumptions
from planner.engine.inputs.defaults import PREFERRED_LAYOUT, cuda_part
from planner.engine.inputs.layout_rules import DEFAULT_RECOMPUTE
from planner.engine.inputs.recompute_modules import module_flags, recomputed_modules
from planner.engine.inputs.scenario import (
    NETWORK_FLAGS,
    default_global_batch,
    network_overrides,
    stack_zero_stage,
)
from planner.engine.layouts import evaluator
from planner.engine.layouts.space import pipeline_split_text
from planner.engine.run.readable import device_word
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.errors import CapplanError


@dataclass
class ResolvedRun:
    """One evaluated run: its row (column -> Python value), the kernel inputs, the echo
    of the options."""

    row: dict
    inputs: dict
    echo: dict
    catalog_version: str = ""
    #: the resolved price per GPU-hour (PriceQuote.as_dict()): tier, provider, source, spread
    price: dict | None = None
    #: the owned-cluster cost beside the cloud cost (planner.engine.economics.ownership.rent_vs_buy)
    rent_vs_buy: dict | None = None
    #: stack, network, site, PUE, grid, price basis (planner.engine.inputs.assumptions)
    assumptions: dict | None = None
    #: whether the CUDA stacks run on this accelerator (defaults.cuda_part: not on TPUs)
    cuda_part: bool = True


def evaluate_one(options: dict, *, faults: dict | None = None,
                 overrides: dict | None = None) -> tuple[ResolvedRun, list[str]]:
    """(the evaluated run, the lines to tell the user) of one run's options: a one-layout
    command's (``catalog``: directories, ``prices``: price files, ``network`` and its
    flags; the rest RunChoices and LayoutRequest fields, checked when built); ``faults``:
    the run-model inputs of the fault options, ``overrides``: others, applied last."""
    o = dict(options)
    catalog = load_catalog(tuple(o.pop("catalog") or ()), tuple(o.pop("prices") or ()))
    network = network_overrides(o.pop("network"), catalog,
                                **{k: o.pop(k) for k in NETWORK_FLAGS})
    # Megatron-Core's module list, if given: the stack's recompute flags
    modules = o.pop("recompute_modules", None)
    if modules is not None and o["recompute"] is None:
        o["recompute"] = DEFAULT_RECOMPUTE  # the modules are selective recompute's
    overrides = {**(faults or {}), **network, **module_flags(modules, o["recompute"]),
                 **(overrides or {})}
    choices = RunChoices.pick(o)  # checks its choices (precision, checkpoint, cost basis)
    columns, inputs = evaluator.evaluate_run(choices, evaluator.layout_request(o),
                                             catalog=catalog, overrides=overrides,
                                             settle_memory=True)
    row = {k: v.item(0) if hasattr(v, "item") else v for k, v in columns.items()}
    check_finite(row)
    sizes = {k: int(row[k]) for k in PREFERRED_LAYOUT}
    chosen = [k for k in PREFERRED_LAYOUT if o[k] is None]
    said = []
    if chosen:
        how = ("that fits" if bool(row["fits"]) else
               "that comes closest to fitting: none fits")
        said.append(f"layout: {_layout_text(sizes)}, the fastest for {o['gpus']} "
                    f"{device_word(row['hardware'])} {how} "
                    f"(searched: {', '.join('--' + k.replace('_', '-') for k in chosen)} "
                    "choose another)")
    if o["recompute"] is None and row["recompute"] != DEFAULT_RECOMPUTE:
        said.append(f"recompute: {row['recompute']}, as no layout "
                    f"{'of the sizes given ' if len(chosen) < len(PREFERRED_LAYOUT) else ''}"
                    f"fits in memory with {DEFAULT_RECOMPUTE} recompute (--recompute chooses "
                    "another)")
    own_zero = stack_zero_stage(catalog.stack(row["stack"]))
    if o["zero"] is None and int(row["zero"]) != own_zero:
        said.append(f"ZeRO-{int(row['zero'])}, as the layout does not fit in memory with the "
                    f"stack's ZeRO-{own_zero} (--zero chooses another)")
    if modules is None and row["recompute"] == DEFAULT_RECOMPUTE:
        run_list = recomputed_modules(inputs)
        stack_list = recomputed_modules(base_inputs(catalog, choices))
        if run_list != stack_list:  # the command added modules to the stack's
            modules = ",".join(run_list)
            own = ", ".join(stack_list) or "none"
            said.append(f"recompute modules: {modules.replace(',', ', ')}, as the layout "
                        f"does not fit in memory with the stack's ({own}) "
                        "(--recompute-modules chooses others)")
    default_batch = default_global_batch(inputs["seq_len"])
    if o["global_batch"] is None and int(row["global_batch"]) != default_batch:
        said.append(f"global batch: {int(row['global_batch']):,} sequences, the default "
                    f"{default_batch:,} rounded to a multiple of DP x micro-batch = "
                    f"{int(row['dp']) * sizes['micro_batch']:,} (--global-batch chooses "
                    "another)")
    split = pipeline_split_text(int(inputs["layers"]), sizes["pp"], sizes["vp"])
    if split:
        said.append(split)
    accelerator = catalog.accelerator(o["hardware"])
    echo = {**o, **sizes, "stack": row["stack"], "etp": int(row["etp"]), "network": network,
            "dp": int(row["dp"]),
            "recompute": row["recompute"], "zero": int(row["zero"]),
            "recompute_modules": modules,
            "offload_activations": bool(overrides.get("offloaded_activation_vectors", 0)),
            "global_batch": int(row["global_batch"]), "seq_len": int(row["seq_len"]),
            "sequence_parallel": bool(row["sequence_parallel"])}
    quote = price_quote(catalog, accelerator, o["pricing"],
                        o["provider"], o["spot_interruption"])
    owned = rent_vs_buy(catalog, choices.scenario(), {**row, "hardware": o["hardware"]},
                        quote.as_dict())
    assumed = assumptions(catalog, model=o["model"], stack=row["stack"], site=o["site"],
                          site_class=o["site_class"], hardware=[o["hardware"]],
                          extra=overrides, cost_basis=owned["basis"], pricing=o["pricing"],
                          provider=o["provider"], confidence=None, precision=o["precision"])
    run = ResolvedRun(row=row, inputs=inputs, echo=echo,
                      catalog_version=str(getattr(catalog, "version", "")),
                      price=quote.as_dict(), rent_vs_buy=owned, assumptions=assumed,
                      cuda_part=cuda_part(accelerator))
    return run, said


def site_class_pue(options: dict, site_class: str) -> float:
    """The PUE a run's site would have under ``site_class`` (a class id, or ``site``: the
    site's own), from the run's catalog (``options``: a one-layout command's)."""
    catalog = load_catalog(tuple(options.get("catalog") or ()))
    return float(catalog.pue_entry(site_class, catalog.site(options["site"])).pue.value)


#: Totals every evaluated run must have finite (else no answer is printed).
FINITE_TOTALS = ("step_time_s", "memory_per_gpu_bytes", "wall_time_s", "gpu_hours",
                 "energy_facility_j", "cost_usd", "co2e_kg")


def check_finite(row: dict) -> None:
    """CapplanError when a total overflowed (e.g. failures faster than checkpoints)."""
    bad = [k for k in FINITE_TOTALS if not math.isfinite(float(row[k]))]
    if bad:
        raise CapplanError(
            f"no finite {bad[0]} for this run (the inputs overflow the model: e.g. failures "
            f"come faster than checkpoints, or --tokens is too large); step time "
            f"{float(row['step_time_s']):.3g} s, system MTBF {float(row['system_mtbf_s']):.3g} s")


def _layout_text(sizes: dict) -> str:
    return (f"TP{sizes['tp']} x PP{sizes['pp']} x CP{sizes['cp']} (EP{sizes['ep']}"
            + (f", ETP{sizes['etp']}" if sizes.get("etp") is not None else "") + ", "
            f"VP{sizes['vp']}, micro-batch {sizes['micro_batch']})")
