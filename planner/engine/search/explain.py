"""Why a plan is the answer, computed from the rows a search keeps.

The search (:mod:`planner.engine.search.optimize`) keeps, per (accelerator, GPU count) and
objective, the first minimum among the rows that meet each set of constraints of
:func:`constraint_sets`: none (every row that fits in memory), all of them, and all but
one.  The optimum under any of those sets is then the minimum over the kept rows that
meet it, exactly as over the whole space.  From them:

- :func:`binding`: a constraint binds an objective when dropping it alone gives a better
  optimum; the unconstrained optimum is reported beside it.
- :func:`explain_infeasible`: for each constraint, the plan nearest to meeting it among
  the plans that meet every other one.
- :func:`accelerator_verdicts`: why each accelerator won, lost or found no plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.engine.inputs.scenario import OBJECTIVE_COLUMNS, Scenario
from planner.engine.run.readable import device_word, usd_text
from planner.engine.run.reductions import first_least, tie_key

#: Constraint -> (the column it limits, the Scenario field holding its limit).
CONSTRAINTS = {"deadline": ("wall_days", "deadline_days"),
               "budget": ("cost_usd", "budget_usd"),
               "power": ("peak_power_mw", "max_power_mw")}
#: Constraint -> the column a plan minimises to come nearest to meeting it.
NEAREST_COLUMNS = {"deadline": "wall_time_s", "budget": "cost_usd", "power": "peak_power_mw"}
#: Constraint -> (its name in sentences, the plan nearest to it).
CONSTRAINT_WORDS = {"deadline": ("deadline", "fastest"), "budget": ("budget", "cheapest"),
                    "power": ("power cap", "leanest")}
#: Objective -> (column shown, unit, scale to that unit) in sentences.
OBJECTIVE_UNITS = {"time": ("wall_days", "days", 1.0), "cost": ("cost_usd", "M USD", 1e-6),
                   "energy": ("energy_kwh", "MWh", 1e-3), "carbon": ("co2e_kg", "tCO2e", 1e-3),
                   "tcdp": ("tcdp_t_d", "t d", 1.0), "cci": ("cci_g_per_eflop", "g/EFLOP", 1.0)}


#: Objective -> what it minimises, in sentences.
OBJECTIVE_WORDS = {"time": "time", "cost": "cost", "energy": "energy", "carbon": "carbon",
                   "tcdp": "carbon x delay", "cci": "carbon per FLOP"}


def active_constraints(s: Scenario) -> tuple[str, ...]:
    """The constraints ``s`` sets, in :data:`CONSTRAINTS` order."""
    return tuple(c for c, (_, name) in CONSTRAINTS.items() if getattr(s, name) is not None)


def constraint_sets(s: Scenario) -> tuple[tuple[str, ...], ...]:
    """The sets of constraints under which a search keeps each group's optima: none (the
    rows that fit), all, and with two or more constraints each set of all but one."""
    active = active_constraints(s)
    sets = [(), active, *(tuple(c for c in active if c != left) for left in active)]
    return tuple(dict.fromkeys(sets))


def reduced_columns(s: Scenario) -> tuple[str, ...]:
    """The columns whose minima a search keeps: the objectives', and with a power cap the
    peak power (the plan nearest to meeting the cap)."""
    power = ("peak_power_mw",) if "power" in active_constraints(s) else ()
    return (*OBJECTIVE_COLUMNS.values(), *power)


def meets(columns, s: Scenario, constraints: tuple[str, ...]) -> np.ndarray:
    """Which rows of ``columns`` (dict of arrays or DataFrame) fit in memory and meet each
    of ``constraints`` under the limits of ``s`` (a NaN value meets nothing)."""
    ok = np.asarray(columns["fits"], dtype=bool).copy()
    for constraint in constraints:
        column, limit = CONSTRAINTS[constraint]
        ok &= np.asarray(columns[column], dtype=float) * margin(columns, s, column) \
            <= getattr(s, limit)
    return ok


#: The constrained column -> its index in :meth:`Scenario.margin`.
MARGIN_INDEX = {"wall_days": 0, "cost_usd": 1, "peak_power_mw": 2}


def margin(columns, s: Scenario, column: str):
    """Per row, the multiplier of ``column`` at the scenario's confidence (``--confidence``):
    1 without margins or without a ``hardware`` column (one accelerator's search, whose
    limits :meth:`Scenario.for_hardware` has already divided)."""
    if not s.margins or "hardware" not in columns:
        return 1.0
    hardware = np.asarray(columns["hardware"]).astype(str)
    out = np.ones(len(hardware))
    for hw, *m in s.margins:
        out[hardware == hw] = m[MARGIN_INDEX[column]]
    return out


def optimum(frame, s: Scenario, constraints: tuple[str, ...], column: str) -> dict | None:
    """The first row of ``frame`` (the kept rows, in search order) minimising ``column``
    among those meeting ``constraints``; None if none does."""
    rows = frame.loc[meets(frame, s, constraints)]
    values = rows[column].to_numpy(dtype=float) if len(rows) else np.empty(0)
    if not np.isfinite(values).any():
        return None
    return rows.iloc[first_least(values)].to_dict()  # near-ties: the first row


@dataclass
class Binding:
    """Which constraints moved one objective's optimum, and the optima without them."""

    objective: str
    #: each constraint that, dropped alone, gives a better optimum (in CONSTRAINTS order)
    constraints: tuple[str, ...]
    #: no constraint alone, but all of them together moved the optimum
    together: bool
    best: dict | None  # the optimum under every constraint
    unconstrained: dict | None  # the optimum of every row that fits
    without: dict[str, dict | None] = field(default_factory=dict)  # constraint -> optimum
    #: the Scenario field of the GPU range's edge the optimum sits on ('max_gpus',
    #: 'min_gpus'), or None: a wider range may move it, as dropping a constraint would
    range_edge: str | None = None

    def names(self) -> list[str]:
        """The binding constraints in words ('deadline', 'budget', 'power cap')."""
        return [CONSTRAINT_WORDS[c][0] for c in self.constraints]


def binding(frame, s: Scenario, objective: str) -> Binding:
    """Which constraints bind ``objective`` in the kept rows ``frame`` (module docstring)."""
    column = OBJECTIVE_COLUMNS[objective]
    active = active_constraints(s)
    best = optimum(frame, s, active, column)
    unconstrained = optimum(frame, s, (), column)
    without = {c: optimum(frame, s, tuple(k for k in active if k != c), column)
               for c in active}
    bound = tuple(c for c, row in without.items() if _better(row, best, column))
    together = not bound and _better(unconstrained, best, column)
    return Binding(objective, bound, together, best, unconstrained, without,
                   range_edge(best, s))


def range_edge(row: dict | None, s: Scenario) -> str | None:
    """'max_gpus' when ``row`` uses the largest GPU count the search may try (``--max-gpus``),
    'min_gpus' the smallest (``--min-gpus``), else None.  The search saw nothing beyond the
    range, so an optimum on its edge may move with a wider one: the range bound it."""
    if row is None:
        return None
    gpus = int(row["gpus"])
    if gpus >= s.max_gpus:
        return "max_gpus"
    if gpus <= s.min_gpus:
        return "min_gpus"
    return None


def range_edge_text(edge: str | None, s: Scenario) -> str:
    """'--max-gpus 512' for :func:`range_edge`'s answer ('' for None)."""
    if edge is None:
        return ""
    return f"--{edge.replace('_', '-')} {getattr(s, edge):,}"


def _better(row: dict | None, than: dict | None, column: str) -> bool:
    """``row`` exists and is strictly better than ``than`` (None: no plan) in ``column``."""
    if row is None:
        return False
    return than is None or tie_key(float(row[column])) < tie_key(float(than[column]))


def limit_text(s: Scenario, constraint: str) -> str:
    """'the deadline of 90 days', 'the budget of 5,000,000 USD', 'the power cap of 20 MW'."""
    value = getattr(s, CONSTRAINTS[constraint][1])
    amount = {"deadline": f"{value:g} days", "budget": f"{value:,.0f} USD",
              "power": f"{value:g} MW"}[constraint]
    return f"the {CONSTRAINT_WORDS[constraint][0]} of {amount}"


def plan_text(row: dict, *, hardware: bool = True) -> str:
    """'mi355x x 1,024 GPUs: 76.8 days, 6.52 M USD, 3.24 MW' (``hardware``: with its
    accelerator)."""
    head = f"{row['hardware']} x " if hardware else ""
    return (f"{head}{int(row['gpus']):,} {device_word(row['hardware'])}: "
            f"{row['wall_days']:,.1f} days, "
            f"{usd_text(row['cost_usd'])}, {row['peak_power_mw']:,.2f} MW")


def objective_value_text(row: dict, objective: str) -> str:
    """The row's value of ``objective`` in its unit: '6.52 M USD', '76.8 days', '2,964 MWh'."""
    column, unit, scale = OBJECTIVE_UNITS[objective]
    value = float(row[column]) * scale
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:.3g} {unit}"


def plan_and_value_text(row: dict, objective: str, *, hardware: bool = True) -> str:
    """:func:`plan_text`, followed by the objective's value unless the plan text has it."""
    text = plan_text(row, hardware=hardware)
    if objective in ("time", "cost"):
        return text
    return f"{text}, {objective_value_text(row, objective)}"


def _others_text(s: Scenario, others: tuple[str, ...]) -> str:
    """'meets the deadline of 30 days and the power cap of 20 MW' ('fits in memory')."""
    if not others:
        return "fits in memory"
    return "meets " + " and ".join(limit_text(s, c) for c in others)


def explain_infeasible(s: Scenario, frontier, min_memory) -> str:
    """One paragraph on why no plan meets the constraints: per constraint, the plan that
    comes nearest to it among those meeting every other one (``frontier``: the kept rows;
    ``min_memory``: (leanest memory per GPU, its accelerator, its HBM))."""
    fits = frontier.loc[frontier["fits"].astype(bool)] if len(frontier) else frontier
    if len(fits) == 0:
        need, hw, hbm = (tuple(min_memory) + (None, None))[:3]
        if hw is None:
            return (f"No layout of {s.model} exists for GPU counts {s.min_gpus}..{s.max_gpus} "
                    "with this global batch; widen the GPU range or change --global-batch.")
        return (f"Nothing fits in memory: the leanest layout of {s.model} needs "
                f"{need / 1e9:.1f} GB per GPU (on {hw}, {hbm / 1e9:.0f} GB HBM). "
                "Allow more GPUs (--max-gpus), full recompute, ZeRO-3, or larger-memory "
                "accelerators.")
    active = active_constraints(s)
    parts = []
    for c in active:
        others = tuple(k for k in active if k != c)
        row = optimum(fits, s, others, NEAREST_COLUMNS[c])
        if row is not None:
            parts.append(f"{limit_text(s, c)} binds: the {CONSTRAINT_WORDS[c][1]} plan that "
                         f"{_others_text(s, others)} is {plan_text(row)}{_edge_note(row, s)}")
    if not parts:  # no constraint alone is to blame: each one's nearest plan of all
        for c in active:
            row = optimum(fits, s, (), NEAREST_COLUMNS[c])
            if row is not None:
                parts.append(f"{limit_text(s, c)}: the {CONSTRAINT_WORDS[c][1]} plan that "
                             f"fits is {plan_text(row)}{_edge_note(row, s)}")
        parts.insert(0, "no plan meets all but any one of the constraints")
    return "No plan meets the constraints: " + "; ".join(parts) + "."


def _edge_note(row: dict, s: Scenario) -> str:
    """' (on --max-gpus 4,096, the edge of the GPU range searched: a wider range may come
    nearer)' when the nearest plan sits on an edge of the range, else ''."""
    edge = range_edge(row, s)
    if edge is None:
        return ""
    return (f" (on {range_edge_text(edge, s)}, the edge of the GPU range searched: a wider "
            "range may come nearer)")


def accelerator_verdicts(result) -> list[dict]:
    """One row per accelerator searched or skipped (``result``: a PlanResult): ``verdict``
    (winner, lost, skipped, no layout, memory, or the constraints it cannot meet) and
    ``reason``, for the scenario's objective."""
    s = result.scenario
    objective = s.objective
    winner = result.best.get(objective)
    rows = []
    for hw in result.searched:
        stats = result.searched[hw]
        frame = result.frontier.loc[result.frontier["hardware"] == hw]
        verdict, reason = _verdict(s, objective, winner, hw, stats, frame,
                                   result.per_hardware.get(hw, {}).get(objective))
        rows.append({"hardware": hw, "verdict": verdict, "reason": reason})
    rows += [{"hardware": hw, "verdict": "skipped", "reason": why}
             for hw, why in result.skipped.items()]
    order = {"winner": 0, "lost": 1}
    return sorted(rows, key=lambda r: order.get(r["verdict"], 2))  # stable: names in order


def _verdict(s: Scenario, objective: str, winner: dict | None, hw: str, stats: dict,
             frame, own_best: dict | None = None) -> tuple[str, str]:
    """``own_best``: the accelerator's optimum as the plan reports it (at its quantile
    under ``--confidence``), else found in ``frame``."""
    if stats["evaluated"] == 0:
        return "no layout", (f"no layout for {s.min_gpus}..{s.max_gpus} GPUs with this "
                             "global batch")
    if stats["fitting"] == 0:
        return "memory", (f"nothing fits: the leanest layout needs "
                          f"{stats['min_memory_bytes'] / 1e9:.1f} GB per GPU of "
                          f"{stats['hbm_bytes'] / 1e9:.0f} GB HBM")
    active = active_constraints(s)
    best = own_best if own_best is not None else optimum(frame, s, active,
                                                         OBJECTIVE_COLUMNS[objective])
    if best is not None:
        text = plan_and_value_text(best, objective, hardware=False)
        if winner is not None and winner["hardware"] == hw:
            return "winner", text
        ratio = float(best[OBJECTIVE_COLUMNS[objective]]) / float(
            winner[OBJECTIVE_COLUMNS[objective]])
        return "lost", f"{ratio:.2f}x the winner's {OBJECTIVE_WORDS[objective]}; {text}"
    blamed = []
    for c in active:
        others = tuple(k for k in active if k != c)
        row = optimum(frame, s, others, NEAREST_COLUMNS[c])
        if row is not None:
            meeting = " + ".join(CONSTRAINT_WORDS[k][0] for k in others) or "memory"
            edge = range_edge_text(range_edge(row, s), s)
            blamed.append((c, f"{CONSTRAINT_WORDS[c][1]} meeting {meeting}: "
                              f"{plan_text(row, hardware=False)}"
                              + (f" (on {edge}, the range's edge)" if edge else "")))
    if blamed:
        return "+".join(c for c, _ in blamed), "; ".join(text for _, text in blamed)
    for c in active:  # no constraint alone to blame: the ones it cannot meet even alone
        if optimum(frame, s, (c,), NEAREST_COLUMNS[c]) is None:
            row = optimum(frame, s, (), NEAREST_COLUMNS[c])
            blamed.append((c, f"{CONSTRAINT_WORDS[c][1]}: " + (
                "none" if row is None else plan_text(row, hardware=False))))
    if not blamed:
        return "+".join(active), "no plan meets all but any one of the constraints"
    return ("+".join(c for c, _ in blamed),
            "out of reach even alone; " + "; ".join(text for _, text in blamed))


__all__ = ["CONSTRAINTS", "Binding", "accelerator_verdicts", "active_constraints", "binding",
           "range_edge", "range_edge_text",
           "constraint_sets", "explain_infeasible", "meets", "reduced_columns"]
