"""What-if of software stragglers: how much of a cluster each cause wastes, by GPU count.

Each cause alone and all together, from the order-statistics closed form
:func:`planner.analysis.simulate.straggler_closed_form` (Lin et al., OSDI'25,
arXiv:2505.05713, for the causes and the waste metric 1 - 1/S); optionally confirmed by
its Monte Carlo :func:`planner.analysis.simulate.simulate_stragglers`.  Slow nodes are
stated per node (a slow node slows its ``gpus_per_node`` ranks together).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from formulas.straggler import lm_head_layer_equivalents, planned_gc_delay, straggler_waste_fraction
from planner.analysis.simulate import StragglerSpec, simulate_stragglers, straggler_closed_form
from planner.engine.inputs.defaults import STRAGGLERS

#: The setting of the published "up to 45 %" (reliability.csv rows sg-waste, sg-cause):
#: unmitigated Python GC (about one 1 s collection per 800 s per rank, i.e. 0.5 % of 4 s
#: steps), an 8-stage pipeline whose last stage also computes the LM head of a Llama 3 8B
#: shape (32 layers, V = 128,256, h = 4,096, s = 8,192; 64 micro-batches), and
#: long-context sequence imbalance (mean slowdown 1.34 of the jobs it hit).
PRESETS: dict[str, dict] = {
    "bytedance-osdi25": dict(step_time_s=4.0, step_time_cv=0.0, gc_interval_s=800.0,
                             gc_pause_s=1.0, model="llama3-8b", stages=8, microbatches=64,
                             sequence_slowdown=1.34),
}


def _default(name: str):
    return STRAGGLERS[name][0]


@dataclass(frozen=True)
class WhatIf:
    """A job shape and its straggler causes (SI units; the shared parameters named and
    defaulted as :class:`StragglerSpec`'s, :data:`planner.engine.inputs.defaults.STRAGGLERS`)."""

    step_time_s: float = 4.0
    step_time_cv: float = _default("step_time_cv")
    gc_interval_s: float = _default("gc_interval_s")
    gc_pause_s: float = _default("gc_pause_s")
    gc_every_steps: int | None = None  # planned GC instead of unplanned
    slow_node_fraction: float = 0.0  # per node (a slow node slows its gpus_per_node ranks)
    slow_node_slowdown: float = _default("slow_node_slowdown")
    gpus_per_node: int = 8
    layers: float = _default("layers")
    stages: int = _default("stages")
    microbatches: int = _default("microbatches")
    last_stage_extra_layers: float = _default("last_stage_extra_layers")  # LM head + imbalance
    sequence_slowdown: float = 1.0  # sequence-length imbalance, a measured factor


def _spec(w: WhatIf, gpus: int, **causes):
    # per-rank probability with the per-node probability of a slow group: 1-(1-f)^(1/g)
    per_rank = -math.expm1(math.log1p(-w.slow_node_fraction) / w.gpus_per_node) \
        if w.slow_node_fraction < 1 else 1.0
    base = dict(ranks=gpus, step_time_s=w.step_time_s, step_time_cv=w.step_time_cv,
                gc_interval_s=math.inf, gc_pause_s=w.gc_pause_s, slow_rank_fraction=0.0,
                slow_node_slowdown=w.slow_node_slowdown, layers=w.layers, stages=1,
                last_stage_extra_layers=0.0, microbatches=w.microbatches)
    full = dict(gc_interval_s=w.gc_interval_s if w.gc_every_steps is None else math.inf,
                slow_rank_fraction=per_rank, stages=w.stages,
                last_stage_extra_layers=w.last_stage_extra_layers)
    chosen = full if causes.get("all") else {k: full[k] for k in causes.get("keys", ())}
    return StragglerSpec(**{**base, **chosen})


CAUSES = {"gc": ("gc_interval_s",), "pipeline": ("stages", "last_stage_extra_layers"),
          "slow_nodes": ("slow_rank_fraction",)}


def whatif_rows(w: WhatIf, gpu_counts, *, simulate: bool = False, steps: int = 100_000,
                seed: int = 0) -> list[dict]:
    """One row per GPU count: wasted share of GPU-hours by cause and combined."""
    planned = 0.0 if w.gc_every_steps is None else float(
        planned_gc_delay(w.gc_pause_s, w.gc_every_steps))
    rows = []
    for gpus in gpu_counts:
        clean = straggler_closed_form(_spec(w, gpus))["step_time_s"]  # noise only
        row = {"gpus": int(gpus), "noise_waste": float(
            straggler_waste_fraction(clean / w.step_time_s))}
        for cause, keys in CAUSES.items():
            step = straggler_closed_form(_spec(w, gpus, keys=keys))["step_time_s"]
            if cause == "gc":
                step += planned
            row[f"{cause}_waste"] = float(straggler_waste_fraction(step / clean))
        row["sequence_waste"] = float(straggler_waste_fraction(w.sequence_slowdown))
        full = _spec(w, gpus, all=True)
        step = (straggler_closed_form(full)["step_time_s"] + planned) * w.sequence_slowdown
        row["combined_slowdown"] = step / w.step_time_s
        row["combined_waste"] = float(straggler_waste_fraction(step / w.step_time_s))
        if simulate:
            mc = simulate_stragglers(full, steps=steps, seed=seed)
            mc_step = (mc["step_time_s"] + planned) * w.sequence_slowdown
            row["simulated_waste"] = float(straggler_waste_fraction(mc_step / w.step_time_s))
            row["simulated_stderr"] = mc["stderr_s"] * w.sequence_slowdown * \
                w.step_time_s / mc_step ** 2
        rows.append(row)
    return rows


def with_model(w: WhatIf, model, *, lm_head: bool = True, extra_layers: float = 0.0,
               seq_len: int | None = None) -> WhatIf:
    """``w`` with the layers of a catalog model and its LM head on the last stage."""
    s = seq_len or model.seq_len
    head = float(lm_head_layer_equivalents(model.vocab, model.hidden, s)) if lm_head else 0.0
    return replace(w, layers=float(model.layers), last_stage_extra_layers=head + extra_layers)
