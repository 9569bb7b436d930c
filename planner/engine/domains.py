"""Input domains: one table of what every input may be, checked once before the kernel.

Every run-model input (:data:`planner.engine.model.INPUTS`) and every user-facing number
(a command-line flag, a scenario-file key, a Python API argument) has a :class:`Domain`
here: finite always; positive, non-negative or a fraction where physics says so; an
integer for counts; and an upper bound for GPU counts, parallel sizes and batch sizes
(what a cluster can be).  :func:`check` raises one :class:`~planner.errors.CapplanError`
naming the flag (``--tokens must be a finite number > 0, got -5``), so the CLI, scenario
files and the Python API give the same message.  The engine calls it in
:func:`planner.engine.evaluator.evaluate` and :func:`planner.engine.optimize.plan`
before any kernel call; the domain specs are those of :mod:`formulas.core`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from formulas.core import domain_text, in_domain, number_in_domain
from planner.errors import CapplanError, shown

#: Largest GPU count, parallel size or node size accepted: 16.7 M GPUs (2**24), some 170x
#: the largest announced 2025 training clusters (~100k GPUs).
MAX_GPUS = 2**24
#: Largest global batch [sequences]: 2**30 (Llama 3 405B used 2**11 x 8k tokens).
MAX_GLOBAL_BATCH = 2**30
#: Largest model dimension (layers, hidden, heads, vocabulary, sequence length ...): 2**31.
MAX_DIM = 2**31
#: Largest token count D: 1e18, some 70,000x Llama 3's 15T (keeps FLOP counts far from overflow).
MAX_TOKENS = 1e18
#: Most simulated runs (``simulate --replicas``): a million (the default is 10,000).
MAX_REPLICAS = 10**6
#: Most Monte Carlo draws (``--uncertainty --draws``): 100,000, some 0.7 GB of kernel
#: inputs for one layout (the defaults are 2,000 and 400).
MAX_DRAWS = 10**5


@dataclass(frozen=True)
class Domain:
    """Allowed values: a :mod:`formulas.core` spec (``">0"``, ``"[0,1]"`` ...), whether
    only integers are allowed, and an optional inclusive upper bound."""

    spec: str
    integer: bool = False
    maximum: float | None = None
    minimum: float | None = None

    @property
    def text(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        lower = f">= {_number(self.minimum)}" if self.minimum is not None else \
            domain_text(self.spec)
        upper = f" and <= {_number(self.maximum)}" if self.maximum is not None else ""
        return f"{kind} {lower}{upper}"

    def ok(self, values) -> np.ndarray:
        """True where ``values`` (a number or a numeric array) lie in the domain."""
        array = np.asarray(values, dtype=float)
        good = in_domain(self.spec, array)
        if self.integer:
            good &= np.floor(array) == array
        if self.maximum is not None:
            good &= array <= self.maximum
        if self.minimum is not None:
            good &= array >= self.minimum
        return good

    def ok_number(self, value: float) -> bool:
        """:meth:`ok` for one Python float, without numpy calls (the same rules)."""
        return (number_in_domain(self.spec, value)
                and (not self.integer or value.is_integer())
                and (self.maximum is None or value <= self.maximum)
                and (self.minimum is None or value >= self.minimum))


def _number(value) -> str:
    """An integer as digits (powers of two above 1024 as ``2**n``), a float as ``%g``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        value = int(value)
    if isinstance(value, int):
        if value > 1024 and value & (value - 1) == 0:
            return f"2**{value.bit_length() - 1}"
        if abs(value) >= 10**7:
            return f"{value:.3g}" if abs(value) < 10**300 else f"a {len(str(value))}-digit number"
        return str(value)
    return f"{value:g}"


POSITIVE = Domain(">0")
NON_NEGATIVE = Domain(">=0")
FRACTION = Domain("[0,1]")
EFFICIENCY = Domain("(0,1]")
FLAG = Domain("[0,1]", integer=True)
COUNT = Domain(">=1", integer=True, maximum=MAX_DIM)
COUNT0 = Domain(">=0", integer=True, maximum=MAX_DIM)
GPU_COUNT = Domain(">=1", integer=True, maximum=MAX_GPUS)
SHARDS = Domain(">=1", maximum=MAX_GPUS)

#: A bandwidth flag in GB/s: 1 kB/s to 1 EB/s.
BANDWIDTH_GBPS = Domain(">0", minimum=1e-6, maximum=1e9)

#: Domain of every run-model input (``planner.engine.model.INPUTS``) and catalog-derived
#: kernel input.  Model dimensions are integers; flags are 0 or 1.
INPUT_DOMAINS: dict[str, Domain] = {
    # model
    "layers": COUNT, "hidden": COUNT, "heads": COUNT, "kv_heads": COUNT, "ffn": COUNT,
    "mlp_matrices": COUNT, "vocab": COUNT, "seq_len": COUNT, "embedding_matrices": COUNT,
    "moe_layers": COUNT0, "experts": COUNT, "experts_per_token": COUNT,
    "shared_experts": COUNT0, "moe_ffn": COUNT, "dropout_masks": FLAG,
    "tokens": Domain(">=1", maximum=MAX_TOKENS),
    "head_dim": COUNT, "v_head_dim": COUNT, "q_lora_rank": COUNT0, "kv_lora_rank": COUNT0,
    "qk_rope_head_dim": COUNT0, "window": COUNT, "window_layers": COUNT0, "mtp_layers": COUNT0,
    # layout
    "gpus": GPU_COUNT, "tp": GPU_COUNT, "pp": GPU_COUNT, "dp": GPU_COUNT, "cp": GPU_COUNT,
    "ep": GPU_COUNT, "etp": GPU_COUNT, "vp": GPU_COUNT, "stage_layers": COUNT,
    "micro_batch": Domain(">=1", integer=True, maximum=MAX_GLOBAL_BATCH),
    "global_batch": Domain(">=1", integer=True, maximum=MAX_GLOBAL_BATCH),
    "selective": FLAG, "attention_scores_stored": FLAG, "full_recompute": FLAG,
    "sequence_parallel": FLAG, "weight_shards": SHARDS, "grad_shards": SHARDS,
    "optimizer_shards": SHARDS, "expert_weight_shards": SHARDS, "expert_grad_shards": SHARDS,
    "expert_optimizer_shards": SHARDS, "zero3": FLAG, "tp_intra_ranks": SHARDS, "pp_intra": FLAG,
    "ep_intra": FLAG, "cp_intra": FLAG, "dp_intra_ranks": SHARDS,
    "shard_ranks": SHARDS, "replica_intra_ranks": SHARDS,
    # hardware
    "peak_flops_per_s": POSITIVE, "gemm_max_efficiency": EFFICIENCY,
    "gemm_half_efficiency_dim": NON_NEGATIVE, "hbm_bytes": POSITIVE,
    "hbm_bandwidth_bytes_per_s": POSITIVE, "hbm_efficiency": EFFICIENCY,
    "scale_up_bandwidth_bytes_per_s": POSITIVE, "scale_up_bus_efficiency": EFFICIENCY,
    "scale_out_bandwidth_bytes_per_s": POSITIVE, "scale_out_bus_efficiency": EFFICIENCY,
    "intra_latency_s": NON_NEGATIVE, "inter_latency_s": NON_NEGATIVE,
    "gpus_per_node": GPU_COUNT, "scale_up_domain_gpus": GPU_COUNT,
    "idle_power_w": NON_NEGATIVE, "max_power_w": POSITIVE,
    "node_overhead_power_w": NON_NEGATIVE, "network_power_per_node_w": NON_NEGATIVE,
    "storage_write_bytes_per_s_per_node": POSITIVE,
    "storage_read_bytes_per_s_per_node": POSITIVE, "host_copy_bytes_per_s_per_gpu": POSITIVE,
    "price_usd_per_gpu_hour": NON_NEGATIVE, "capex_usd_per_gpu": NON_NEGATIVE,
    "lifetime_s": POSITIVE, "opex_fraction_per_year": NON_NEGATIVE,
    "residual_value_fraction": Domain("[0,1)"), "facility_usd_per_kw_month": NON_NEGATIVE,
    "utilisation": Domain("(0,1]"),
    "embodied_kg_per_gpu": NON_NEGATIVE, "compute_power_fraction": FRACTION,
    "comm_power_fraction": FRACTION,
    "oversubscription": Domain(">=1", maximum=1e3), "pod_gpus": GPU_COUNT,
    # site
    "pue": Domain(">=1"), "electricity_usd_per_kwh": NON_NEGATIVE,
    "grid_intensity_g_per_kwh": NON_NEGATIVE, "use_tco": FLAG,
    # execution
    "bytes_per_element": POSITIVE, "weight_bytes_per_param": POSITIVE,
    "grad_bytes_per_param": POSITIVE, "optimizer_bytes_per_param": NON_NEGATIVE,
    "grad_comm_bytes_per_param": POSITIVE, "checkpoint_bytes_per_param": POSITIVE,
    "memory_reserve_bytes": NON_NEGATIVE,
    "linear_input_bytes": POSITIVE, "recompute_mla_up_proj": FLAG, "recompute_norms": FLAG,
    "tp_overlap": FRACTION, "dp_overlap": FRACTION,
    "cp_overlap": FRACTION, "ep_overlap": FRACTION, "attention_efficiency_factor": POSITIVE,
    "layer_overhead_s": NON_NEGATIVE, "host_overlap_exponent": POSITIVE,
    "collective_overhead_s": NON_NEGATIVE,
    # reliability
    "gpu_mtbf_s": POSITIVE, "node_mtbf_s": POSITIVE, "storage_write_cap_bytes_per_s": POSITIVE,
    "storage_read_cap_bytes_per_s": POSITIVE, "restart_overhead_s": NON_NEGATIVE,
    "ckpt_sync": FLAG, "ckpt_async": FLAG, "ckpt_in_memory": FLAG, "ckpt_gockpt": FLAG,
    "gockpt_steps": Domain(">=1", maximum=1e6),
    "step_time_cv": NON_NEGATIVE, "pause_probability": FRACTION,
    "pause_duration_s": NON_NEGATIVE,
    "network_mtbf_s": POSITIVE, "rack_mtbf_s": POSITIVE, "software_mtbf_s": POSITIVE,
    "software_internode_mtbf_s": POSITIVE, "software_node_exponent": Domain("(0,1]"),
    "rack_nodes": Domain(">=1", maximum=MAX_GPUS), "failure_detection_s": NON_NEGATIVE,
    "requeue_restart_s": NON_NEGATIVE, "node_repair_s": NON_NEGATIVE,
    "manual_restart_fraction": FRACTION, "manual_restart_s": NON_NEGATIVE,
    # -1: choose the optimal count per candidate (--spares auto)
    "spare_nodes": Domain("real", integer=True, minimum=-1, maximum=MAX_GPUS),
    "gc_interval_s": POSITIVE, "gc_duration_s": NON_NEGATIVE, "gc_planned": FLAG,
    "gc_planned_steps": Domain(">=1", integer=True, maximum=MAX_DIM),
    "stage_extra_layers": NON_NEGATIVE, "slow_node_fraction": FRACTION,
    "slow_node_slowdown": Domain(">=1"),
    # run overheads (formulas.overhead); 0 = the Daly optimum
    "checkpoint_interval_fixed_s": Domain(">=0", maximum=1e12),
    "eval_fraction": Domain("[0,1)", maximum=0.99),
    "maintenance_fraction": Domain("[0,1)", maximum=0.99),
    "loss_spike_probability": FRACTION, "rollback_steps": Domain(">=0", maximum=1e9),
}

#: Domains of user-facing numbers that are not run-model inputs (flag name, underscores).
OPTION_DOMAINS: dict[str, Domain] = {
    # plan / plot / sweep scenario
    "min_gpus": GPU_COUNT, "max_gpus": GPU_COUNT, "deadline_days": POSITIVE,
    "budget_usd": POSITIVE, "max_power_mw": POSITIVE, "knee_threshold": Domain("(0,1)"),
    # evaluate / simulate / uncertainty
    "zero": Domain(">=0", integer=True, maximum=3), "shard_group": GPU_COUNT, "top": COUNT,
    "replicas": Domain(">=1", integer=True, maximum=MAX_REPLICAS),
    # Weibull shape of per-GPU failure times: published fits are 0.5-0.8 (Schroeder &
    # Gibson 2006, DOI 10.1109/DSN.2006.5); below 0.2 a component fails in bursts of
    # millions of near-zero gaps and the renewal simulation cannot finish.
    "weibull_shape": Domain(">0", minimum=0.2, maximum=20),
    "draws": Domain(">=1", integer=True, maximum=MAX_DRAWS),
    "seed": Domain(">=0", integer=True, maximum=2**63 - 1),
    # checkpoint: bounds keep every unit conversion and Daly term finite
    # (an MTBF below 3.6 ms, e.g. 5e-324 h, makes the failure rate overflow to inf)
    "gpu_mtbf_hours": Domain(">0", minimum=1e-6, maximum=1e12),
    "node_mtbf_hours": Domain(">0", minimum=1e-6, maximum=1e12),
    "gpus_per_node": GPU_COUNT, "params": Domain(">0", maximum=1e16),
    "bytes_per_param": Domain(">0", maximum=1e3),
    "storage_write_gbps": BANDWIDTH_GBPS, "storage_read_gbps": BANDWIDTH_GBPS,
    "host_copy_gbps": BANDWIDTH_GBPS, "peer_copy_gbps": BANDWIDTH_GBPS,
    "restart_minutes": Domain(">=0", maximum=1e7), "train_days": Domain(">0", maximum=1e6),
    # software stragglers (planner/cli/fault_options.py), seconds
    "checkpoint_interval": Domain(">=0", maximum=1e12),
    "eval_overhead": Domain("[0,1)", maximum=0.99),
    "maintenance": Domain("[0,1)", maximum=0.99),
    "loss_spikes": Domain(">=0", maximum=1e6),
    "rollback_steps": Domain(">=0", maximum=1e9),
    "gc_interval": Domain(">0", maximum=1e12), "gc_pause": Domain(">=0", maximum=1e7),
    "gc_every_steps": Domain(">=1", integer=True, maximum=MAX_DIM),
    "stage_imbalance": Domain(">=0", maximum=1e6), "slow_nodes": FRACTION,
    "slow_node_slowdown": Domain(">=1", maximum=1e6),
    # site network (capplan evaluate / plan): per-GPU NIC bandwidth, scale-up domain
    "nic_gbps": BANDWIDTH_GBPS, "scale_up_domain": GPU_COUNT,
}

DOMAINS: dict[str, Domain] = {**INPUT_DOMAINS, **OPTION_DOMAINS}

#: Run-model inputs a user sets directly with a flag of the same name.
FLAG_INPUTS = frozenset({"gockpt_steps", "tokens", "gpus", "tp", "pp", "cp", "ep", "etp", "vp",
                         "micro_batch",
                         "global_batch", "seq_len", "gpus_per_node", "oversubscription",
                         "pod_gpus"})


def label(name: str) -> str:
    """How an input is named in messages: its flag (``--micro-batch``) or ``input 'x'``."""
    if name in OPTION_DOMAINS or name in FLAG_INPUTS:
        return "--" + name.replace("_", "-")
    return f"run-model input '{name}'"


def _first_bad(domain: Domain, value):
    """The first value outside ``domain`` (``None`` when all are inside)."""
    if type(value) is float:  # the common cases, without the abc checks below
        return None if domain.ok_number(value) else value
    if type(value) is int and (domain.maximum is None or value <= domain.maximum) \
            and abs(value) < 2**53:
        return None if domain.ok_number(float(value)) else value
    if isinstance(value, str | bytes) or value is None:
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, np.generic):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range is never a finite input
            return value
        if isinstance(value, numbers.Integral) and domain.maximum is not None and \
                value > domain.maximum:  # exact, also beyond 2**53
            return value
        return None if domain.ok_number(number) else value
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        return value
    ok = domain.ok(array)
    if np.all(ok):
        return None
    return np.ravel(array)[int(np.flatnonzero(~np.ravel(ok))[0])].item()


def check_value(name: str, value, domain: Domain | None = None, where: str = "") -> None:
    """Raise CapplanError unless ``value`` (number or array) lies in ``name``'s domain;
    ``where`` (e.g. ``"accelerator 'x'"``) prefixes the message."""
    domain = domain or DOMAINS[name]
    bad = _first_bad(domain, value)
    if bad is None and value is not None:
        return
    if isinstance(bad, str | bytes) or bad is None or not isinstance(
            bad, numbers.Real):
        got = f"{shown(bad)} ({type(bad).__name__})"
    elif isinstance(bad, float) and not math.isfinite(bad):
        got = str(bad)
    else:
        got = (str(bad) if len(str(bad)) <= 24 else _number(bad)) if isinstance(bad, int) \
            else f"{bad:g}"
    what = f"{where}: {name}" if where else label(name)  # a catalog/file value, or a flag
    raise CapplanError(f"{what} must be {domain.text}, got {got}")


def check(values: dict, where: str = "") -> None:
    """Check every value whose name has a domain (``None`` = not given, skipped)."""
    for name, value in values.items():
        if value is not None and name in DOMAINS:
            check_value(name, value, where=where)
