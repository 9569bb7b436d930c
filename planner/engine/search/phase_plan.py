"""``capplan plan`` for a run of several phases: one cluster, each phase at its best layout.

The cluster (accelerator and GPU count) is the same for every phase; each phase runs at
the layout that is best *for that phase* and objective on that cluster.  The search runs
the existing plan (:func:`planner.engine.search.optimize.plan`, its per-GPU-count reductions)
once per phase without constraints, so its frontier holds every phase's best row per
(accelerator, GPU count) and objective; :func:`plan_phases` then sums the phases per
(accelerator, GPU count) with pandas, checks the deadline, budget and power cap on the
totals (peak power: the largest phase's) and picks the best cluster per objective.

With ``--confidence Q`` the constraints hold at quantile Q of the uncertainty model: each
phase's nominal frontier gives its margins (:func:`planner.analysis.confidence.phase_margins`),
and a cluster's totals are checked multiplied by the largest margin of any phase on its
accelerator (conservative where the phases' spreads differ).

Approximation: each phase's layout is chosen for the objective alone, independently of
the constraints.  A cluster whose per-phase optima miss a constraint on the totals while
another layout of one phase (slower but cheaper, say) would meet it is not found; with a
deadline the time-optimal layouts are the fallback the user can ask for (``--objective
time``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hardware_catalog import load_catalog
from planner.engine.inputs.assumptions import scenario_assumptions
from planner.engine.inputs.layout_rules import DIMENSIONS
from planner.engine.inputs.phases import ADDITIVE
from planner.engine.inputs.scenario import OBJECTIVE_COLUMNS, Scenario
from planner.engine.run.readable import device_word
from planner.engine.search.explain import active_constraints, meets
from planner.engine.search.optimize import plan
from planner.errors import CapplanError

#: Columns of a phase's row kept in the plan's per-phase breakdown.
PHASE_COLUMNS = (*(d.name for d in DIMENSIONS if d.plan and d.name != "gpus"),
                 "step_time_s", "mfu", "steps", "wall_days", "gpu_hours", "energy_mwh",
                 "cost_usd", "co2e_t", "peak_power_mw")


@dataclass
class PhasePlan:
    """Winners per objective: the cluster, the totals and each phase's row."""

    scenario: Scenario
    phases: tuple
    best: dict[str, dict | None]
    infeasible: dict[str, str] = field(default_factory=dict)
    evaluated: int = 0
    notices: list[str] = field(default_factory=list)
    #: seconds the phases' searches took together
    seconds: float = 0.0
    #: objective -> one row per (hardware, gpus) that fits every phase: the run's totals
    #: with each phase at its best layout for the objective, and ``meets`` (the
    #: constraints hold on the totals): what ``capplan plan --plot`` draws
    totals: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: accelerator -> its resolved price quote (the phases' searches share it)
    prices: dict[str, dict] = field(default_factory=dict)
    #: accelerator -> what a winner on it rests on that is a catalog estimate, filled by
    #: planner.analysis.estimates.attach_phases
    estimate_flags: dict[str, list[str]] = field(default_factory=dict)
    #: the scenario of each phase (its tokens, sequence length and batch; no constraints)
    phase_scenarios: tuple = ()
    #: objective -> per phase, its best row on every cluster that fits every phase (frames
    #: indexed by (hardware, gpus), aligned): what phase_uncertainty redraws for the win
    #: probabilities
    clusters: dict[str, list] = field(default_factory=dict)
    #: stack, network, site, PUE, grid, price basis, quantile (planner.engine.inputs.assumptions)
    assumptions: dict = field(default_factory=dict)


def _check_phases(phases) -> list[str]:
    """Refuse a phase's own GPU count (one cluster for all); the notices of the layout
    sizes a phase states, which the search chooses itself."""
    notices = []
    for phase in phases:
        own = phase.options()
        if "gpus" in own:
            raise CapplanError(
                f"phase {phase.name!r} sets gpus: capplan plan chooses one cluster for every "
                "phase; remove it, or use capplan evaluate --scenario for a fixed cluster")
        fixed = [f"{k}={own[k]}" for k in own if k not in ("tokens", "seq_len", "global_batch")]
        if fixed:
            notices.append(f"phase {phase.name!r}: {', '.join(fixed)} not used; capplan plan "
                           "chooses each phase's layout (capplan evaluate uses them)")
    return notices


def _phase_scenario(s: Scenario, phase) -> Scenario:
    """The scenario of one phase, without constraints (checked on the totals)."""
    return s.with_(tokens=phase.tokens, seq_len=phase.seq_len or s.seq_len,
                   global_batch=phase.global_batch or s.global_batch, deadline_days=None,
                   budget_usd=None, max_power_mw=None)


def phase_searches(s: Scenario, phases) -> list[Scenario]:
    """The scenarios :func:`plan_phases` searches: each phase's, nominal (at any
    confidence the margins are applied to the totals, without searching again)."""
    return [_phase_scenario(s.with_(margins=()), p).with_(confidence=None) for p in phases]


def _best_per_cluster(frontier, column: str):
    """One phase's best fitting row per (hardware, gpus) for ``column``."""
    fits = frontier.loc[frontier["fits"].astype(bool)]
    rows = fits.loc[fits.groupby(["hardware", "gpus"], sort=True)[column].idxmin()]
    return rows.set_index(["hardware", "gpus"])


def totals_of(frames) -> dict:
    """The whole run's columns from the phases' frames (aligned rows): sums, the largest
    peak power, and tCDP / CCI of the totals (planner.engine.inputs.phases.sum_phases)."""
    additive = [k for k in ADDITIVE if k in frames[0].columns]
    total = {k: sum(f[k].to_numpy(dtype=float) for f in frames) for k in additive}
    wall_days = total["wall_days"]
    total["ettr"] = sum(f["wall_days"].to_numpy(float) * f["ettr"].to_numpy(float)
                        for f in frames) / wall_days
    total["peak_power_mw"] = np.max([f["peak_power_mw"].to_numpy(float) for f in frames],
                                    axis=0)
    # tCDP = CO2e x delay of the whole run; CCI = CO2e / FLOPs, the FLOPs of each phase
    # being its CO2e / CCI
    total["tcdp_t_d"] = total["co2e_t"] * wall_days
    flops_e = sum(f["co2e_kg"].to_numpy(float) * 1e3 / f["cci_g_per_eflop"].to_numpy(float)
                  for f in frames)
    total["cci_g_per_eflop"] = total["co2e_kg"] * 1e3 / flops_e
    return total


def plan_phases(scenario: Scenario, phases, *, catalog=None, progress=None, scheduler=None,
                workers=None, margins_of=None) -> PhasePlan:
    """Best cluster per objective for a run of ``phases`` (see the module docstring).

    ``margins_of(results, catalog)``, given the phases' nominal plans, returns the margin
    table the constraints are checked with when ``scenario.confidence`` is set (not the nominal run)
    (:func:`planner.analysis.confidence.plan_phases_at_confidence` passes it)."""
    notices = _check_phases(phases)
    s = scenario.with_(margins=())
    if s.confidence is not None and margins_of is None:
        raise CapplanError("plan_phases at a confidence (not the nominal run) needs margins_of "
                           "(planner.analysis.confidence.plan_phases_at_confidence)")
    if catalog is None:
        catalog = load_catalog(tuple(s.catalog_dirs or ()), s.price_files)
    results = [plan(searched, catalog=catalog, progress=progress, scheduler=scheduler,
                    workers=workers) for searched in phase_searches(s, phases)]
    if s.confidence is not None:
        s = s.with_(margins=margins_of(results, catalog))
    out = PhasePlan(scenario=s, phases=tuple(phases), best={},
                    evaluated=sum(r.evaluated for r in results), notices=notices,
                    prices={hw: q for r in results for hw, q in r.prices.items()},
                    seconds=sum(r.seconds for r in results),
                    phase_scenarios=tuple(_phase_scenario(s, p) for p in phases),
                    assumptions=scenario_assumptions(
                        catalog, s, sorted({hw for r in results for hw in r.prices})))
    for objective, column in OBJECTIVE_COLUMNS.items():
        frames = [_best_per_cluster(r.frontier, column) for r in results]
        common = frames[0].index
        for f in frames[1:]:
            common = common.intersection(f.index)
        if common.empty:
            out.best[objective] = None
            out.infeasible[objective] = "no cluster fits every phase in memory"
            continue
        frames = [f.loc[common] for f in frames]
        out.clusters[objective] = frames
        total = totals_of(frames)
        # every cluster here fits; the totals meet each limit times its hardware's margin
        ok = meets({**total, "fits": np.ones(len(common), dtype=bool),
                    "hardware": common.get_level_values("hardware")},
                   s, active_constraints(s))
        out.totals[objective] = pd.DataFrame(
            {"hardware": common.get_level_values("hardware"),
             "gpus": common.get_level_values("gpus").astype(int),
             **{k: np.asarray(v, dtype=float) for k, v in total.items()},
             "meets": np.asarray(ok, dtype=bool)})
        if not ok.any():
            out.best[objective] = None
            fastest = int(np.argmin(total["wall_days"]))
            hw, gpus = common[fastest]
            out.infeasible[objective] = (
                f"no cluster meets the constraints on the phases' totals; the fastest is "
                f"{hw} x {gpus:,} {device_word(hw)}: {total['wall_days'][fastest]:.1f} days, "
                f"{total['cost_usd'][fastest] / 1e6:.2f} M USD, "
                f"{total['peak_power_mw'][fastest]:.2f} MW")
            continue
        value = np.where(ok, total[column], np.inf)
        i = int(np.argmin(value))  # the first least: clusters in (hardware, gpus) order
        hw, gpus = common[i]
        out.best[objective] = {
            "hardware": hw, "gpus": int(gpus),
            **{k: float(v[i]) for k, v in total.items()},
            "phases": [{"name": p.name, "tokens": p.tokens,
                        **{k: _plain(f.iloc[i][k]) for k in PHASE_COLUMNS if k in f.columns}}
                       for p, f in zip(phases, frames, strict=True)],
        }
    return out


def _plain(value):
    return value.item() if hasattr(value, "item") else value
