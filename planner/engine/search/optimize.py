"""Search the design space: optima per objective, Pareto front, knee, explanations.

For every accelerator the whole layout space is evaluated chunk by chunk; each
chunk is reduced at once to the best rows per GPU count and objective, so
memory stays bounded whatever the size of the space.

>>> from planner import plan
>>> result = plan(model="llama2-7b", tokens=2e12, hardware=["h100-sxm"], max_gpus=256)
>>> result.best["cost"]["hardware"]
'h100-sxm'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace

import numpy as np

from hardware_catalog import load_catalog
from planner.engine.economics.ownership import cost_parts, ownership_inputs, rent_vs_buy
from planner.engine.economics.pricing import check_provider, market_priced, price_quote
from planner.engine.inputs.assumptions import scenario_assumptions
from planner.engine.inputs.call_checks import check_catalog
from planner.engine.inputs.layout_rules import tp_split_heads
from planner.engine.inputs.scenario import OBJECTIVE_COLUMNS, OBJECTIVES, Scenario
from planner.engine.layouts.space import (
    RECOMPUTE_NAMES,
    LayoutSpace,
    SpaceOptions,
    batch_candidates,
    layout_flags,
    shared_layout_space,
)
from planner.engine.layouts.spot import spot_versus_on_demand
from planner.engine.run import native, workload
from planner.engine.run.columns import kept
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs, needed_outputs
from planner.engine.run.reductions import GroupMinimum, first_least, pareto_mask, tie_key
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.run.spares import resolve_spares
from planner.engine.search import native_search
from planner.engine.search.distributed import check_scheduler, run_tasks, usable_cores
from planner.engine.search.explain import (
    Binding,
    active_constraints,
    binding,
    constraint_sets,
    explain_infeasible,
    meets,
    reduced_columns,
)
from planner.errors import INFEASIBLE, CapplanError, shown, suggestion

#: Candidates reduced at a time (the kernel itself runs on smaller cache-sized chunks).
PLAN_CHUNK = 65536

#: Layouts per task of a search (16 blocks): a multiple of PLAN_CHUNK, so a task's blocks
#: are the blocks of the whole space and every scheduler keeps the same rows.
TASK_ROWS = 16 * PLAN_CHUNK

#: What the search computes for every candidate that fits: objectives and constraints.
SEARCH_COLUMNS = tuple(dict.fromkeys((*OBJECTIVE_COLUMNS.values(), "wall_days", "cost_usd",
                                      "peak_power_mw")))
#: Columns kept for each candidate of the frontier, besides ``hardware`` (column registry).
KEEP_COLUMNS = kept()


@dataclass
class PlanResult:
    """What :func:`plan` found; rows are dicts of plain values."""

    scenario: Scenario
    frontier: object  # pandas DataFrame: best rows per (hardware, gpus, objective)
    best: dict[str, dict | None]
    per_hardware: dict[str, dict[str, dict | None]]
    pareto: list[dict]
    knee: dict[str, dict | None]
    evaluated: int
    fitting: int
    seconds: float
    #: objective -> which constraints moved its optimum (planner.engine.search.explain.binding)
    binding: dict[str, Binding] = field(default_factory=dict)
    #: objective -> why no plan meets the constraints (planner.engine.search.explain)
    infeasible: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: accelerator searched -> its layouts evaluated, fitting, and leanest memory per GPU
    searched: dict[str, dict] = field(default_factory=dict)
    catalog_version: str = ""
    #: accelerator id -> the resolved price (PriceQuote.as_dict()): tier, provider, source, spread
    prices: dict[str, dict] = field(default_factory=dict)
    #: stack, network, site, PUE, grid, price basis, quantile (planner.engine.inputs.assumptions)
    assumptions: dict = field(default_factory=dict)
    #: with --pricing spot: objective -> the winner against on-demand (planner.engine.layouts.spot)
    spot_vs_on_demand: dict[str, dict | None] = field(default_factory=dict)
    #: objective -> the winner's owned-cluster cost beside its cloud cost
    #: (planner.engine.economics.ownership.rent_vs_buy)
    rent_vs_buy: dict[str, dict] = field(default_factory=dict)
    #: objective -> the winner's cost split into its parts (planner.engine.economics.ownership.cost_parts)
    cost_parts: dict[str, dict] = field(default_factory=dict)
    #: accelerator -> what its winners rest on that is a catalog estimate (price,
    #: performance, spec:<field>), filled by planner.analysis.estimates.attach
    estimate_flags: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class BlockBest:
    """The rows of one block of candidates that :func:`plan` keeps, and its statistics."""

    rows: np.ndarray  # indices into the block: best per GPU count and objective
    out: dict  # every output and layout column, for those rows only
    feasible: np.ndarray  # per kept row
    fitting: int  # candidates of the block that fit in memory
    min_memory_bytes: float  # the leanest candidate's memory per GPU
    min_memory_hbm_bytes: float  # and the HBM it had


def reduce_block(inputs: dict, part: dict, s: Scenario) -> BlockBest:
    """The best rows per GPU count for every objective, among the rows meeting each set of
    constraints of :func:`planner.engine.search.explain.constraint_sets` (fitting, feasible, all
    but one constraint).

    Memory per GPU is computed for every candidate by the part of the kernel it
    needs; the objectives and constraints only for the candidates that fit (with the
    compiled kernel, :mod:`planner.engine.run.native`, for every candidate in the same call:
    at ~0.1 us a candidate that is cheaper than selecting the fitting ones first); all
    outputs only for the rows kept.  Every value is the one a full
    :func:`evaluate_inputs` of the block gives, so the rows are the same.
    """
    compiled = native.available()
    columns = ("memory_per_gpu_bytes", *SEARCH_COLUMNS) if compiled else ("memory_per_gpu_bytes",)
    every = evaluate_columns(inputs, columns, compiled=compiled)
    memory = every["memory_per_gpu_bytes"]
    hbm = np.broadcast_to(np.asarray(inputs["hbm_bytes"], dtype=float), memory.shape)
    leanest = int(np.argmin(memory))
    fit_rows = np.flatnonzero(memory <= hbm)
    rows = fit_rows
    if fit_rows.size:
        if compiled:
            out = {k: every[k].take(fit_rows) for k in SEARCH_COLUMNS}
        else:
            fit_inputs = {k: v.take(fit_rows) if isinstance(v, np.ndarray) and v.ndim else v
                          for k, v in inputs.items()}
            out = evaluate_columns(fit_inputs, SEARCH_COLUMNS, compiled=False)
        out["fits"] = np.ones(fit_rows.size, dtype=bool)
        masks = [meets(out, s, constraints) for constraints in constraint_sets(s)]
        rows = fit_rows[best_rows(np.asarray(part["gpus"])[fit_rows], masks, out,
                                  reduced_columns(s))]
    # the kept rows' inputs (their flags recomputed from their layouts: the same values)
    out, feasible = evaluate_rows({k: v[rows] if np.ndim(v) else v for k, v in inputs.items()},
                                  {k: np.asarray(v)[rows] for k, v in part.items()}, s,
                                  compiled=compiled)
    return BlockBest(rows=rows, out=out, feasible=feasible, fitting=int(fit_rows.size),
                     min_memory_bytes=float(memory[leanest]),
                     min_memory_hbm_bytes=float(hbm[leanest]))


@dataclass(frozen=True)
class SearchTask:
    """One slice of one accelerator's layout space: what a worker needs, nothing else."""

    label: str  # the accelerator (or hardware point) searched
    inputs: dict  # scalar run-model inputs (SI)
    space: LayoutSpace
    start: int
    stop: int
    scenario: Scenario  # for the constraints (deadline, budget, power cap)


def search_tasks(label: str, inputs: dict, options: SpaceOptions, s: Scenario,
                 space: LayoutSpace | None = None) -> list[SearchTask]:
    """The tasks covering every layout of ``inputs``' model on its accelerator, in order
    (``space``: that layout space, when the caller has it already)."""
    space = space or layout_space(inputs, options)
    return [SearchTask(label, inputs, space, start, min(start + TASK_ROWS, space.size), s)
            for start in range(0, space.size, TASK_ROWS)]


def layout_space(inputs: dict, options: SpaceOptions) -> LayoutSpace:
    """The layout space of ``inputs``' model on its accelerator and node (built once per
    process for each set of arguments: most accelerators of a catalog share one)."""
    return shared_layout_space(
        layers=int(inputs["layers"]), heads=tp_split_heads(inputs),
        kv_heads=int(inputs["kv_heads"]), seq_len=int(inputs["seq_len"]),
        experts=int(inputs["experts"]), global_batch=int(inputs["global_batch"]),
        gpus_per_node=int(inputs["gpus_per_node"]),
        scale_up_domain=int(inputs["scale_up_domain_gpus"]),
        options=replace(options, dualpipe=int(inputs["dualpipe"]),
                        op_selective=int(inputs["op_selective_recompute"])))


def search_slice(task: SearchTask) -> dict:
    """The partial reduction of one task: kept rows (``KEEP_COLUMNS``, ``feasible``) and counts.

    Partial results combine by concatenation in task order (:func:`combine_slices`).
    """
    compiled = compiled_slice(task)  # it resolves the task's spare counts itself
    if compiled is not None:
        return compiled
    x = task.inputs
    # --spares auto: the spare counts of all the task's GPU counts searched together
    # first (batched; the blocks then find them cached, planner.engine.run.spares)
    resolve_spares({**x, "gpus": task.space.gpu_counts(task.start, task.stop).astype(float)})
    kept_blocks, evaluated, fitting, min_memory = [], 0, 0, (np.inf, np.nan)
    for part in task.space.blocks(PLAN_CHUNK, task.start, task.stop):
        inputs = {**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                      layers=x["layers"])}
        block = reduce_block(inputs, part, task.scenario)
        evaluated += len(part["gpus"])
        fitting += block.fitting
        if block.min_memory_bytes < min_memory[0]:
            min_memory = (block.min_memory_bytes, block.min_memory_hbm_bytes)
        if block.rows.size:
            kept_blocks.append({**{c: block.out[c] for c in KEEP_COLUMNS},
                                "feasible": block.feasible})
    return {"label": task.label, "evaluated": evaluated, "fitting": fitting,
            "min_memory": min_memory,
            "rows": {c: np.concatenate([b[c] for b in kept_blocks]) for c in kept_blocks[0]}
            if kept_blocks else None}


def compiled_slice(task: SearchTask) -> dict | None:
    """:func:`search_slice` by the compiled search loop (:mod:`planner.engine.search.native_search`),
    or ``None`` where it cannot run.  It keeps each of the task's groups' best rows over
    the whole task rather than over each block: the rows :func:`frontier_rows` keeps of
    them are the same."""
    s, x = task.scenario, task.inputs
    if not native.available():
        return None
    found = native_search.search(
        task.space, x, task.start, task.stop,
        outputs=needed_outputs(("memory_per_gpu_bytes", *SEARCH_COLUMNS)),
        objectives=reduced_columns(s),
        constraints=("wall_days", "cost_usd", "peak_power_mw"),
        limits=(s.deadline_days, s.budget_usd, s.max_power_mw), sets=constraint_sets(s))
    if found is None:
        return None
    rows = None
    if found.rows.size:
        out, feasible = evaluate_rows(x, task.space.take(found.rows), s, compiled=True)
        rows = {**{c: out[c] for c in KEEP_COLUMNS}, "feasible": feasible}
    min_memory = (np.inf, np.nan) if found.min_memory_row < 0 else \
        (found.min_memory_bytes, float(x["hbm_bytes"]))
    return {"label": task.label, "evaluated": task.stop - task.start, "fitting": found.fitting,
            "min_memory": min_memory, "rows": rows}


def evaluate_rows(x: dict, part: dict, s: Scenario, *, compiled: bool | None = None):
    """Every output of the layouts ``part`` (with their layout columns) and which are
    feasible under ``s``: the values of the rows a search keeps.  ``x``: the scalar inputs
    (any flags in it, e.g. a whole block's, are replaced by ``part``'s)."""
    inputs = {**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                  layers=x["layers"])}
    out = evaluate_inputs(inputs, compiled=compiled)
    out.update(part)
    return out, feasible_mask(out, s)


def side_by_side(tasks: list[SearchTask]) -> list[int]:
    """The order in which ``tasks`` are handed out: every accelerator's first slice, then
    every one's second, and so on.  Threads then search different accelerators at once
    rather than one's slices, whose first waits for the spare-count searches and GPU-count
    terms the others share (the Mixtral plan: 7.9 s instead of 8.1-8.7 s on two threads).
    The results are combined in search order whatever the order of the work."""
    return sorted(range(len(tasks)), key=lambda i: (tasks[i].start, i))


def combine_slices(partials: list[dict], s: Scenario | None = None):
    """(frontier DataFrame, evaluated, fitting, (min memory, its accelerator, its HBM)).

    The frontier holds the best row per (accelerator, GPU count) for every objective,
    among feasible rows and among all fitting rows - with ``s``, among the rows meeting
    each of its constraint sets (:func:`frontier_rows`) - in search order.
    """
    import pandas as pd

    evaluated = sum(p["evaluated"] for p in partials)
    fitting = sum(p["fitting"] for p in partials)
    min_memory = (np.inf, None)
    for p in partials:
        if p["min_memory"][0] < min_memory[0]:
            min_memory = (p["min_memory"][0], p["label"], p["min_memory"][1])
    kept = [p for p in partials if p["rows"] is not None]
    if not kept:
        return (pd.DataFrame(columns=["hardware", *KEEP_COLUMNS, "feasible"]), evaluated,
                fitting, min_memory)
    columns = {"hardware": np.concatenate([np.full(len(p["rows"]["feasible"]), p["label"],
                                                   dtype=object) for p in kept])}
    columns.update({c: np.concatenate([p["rows"][c] for p in kept]) for c in kept[0]["rows"]})
    rows = frontier_rows(columns, s)
    frontier = pd.DataFrame({k: v[rows] for k, v in columns.items()})
    frontier["recompute"] = frontier["recompute"].map(RECOMPUTE_NAMES)
    return frontier, evaluated, fitting, min_memory


def frontier_rows(columns: dict, s: Scenario | None = None) -> np.ndarray:
    """Indices of the rows kept by the whole search, increasing: per (accelerator, GPU
    count) - GPU count alone without a ``hardware`` column - and objective, the first
    minimum among feasible rows and among all rows; with ``s``, among the rows meeting
    each of its constraint sets (:func:`planner.engine.search.explain.constraint_sets`).

    Each block kept its own best rows (:func:`reduce_block`), which hold every group's
    best over the whole search; reducing them once more keeps exactly those, so the
    frontier (and its Pareto front) does not depend on where blocks or tasks begin.
    """
    keys = np.asarray(columns["gpus"], dtype=np.int64)
    if "hardware" in columns:  # several accelerators: one group per (accelerator, GPU count)
        _, codes = np.unique(columns["hardware"].astype(str), return_inverse=True)
        keys = codes.reshape(-1).astype(np.int64) * (1 << 40) + keys
    if s is None:
        return best_rows(keys, [np.asarray(columns["feasible"], dtype=bool), None], columns)
    return best_rows(keys, [meets(columns, s, c) for c in constraint_sets(s)], columns,
                     reduced_columns(s))


def best_rows(keys: np.ndarray, masks: list, columns: dict,
              names: tuple[str, ...] = tuple(OBJECTIVE_COLUMNS.values())) -> np.ndarray:
    """Indices of the rows that are, per key and column of ``names`` (``columns``: their
    values), the first minimum among the rows of each mask of ``masks`` (None: all rows);
    increasing.  Values are compared by their tie keys
    (:func:`planner.engine.run.reductions.tie_key`): near-ties go to the earlier row."""
    groups = [GroupMinimum(keys, mask) for mask in masks]
    return np.unique(np.concatenate([g.argmin(tie_key(columns[column]))
                                     for column in names for g in groups]))


def feasible_mask(out: dict, s: Scenario) -> np.ndarray:
    """The rows that fit and meet every constraint of ``s``."""
    return meets(out, s, active_constraints(s))


def resolve_hardware(catalog, names, tier: str = "on-demand") -> list[str]:
    """The accelerator ids of ``--hardware``: 'all', 'market' (those with a market price in
    ``tier``, :func:`planner.engine.economics.pricing.market_priced`) or ids."""
    if not names or list(names) == ["all"]:
        return sorted(catalog.accelerators)
    if list(names) == ["market"]:
        return market_priced(catalog, tier)
    for name in names:
        catalog.accelerator(name)  # raises with did-you-mean
    return list(names)


#: The keywords plan() takes besides its own: the fields of a Scenario.
_SCENARIO_FIELDS = frozenset(f.name for f in fields(Scenario))


def plan(scenario: Scenario | None = None, *, catalog=None, progress=None,
         options: SpaceOptions | None = None, scheduler: str | None = None,
         workers: int | None = None, **changes) -> PlanResult:
    """Best runs per objective across the catalog (see module docstring).

    ``scheduler``/``workers``: where the search tasks run (:mod:`planner.engine.search.distributed`);
    the result is the same on every scheduler.

    ``changes`` are :class:`Scenario` fields, checked as strictly as the CLI's flags and
    with their messages (:meth:`Scenario.validate`): a wrong value or kind raises
    :class:`planner.errors.CapplanError` before the search; ``hardware`` is a list of ids
    (or one comma-separated string), booleans stand for no count, ``catalog`` is a
    loaded catalog, an unknown ``provider`` is refused with the nearest names.
    """
    check_scheduler(scheduler, workers)
    for name in changes.keys() - _SCENARIO_FIELDS:  # as Python's own, with the nearest names
        raise TypeError(f"plan() got an unexpected keyword argument {name!r}; "
                        + suggestion(name, _SCENARIO_FIELDS))
    if isinstance(changes.get("hardware"), str):  # "h100-sxm,mi300x" as on the command line
        changes["hardware"] = [h.strip() for h in changes["hardware"].split(",") if h.strip()]
    s = (scenario or Scenario()).with_(**{k: tuple(v) if isinstance(v, list) else v
                                         for k, v in changes.items()})
    if s.deadline_days == float("inf"):  # the CLI's 'inf': no deadline
        s = s.with_(deadline_days=None)
    s.validate()
    check_catalog(catalog)
    if options is not None and not isinstance(options, SpaceOptions):
        raise CapplanError(f"options must be None or a SpaceOptions, got {shown(options)[:80]}")
    if catalog is None:
        catalog = load_catalog(s.catalog_dirs, s.price_files)
    check_provider(catalog, s.pricing, s.provider)
    started = time.perf_counter()
    names, tasks, skipped, prices = planned_tasks(s, catalog, options)
    searched = len(names) - len(skipped)
    workload.check_search(sum(t.stop - t.start for t in tasks),
                          f"{searched} accelerator{'s' * (searched != 1)}",
                          threads=workers or usable_cores(),
                          announce=False)  # the cap; the CLI announces the whole command
    order = side_by_side(tasks)
    handed_out = run_tasks(search_slice, [tasks[i] for i in order], scheduler=scheduler,
                           workers=workers, progress=progress,
                           labels=[tasks[i].label for i in order])
    partials = [None] * len(tasks)
    for i, partial in zip(order, handed_out, strict=True):
        partials[i] = partial  # back in search order
    frontier, evaluated, fitting, min_memory = combine_slices(partials, s)
    feasible_rows = frontier.loc[frontier["feasible"].astype(bool)]
    best = {obj: _argmin_row(feasible_rows, col) for obj, col in OBJECTIVE_COLUMNS.items()}
    per_hw = {}
    for hw, group in feasible_rows.groupby("hardware", sort=True):
        per_hw[hw] = {obj: _argmin_row(group, col) for obj, col in OBJECTIVE_COLUMNS.items()}
    knee = {hw: knee_row(group, s.knee_threshold)
            for hw, group in frontier.loc[frontier["fits"].astype(bool)].groupby("hardware", sort=True)}
    result = PlanResult(
        scenario=s, frontier=frontier, best=best, per_hardware=per_hw,
        pareto=pareto_rows(feasible_rows), knee=knee, evaluated=evaluated, fitting=fitting,
        seconds=time.perf_counter() - started, skipped=skipped,
        catalog_version=str(getattr(catalog, "version", "")), prices=prices,
        searched=searched_counts([hw for hw in names if hw not in skipped], partials),
        assumptions=scenario_assumptions(catalog, s, names))
    result.binding = {obj: binding(frontier, s, obj) for obj in OBJECTIVE_COLUMNS}
    if best[s.objective] is None:
        result.infeasible[s.objective] = explain_infeasible(s, frontier, min_memory)
    if prices:
        result.rent_vs_buy = {obj: rent_vs_buy(catalog, s, row, prices[row["hardware"]])
                              for obj, row in best.items() if row is not None}
        result.cost_parts = {obj: cost_parts(catalog, s, row)
                             for obj, row in best.items() if row is not None}
    if s.pricing == "spot":
        result.spot_vs_on_demand = {obj: spot_versus_on_demand(catalog, s, row)
                                    for obj, row in best.items() if row is not None}
    return result


def planned_tasks(s: Scenario, catalog, options: SpaceOptions | None = None):
    """(accelerators named, search tasks, skipped accelerator -> why, prices) of a search
    of the validated scenario ``s``: what :func:`plan` will evaluate."""
    model = catalog.model(s.model)
    options = options or SpaceOptions()
    options = SpaceOptions(**{**options.__dict__, "min_gpus": s.min_gpus,
                              "max_gpus": s.max_gpus})
    if s.global_batch_range is not None:  # the batch chosen per layout in the range
        options = replace(options, global_batch=batch_candidates(*s.global_batch_range))
    options.validate()
    tasks, skipped, prices = [], {}, {}
    names = resolve_hardware(catalog, s.hardware, s.pricing)
    for hw in names:
        try:
            x = base_inputs(catalog, RunChoices.from_scenario(s, hw, model=model))
            prices[hw] = price_quote(catalog, catalog.accelerator(hw), s.pricing,
                                     s.provider, s.spot_interruption).as_dict()
        except CapplanError as exc:  # e.g. no fp8 on this accelerator, no spot price
            skipped[hw] = str(exc)
            continue
        if s.ownership:  # [ownership] of a scenario file: the owned cluster's parameters
            x.update(ownership_inputs(float(catalog.accelerator(hw).purchase_price_usd.value),
                                      s.ownership))
        x.update(s.extra)  # run-model input overrides (SI), e.g. for sensitivity studies
        tasks += search_tasks(hw, x, options, s.for_hardware(hw))
    return names, tasks, skipped, prices


def search_size(scenario: Scenario, catalog=None) -> tuple[int, int]:
    """(candidates, accelerators searched) of :func:`plan` of ``scenario``, counted without
    evaluating any (the layout spaces it builds are the search's own, cached)."""
    s = scenario.with_(deadline_days=None) if scenario.deadline_days == float("inf") \
        else scenario
    s.validate()
    catalog = load_catalog(s.catalog_dirs, s.price_files) if catalog is None else catalog
    names, tasks, skipped, _ = planned_tasks(s, catalog)
    return sum(t.stop - t.start for t in tasks), len(names) - len(skipped)


def searched_counts(names: list[str], partials: list[dict]) -> dict[str, dict]:
    """Accelerator -> layouts evaluated, fitting, and the leanest memory per GPU with its
    HBM, over its slices (``names``: the accelerators searched, in order)."""
    counts = {}
    for p in partials:
        c = counts.setdefault(p["label"], {"evaluated": 0, "fitting": 0,
                                           "min_memory_bytes": np.inf, "hbm_bytes": np.nan})
        c["evaluated"] += p["evaluated"]
        c["fitting"] += p["fitting"]
        if p["min_memory"][0] < c["min_memory_bytes"]:
            c["min_memory_bytes"], c["hbm_bytes"] = p["min_memory"]
    empty = {"evaluated": 0, "fitting": 0, "min_memory_bytes": np.inf, "hbm_bytes": np.nan}
    return {hw: counts.get(hw, dict(empty)) for hw in names}  # no slice: no layout


def _argmin_row(frame, column) -> dict | None:
    """The row of the least ``column`` (near-ties, :func:`tie_key`, to the first row)."""
    if frame is None or len(frame) == 0:
        return None
    return frame.iloc[first_least(frame[column].to_numpy(dtype=float))].to_dict()


def pareto_rows(frame) -> list[dict]:
    """Non-dominated rows over (wall time, cost, energy), fastest first."""
    if len(frame) == 0:
        return []
    values = tie_key(frame[["wall_time_s", "cost_usd", "energy_kwh"]].to_numpy(dtype=float))
    front = frame[pareto_mask(values)].sort_values(["wall_time_s", "cost_usd", "energy_kwh"])
    return [row for _, row in front.iterrows()]


def scaling_curve(frame) -> tuple[np.ndarray, np.ndarray]:
    """Best wall time per GPU count, keeping only counts that are faster than all smaller ones."""
    best = frame.groupby("gpus")["wall_time_s"].min().sort_index()
    gpus = best.index.to_numpy(dtype=float)
    times = best.to_numpy(dtype=float)
    keep = (times < np.minimum.accumulate(np.r_[np.inf, times[:-1]])) & np.isfinite(times)
    return gpus[keep], times[keep]


def marginal_efficiency(gpus: np.ndarray, times: np.ndarray) -> np.ndarray:
    """d ln(speed) / d ln(GPUs) along the lower convex hull of (ln N, ln T).

    1 means perfect scaling (twice the GPUs, half the time), 0 no gain.  The
    hull removes the zig-zag of discrete layouts; entry i is the efficiency of
    the hull segment ending at point i (NaN for points not on the hull and for
    the first point).
    """
    lx, ly = np.log(gpus), np.log(times)
    hull = []
    for i in range(len(lx)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (lx[b] - lx[a]) * (ly[i] - ly[a]) - (ly[b] - ly[a]) * (lx[i] - lx[a])
            if cross < -1e-12:  # keep collinear points
                hull.pop()
            else:
                break
        hull.append(i)
    eff = np.full(len(lx), np.nan)
    for a, b in zip(hull[:-1], hull[1:], strict=False):
        eff[b] = -(ly[b] - ly[a]) / (lx[b] - lx[a])
    return eff


def knee_row(frame, threshold: float) -> dict | None:
    """The largest cluster whose marginal scaling efficiency is still >= ``threshold``
    (``beyond_range``: it is the largest cluster of the scaling curve, so the search saw no
    knee; ``marginal_efficiency``: the efficiency of the segment ending at it)."""
    if len(frame) == 0:
        return None
    gpus, times = scaling_curve(frame)
    if gpus.size == 0:  # no finite wall time: no scaling curve, no knee
        return None
    eff = marginal_efficiency(gpus, times)
    ok = np.flatnonzero(np.nan_to_num(eff, nan=-1) >= threshold)
    # the knee is the end of the last segment that still scales well; with none, the smallest
    n_knee = gpus[ok[-1]] if ok.size else gpus[0]
    rows = frame[frame["gpus"] == n_knee]
    row = rows.loc[rows["wall_time_s"].idxmin()].to_dict()
    row["marginal_efficiency"] = float(eff[ok[-1]]) if ok.size else float("nan")
    # the curve still scales well at its largest cluster: the knee lies beyond the range
    row["beyond_range"] = bool(ok.size and ok[-1] == gpus.size - 1)
    return row


def require(result: PlanResult, objective: str) -> dict:
    """The best row for ``objective`` or a CapplanError (exit 1) explaining why not."""
    row = result.best.get(objective)
    if row is None:
        raise CapplanError(result.infeasible.get(objective) or explain_infeasible(
            result.scenario, result.frontier, (np.inf, None)), exit_code=INFEASIBLE)
    return row


__all__ = ["plan", "PlanResult", "OBJECTIVES", "pareto_mask", "marginal_efficiency",
           "knee_row", "require", "explain_infeasible"]
