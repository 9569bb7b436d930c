"""TOML scenario files: every ``capplan plan`` input in one file (flags override it).

Files are UTF-8 (a UTF-8 byte-order mark is accepted); any other encoding is refused with
one line naming the file and the first offending byte (:mod:`hardware_catalog.textfile`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import typer

from hardware_catalog.prices import load_interruption_buckets
from planner.cli.fault_options import FAULT_DEFAULTS
from planner.cli.numbers import batch_or_range
from planner.engine.economics.pricing import PROVIDER_CHOICES, TIERS
from planner.engine.inputs import defaults
from planner.errors import CapplanError, did_you_mean

#: Keys of an RL run (``method = "grpo"``), the names of its flags (planner.cli.rl_options),
#: with their Python type.
#: (The same names and types as planner.engine.inputs.phases.RL_KEYS, the keys of an RL phase;
#: not imported, to keep that module off the path of a file without phases.)
RL_KEYS: dict[str, type] = {
    "rollout_group_size": int, "prompts": int, "prompt_len": float, "response_len": float,
    "response_cv": float, "max_response_len": float, "rl_mode": str, "rollout_gpus": int,
    "off_policy": bool, "critic": bool, "rl_updates": int, "rl_steps": float,
}
#: Keys a scenario file may hold, with their Python type.
KEYS: dict[str, type] = {
    "model": str, "tokens": float, "hardware": str, "min_gpus": int, "max_gpus": int,
    "global_batch": int, "critical_batch": float, "seq_len": int, "deadline_days": float, "budget_usd": float,
    "max_power_mw": float, "site": str, "site_class": str, "objective": str, "precision": str,
    "stack": str,
    "checkpoint": str, "cost_basis": str, "reliability": str, "knee_threshold": float,
    "catalog": list, "prices": list, "pricing": str, "provider": str,
    "spot_interruption": str, "network": str, "gpus_per_node": int, "nic_gbps": float,
    "scale_up_domain": int, "oversubscription": float, "pod_gpus": int,
    "uncertainty": dict, "ownership": dict,
    "faults": dict, "phases": list,
    # the training method (planner.engine.inputs.method)
    "method": str, "lora_rank": int, "lora_targets": str, "base_precision": str,
    "packing": str, "max_seq_len": int, "reference_logprobs": str,
    # an RL run with rollouts (method = "grpo"; planner.cli.rl_options, the flags' names)
    **RL_KEYS,
}

#: Keys that take a name or a number, like their flags (``spot_interruption = 0.07`` or
#: ``"gt20"``, as ``--spot-interruption``; planner.engine.economics.pricing.spot_interruption).
NAME_OR_NUMBER = frozenset({"spot_interruption"})

#: Keys that take a whole batch or a range of them as text, like ``--global-batch``
#: (``global_batch = 2048`` or ``"1024..8192"``): the plan chooses the batch in the range.
BATCH_OR_RANGE = frozenset({"global_batch"})

#: Keys of the ``[faults]`` section (the flags of the same names: --spares, --gc-interval
#: ...); flags override them.
FAULT_KEYS: dict[str, tuple] = {
    "spares": (str, int), "gc_interval": (float,), "gc_pause": (float,),
    "gc_every_steps": (int,), "stage_imbalance": (float,), "slow_nodes": (float,),
    "slow_node_slowdown": (float,), "checkpoint_interval": (float,),
    "eval_overhead": (float,), "maintenance": (float,), "loss_spikes": (float,),
    "rollback_steps": (float,), "commitment_reuse": (float, int),
    "offload_activations": (bool,), "optimizer_bytes": (float, int),
}

def _toml(value) -> str:
    """A default as TOML text (floats short: 15e12, 0.8)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        mantissa, _, exponent = f"{value:g}".partition("e")
        return f"{mantissa}e{int(exponent)}" if exponent else mantissa
    return str(value)


def _choices(names) -> str:
    return " | ".join(names)


def _line(key: str, comment: str, value=None, *, off: bool = False) -> str:
    """``key = value  # comment``, the value ``DEFAULTS[key]`` unless given; ``off``:
    commented out (an example, not applied)."""
    value = defaults.DEFAULTS[key] if value is None else value
    text = f"{'# ' if off else ''}{key} = {_toml(value)}"
    return f"{text:<29} # {comment}" if comment else text


def example(name: str) -> str:
    """The commented scenario file ``capplan init`` writes: every value is the default
    (:data:`planner.engine.inputs.defaults.DEFAULTS`, the ``[faults]`` flags' defaults) and every
    list of choices the declared one, so the file follows them."""
    d = defaults
    buckets = _choices(load_interruption_buckets())
    faults = {k: v for k, v in FAULT_DEFAULTS.items() if v is not None}
    lines = [
        "# capplan scenario: every input of `capplan plan`; command-line flags override these.",
        f"# Run it with:  capplan plan --scenario {name}",
        "",
        _line("model", "catalog id, or a path to a model TOML file"),
        _line("tokens", "training tokens D"),
        _line("hardware", '"all" or comma-separated ids: "h100-sxm,mi300x,b200"'),
        _line("min_gpus", ""),
        _line("max_gpus", ""),
        _line("global_batch", "sequences per step (default: ~16M tokens); or a range "
              "\"1024..8192\": the plan chooses the batch in it", 2048, off=True),
        _line("seq_len", "default: the model's", 8192, off=True),
        _line("site", "electricity price, grid carbon: `capplan catalog list sites`"),
        _line("site_class", "PUE: a class of data centre (`capplan catalog list "
              "site_classes`) | site (the site's own)"),
        _line("objective", _choices(d.OBJECTIVES)),
        _line("precision", _choices(d.PRECISIONS)),
        _line("stack", "software stack: `capplan catalog list stacks`; left out: each "
              "accelerator's (maxtext-xla on TPUs; megatron-core-moe-tuned for MoE; "
              "megatron-bridge-2025 for dense models on Blackwell)",
              off=True),
        _line("checkpoint", _choices(d.CHECKPOINT_SCHEMES)),
        _line("cost_basis", f"{_choices(d.COST_BASES)} (cloud: price per GPU-hour; tco: "
              "capex + energy + opex)"),
        _line("pricing", f"{_choices(TIERS)} (owned = tco)"),
        _line("provider", f"{_choices(PROVIDER_CHOICES)} | a provider: `capplan prices list`"),
        _line("spot_interruption", f"with spot: {buckets} (per month) or a fraction, 0.07"),
        _line("reliability", "failure/straggler profile: `capplan catalog list reliability`"),
        _line("method", f"{_choices(d.METHODS)} (docs/post-training.md)"),
        _line("lora_rank", "lora, qlora: adapter rank", 16, off=True),
        _line("lora_targets", "lora, qlora: q,k,v,o,gate,up,down | qkv | attention | mlp | "
              "all-linear", "all-linear", off=True),
        _line("rollout_group_size", "grpo: responses per prompt", 8, off=True),
        _line("response_len", "grpo: mean response length [tokens]", 1024.0, off=True),
        _line("rl_mode", "grpo: colocated | disaggregated", "colocated", off=True),
        _line("rl_steps", "grpo: RL steps of the run", 1000.0, off=True),
        "# Site network (default: the accelerator's node; Llama 3's: 400 Gb/s per GPU, 1:7 "
        "above 3,072):",
        _line("network", "a catalog node's network; the keys below override it",
              "llama3-roce-24k", off=True),
        _line("gpus_per_node", "", 8, off=True),
        _line("nic_gbps", "scale-out bandwidth per GPU, one direction [Gb/s]", 400, off=True),
        _line("scale_up_domain", "GPUs per NVLink domain", 8, off=True),
        _line("oversubscription", "", 7, off=True),
        _line("pod_gpus", "", 3072, off=True),
        _line("knee_threshold", "marginal scaling efficiency that defines the knee"),
        "",
        "# Constraints (remove the # to apply; the deadline applies by default, inf = none):",
        _line("deadline_days", ""),
        _line("budget_usd", "", 50e6, off=True),
        _line("max_power_mw", "", 30, off=True),
        "",
        "# Extra catalog directories with your own hardware/model/site files:",
        '# catalog = ["./my-catalog"]',
        "# Your own price quotes (the columns of hardware_catalog/data/prices/gpu_cloud_prices.csv):",
        '# prices = ["./my-quotes.csv"]',
        "",
        "# Owned-cluster economics (rent vs buy beside every winner); defaults with sources in",
        "# hardware_catalog/data/prices/ownership.csv (`capplan prices` docs: docs/economics.md).",
        "# [ownership]",
        "# utilisation = 0.7             # share of the cluster's life doing paid work",
        "# residual_value_fraction = 0.25",
        "# facility_usd_per_kw_month = 184.06",
        "",
        "# Failure domains and software stragglers (flags of the same names override these;",
        "# the values shown are the defaults where there is one):",
        "# [faults]",
        *(_line(k, comment, faults.get(k, value), off=True)
          for k, (value, comment) in _FAULT_EXAMPLES.items()),
        "",
        "# A run of several phases (capplan evaluate/simulate/plan/export sum them; "
        "docs/model.md):",
        "# [[phases]]",
        '# name = "main"               # required, unique',
        "# tokens = 14e12              # required",
        "# seq_len = 8192              # optional: sequence length, global batch [sequences],",
        "# global_batch = 2048         #   GPU count and layout sizes (tp, pp, cp, ep, vp, "
        "micro_batch, etp)",
        "",
        "# Input uncertainty for `capplan plan --uncertainty` (lognormal factors, median 1;",
        "# defaults in planner/analysis/uncertainty.toml). scope = \"hardware\" draws per "
        "accelerator.",
        "# [uncertainty]",
        '# gpu_mtbf_s = { sigma = 0.5, scope = "shared" }',
        '# price_usd_per_gpu_hour = { sigma = 0.3, scope = "hardware" }',
    ]
    return "\n".join(lines) + "\n"


#: ``[faults]`` keys of the example: (a value to show where the flag has no default, what
#: it means); a key with a default shows the default.
_FAULT_EXAMPLES = {
    "spares": ("auto", "hot-spare nodes: a count, or \"auto\" (least GPU-hours)"),
    "gc_interval": (1000.0, "unplanned GC: mean seconds between collections per rank"),
    "gc_pause": (1.0, "seconds one collection takes"),
    "gc_every_steps": (50, "planned GC every K steps instead (all ranks together)"),
    "stage_imbalance": (2.0, "extra layer-equivalents on the slowest pipeline stage"),
    "slow_nodes": (1e-4, "share of slow nodes"),
    "slow_node_slowdown": (1.1, "step-time factor of a slow node"),
    "checkpoint_interval": (3600, "fixed checkpoint interval [s], >= 1 (0, default: Daly's optimum)"),
    "eval_overhead": (0.01, "evaluation time per unit of training time"),
    "maintenance": (0.011, "share of calendar time down for planned maintenance"),
    "loss_spikes": (78.4, "loss-spike rollbacks per million steps (PaLM); 0: none"),
    "rollback_steps": (100, "steps redone per rollback (PaLM)"),
    "commitment_reuse": (0.0, "reserved tiers: share of the unused committed term resold or reused"),
    "offload_activations": (False, "keep each layer's input in host memory (activation offloading)"),
    "optimizer_bytes": (12, "optimizer-state bytes per parameter (12: FP32 master and moments; 4: BF16 moments, no FP32 copy)"),
}


def load(path: str) -> dict:
    """The scenario file as a dict of typed values; one-line errors on anything wrong."""
    from hardware_catalog.errors import CatalogError
    from hardware_catalog.textfile import printable, read_utf8

    file = Path(path)
    path = printable(path)  # as shown in messages: one line
    if not os.path.lexists(file):
        raise CapplanError(f"scenario file {path} does not exist")
    try:
        data = tomllib.loads(read_utf8(file, path))
    except CatalogError as exc:  # unreadable, not a file, too large, not UTF-8
        raise CapplanError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise CapplanError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise CapplanError(f"{path}: not valid TOML: tables or arrays nested too deeply "
                           "for a scenario") from None
    out = {}
    for key, value in data.items():
        if key not in KEYS:
            raise CapplanError(f"{path}: {did_you_mean('key', key, KEYS)}")
        kind = KEYS[key]
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            value = float(value)
        elif kind is str and isinstance(value, list):
            value = ",".join(map(str, value))
        elif key in BATCH_OR_RANGE and isinstance(value, str):
            value = _batch_or_range(path, key, value)
        elif key in NAME_OR_NUMBER and isinstance(value, int | float) \
                and not isinstance(value, bool):
            value = repr(value)  # as the flag's text: checked by the same domain
        if key in BATCH_OR_RANGE and isinstance(value, tuple):
            pass  # a range LO..HI: (LO, HI)
        elif not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise CapplanError(f"{path}: {key} must be a {kind.__name__}"
                               + (" or a range \"LO..HI\"" if key in BATCH_OR_RANGE else "")
                               + f", got {value!r}")
        if key == "faults":  # flattened: its keys are the flags' names
            out.update(_faults(path, value))
            continue
        if key == "uncertainty":  # each spread checked here, to name the file
            from planner.engine.inputs.domains import check_spreads

            check_spreads(value, f"{path}: [uncertainty]")
        if key == "phases":  # [[phases]]: checked into planner.engine.inputs.phases.Phase
            from planner.engine.inputs.phases import parse_phases

            out[key] = parse_phases(value, path)
            continue
        out[key] = value
    return out


def _batch_or_range(path: str, key: str, value: str):
    """A batch or a range ``"LO..HI"`` given as text, parsed as its flag parses it
    (:func:`planner.cli.numbers.batch_or_range`), its error naming the file and key."""
    try:
        return batch_or_range(value)
    except typer.BadParameter as exc:
        raise CapplanError(f"{path}: {key} {exc.message}") from None


def _faults(path: str, section: dict) -> dict:
    """The ``[faults]`` section's values, typed like :data:`FAULT_KEYS`."""
    out = {}
    for key, value in section.items():
        if key not in FAULT_KEYS:
            raise CapplanError(f"{path}: [faults] {did_you_mean('key', key, FAULT_KEYS)}")
        kinds = FAULT_KEYS[key]
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise CapplanError(f"{path}: [faults] {key} must be a {names}, got {value!r}")
        out[key] = value
    return out


#: The file's tables: no flag sets them, even a flag of the same name (``plan
#: --uncertainty`` asks for the draws, the ``[uncertainty]`` table gives their spreads).
TABLES = frozenset(k for k, kind in KEYS.items() if kind is dict)


def merge(ctx, values: dict, path: str | None) -> dict:
    """Apply the scenario file under the command-line flags the user actually typed."""
    if not path:
        return values
    from_file = load(path)
    merged = dict(values)
    for key, value in from_file.items():
        source = ctx.get_parameter_source(key)
        if key in TABLES or source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            merged[key] = value
    return merged
