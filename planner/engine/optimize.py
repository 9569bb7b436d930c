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
from dataclasses import dataclass, field

import numpy as np

from planner.engine.evaluator import base_inputs, evaluate_inputs
from planner.engine.scenario import OBJECTIVES, Scenario
from planner.engine.space import RECOMPUTE_NAMES, SpaceOptions, enumerate_layouts, layout_flags
from planner.errors import INFEASIBLE, CapplanError

#: Candidates reduced at a time (the kernel itself runs on smaller cache-sized chunks).
PLAN_CHUNK = 65536

#: Objective -> the column minimised.
OBJECTIVE_COLUMNS = {"time": "wall_time_s", "cost": "cost_usd", "energy": "energy_kwh",
                     "carbon": "co2e_kg"}
KEEP_COLUMNS = (
    "gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "recompute", "zero",
    "sequence_parallel", "step_time_s", "compute_s", "launch_s", "tp_comm_s", "cp_comm_s", "ep_comm_s",
    "pp_comm_s", "dp_comm_s", "bubble_s", "optimizer_s", "straggler_s",
    "memory_per_gpu_bytes", "weights_bytes", "grads_bytes", "optimizer_state_bytes",
    "activation_bytes", "reserve_bytes", "hbm_bytes", "fits", "tokens_per_s",
    "tflops_per_gpu", "mfu", "hfu", "steps", "system_mtbf_s", "checkpoint_bytes",
    "checkpoint_stall_s", "checkpoint_interval_s", "young_interval_s", "restart_s",
    "expected_failures", "waste_fraction", "ettr", "solve_time_s", "wall_time_s", "wall_days",
    "gpu_hours", "energy_kwh", "energy_it_kwh", "energy_gpu_kwh", "energy_mwh", "avg_power_mw", "peak_power_mw",
    "cost_usd", "cost_cloud_usd", "cost_tco_usd", "co2e_kg", "co2e_operational_kg",
    "co2e_embodied_kg", "co2e_t",
)


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
    binding: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    catalog_version: str = ""


def _group_best(keys: np.ndarray, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Indices of the minimum of ``values`` per distinct key among rows where ``mask``."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((values[idx], keys[idx]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    return order[first]


def feasible_mask(out: dict, s: Scenario) -> np.ndarray:
    ok = out["fits"].copy()
    if s.deadline_days is not None:
        ok &= out["wall_days"] <= s.deadline_days
    if s.budget_usd is not None:
        ok &= out["cost_usd"] <= s.budget_usd
    if s.max_power_mw is not None:
        ok &= out["peak_power_mw"] <= s.max_power_mw
    return ok


def resolve_hardware(catalog, names) -> list[str]:
    if not names or list(names) == ["all"]:
        return sorted(catalog.accelerators)
    for name in names:
        catalog.accelerator(name)  # raises with did-you-mean
    return list(names)


def plan(scenario: Scenario | None = None, *, catalog=None, progress=None,
         options: SpaceOptions | None = None, **changes) -> PlanResult:
    """Best runs per objective across the catalog (see module docstring)."""
    import pandas as pd

    if isinstance(changes.get("hardware"), str):  # "h100-sxm,mi300x" as on the command line
        changes["hardware"] = [h.strip() for h in changes["hardware"].split(",") if h.strip()]
    s = (scenario or Scenario()).with_(**{k: tuple(v) if isinstance(v, list) else v
                                         for k, v in changes.items()})
    if s.deadline_days == float("inf"):  # the CLI's 'inf': no deadline
        s = s.with_(deadline_days=None)
    s.validate()
    if catalog is None:
        from hardware_catalog import load_catalog

        catalog = load_catalog(s.catalog_dirs)
    started = time.perf_counter()
    model = catalog.model(s.model)
    options = options or SpaceOptions()
    options = SpaceOptions(**{**options.__dict__, "min_gpus": s.min_gpus,
                              "max_gpus": s.max_gpus})
    options.validate()
    kept, evaluated, fitting, skipped = [], 0, 0, {}
    min_memory = (np.inf, None)
    names = resolve_hardware(catalog, s.hardware)
    for position, hw in enumerate(names):
        if progress is not None:
            progress(position, len(names), hw)
        try:
            x = base_inputs(catalog, model=model, hardware=hw, site=s.site,
                            reliability=s.reliability, precision=s.precision,
                            checkpoint=s.checkpoint, cost_basis=s.cost_basis,
                            seq_len=s.seq_len, tokens=s.tokens, global_batch=s.global_batch)
        except CapplanError as exc:  # e.g. no fp8 on this accelerator
            skipped[hw] = str(exc)
            continue
        x.update(s.extra)  # run-model input overrides (SI), e.g. for sensitivity studies
        layout = enumerate_layouts(
            layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
            seq_len=int(x["seq_len"]), experts=int(x["experts"]),
            global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
            scale_up_domain=int(x["scale_up_domain_gpus"]), options=options)
        n = len(layout["gpus"])
        for start in range(0, n, PLAN_CHUNK):
            part = {k: v[start:start + PLAN_CHUNK] for k, v in layout.items()}
            inputs = {**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                               layers=x["layers"])}
            out = evaluate_inputs(inputs)
            out.update(part)
            evaluated += len(part["gpus"])
            fitting += int(out["fits"].sum())
            i = int(np.argmin(out["memory_per_gpu_bytes"]))
            if out["memory_per_gpu_bytes"][i] < min_memory[0]:
                min_memory = (float(out["memory_per_gpu_bytes"][i]), hw,
                              float(out["hbm_bytes"][i]))
            feasible = feasible_mask(out, s)
            keys = out["gpus"]
            rows = set()
            for column in OBJECTIVE_COLUMNS.values():
                rows.update(_group_best(keys, out[column], feasible).tolist())
                rows.update(_group_best(keys, out[column], out["fits"]).tolist())
            rows = np.array(sorted(rows), dtype=int)
            if rows.size:
                frame = pd.DataFrame({c: out[c][rows] for c in KEEP_COLUMNS})
                frame.insert(0, "hardware", hw)
                frame["feasible"] = feasible[rows]
                kept.append(frame)
    if progress is not None:
        progress(len(names), len(names), "")
    if not kept:
        frontier = pd.DataFrame(columns=["hardware", *KEEP_COLUMNS, "feasible"])
    else:
        frontier = pd.concat(kept, ignore_index=True)
        frontier["recompute"] = frontier["recompute"].map(RECOMPUTE_NAMES)
        frontier = frontier.drop_duplicates(
            subset=["hardware", "gpus", "tp", "pp", "cp", "ep", "vp", "micro_batch",
                    "recompute", "zero", "sequence_parallel"]).reset_index(drop=True)
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
        catalog_version=str(getattr(catalog, "version", "")))
    if best[s.objective] is None:
        result.binding[s.objective] = explain_infeasible(s, frontier, min_memory)
    return result


def _argmin_row(frame, column) -> dict | None:
    if frame is None or len(frame) == 0:
        return None
    return frame.loc[frame[column].idxmin()].to_dict()


def pareto_mask(values: np.ndarray) -> np.ndarray:
    """True for rows of ``values`` (n x k, minimised) that no other row dominates."""
    n = len(values)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        if not keep[i]:
            continue
        dominated = np.all(values <= values[i], axis=1) & np.any(values < values[i], axis=1)
        if dominated.any():
            keep[i] = False
    return keep


def pareto_rows(frame) -> list[dict]:
    """Non-dominated rows over (wall time, cost, energy), fastest first."""
    if len(frame) == 0:
        return []
    values = frame[["wall_time_s", "cost_usd", "energy_kwh"]].to_numpy(dtype=float)
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
    """The largest cluster whose marginal scaling efficiency is still >= ``threshold``."""
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
    return row


def explain_infeasible(s: Scenario, frontier, min_memory) -> str:
    """One paragraph: which constraint binds and the nearest feasible alternative."""
    fits = frontier.loc[frontier["fits"].astype(bool)]
    finite = np.isfinite(fits[["wall_days", "cost_usd", "peak_power_mw"]].to_numpy(dtype=float))
    fits = fits.loc[finite.all(axis=1)]  # rows whose totals overflowed explain nothing
    if len(fits) == 0:
        need, hw, hbm = (min_memory + (None, None))[:3]
        if hw is None:
            return (f"No layout of {s.model} exists for GPU counts {s.min_gpus}..{s.max_gpus} "
                    "with this global batch; widen the GPU range or change --global-batch.")
        return (f"Nothing fits in memory: the leanest layout of {s.model} needs "
                f"{need / 1e9:.1f} GB per GPU (on {hw}, {hbm / 1e9:.0f} GB HBM). "
                "Allow more GPUs (--max-gpus), full recompute, ZeRO-3, or larger-memory "
                "accelerators.")
    parts = []
    if s.deadline_days is not None:
        row = fits.loc[fits["wall_days"].idxmin()]
        if row["wall_days"] > s.deadline_days:
            parts.append(f"the deadline of {s.deadline_days:g} days binds: the fastest plan "
                         f"takes {row['wall_days']:.1f} days ({row['hardware']}, "
                         f"{int(row['gpus']):,} GPUs, {row['cost_usd']:,.0f} USD)")
    if s.budget_usd is not None:
        row = fits.loc[fits["cost_usd"].idxmin()]
        if row["cost_usd"] > s.budget_usd:
            parts.append(f"the budget of {s.budget_usd:,.0f} USD binds: the cheapest plan "
                         f"costs {row['cost_usd']:,.0f} USD ({row['hardware']}, "
                         f"{int(row['gpus']):,} GPUs, {row['wall_days']:.1f} days)")
    if s.max_power_mw is not None:
        row = fits.loc[fits["peak_power_mw"].idxmin()]
        if row["peak_power_mw"] > s.max_power_mw:
            parts.append(f"the power cap of {s.max_power_mw:g} MW binds: the leanest plan "
                         f"peaks at {row['peak_power_mw']:.2f} MW")
    if not parts:
        parts.append("the constraints together bind (each alone can be met)")
        for column, label in (("wall_days", "fastest"), ("cost_usd", "cheapest")):
            row = fits.loc[fits[column].idxmin()]
            parts.append(f"the {label} plan is {row['hardware']} x {int(row['gpus']):,}: "
                         f"{row['wall_days']:.1f} days, {row['cost_usd']:,.0f} USD")
    return "No plan meets the constraints: " + "; ".join(parts) + "."


def require(result: PlanResult, objective: str) -> dict:
    """The best row for ``objective`` or a CapplanError (exit 1) explaining why not."""
    row = result.best.get(objective)
    if row is None:
        raise CapplanError(result.binding.get(objective) or explain_infeasible(
            result.scenario, result.frontier, (np.inf, None)), exit_code=INFEASIBLE)
    return row


__all__ = ["plan", "PlanResult", "OBJECTIVES", "pareto_mask", "marginal_efficiency",
           "knee_row", "require"]
