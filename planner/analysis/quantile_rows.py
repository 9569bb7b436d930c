"""A plan at ``--confidence Q`` shows every row it reports at Q: each winner's (and each
constrained optimum's) days, cost, energy, carbon and power are the Q-quantile of that
row's own draws of the uncertainty model, labelled (``quantile``), and its nominal values
are kept beside them (``nominal``). The draws are those of ``--uncertainty`` (the same
factors for the same ``--draws`` and ``--seed``: :func:`planner.analysis.uncertainty.factors`
over the plan's accelerators in name order), so the two agree on the winners' quantiles.

A plan without ``--confidence`` (``confidence`` None) is the nominal run (every input at its
catalog value), which is not the median of the uncertainty model: it is labelled "nominal",
never P50; ``--confidence 0.5`` is the median, computed and labelled P50 like any quantile.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.analysis.confidence import percentile_text
from planner.analysis.uncertainty import (
    PHASE_TOTAL_COLUMNS,
    drawn_inputs,
    factors,
    frontier_inputs,
    plan_group_sigmas,
)
from planner.engine.run.kernel_run import evaluate_columns
from planner.engine.search.optimize import OBJECTIVE_COLUMNS
from planner.engine.search.phase_plan import totals_of

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
    ``result.scenario.confidence`` set) by their quantile over ``draws`` draws, keeping
    the nominal values under ``nominal``; ``quantile`` labels each row."""
    s = result.scenario
    q = s.confidence
    rows = reported_rows(result)
    frontier = result.frontier.loc[result.frontier["fits"].astype(bool)]
    hardware = sorted(frontier["hardware"].unique())
    if not rows or not hardware:
        return
    f = factors(spreads, draws, len(hardware), seed, plan_group_sigmas(result, spreads, hardware))
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


def quantile_label(confidence: float | None) -> str:
    """'P90' for a plan at 0.9, 'P50' at 0.5 (the median); 'nominal' for None (the
    nominal run, the default)."""
    return "nominal" if confidence is None else percentile_text(confidence)


#: A plan of phases' quantities shown at the quantile (its table's columns) and the SI
#: columns derived from them.
PHASE_AT_QUANTILE = {"wall_days": {"wall_time_s": 86400.0}, "gpu_hours": {},
                     "cost_usd": {}, "energy_mwh": {"energy_kwh": 1e3},
                     "co2e_t": {"co2e_kg": 1e3}, "peak_power_mw": {}}


def _at_quantile(row: dict, values: dict[str, float], table: dict, q: float) -> None:
    """Put ``values`` (column -> value at the quantile) into ``row``, the nominal values
    under ``nominal``, the quantile under ``quantile``."""
    nominal = row.setdefault("nominal", {})
    for column, value in values.items():
        if column not in row:
            continue
        nominal[column] = float(row[column])
        row[column] = float(value)
        for derived, factor in table[column].items():
            if derived in row:
                nominal[derived] = float(row[derived])
                row[derived] = float(value) * factor
    row["quantile"] = q


def set_phases_at_quantile(result, catalog, spreads, *, draws: int, seed: int) -> None:
    """A plan of phases (:class:`planner.engine.search.phase_plan.PhasePlan`) at
    ``result.scenario.confidence`` set: each winner's whole-run totals are the
    Q-quantile of its totals over the draws (each draw's phases summed, peak power the
    largest phase's: :func:`planner.engine.search.phase_plan.totals_of`), and each of its phases
    shows that phase's own Q-quantile (the phases' quantiles do not add up to the run's).
    The draws are those of :func:`planner.analysis.uncertainty.phase_uncertainty` for the
    same ``draws`` and ``seed``, so the two agree."""
    q = result.scenario.confidence
    objectives = [o for o in OBJECTIVE_COLUMNS if o in result.clusters]
    on = [set(result.clusters[o][0].index.get_level_values("hardware")) for o in objectives]
    hardware = sorted(set().union(*on))
    if not hardware:
        return
    f = factors(spreads, draws, len(hardware), seed,
                plan_group_sigmas(result, spreads, hardware))
    columns = tuple(dict.fromkeys((*PHASE_TOTAL_COLUMNS, *PHASE_AT_QUANTILE)))
    done = {}  # id(row) -> done, a row may win several objectives
    for o in objectives:
        row = result.best.get(o)
        if row is None or id(row) in done:
            continue
        done[id(row)] = True
        hw, g = row["hardware"], hardware.index(row["hardware"])
        drawn = []
        for ps, frame in zip(result.phase_scenarios, result.clusters[o], strict=True):
            here = frame.xs(hw, level="hardware").reset_index().assign(hardware=hw)
            part = here.loc[here["gpus"] == row["gpus"]].reset_index(drop=True)
            x = frontier_inputs(ps, catalog, hw, part)
            out = evaluate_columns(drawn_inputs(x, f, slice(0, draws), g, 1), columns)
            drawn.append(pd.DataFrame({c: np.asarray(v, dtype=float).reshape(draws)
                                       for c, v in out.items()}))
        total = totals_of(drawn)
        _at_quantile(row, {c: np.quantile(np.asarray(total[c], dtype=float), q)
                           for c in PHASE_AT_QUANTILE if c in total}, PHASE_AT_QUANTILE, q)
        for phase, d in zip(row.get("phases", ()), drawn, strict=False):
            _at_quantile(phase, {c: np.quantile(d[c].to_numpy(), q)
                                 for c in PHASE_AT_QUANTILE if c in d}, PHASE_AT_QUANTILE, q)
