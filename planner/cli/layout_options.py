"""Command-line options that describe one run (model, hardware, layout, site ...).

``capplan evaluate``, ``sensitivity``, ``simulate`` and ``export`` take the same
options: the holders :func:`run_options` and :func:`batch_and_site_options`, one option
per layout dimension (:data:`~planner.engine.layout_rules.DIMENSIONS`), the method's and
the environment's, written out into each command by ``python -m planner.codegen``
(planner/cli/_commands_generated.py); :func:`resolve` turns them into an evaluated run.
"""

from __future__ import annotations

from dataclasses import dataclass

import typer

from planner.cli.common import (
    CheckpointOption,
    GlobalBatchOption,
    ModelOption,
    PrecisionOption,
    SiteClassOption,
    SiteOption,
    StackOption,
    TokensOption,
)
from planner.cli.environment_options import (
    ENVIRONMENT,
    option_defaults,
    option_names,
    price_files,
)
from planner.cli.fault_options import FAULT_OPTIONS
from planner.cli.method_options import method_options
from planner.cli.numbers import si_count
from planner.cli.rl_options import RL_DEFAULTS
from planner.engine.defaults import DEFAULTS, PREFERRED_LAYOUT
from planner.engine.layout_rules import DIMENSIONS
from planner.errors import CapplanError


def run_options(
    model: ModelOption = DEFAULTS["model"],
    hardware: str = typer.Option(DEFAULTS["evaluate_hardware"], "--hardware", "-H",
                                 help="Accelerator id or TOML file."),
    gpus: int = typer.Option(DEFAULTS["gpus"], "--gpus", "-n", parser=si_count,
                             help="GPUs in the job (1k = 1,000)."),
):
    """Holder of the model, accelerator and GPU-count options (never called)."""


def batch_and_site_options(
    global_batch: GlobalBatchOption = None,
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    flash_attention: bool = typer.Option(True, "--flash-attention/--no-flash-attention"),
    precision: PrecisionOption = DEFAULTS["precision"],
    stack: StackOption = DEFAULTS["stack"],
    site: SiteOption = DEFAULTS["site"],
    site_class: SiteClassOption = DEFAULTS["site_class"],
    tokens: TokensOption = DEFAULTS["tokens"],
    checkpoint: CheckpointOption = DEFAULTS["checkpoint"],
):
    """Holder of the batch, precision, stack and site options (never called)."""


#: Names of every option of a one-layout command (run, layout, batch and site, method,
#: then environment), in the order of planner.codegen.command_signatures.LAYOUT.
LAYOUT_OPTIONS = (*option_names(run_options), *(d.name for d in DIMENSIONS if d.option),
                  *option_names(batch_and_site_options, method_options, *ENVIRONMENT))


def layout_defaults() -> dict:
    """The default of every one-layout option (and of the RL options ``evaluate`` takes)."""
    holders = option_defaults(run_options, batch_and_site_options, method_options,
                              *ENVIRONMENT)
    return {**holders, **{d.name: DEFAULTS.get(d.name) for d in DIMENSIONS if d.option},
            **RL_DEFAULTS}


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
    #: the owned-cluster cost beside the cloud cost (planner.engine.ownership.rent_vs_buy)
    rent_vs_buy: dict | None = None
    #: stack, network, site, PUE, grid, price basis (planner.engine.assumptions)
    assumptions: dict | None = None


def resolve(options: dict, overrides: dict | None = None) -> ResolvedRun:
    """Validate the run options and evaluate the run (one row)."""
    from planner.cli.fault_options import fault_inputs
    from planner.engine.evaluator import evaluate_run, layout_request
    from planner.engine.run_inputs import RunChoices
    from planner.engine.scenario import NETWORK_FLAGS, network_overrides

    o = {k: options[k] for k in LAYOUT_OPTIONS if k not in FAULT_OPTIONS}
    from hardware_catalog import load_catalog

    catalog = load_catalog(tuple(o.pop("catalog") or ()), price_files(o.pop("prices")))
    network = network_overrides(o.pop("network"), catalog,
                                **{k: o.pop(k) for k in NETWORK_FLAGS})
    overrides = {**fault_inputs(options), **network, **(overrides or {})}
    choices = RunChoices.pick(o)  # checks its choices (precision, checkpoint, cost basis)
    # the vectorised path (as plan's), without pandas: one-shot queries start fast
    columns, inputs = evaluate_run(choices, layout_request(o), catalog=catalog,
                                   overrides=overrides)
    row = {k: v.item(0) if hasattr(v, "item") else v for k, v in columns.items()}
    check_finite(row)
    sizes = {k: int(row[k]) for k in PREFERRED_LAYOUT}
    asked = {**PREFERRED_LAYOUT, **{k: o[k] for k in PREFERRED_LAYOUT if o[k] is not None}}
    if sizes != asked:
        from planner.cli.common import notice

        notice(f"layout: {_layout_text(sizes)}, the fastest for {o['gpus']} GPUs "
               f"(the preferred {_layout_text(asked)} does not fit --gpus {o['gpus']}; "
               "--tp/--pp/--cp/--ep/--vp/--micro-batch choose another)")
    from planner.engine.space import pipeline_split_text

    split = pipeline_split_text(int(inputs["layers"]), sizes["pp"], sizes["vp"])
    if split:
        from planner.cli.common import notice

        notice(split)
    echo = {**o, **sizes, "etp": int(row["etp"]), "network": network, "dp": int(row["dp"]), "global_batch": int(row["global_batch"]),
            "seq_len": int(row["seq_len"]), "sequence_parallel": bool(row["sequence_parallel"])}
    from planner.engine.pricing import price_quote

    quote = price_quote(catalog, catalog.accelerator(o["hardware"]), o["pricing"], o["provider"],
                        o["spot_interruption"])
    from planner.engine.ownership import rent_vs_buy

    owned = rent_vs_buy(catalog, choices.scenario(), {**row, "hardware": o["hardware"]},
                        quote.as_dict())
    from planner.engine.assumptions import assumptions

    assumed = assumptions(catalog, model=o["model"], stack=o["stack"], site=o["site"],
                          site_class=o["site_class"], hardware=[o["hardware"]],
                          extra=overrides, cost_basis=owned["basis"], pricing=o["pricing"],
                          provider=o["provider"], confidence=None)
    return ResolvedRun(row=row, inputs=inputs, echo=echo,
                       catalog_version=str(getattr(catalog, "version", "")),
                       price=quote.as_dict(), rent_vs_buy=owned, assumptions=assumed)


#: Totals every evaluated run must have finite (else no answer is printed).
FINITE_TOTALS = ("step_time_s", "memory_per_gpu_bytes", "wall_time_s", "gpu_hours",
                 "energy_facility_j", "cost_usd", "co2e_kg")


def check_finite(row: dict) -> None:
    """CapplanError when a total overflowed (e.g. failures faster than checkpoints)."""
    import math

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
