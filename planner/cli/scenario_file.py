"""TOML scenario files: every ``capplan plan`` input in one file (flags override it).

Files are UTF-8 (a UTF-8 byte-order mark is accepted); any other encoding is refused with
one line naming the file and the first offending byte (:mod:`hardware_catalog.textfile`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from planner.errors import CapplanError, did_you_mean

#: Keys a scenario file may hold, with their Python type.
KEYS: dict[str, type] = {
    "model": str, "tokens": float, "hardware": str, "min_gpus": int, "max_gpus": int,
    "global_batch": int, "seq_len": int, "deadline_days": float, "budget_usd": float,
    "max_power_mw": float, "site": str, "site_class": str, "objective": str, "precision": str,
    "stack": str,
    "checkpoint": str, "cost_basis": str, "reliability": str, "knee_threshold": float,
    "catalog": list, "pricing": str, "provider": str,
    "spot_interruption": str, "network": str, "gpus_per_node": int, "nic_gbps": float,
    "scale_up_domain": int, "oversubscription": float, "pod_gpus": int,
    "uncertainty": dict, "ownership": dict,
    "faults": dict, "phases": list,
}

#: Keys that take a name or a number, like their flags (``spot_interruption = 0.07`` or
#: ``"gt20"``, as ``--spot-interruption``; planner.engine.pricing.spot_interruption).
NAME_OR_NUMBER = frozenset({"spot_interruption"})

#: Keys of the ``[faults]`` section (the flags of the same names: --spares, --gc-interval
#: ...); flags override them.
FAULT_KEYS: dict[str, tuple] = {
    "spares": (str, int), "gc_interval": (float,), "gc_pause": (float,),
    "gc_every_steps": (int,), "stage_imbalance": (float,), "slow_nodes": (float,),
    "slow_node_slowdown": (float,), "checkpoint_interval": (float,),
    "eval_overhead": (float,), "maintenance": (float,), "loss_spikes": (float,),
    "rollback_steps": (float,),
}

EXAMPLE = '''\
# capplan scenario: every input of `capplan plan`; command-line flags override these.
# Run it with:  capplan plan --scenario {name}

model = "llama3-70b"          # catalog id, or a path to a model TOML file
tokens = 15e12                # training tokens D
hardware = "all"              # "all" or comma-separated ids: "h100-sxm,mi300x,b200"
min_gpus = 8
max_gpus = 16384
# global_batch = 2048         # sequences per step (default: ~16M tokens)
# seq_len = 8192              # default: the model's
site = "us-average"           # electricity price, grid carbon: `capplan catalog list sites`
site_class = "hyperscale"     # PUE: hyperscale | hpc | colocation | enterprise | site
objective = "cost"            # time | cost | energy | carbon
precision = "bf16"            # bf16 | fp8 | fp4 | tf32
stack = "megatron-core-2025"  # software stack: `capplan catalog list stacks`
checkpoint = "async"          # sync | async | in-memory
cost_basis = "cloud"          # cloud (price per GPU-hour) | tco (capex + energy + opex)
pricing = "on-demand"         # on-demand | spot | reserved-1y | reserved-3y | owned (= tco)
provider = "median"           # median | cheapest | a provider: `capplan prices list`
spot_interruption = "gt20"    # with spot: lt5 | 5-10 | 10-15 | 15-20 | gt20 (per month) or 0.07
reliability = "default"       # failure/straggler profile: `capplan catalog list reliability`
# Site network (default: the accelerator's node; Llama 3's: 400 Gb/s per GPU, 1:7 above 3,072):
# network = "llama3-roce-24k"  # a catalog node's network; the keys below override it
# gpus_per_node = 8
# nic_gbps = 400              # scale-out bandwidth per GPU, one direction [Gb/s]
# scale_up_domain = 8         # GPUs per NVLink domain
# oversubscription = 7
# pod_gpus = 3072
knee_threshold = 0.8          # marginal scaling efficiency that defines the knee

# Constraints (remove the # to apply; the deadline applies by default, inf = none):
deadline_days = 90
# budget_usd = 50e6
# max_power_mw = 30

# Extra catalog directories with your own hardware/model/site files:
# catalog = ["./my-catalog"]

# Owned-cluster economics (rent vs buy beside every winner); defaults with sources in
# hardware_catalog/data/prices/ownership.csv (`capplan prices` docs: docs/economics.md).
# [ownership]
# utilisation = 0.7             # share of the cluster's life doing paid work
# residual_value_fraction = 0.25
# facility_usd_per_kw_month = 184.06

# Failure domains and software stragglers (flags of the same names override these):
# [faults]
# spares = "auto"             # hot-spare nodes: a count, or "auto" (least GPU-hours)
# gc_interval = 1000.0        # unplanned GC: mean seconds between collections per rank
# gc_pause = 1.0              # seconds one collection takes
# gc_every_steps = 50         # planned GC every K steps instead (all ranks together)
# stage_imbalance = 2.0       # extra layer-equivalents on the slowest pipeline stage
# slow_nodes = 1e-4           # share of slow nodes
# slow_node_slowdown = 1.1    # step-time factor of a slow node
# checkpoint_interval = 3600  # fixed checkpoint interval [s], >= 1 (0, default: Daly's optimum)
# eval_overhead = 0.01        # evaluation time per unit of training time
# maintenance = 0.011         # share of calendar time down for planned maintenance
# loss_spikes = 78.4          # loss-spike rollbacks per million steps (PaLM); 0: none
# rollback_steps = 100        # steps redone per rollback (PaLM)

# A run of several phases (capplan evaluate/simulate/plan/export sum them; docs/model.md):
# [[phases]]
# name = "main"               # required, unique
# tokens = 14e12              # required
# seq_len = 8192              # optional: sequence length, global batch [sequences],
# global_batch = 2048         #   GPU count and layout sizes (tp, pp, cp, ep, vp, micro_batch, etp)

# Input uncertainty for `capplan plan --uncertainty` (lognormal factors, median 1;
# defaults in planner/analysis/uncertainty.toml). scope = "hardware" draws per accelerator.
# [uncertainty]
# gpu_mtbf_s = {{ sigma = 0.5, scope = "shared" }}
# price_usd_per_gpu_hour = {{ sigma = 0.3, scope = "hardware" }}
'''


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
        elif key in NAME_OR_NUMBER and isinstance(value, int | float) \
                and not isinstance(value, bool):
            value = repr(value)  # as the flag's text: checked by the same domain
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CapplanError(f"{path}: {key} must be a {kind.__name__}, got {value!r}")
        if key == "faults":  # flattened: its keys are the flags' names
            out.update(_faults(path, value))
            continue
        if key == "phases":  # [[phases]]: checked into planner.engine.phases.Phase
            from planner.engine.phases import parse_phases

            out[key] = parse_phases(value, path)
            continue
        out[key] = value
    return out


def _faults(path: str, section: dict) -> dict:
    """The ``[faults]`` section's values, typed like :data:`FAULT_KEYS`."""
    out = {}
    for key, value in section.items():
        if key not in FAULT_KEYS:
            raise CapplanError(f"{path}: [faults] {did_you_mean('key', key, FAULT_KEYS)}")
        kinds = FAULT_KEYS[key]
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or isinstance(value, bool):
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
