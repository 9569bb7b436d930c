"""Propagate input uncertainty through the vectorised evaluator.

Each uncertain input is multiplied by a lognormal factor (median 1); draws are
evaluated all at once by the compiled kernel.  For a plan, the candidate rows of the
frontier (best layouts per accelerator, GPU count and objective) are re-evaluated
under every draw, giving P10/P50/P90 of the nominal winners and the probability
that each accelerator wins each objective.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from planner.analysis.estimates import accelerator_errors
from planner.engine.inputs.domains import check_spreads
from planner.engine.layouts.space import RECOMPUTE_CODES, layout_flags
from planner.engine.run import workload
from planner.engine.run.columns import layout_columns, layout_key
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs
from planner.engine.run.readable import usd_text
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.run.spares import resolve_spares
from planner.engine.search.explain import CONSTRAINTS, active_constraints, meets
from planner.engine.search.optimize import OBJECTIVE_COLUMNS, SEARCH_COLUMNS, feasible_mask
from planner.engine.search.phase_plan import totals_of
from planner.errors import CapplanError

QUANTITIES = {"wall_days": "days", "cost_usd": "USD", "energy_mwh": "MWh", "co2e_t": "tCO2e",
              "peak_power_mw": "MW"}
#: The quantile at which a winner's constraints are checked under uncertainty.
RISK_QUANTILE = 0.9
FRACTIONS = {"gemm_max_efficiency", "attention_gemm_max_efficiency", "scale_up_bus_efficiency",
             "scale_out_bus_efficiency", "hbm_efficiency", "dp_overlap", "tp_overlap"}
#: Inputs drawn with an uncertain input's factor: the GEMM-efficiency spread carries the
#: whole step's error (uncertainty.toml), the attention core's GEMMs included (unless a
#: scenario gives the coupled input a spread of its own).
COUPLED = {"gemm_max_efficiency": ("attention_gemm_max_efficiency",)}


def moved_inputs(name: str, drawn) -> tuple[str, ...]:
    """The inputs one drawn factor of ``name`` perturbs: itself and its :data:`COUPLED`
    inputs that have no factor of their own among ``drawn``."""
    return (name, *(c for c in COUPLED.get(name, ()) if c not in drawn))


@dataclass(frozen=True)
class Spread:
    sigma: float
    scope: str  # "hardware" or "shared"


@cache
def default_spreads() -> dict[str, Spread]:
    """The shipped spreads (uncertainty.toml), checked as a scenario file's are."""
    path = Path(__file__).with_name("uncertainty.toml")
    data = tomllib.loads(path.read_text())
    table = {k: v for k, v in data.items() if isinstance(v, dict)}
    return {k: Spread(*v) for k, v in check_spreads(table, f"{path.name}:").items()}


def spreads_from(overrides: dict | None, where: str = "[uncertainty]") -> dict[str, Spread]:
    """Defaults updated by a scenario file's ``[uncertainty]`` table, each entry checked
    (:func:`planner.engine.inputs.domains.check_spread`: a run-model input, a finite sigma in
    [0, MAX_SIGMA], a known scope); ``where`` names the table in messages."""
    spreads = dict(default_spreads())
    spreads.update({k: Spread(*v) for k, v in check_spreads(overrides or {}, where).items()})
    return spreads


#: The scope of an input whose sigma comes per accelerator from the price data (the
#: quote's ``sigma``: the providers' interquartile range, or the wide sigma of an
#: estimate; planner.engine.economics.pricing); the entry's own sigma is used where none is given.
PRICE_SCOPE = "price"
PRICE_INPUT = "price_usd_per_gpu_hour"


def factors(spreads: dict[str, Spread], draws: int, groups: int, seed: int,
            group_sigma: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Multiplicative factors, shape (draws, groups); shared inputs equal across groups.

    ``group_sigma``: input -> one sigma per group, replacing the spread's own (the price of
    each accelerator, :func:`price_sigmas`); the random draws are the same either way."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in sorted(spreads):
        spread = spreads[name]
        width = groups if spread.scope in ("hardware", PRICE_SCOPE) else 1
        z = rng.standard_normal((draws, width))
        sigma = (np.asarray(group_sigma[name], dtype=float)
                 if group_sigma and name in group_sigma else spread.sigma)
        out[name] = np.broadcast_to(np.exp(sigma * z), (draws, groups))
    return out


def price_sigmas(spreads: dict[str, Spread], quotes: list[dict]) -> dict[str, np.ndarray]:
    """``group_sigma`` for :func:`factors`: each accelerator's price sigma from its quote
    (``quotes``: one :class:`planner.engine.economics.pricing.PriceQuote` dict per group), when the
    price input has the price-data scope (a scenario's own ``[uncertainty]`` entry wins; a
    sigma of 0 turns the price draw off)."""
    spread = spreads.get(PRICE_INPUT)
    if spread is None or spread.scope != PRICE_SCOPE or spread.sigma == 0:
        return {}
    return {PRICE_INPUT: np.array([float(q.get("sigma", spread.sigma)) for q in quotes])}


#: The input whose sigma an accelerator's own published runs widen: a chip the planner
#: predicts far off on its runs carries that error (:func:`performance_sigmas`).
PERFORMANCE_INPUT = "gemm_max_efficiency"
#: Mean absolute deviation of a lognormal factor per unit of its log-sd for small sigma:
#: E|Z| = sqrt(2/pi) for a standard normal Z.
MAE_PER_SIGMA = float(np.sqrt(2 / np.pi))


def performance_sigmas(spreads: dict[str, Spread], hardware: list[str]
                       ) -> dict[str, np.ndarray]:
    """``group_sigma`` for :func:`factors`: each accelerator's GEMM-efficiency sigma, the
    entry's own or, where larger, the one its published runs' error implies (their MAPE in
    ``capplan validate``, :func:`planner.analysis.estimates.accelerator_errors`, over
    :data:`MAE_PER_SIGMA`: MI300X, predicted 19-41 % too fast under torchtitan, ~0.35).
    A chip without runs keeps the entry's sigma; a sigma of 0 turns the draw off."""
    spread = spreads.get(PERFORMANCE_INPUT)
    if spread is None or spread.scope != "hardware" or spread.sigma == 0:
        return {}
    errors = accelerator_errors()
    return {PERFORMANCE_INPUT: np.array([
        max(spread.sigma, errors.get(hw, {}).get("mape", 0.0) / MAE_PER_SIGMA)
        for hw in hardware])}


def group_sigmas(spreads: dict[str, Spread], hardware: list[str], quotes: list[dict]
                 ) -> dict[str, np.ndarray]:
    """``group_sigma`` for :func:`factors`: :func:`price_sigmas` of ``quotes`` and
    :func:`performance_sigmas` of ``hardware`` (one per group, in the same order)."""
    return {**price_sigmas(spreads, quotes), **performance_sigmas(spreads, hardware)}


def plan_group_sigmas(result, spreads: dict[str, Spread], hardware: list[str]
                      ) -> dict[str, np.ndarray]:
    """:func:`group_sigmas` of a plan's accelerators (prices: ``result.prices``)."""
    return group_sigmas(spreads, hardware, [result.prices.get(hw, {}) for hw in hardware])


def perturb(inputs: dict, name: str, factor: np.ndarray) -> np.ndarray:
    value = np.asarray(inputs[name], dtype=float) * factor
    return np.minimum(value, 1.0) if name in FRACTIONS else value


def drawn_inputs(x: dict, f: dict[str, np.ndarray], draws: slice, group: int,
                 rows: int) -> dict:
    """The inputs ``x`` of ``rows`` candidates repeated for each draw of ``draws`` (draw
    by draw), each uncertain input times that draw's factor of ``group`` (:func:`factors`)."""
    n = draws.stop - draws.start
    xi = {k: np.tile(v, n) if isinstance(v, np.ndarray) and v.ndim else v
          for k, v in x.items()}
    for name, factor in f.items():
        for moved in moved_inputs(name, f):
            xi[moved] = perturb(xi, moved, np.repeat(factor[draws, group], rows))
    return xi


def price_sigma_payload(sigma: dict[str, np.ndarray], hardware: list[str]) -> dict:
    """Accelerator -> the price sigma drawn (empty when the scenario sets its own)."""
    values = sigma.get(PRICE_INPUT)
    return {} if values is None else {hw: float(v) for hw, v in zip(hardware, values,
                                                                     strict=True)}


def summarize(values: np.ndarray) -> dict[str, float]:
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90),
            "mean": float(np.mean(values))}


def drawn_run(inputs: dict, f: dict[str, np.ndarray], draws: int,
              columns=tuple(QUANTITIES)) -> dict[str, np.ndarray]:
    """``columns`` of one configuration ``inputs`` under each of ``draws`` draws of the
    factors ``f`` (:func:`factors` with one group)."""
    x = {k: (np.full(draws, float(np.ravel(v)[0])) if np.size(v) == 1 else v)
         for k, v in inputs.items()}
    for name, factor in f.items():
        for moved in moved_inputs(name, f):
            x[moved] = perturb(x, moved, factor[:, 0])
    out = evaluate_inputs(x)
    return {q: np.asarray(out[q], dtype=float) for q in columns}


def run_uncertainty(inputs: dict, spreads: dict[str, Spread], draws: int = 2000,
                    seed: int = 0, price: dict | None = None,
                    hardware: str | None = None) -> dict[str, dict]:
    """P10/P50/P90 of days, cost, energy and CO2e for one configuration (``price``: its
    price quote dict, whose sigma the price is drawn with; ``hardware``: its accelerator,
    whose published runs' error may widen the GEMM efficiency's)."""
    sigma = group_sigmas(spreads, [hardware or ""], [price or {}])
    drawn = drawn_run(inputs, factors(spreads, draws, 1, seed, sigma), draws)
    return {q: summarize(v) for q, v in drawn.items()}


def phases_run_uncertainty(phase_inputs: list[dict], spreads: dict[str, Spread],
                           draws: int = 2000, seed: int = 0, price: dict | None = None,
                           hardware: str | None = None) -> dict[str, dict]:
    """P10/P50/P90 of a run of several phases (``phase_inputs``: each phase's inputs):
    one set of factors per draw shared by every phase (the same hardware, software and
    site run them all), the phases summed per draw (peak power: the largest phase's), as
    :func:`phase_uncertainty` does for a plan's winners."""
    f = factors(spreads, draws, 1, seed, group_sigmas(spreads, [hardware or ""], [price or {}]))
    totals = {q: np.zeros(draws) for q in QUANTITIES}
    for inputs in phase_inputs:
        add_phase(totals, drawn_run(inputs, f, draws))
    return {q: summarize(v) for q, v in totals.items()}


def add_phase(totals: dict[str, np.ndarray], drawn: dict[str, np.ndarray]) -> None:
    """Add one phase's per-draw :data:`QUANTITIES` to the run's ``totals`` in place: sums,
    and the largest phase's peak power."""
    for q in QUANTITIES:
        v = np.asarray(drawn[q], dtype=float)
        totals[q] = np.maximum(totals[q], v) if q == "peak_power_mw" else totals[q] + v


def win_probability(best_value: np.ndarray, hardware: list[str]) -> dict[str, float]:
    """Accelerator -> share of draws it wins, from ``best_value`` (accelerators x draws: each
    accelerator's best value of one objective per draw, inf where nothing of it is
    feasible); ties go to the accelerator first in ``hardware``, a draw nothing wins to
    none."""
    winner = np.argmin(best_value, axis=0)
    won = np.isfinite(best_value.min(axis=0))
    counts = np.bincount(winner[won], minlength=len(hardware))
    draws = best_value.shape[1]
    return {hw: int(c) / draws for hw, c in zip(hardware, counts, strict=True)}


#: Frontier rows x draws evaluated at once by :func:`plan_uncertainty` (bounds its memory).
UNCERTAINTY_BLOCK = 1 << 18


def plan_uncertainty(result, catalog, spreads: dict[str, Spread], draws: int = 400,
                     seed: int = 0) -> dict:
    """Winner probabilities per accelerator and P10/50/90 of the nominal winners.

    Every feasible frontier row is evaluated under every draw, in blocks of about
    :data:`UNCERTAINTY_BLOCK` rows x draws and only for the columns the objectives,
    constraints and reported quantities need (the partial kernel: bit-identical values);
    each block is reduced at once to its best value per accelerator, objective and draw.
    Ties go to the accelerator first in name order.  ``--spares auto`` is resolved once
    per row on the nominal inputs and held in every draw (spares are bought up front).
    """
    s = result.scenario
    frontier = result.frontier.loc[result.frontier["fits"].astype(bool)].reset_index(drop=True)
    if frontier.empty:
        raise CapplanError("no feasible plan to propagate uncertainty through")
    hardware = sorted(frontier["hardware"].unique())
    sigma = plan_group_sigmas(result, spreads, hardware)
    f = factors(spreads, draws, len(hardware), seed, sigma)
    # the nominal winner of each objective: its frontier row
    nominal = {}
    for objective in OBJECTIVE_COLUMNS:
        best = result.best.get(objective)
        if best is not None:
            match = np.flatnonzero(np.all([(frontier[k] == best[k]).to_numpy()
                                           for k in layout_key()], axis=0))
            if match.size:
                nominal[objective] = int(match[0])
    total = len(frontier) * draws
    progress = workload.check_draws(len(frontier), draws, "--uncertainty")
    done = 0
    wanted = tuple(dict.fromkeys(("fits", *SEARCH_COLUMNS, *QUANTITIES)))
    best_value = {o: np.full((len(hardware), draws), np.inf) for o in OBJECTIVE_COLUMNS}
    nominal_values = {o: {q: np.empty(draws) for q in QUANTITIES} for o in nominal}
    for g, hw in enumerate(hardware):
        rows = frontier.index[frontier["hardware"] == hw].to_numpy()
        x = frontier_inputs(s, catalog, hw, frontier.loc[rows])
        here = {o: int(np.flatnonzero(rows == r)[0]) for o, r in nominal.items() if r in rows}
        step = max(1, UNCERTAINTY_BLOCK // len(rows))
        for first in range(0, draws, step):
            last = min(draws, first + step)
            n = last - first
            out = evaluate_columns(drawn_inputs(x, f, slice(first, last), g, len(rows)),
                                   wanted)
            feasible = feasible_mask(out, s).reshape(n, len(rows))
            for objective, column in OBJECTIVE_COLUMNS.items():
                value = np.where(feasible, out[column].reshape(n, len(rows)), np.inf)
                value = np.where(np.isnan(value), np.inf, value)
                best_value[objective][g, first:last] = value.min(axis=1)
            for objective, i in here.items():
                for q in QUANTITIES:
                    nominal_values[objective][q][first:last] = out[q].reshape(n, len(rows))[:, i]
            done += n * len(rows)
            if progress is not None:
                progress(done, total, hw)
    report = {"draws": draws, "seed": seed, "spreads": {k: vars(v) for k, v in spreads.items()},
              "price_sigma": price_sigma_payload(sigma, hardware),
              "win_probability": {}, "nominal_winners": {}}
    for objective in OBJECTIVE_COLUMNS:
        report["win_probability"][objective] = win_probability(best_value[objective], hardware)
        if objective in nominal_values:
            report["nominal_winners"][objective] = {
                q: summarize(v) for q, v in nominal_values[objective].items()}
    report["constraint_risk"] = {o: constraint_risk(v, s) for o, v in nominal_values.items()}
    return report


#: The per-phase columns :func:`planner.engine.search.phase_plan.totals_of` sums into a run's
#: quantities and objectives.
PHASE_TOTAL_COLUMNS = tuple(dict.fromkeys((*QUANTITIES, *OBJECTIVE_COLUMNS.values(), "ettr",
                                           "co2e_kg", "cci_g_per_eflop")))


def phase_uncertainty(result, catalog, spreads: dict[str, Spread], draws: int = 400,
                      seed: int = 0) -> dict:
    """Winner probabilities per accelerator, P10/P50/P90 of the whole run of each winner of
    a plan of phases (:class:`planner.engine.search.phase_plan.PhasePlan`), and the constraints
    each winner misses at :data:`RISK_QUANTILE`.

    Each draw is one set of factors per accelerator, shared by every phase (the same
    hardware, software and site run them all), as :func:`plan_uncertainty` draws them.
    For each objective, every cluster that fits every phase (``result.clusters``: each
    phase at its best layout for the objective on that cluster) is evaluated under the
    draws, its phases summed per draw (:func:`planner.engine.search.phase_plan.totals_of`: peak
    power the largest phase's), the constraints checked on the totals, and the best cluster
    per accelerator kept; ties go to the accelerator first in name order.
    """
    s = result.scenario
    objectives = [o for o in OBJECTIVE_COLUMNS if o in result.clusters]
    on = {o: set(result.clusters[o][0].index.get_level_values("hardware")) for o in objectives}
    hardware = sorted(set().union(*on.values()))
    sigma = plan_group_sigmas(result, spreads, hardware)
    f = factors(spreads, draws, len(hardware), seed, sigma)
    report = {"draws": draws, "seed": seed, "spreads": {k: vars(v) for k, v in spreads.items()},
              "price_sigma": price_sigma_payload(sigma, hardware),
              "win_probability": {}, "nominal_winners": {}, "constraint_risk": {}}
    best_value = {o: np.full((len(hardware), draws), np.inf) for o in objectives}
    nominal = {o: {q: np.empty(draws) for q in QUANTITIES} for o in objectives
               if result.best.get(o) is not None}
    # the cap on at most every objective's clusters x phases (their distinct rows are drawn)
    progress = workload.check_draws(sum(len(f) for o in objectives for f in result.clusters[o]),
                                    draws, "--uncertainty")
    for g, hw in enumerate(hardware):
        here = [o for o in objectives if hw in on[o]]
        parts = {o: [frame.xs(hw, level="hardware").reset_index().assign(hardware=hw)
                     for frame in result.clusters[o]] for o in here}
        # each phase's distinct rows on this accelerator, evaluated once for every objective
        rows, sizes, where = [], [], {o: [] for o in here}
        key = list(layout_key())
        for k, ps in enumerate(result.phase_scenarios):
            stacked = pd.concat([parts[o][k] for o in here], ignore_index=True)
            distinct = stacked.drop_duplicates(subset=key, ignore_index=True)
            position = {tuple(r): i for i, r in enumerate(distinct[key].to_numpy())}
            for o in here:
                where[o].append(np.array([position[tuple(r)]
                                          for r in parts[o][k][key].to_numpy()]))
            rows.append(frontier_inputs(ps, catalog, hw, distinct))
            sizes.append(len(distinct))
        winner_at = {o: int(np.flatnonzero(parts[o][0]["gpus"].to_numpy()
                                           == result.best[o]["gpus"])[0])
                     for o in here if o in nominal and result.best[o]["hardware"] == hw}
        step = max(1, UNCERTAINTY_BLOCK // max(sizes, default=1))
        for first in range(0, draws, step):
            last = min(draws, first + step)
            nd = last - first
            drawn = []
            for x, size in zip(rows, sizes, strict=True):
                out = evaluate_columns(drawn_inputs(x, f, slice(first, last), g, size),
                                       PHASE_TOTAL_COLUMNS)
                drawn.append({c: np.asarray(v).reshape(nd, size) for c, v in out.items()})
            for o in here:
                n = len(where[o][0])
                total = totals_of([pd.DataFrame({c: d[c][:, w].ravel() for c in d})
                                   for d, w in zip(drawn, where[o], strict=True)])
                ok = meets({**total, "fits": np.ones(nd * n, dtype=bool)}, s,
                           active_constraints(s)).reshape(nd, n)
                value = np.asarray(total[OBJECTIVE_COLUMNS[o]], dtype=float).reshape(nd, n)
                value = np.where(ok & ~np.isnan(value), value, np.inf)
                best_value[o][g, first:last] = value.min(axis=1)
                if o in winner_at:
                    for q in QUANTITIES:
                        nominal[o][q][first:last] = np.asarray(total[q]).reshape(
                            nd, n)[:, winner_at[o]]
            if progress is not None:  # accelerators x draws done
                progress(g * draws + last, len(hardware) * draws, hw)
    for o in objectives:
        report["win_probability"][o] = win_probability(best_value[o], hardware)
        if o in nominal:
            report["nominal_winners"][o] = {q: summarize(v) for q, v in nominal[o].items()}
            report["constraint_risk"][o] = constraint_risk(nominal[o], s)
    return report


def frontier_inputs(s, catalog, hw: str, part) -> dict:
    """The run-model inputs of the frontier rows ``part`` (a DataFrame, one accelerator
    ``hw``) of a plan of scenario ``s``, with ``--spares auto`` resolved once on the nominal
    inputs (spares are bought up front, so every draw keeps them)."""
    x = base_inputs(catalog, RunChoices.from_scenario(s, hw))
    x.update(s.extra)
    layout = {k: part[k].to_numpy() for k in layout_columns() if k != "recompute"}
    layout["recompute"] = part["recompute"].map(RECOMPUTE_CODES).to_numpy()
    x.update(layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                          layers=x["layers"]))
    return resolve_spares(x)


def constraint_risk(values: dict[str, np.ndarray], s) -> dict[str, dict]:
    """For each constraint ``s`` sets: its limit, the winner's value at
    :data:`RISK_QUANTILE` over the draws (``values``: quantity -> per-draw values), the
    share of draws that miss the limit, and whether the quantile misses it (a plan sized
    to meet the deadline at P50 can miss it at P90)."""
    risk = {}
    for constraint, (quantity, field) in CONSTRAINTS.items():
        limit = getattr(s, field)
        if limit is None:
            continue
        drawn = np.asarray(values[quantity], dtype=float)
        at_quantile = float(np.quantile(drawn, RISK_QUANTILE))
        risk[constraint] = {"limit": float(limit), "quantile": RISK_QUANTILE,
                            "value_at_quantile": at_quantile,
                            "miss_probability": float(np.mean(~(drawn <= limit))),
                            "missed_at_quantile": bool(not at_quantile <= limit)}
    return risk


def risk_lines(report: dict, labels: dict[str, str] | None = None) -> list[str]:
    """One line per winner and constraint missed at the risk quantile (none: no line);
    ``labels``: objective -> how the winner is named (default 'the <objective> winner')."""
    units = {"deadline": lambda v: f"{v:,.1f} days", "budget": usd_text,
             "power": lambda v: f"{v:,.2f} MW"}
    lines = []
    for objective, risks in report.get("constraint_risk", {}).items():
        for constraint, r in risks.items():
            if r["missed_at_quantile"]:
                show = units[constraint]
                name = (labels or {}).get(objective, f"the {objective} winner")
                lines.append(
                    f"warning: {name} misses the {constraint} at "
                    f"P{round(100 * r['quantile'])}: {show(r['value_at_quantile'])} against "
                    f"{show(r['limit'])} ({r['miss_probability']:.0%} of {report['draws']} "
                    "draws miss it)")
    return lines
