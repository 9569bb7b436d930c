"""Plan with a margin (``--confidence Q``): deadline, budget and power hold at quantile Q of
the uncertainty model (:mod:`planner.analysis.uncertainty`), not at the nominal P50 run.

The search evaluates 1e6-1e8 candidates, too many to draw each. Instead, per accelerator, a
fixed-seed Monte Carlo of the uncertainty model's multiplicative factors runs over the rows
of a nominal (P50) plan that meet its constraints - the region a margined winner comes
from - and gives, for wall time, cost and peak power, the multiplier

    m_Q = max over those rows of  quantile_Q(value under the draws) / nominal value   [1]

Each constraint is then tightened by it inside the search: a candidate of that accelerator
meets the deadline when ``wall_days x m_Q(days) <= deadline`` (likewise budget and power),
so the winner's Q-quantile is at most its limit up to Monte Carlo noise (``--uncertainty``
draws check it: tests/test_confidence.py). The maximum over rows makes the margin
conservative for rows whose spread is smaller than the widest row's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hardware_catalog import load_catalog
from planner.analysis.estimates import attach, attach_phases
from planner.analysis.uncertainty import drawn_inputs, factors, frontier_inputs, group_sigmas
from planner.engine.inputs.domains import MARGIN_DRAWS, margin_draws  # noqa: F401  (documented)
from planner.engine.run import workload
from planner.engine.run.kernel_run import evaluate_columns
from planner.engine.search import optimize
from planner.engine.search.phase_plan import plan_phases
from planner.errors import CapplanError

#: Seed of the margin Monte Carlo (fixed: the same plan every time); its draws:
#: :func:`planner.engine.inputs.domains.margin_draws` (MARGIN_DRAWS, more far in the tails).
MARGIN_SEED = 0
#: Rows x draws evaluated at once.
BLOCK = 1 << 17
#: The constrained quantities, in :meth:`Scenario.margin` order.
MARGIN_QUANTITIES = ("wall_days", "cost_usd", "peak_power_mw")


def margins(result, catalog, spreads, quantile: float, draws: int | None = None,
            seed: int = MARGIN_SEED) -> tuple:
    """(accelerator, m_days, m_cost, m_power) per accelerator of the nominal plan
    ``result`` (equation [1] of the module docstring), from ``draws`` draws (default
    :func:`~planner.engine.inputs.domains.margin_draws`: enough to resolve ``quantile``)."""
    s = result.scenario
    draws = margin_draws(quantile) if draws is None else draws
    frontier = result.frontier.loc[result.frontier["fits"].astype(bool)]
    parts = {}
    for hw in sorted(frontier["hardware"].unique()):
        part = frontier.loc[frontier["hardware"] == hw]
        feasible = part.loc[part["feasible"].astype(bool)]
        parts[hw] = (feasible if len(feasible) else part).reset_index(drop=True)
    total = sum(len(p) for p in parts.values()) * draws
    progress = workload.check_draws(total // draws if draws else 0, draws,
                                    f"--confidence {quantile:g} margins",
                                    fewer="a --confidence nearer 0.5 (fewer margin draws), "
                                    "a narrower plan")
    out, done = [], 0
    for hw, part in parts.items():
        x = frontier_inputs(s, catalog, hw, part)
        nominal = evaluate_columns(x, MARGIN_QUANTITIES)
        f = factors(spreads, draws, 1, seed, group_sigmas(spreads, [hw], [result.prices.get(hw, {})]))
        drawn = {q: np.empty((draws, len(part))) for q in MARGIN_QUANTITIES}
        step = max(1, BLOCK // len(part))
        for first in range(0, draws, step):
            n = min(draws, first + step) - first
            got = evaluate_columns(drawn_inputs(x, f, slice(first, first + n), 0, len(part)),
                                   MARGIN_QUANTITIES)
            for q in MARGIN_QUANTITIES:
                drawn[q][first:first + n] = got[q].reshape(n, len(part))
            done += n * len(part)
            if progress is not None:
                progress(done, total, hw)
        m = []
        for q in MARGIN_QUANTITIES:
            ratio = np.quantile(drawn[q], quantile, axis=0) / np.asarray(nominal[q], dtype=float)
            ratio = ratio[np.isfinite(ratio)]
            m.append(float(ratio.max()) if ratio.size else 1.0)
        out.append((hw, *m))
    return tuple(out)


def plan_at_confidence(scenario, spreads, *, catalog=None, **plan_options):
    """The plan of ``scenario`` whose constraints hold at ``scenario.confidence``: a nominal
    search, its margins (:func:`margins`), then the search with limits tightened by them.
    At confidence None this is the nominal plan itself (no margin); 0.5 is the median."""
    if catalog is None:
        catalog = load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)
    if scenario.confidence is None:
        result = optimize.plan(scenario, catalog=catalog, **plan_options)
    else:
        result = optimize.plan(scenario.with_(confidence=None, margins=()), catalog=catalog,
                      **plan_options)
        if result.frontier.empty or not result.frontier["fits"].astype(bool).any():
            result = replace(result, scenario=scenario)  # nothing fits: no margin to find
        else:
            found = margins(result, catalog, spreads, scenario.confidence)
            if not found:
                raise CapplanError("--confidence: no accelerator has a layout that fits")
            result = optimize.plan(scenario.with_(margins=found), catalog=catalog, **plan_options)
    attach(result, catalog)
    return result


def phase_margins(results, catalog, spreads, quantile: float) -> tuple:
    """(accelerator, m_days, m_cost, m_power) per accelerator of the phases' nominal plans
    ``results``: the largest of each phase's margins at ``quantile`` (:func:`margins`),
    so a cluster's totals are checked as conservatively as its widest phase."""
    largest: dict[str, list[float]] = {}
    for result in results:
        if result.frontier.empty or not result.frontier["fits"].astype(bool).any():
            continue
        for hw, *m in margins(result, catalog, spreads, quantile):
            largest[hw] = [max(a, b) for a, b in zip(largest.get(hw, m), m, strict=True)]
    return tuple((hw, *m) for hw, m in sorted(largest.items()))


def plan_phases_at_confidence(scenario, phases, spreads, **plan_options):
    """:func:`planner.engine.search.phase_plan.plan_phases` whose constraints hold at
    ``scenario.confidence`` (the margins of :func:`phase_margins`)."""
    def margins_of(results, catalog):
        return phase_margins(results, catalog, spreads, scenario.confidence)

    catalog = plan_options.pop("catalog", None) or load_catalog(
        tuple(scenario.catalog_dirs or ()), scenario.price_files)
    result = plan_phases(scenario, phases, catalog=catalog, margins_of=margins_of,
                         **plan_options)
    attach_phases(result, catalog)
    return result


def margin_payload(scenario) -> dict:
    """The quantile planned at (None: the nominal run), each accelerator's multipliers and, with a margin, the
    draws its quantile was taken over, for JSON."""
    q = scenario.confidence
    return {"planned_quantile": q,
            **({"margin_draws": margin_draws(q)} if q is not None else {}),
            "margins": {hw: dict(zip(MARGIN_QUANTITIES, m, strict=True))
                        for hw, *m in scenario.margins}}


def percentile_text(quantile: float) -> str:
    """'P90', 'P99.9', 'P0.1': the quantile as a percentile, never rounded to another
    (0.999 is P99.9, not P100)."""
    return f"P{100 * quantile:.6g}"


def quantile_text(scenario) -> str:
    """The footer naming the quantile of the numbers and constraints: the nominal run, or
    P90 with the margins (the rows shown are at the quantile: planner.analysis.quantile_rows,
    a plan of phases' totals and each phase its own quantile)."""
    if scenario.confidence is None:
        return ("numbers and constraints of the nominal run (every input at its catalog "
                "value; not the P50 of --uncertainty); --confidence 0.9 for a margin")
    p = percentile_text(scenario.confidence)
    if not scenario.margins:
        return f"numbers and constraints at {p} of the uncertainty model"
    parts = ", ".join(f"{hw}: days x{d:.2f}, cost x{c:.2f}, power x{w:.2f}"
                      for hw, d, c, w in scenario.margins)
    return (f"numbers and constraints at {p} of the uncertainty model: each plan's days, "
            f"cost, energy and power are its own {p} over --draws (--seed); the search met "
            f"the constraints at {p} by margins over {margin_draws(scenario.confidence):,} "
            f"draws ({parts})")
