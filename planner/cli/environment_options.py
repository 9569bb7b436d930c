"""Command-line options of the environment a run lives in, shared by every run command.

Cost basis, reliability profile, catalog and prices, failure domains, hot spares and
software stragglers, and the network overrides mean the same in ``capplan evaluate``,
``sensitivity``, ``simulate``, ``export`` (one layout) and ``plan``, ``plot`` (a search);
the holders of :data:`ENVIRONMENT` declare them once, and ``python -m planner.codegen``
writes them out into each command (planner/codegen/command_signatures.py).
``capplan sweep`` and ``codesign`` take the catalog and price options only
(:func:`price_options`, after their own).
"""

from __future__ import annotations

import inspect

import typer

from planner.cli.common import (
    CatalogOption,
    CheckpointIntervalOption,
    CommitmentReuseOption,
    EvalOverheadOption,
    GcEveryStepsOption,
    GcIntervalOption,
    GcPauseOption,
    GpusPerNodeOption,
    LossSpikesOption,
    MaintenanceOption,
    NetworkOption,
    NicGbpsOption,
    OffloadActivationsOption,
    OptimizerBytesOption,
    OversubscriptionOption,
    PodGpusOption,
    PricesOption,
    PricingOption,
    ProviderOption,
    RollbackStepsOption,
    ScaleUpDomainOption,
    SlowNodeSlowdownOption,
    SlowNodesOption,
    SparesOption,
    SpotInterruptionOption,
    StageImbalanceOption,
)
from planner.cli.fault_options import FAULT_DEFAULTS
from planner.engine.inputs.defaults import DEFAULTS


def cost_options(
    cost_basis: str = typer.Option(DEFAULTS["cost_basis"], help="cloud | tco."),
    reliability: str = typer.Option(DEFAULTS["reliability"], help="Reliability profile id."),
):
    """Holder of the cost-basis and reliability options (never called)."""


def price_options(
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    pricing: PricingOption = DEFAULTS["pricing"],
    provider: ProviderOption = DEFAULTS["provider"],
    spot_interruption: SpotInterruptionOption = DEFAULTS["spot_interruption"],
):
    """Holder of the catalog and price options (never called)."""


def fault_network_options(
    spares: SparesOption = FAULT_DEFAULTS["spares"],
    gc_interval: GcIntervalOption = FAULT_DEFAULTS["gc_interval"],
    gc_pause: GcPauseOption = FAULT_DEFAULTS["gc_pause"],
    gc_every_steps: GcEveryStepsOption = FAULT_DEFAULTS["gc_every_steps"],
    stage_imbalance: StageImbalanceOption = FAULT_DEFAULTS["stage_imbalance"],
    slow_nodes: SlowNodesOption = FAULT_DEFAULTS["slow_nodes"],
    slow_node_slowdown: SlowNodeSlowdownOption = FAULT_DEFAULTS["slow_node_slowdown"],
    checkpoint_interval: CheckpointIntervalOption = FAULT_DEFAULTS["checkpoint_interval"],
    eval_overhead: EvalOverheadOption = FAULT_DEFAULTS["eval_overhead"],
    maintenance: MaintenanceOption = FAULT_DEFAULTS["maintenance"],
    loss_spikes: LossSpikesOption = FAULT_DEFAULTS["loss_spikes"],
    rollback_steps: RollbackStepsOption = FAULT_DEFAULTS["rollback_steps"],
    commitment_reuse: CommitmentReuseOption = FAULT_DEFAULTS["commitment_reuse"],
    offload_activations: OffloadActivationsOption = FAULT_DEFAULTS["offload_activations"],
    optimizer_bytes: OptimizerBytesOption = FAULT_DEFAULTS["optimizer_bytes"],
    network: NetworkOption = None,
    gpus_per_node: GpusPerNodeOption = None,
    nic_gbps: NicGbpsOption = None,
    scale_up_domain: ScaleUpDomainOption = None,
    oversubscription: OversubscriptionOption = None,
    pod_gpus: PodGpusOption = None,
):
    """Holder of the failure-domain, spare, straggler and network options (never called)."""


#: The holders of a run command's environment options, in --help order.
ENVIRONMENT = (cost_options, price_options, fault_network_options)


def option_names(*holders) -> tuple[str, ...]:
    """Parameter names of the holders, in order (the typer context excluded)."""
    return tuple(name for holder in holders for name in inspect.signature(holder).parameters
                 if name != "ctx")


def option_default(parameter):
    """A command parameter's default (typer's OptionInfo or a plain value)."""
    default = parameter.default
    return getattr(default, "default", default)


def option_defaults(*holders) -> dict:
    """Each parameter of the holders (or commands) and its default."""
    return {p.name: option_default(p) for holder in holders
            for p in inspect.signature(holder).parameters.values()}


def price_files(value) -> tuple[str, ...]:
    """``--prices`` (or a scenario file's ``prices``: one path or a list) as a tuple."""
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)
