"""Failure-domain, hot-spare and software-straggler options of evaluate, plan and simulate.

The flags (``--spares``, ``--gc-interval``, ``--gc-pause``, ``--gc-every-steps``,
``--stage-imbalance``, ``--slow-nodes``, ``--slow-node-slowdown``), the checkpoint interval
and run overheads (``--checkpoint-interval``, ``--eval-overhead``, ``--maintenance``,
``--loss-spikes``, ``--rollback-steps``), the share of a reserved tier's committed term
resold or reused (``--commitment-reuse``), activation offloading
(``--offload-activations``), the optimizer's state per parameter (``--optimizer-bytes``) and
the ``[faults]``
section of a scenario file become run-model inputs (:data:`planner.engine.run.model.INPUTS`)
through :func:`fault_inputs`, each checked with the flag's own name.
"""

from __future__ import annotations

from planner.engine.inputs.defaults import STRAGGLERS
from planner.errors import CapplanError, shown

#: Defaults of the flags (what the user states; ``None``: not stated).
FAULT_DEFAULTS: dict = {
    "spares": "auto", "gc_interval": None, "gc_pause": STRAGGLERS["gc_pause_s"][0],
    "gc_every_steps": None, "stage_imbalance": 0.0, "slow_nodes": 0.0,
    "slow_node_slowdown": STRAGGLERS["slow_node_slowdown"][0],
    # None: planner/engine/inputs/execution.toml's value
    "checkpoint_interval": None, "eval_overhead": None, "maintenance": None,
    "loss_spikes": None, "rollback_steps": None,
    "commitment_reuse": None,
    # activation offloading: the layer inputs in host memory (run input
    # offloaded_activation_vectors = 1)
    "offload_activations": False,
    # optimizer-state bytes per parameter (run input optimizer_bytes_per_param); None: the
    # stack's
    "optimizer_bytes": None,
}
#: Run-overhead flags -> (run-model input, factor from the flag's unit).
OVERHEAD_INPUTS = {"checkpoint_interval": ("checkpoint_interval_fixed_s", 1.0),
                   "eval_overhead": ("eval_fraction", 1.0),
                   "maintenance": ("maintenance_fraction", 1.0),
                   "loss_spikes": ("loss_spike_probability", 1e-6),
                   "rollback_steps": ("rollback_steps", 1.0),
                   "commitment_reuse": ("commitment_reuse_fraction", 1.0),
                   "optimizer_bytes": ("optimizer_bytes_per_param", 1.0)}
FAULT_OPTIONS = tuple(FAULT_DEFAULTS)


def parse_spares(text) -> float:
    """``auto`` -> -1 (planner.engine.run.spares.AUTO), else a whole number of nodes >= 0."""
    from planner.engine.inputs.domains import MAX_GPUS

    if isinstance(text, str) and text.strip().lower() == "auto":
        return -1.0
    try:
        count = float(text)
    except (TypeError, ValueError):
        count = float("nan")
    if not (count >= 0 and count <= MAX_GPUS and count == int(count)):
        import difflib

        close = isinstance(text, str) and difflib.get_close_matches(text.lower(), ["auto"])
        raise CapplanError(f"--spares must be a whole number of nodes >= 0 (at most "
                           f"{MAX_GPUS:,}) or 'auto', got {shown(text)}"
                           + ("; did you mean: auto?" if close else ""))
    return count


def fault_inputs(values: dict) -> dict[str, float]:
    """Run-model inputs of the fault options in ``values`` (flag names, user units: s)."""
    from planner.engine.inputs.domains import check

    v = {**FAULT_DEFAULTS, **{k: values[k] for k in FAULT_OPTIONS if k in values}}
    check({k: v[k] for k in FAULT_OPTIONS if k != "spares"})
    out = {"spare_nodes": parse_spares(v["spares"]),
           "stage_extra_layers": float(v["stage_imbalance"]),
           "slow_node_fraction": float(v["slow_nodes"]),
           "slow_node_slowdown": float(v["slow_node_slowdown"])}
    for flag, (name, factor) in OVERHEAD_INPUTS.items():
        if v[flag] is not None:
            out[name] = float(v[flag]) * factor
    if v["offload_activations"]:
        out["offloaded_activation_vectors"] = 1.0
    if v["gc_every_steps"] is not None:
        out.update(gc_planned=1.0, gc_planned_steps=float(v["gc_every_steps"]),
                   gc_duration_s=float(v["gc_pause"]))
    elif v["gc_interval"] is not None:
        out.update(gc_planned=0.0, gc_interval_s=float(v["gc_interval"]),
                   gc_duration_s=float(v["gc_pause"]))
    return out
