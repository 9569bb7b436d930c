"""Plan an RL (GRPO/PPO) run: for each accelerator and total GPU count, the fastest split
into rollout and trainer pools (:mod:`planner.engine.layouts.rl`), that many RL steps as a whole
run (wall time with failures and checkpoints, energy, cost, carbon), and the best of them
per objective under the deadline and budget.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hardware_catalog import load_catalog
from planner.engine.layouts.rl import (
    RLConfig,
    TrainerLayout,
    best_split,
    rl_candidates,
    whole_runs,
)
from planner.engine.run.run_inputs import RunChoices
from planner.engine.search.optimize import resolve_hardware
from planner.errors import CapplanError

#: Objective -> the column it minimises (the plan's objectives, planner.engine.search.optimize).
OBJECTIVE_COLUMNS = {"time": "wall_time_s", "cost": "cost_usd", "energy": "energy_facility_j",
                     "carbon": "co2e_kg"}

#: The columns of one plan row, in order.
ROW_COLUMNS = ("hardware", "gpus", "mode", "rollout_gpus", "trainer_gpus", "engine_gpus",
               "rl_step_time_s", "generation_share", "scoring_share", "training_share",
               "sync_share", "generation_s", "scoring_s", "training_s", "sync_s",
               "concurrent", "longest_response", "rl_steps", "wall_time_s", "gpu_hours",
               "cost_usd", "energy_facility_j", "co2e_kg", "expected_failures",
               "checkpoint_interval_s", "ettr")


def doubling_totals(min_gpus: int, max_gpus: int) -> list[int]:
    """min_gpus, 2 min_gpus, ... up to max_gpus (and max_gpus itself)."""
    out, n = [], int(min_gpus)
    while n <= max_gpus:
        out.append(n)
        n *= 2
    if out and out[-1] != max_gpus:
        out.append(int(max_gpus))
    return out


def hardware_rows(choices: RunChoices, rl: RLConfig, totals, steps: float, *,
                  layout: TrainerLayout = TrainerLayout(), catalog=None,
                  overrides=None) -> list[dict]:
    """One row per total GPU count on ``choices.hardware``: its fastest configuration and
    the whole run (rows that fit nowhere left out)."""
    catalog = load_catalog() if catalog is None else catalog
    cand = rl_candidates(choices, rl, totals, layout=layout, catalog=catalog,
                         overrides=overrides)
    best = best_split(cand)
    best = best[np.isfinite(cand["rl_step_time_s"][best])]
    if best.size == 0:
        return []
    rows = {k: np.asarray(v)[best] for k, v in cand.items() if np.ndim(v)}
    runs = whole_runs(choices, rl, rows, steps, layout=layout, catalog=catalog,
                      overrides=overrides)
    out = []
    for j in range(best.size):
        row = {"hardware": choices.hardware, "mode": rl.mode}
        for key in ROW_COLUMNS:
            if key in rows:
                row[key] = float(rows[key][j])
            elif key in runs:
                row[key] = float(runs[key][j])
        for key in ("gpus", "rollout_gpus", "trainer_gpus", "engine_gpus"):
            row[key] = int(row[key])
        out.append({k: row[k] for k in ROW_COLUMNS})
    return out


def plan_rl(choices: RunChoices, rl: RLConfig, hardware, totals, steps: float, *,
            layout: TrainerLayout = TrainerLayout(), deadline_days=None, budget_usd=None,
            catalog=None, overrides=None) -> dict:
    """Every accelerator of ``hardware`` ('all', 'market' or ids) at every total of
    ``totals``; the best row per objective meeting the deadline and budget.

    Returns ``{"rows": [...], "best": {objective: row or None}, "skipped": {hardware:
    reason}}``; rollout pools are whole nodes (``rl.pool_step``: the node's GPUs) unless the
    caller chose a step.  ``overrides``: run-model inputs (SI; the scenario's network and
    fault flags) for every accelerator.
    """
    catalog = load_catalog() if catalog is None else catalog
    names = [hardware] if isinstance(hardware, str) else list(hardware)
    rows, skipped = [], {}
    for hw in resolve_hardware(catalog, names):
        node = catalog.node(catalog.accelerator(hw).node) if rl.pool_step == 1 else None
        per_node = (overrides or {}).get("gpus_per_node", node and node.gpus_per_node)
        work = rl if node is None else replace(rl, pool_step=int(per_node))
        try:
            found = hardware_rows(replace(choices, hardware=hw), work, totals, steps,
                                  layout=layout, catalog=catalog, overrides=overrides)
        except CapplanError as why:
            skipped[hw] = str(why)
            continue
        if not found:
            skipped[hw] = "nothing fits (KV cache or trainer memory) at these GPU counts"
        rows += found
    ok = [r for r in rows
          if (deadline_days is None or r["wall_time_s"] <= deadline_days * 86400)
          and (budget_usd is None or r["cost_usd"] <= budget_usd)]
    best = {name: min(ok, key=lambda r, c=column: (r[c], r["hardware"], r["gpus"]))
            if ok else None for name, column in OBJECTIVE_COLUMNS.items()}
    return {"rows": rows, "best": best, "skipped": skipped}
