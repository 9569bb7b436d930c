"""Command-line options that describe one run (model, hardware, layout, site ...).

``capplan evaluate``, ``sensitivity``, ``simulate`` and ``export`` take the same
options; :func:`with_layout_options` gives a command this signature (typer reads
``__signature__``) and :func:`resolve` turns the options into an evaluated run.
"""

from __future__ import annotations

import inspect
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
    option_names,
    prepend_options,
    price_files,
)
from planner.cli.fault_options import FAULT_OPTIONS
from planner.cli.method_options import method_options
from planner.cli.numbers import si_count
from planner.engine.defaults import DEFAULTS, PREFERRED_LAYOUT
from planner.engine.layout_rules import DIMENSIONS, Dimension, option_help
from planner.errors import CapplanError, choice_error


def _run_options(
    model: ModelOption = DEFAULTS["model"],
    hardware: str = typer.Option(DEFAULTS["evaluate_hardware"], "--hardware", "-H",
                                 help="Accelerator id or TOML file."),
    gpus: int = typer.Option(DEFAULTS["gpus"], "--gpus", "-n", parser=si_count,
                             help="GPUs in the job (1k = 1,000)."),
):
    """Holder of the model, accelerator and GPU-count options (never called)."""


def _dimension_parameter(d: Dimension) -> inspect.Parameter:
    """The command-line option of one layout dimension: ``--name`` (``--name/--no-name``
    for a switch), its default from :data:`DEFAULTS` (``None``: chosen), its help from the
    declaration."""
    kind = d.python_type
    switch = (f"{d.flag}/--no-{d.flag[2:]}",) if kind is bool else ()
    return inspect.Parameter(
        d.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind,
        default=typer.Option(DEFAULTS.get(d.name), *switch, help=option_help(d)))


def _layout_dimensions():
    """Holder of one option per layout dimension that has one (never called)."""


_layout_dimensions.__signature__ = inspect.Signature(
    [_dimension_parameter(d) for d in DIMENSIONS if d.option])
_layout_dimensions.__annotations__ = {d.name: d.python_type for d in DIMENSIONS if d.option}


def _batch_and_site_options(
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


#: The holders of a one-layout command's own options, in order; the environment's follow.
_HOLDERS = (_run_options, _layout_dimensions, _batch_and_site_options, method_options)
#: Names of every option of a one-layout command (layout, then environment).
LAYOUT_OPTIONS = option_names(*_HOLDERS, *ENVIRONMENT)


def with_layout_options(func):
    """Prepend the run options to ``func``'s own options (it receives them as kwargs)."""
    return prepend_options((*_HOLDERS, *ENVIRONMENT), func)


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
    from planner.engine.scenario import (
        CHECKPOINT_SCHEMES,
        COST_BASES,
        NETWORK_FLAGS,
        PRECISIONS,
        network_overrides,
    )

    o = {k: options[k] for k in LAYOUT_OPTIONS if k not in FAULT_OPTIONS}
    from hardware_catalog import load_catalog

    catalog = load_catalog(tuple(o.pop("catalog") or ()), price_files(o.pop("prices")))
    network = network_overrides(o.pop("network"), catalog,
                                **{k: o.pop(k) for k in NETWORK_FLAGS})
    overrides = {**fault_inputs(options), **network, **(overrides or {})}
    for name, val, allowed in [("precision", o["precision"], PRECISIONS),
                               ("checkpoint", o["checkpoint"], CHECKPOINT_SCHEMES),
                               ("cost-basis", o["cost_basis"], COST_BASES)]:
        if val not in allowed:
            raise choice_error(name, val, allowed)
    choices = RunChoices.pick(o)
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
