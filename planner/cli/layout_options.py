"""Command-line options that describe one run (model, hardware, layout, site ...).

``capplan evaluate``, ``sensitivity``, ``simulate`` and ``export`` take the same
options: the holders :func:`run_options` and :func:`batch_and_site_options`, one option
per layout dimension (:data:`~planner.engine.inputs.layout_rules.DIMENSIONS`), the method's and
the environment's, written out into each command by ``python -m planner.codegen``
(planner/cli/_commands_generated.py); :func:`resolve` turns them into an evaluated run.
"""

from __future__ import annotations

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
    notice,
)
from planner.cli.environment_options import (
    ENVIRONMENT,
    option_defaults,
    option_names,
    price_files,
)
from planner.cli.fault_options import FAULT_OPTIONS, fault_inputs
from planner.cli.method_options import method_options
from planner.cli.numbers import si_count
from planner.cli.rl_options import RL_DEFAULTS
from planner.engine.inputs.defaults import DEFAULTS
from planner.engine.inputs.layout_rules import DIMENSIONS


def run_options(
    model: ModelOption = DEFAULTS["model"],
    hardware: str = typer.Option(DEFAULTS["evaluate_hardware"], "--hardware", "-H",
                                 help="Accelerator id or alias (any case: GB200, H100, "
                                 "Trillium) or TOML file."),
    gpus: int = typer.Option(DEFAULTS["gpus"], "--gpus", "-n", parser=si_count,
                             help="GPUs in the job (1k = 1,000)."),
):
    """Holder of the model, accelerator and GPU-count options (never called)."""


def batch_and_site_options(
    global_batch: GlobalBatchOption = None,
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    flash_attention: bool = typer.Option(True, "--flash-attention/--no-flash-attention"),
    recompute_modules: str = typer.Option(
        None, "--recompute-modules",
        help="Megatron-Core's selective-recompute modules, comma-separated: core_attn, "
             "layernorm, mla_up_proj, moe_act, mlp, moe (each listed one runs its forward "
             "again in backward instead of keeping its tensors; the list replaces the "
             "stack's; needs --recompute selective). Default: the stack's, then Megatron-"
             "Core's further modules, lightest first, until the layout fits (said on "
             "stderr)."),
    precision: PrecisionOption = DEFAULTS["precision"],
    stack: StackOption = None,
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


def resolve(options: dict, overrides: dict | None = None):
    """Check the run options and evaluate the run (one row): a
    :class:`planner.analysis.one_run.ResolvedRun`; the layout chosen and an uneven
    pipeline split are told on stderr."""
    from planner.analysis import one_run  # numpy, the engine: when a run is evaluated

    o = {k: options[k] for k in LAYOUT_OPTIONS if k not in FAULT_OPTIONS}
    o["prices"] = price_files(o["prices"])
    run, said = one_run.evaluate_one(o, faults=fault_inputs(options), overrides=overrides)
    for line in said:
        notice(line)
    return run
