"""A plan at ``--confidence Q`` shows every row it reports at Q: each winner's (and each
constrained optimum's) days, cost, energy, carbon and power are the Q-quantile of that
row's own draws of the uncertainty model, labelled (``quantile``), and its nominal values
are kept beside them (``nominal``). The draws are those of ``--uncertainty`` (the same
factors for the same ``--draws`` and ``--seed``: :func:`planner.analysis.uncertainty.factors`
over the plan's accelerators in name order), so the two agree on the winners' quantiles.

A plan at the default confidence 0.5 is the nominal run (every input at its catalog value),
which is not the median of the uncertainty model: it is labelled "nominal", never P50.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.analysis.confidence import percentile_text
from planner.analysis.uncertainty import (
    drawn_inputs,
    factors,
    frontier_inputs,
    plan_price_sigmas,
)
from planner.engine.kernel_run import evaluate_columns

#: Quantities shown at the quantile: column -> the SI columns derived from it (x factor).
AT_QUANTILE = {"wall_days": {"wall_time_s": 86400.0},
               "cost_usd": {},
               "energy_mwh": {"energy_kwh": 1e3},
               "energy_gpu_mwh": {"energy_gpu_kwh": 1e3},
               "energy_it_mwh": {"energy_it_kwh": 1e3},
               "co2e_t": {"co2e_kg": 1e3},
               "peak_power_mw": {},
               "avg_power_mw": {}}


def reported_rows(result) -> list[dict]:
    """Every row dict a plan reports (winners, per-accelerator optima, the optima of the
    binding explanation, knees), each once. The Pareto set and the plot stay nominal
    (the frontier's shape, not a winner)."""
    rows = [*result.best.values(),
            *(r for per in result.per_hardware.values() for r in per.values()),
            *(r for b in result.binding.values()
              for r in (b.best, b.unconstrained, *b.without.values())),
            *result.knee.values()]
    seen, out = set(), []
    for row in rows:
        if isinstance(row, dict) and id(row) not in seen:
            seen.add(id(row))
            out.append(row)
    return out


def set_at_quantile(result, catalog, spreads, *, draws: int, seed: int) -> None:
    """Replace, in place, the reported quantities of every row of ``result`` (a plan at
    ``result.scenario.confidence`` != 0.5) by their quantile over ``draws`` draws, keeping
    the nominal values under ``nominal``; ``quantile`` labels each row."""
    s = result.scenario
    q = s.confidence
    rows = reported_rows(result)
    frontier = result.frontier.loc[result.frontier["fits"].astype(bool)]
    hardware = sorted(frontier["hardware"].unique())
    if not rows or not hardware:
        return
    f = factors(spreads, draws, len(hardware), seed, plan_price_sigmas(result, spreads, hardware))
    columns = tuple(AT_QUANTILE)
    for g, hw in enumerate(hardware):
        mine = [r for r in rows if r["hardware"] == hw]
        if not mine:
            continue
        x = frontier_inputs(s, catalog, hw, pd.DataFrame(mine))
        out = evaluate_columns(drawn_inputs(x, f, slice(0, draws), g, len(mine)), columns)
        for column in columns:
            at_q = np.quantile(np.asarray(out[column], dtype=float).reshape(draws, len(mine)),
                               q, axis=0)
            for row, value in zip(mine, at_q, strict=True):
                nominal = row.setdefault("nominal", {})
                nominal[column] = float(row[column])
                row[column] = float(value)
                for derived, factor in AT_QUANTILE[column].items():
                    if derived in row:
                        nominal[derived] = float(row[derived])
                        row[derived] = float(value) * factor
        for row in mine:
            row["quantile"] = q
    # each winner's cost parts scaled to its cost at the quantile (the draws give the total)
    for objective, parts in result.cost_parts.items():
        row = result.best.get(objective)
        if row is not None and parts and row["nominal"]["cost_usd"] > 0:
            scale = row["cost_usd"] / row["nominal"]["cost_usd"]
            result.cost_parts[objective] = {k: v * scale for k, v in parts.items()}


def quantile_label(confidence: float) -> str:
    """'P90' for a plan at 0.9; 'nominal' for the default 0.5 (the nominal run)."""
    return "nominal" if confidence == 0.5 else percentile_text(confidence)
