"""Hardware co-design: search every layout and GPU count on a grid of hypothetical accelerators.

A grid varies some parameters of one catalog accelerator (``--vary hbm_bytes=80e9,141e9``,
``--vary peak_bf16=0.5x..2x:5``); every point of the grid is planned like a catalog
accelerator (:func:`planner.engine.search.optimize.search_slice`: the best rows per GPU count and
objective among the candidates that fit and among the feasible ones), then reduced to the
best row per objective and the Pareto front over (wall time, cost, energy) of those
rows -- the same reductions as ``capplan plan``.  The catalog accelerator itself is
point 0, the reference of every ratio.

Points are batched into tasks of about :data:`planner.engine.search.optimize.TASK_ROWS` layouts
and run by :func:`planner.engine.search.distributed.run_tasks` in process or on Dask; the result
lists the points in grid order whatever the scheduler.

>>> grid = parse_vary(["hbm_bytes=80e9,160e9"])
>>> grid[0].name, grid[0].values
('hbm_bytes', (80000000000.0, 160000000000.0))
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from hardware_catalog import load_catalog
from planner.engine.economics.ownership import ownership_inputs
from planner.engine.inputs.domains import check
from planner.engine.inputs.scenario import Scenario, attention_precision, gemm_precision
from planner.engine.layouts.space import RECOMPUTE_NAMES, SpaceOptions
from planner.engine.run.columns import plan_summary
from planner.engine.run.reductions import pareto_mask
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.search.distributed import check_scheduler, run_tasks
from planner.engine.search.optimize import (
    OBJECTIVE_COLUMNS,
    TASK_ROWS,
    frontier_rows,
    layout_space,
    search_slice,
    search_tasks,
)
from planner.errors import CapplanError, did_you_mean, one_line


@dataclass(frozen=True)
class Parameter:
    """A parameter a co-design grid may vary: the catalog field, its kernel input, its unit."""

    name: str  # accelerator (or node) field of the catalog
    input: str  # the run-model input it sets
    unit: str
    integer: bool = False
    per_user_unit: str = ""  # how the kernel input follows from the value (see input_scale)


#: Every parameter ``--vary`` accepts, by catalog field name.
PARAMETERS = {p.name: p for p in (
    Parameter("peak_bf16_flops_per_s", "peak_flops_per_s", "FLOP/s"),
    Parameter("peak_fp8_flops_per_s", "peak_flops_per_s", "FLOP/s"),
    Parameter("peak_tf32_flops_per_s", "peak_flops_per_s", "FLOP/s"),
    Parameter("hbm_bytes", "hbm_bytes", "B"),
    Parameter("hbm_bandwidth_bytes_per_s", "hbm_bandwidth_bytes_per_s", "B/s"),
    Parameter("scale_up_domain_gpus", "scale_up_domain_gpus", "GPUs", integer=True),
    Parameter("scale_up_bandwidth_bytes_per_s", "scale_up_bandwidth_bytes_per_s", "B/s"),
    Parameter("nic_bandwidth_bits_per_s", "scale_out_bandwidth_bytes_per_s", "bit/s",
              per_user_unit="nic"),
    Parameter("max_power_w", "max_power_w", "W"),
    Parameter("idle_power_w", "idle_power_w", "W"),
    Parameter("gemm_max_efficiency", "gemm_max_efficiency", "1"),
    Parameter("hbm_efficiency", "hbm_efficiency", "1"),
    Parameter("cloud_price_usd_per_gpu_hour", "price_usd_per_gpu_hour", "USD/GPU-h"),
    Parameter("purchase_price_usd", "capex_usd_per_gpu", "USD", per_user_unit="capex"),
    Parameter("embodied_kg_co2e", "embodied_kg_per_gpu", "kg"),
)}

#: Short names: name -> (parameter, factor from the short name's unit to the field's unit).
ALIASES = {
    "peak_bf16": ("peak_bf16_flops_per_s", 1.0),
    "peak_fp8": ("peak_fp8_flops_per_s", 1.0),
    "peak_tf32": ("peak_tf32_flops_per_s", 1.0),
    "hbm_bandwidth": ("hbm_bandwidth_bytes_per_s", 1.0),
    "scale_up_domain": ("scale_up_domain_gpus", 1.0),
    "scale_up_bandwidth": ("scale_up_bandwidth_bytes_per_s", 1.0),
    "nic_gbps": ("nic_bandwidth_bits_per_s", 1e9),
    "price": ("cloud_price_usd_per_gpu_hour", 1.0),
}

#: Most values on one axis, and most hardware points in a grid.
MAX_AXIS_VALUES = 10_000
MAX_POINTS = 10**6

_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
_VALUE = re.compile(rf"^({_NUMBER})(x?)$")
_RANGE = re.compile(rf"^({_NUMBER})(x?)\.\.({_NUMBER})(x?):([0-9]+)$")


@dataclass(frozen=True)
class Axis:
    """One varied parameter: its values, absolute (field units) or relative (``x``)."""

    name: str  # a key of PARAMETERS
    values: tuple[float, ...]
    relative: tuple[bool, ...]


def parse_vary(specs: list[str]) -> list[Axis]:
    """Axes from ``NAME=SPEC`` strings; SPEC is ``v1,v2,...`` or ``lo..hi:n`` (geometric).

    A value ending in ``x`` is relative to the catalog accelerator (``0.5x``); others
    are absolute, in the field's unit (``nic_gbps`` in Gbit/s).  ``lo..hi:n`` gives ``n``
    geometrically spaced values from ``lo`` to ``hi`` (``0.5x..2x:5`` = 0.5x, 0.71x,
    1x, 1.41x, 2x).  Only plain decimal numbers are read (never evaluated).
    """
    axes, seen = [], set()
    for spec in specs:
        if "=" not in spec:
            raise CapplanError(f"--vary '{one_line(spec)}' is not NAME=VALUES "
                               "(e.g. hbm_bytes=80e9,141e9 or peak_bf16=0.5x..2x:5)")
        name, text = (part.strip() for part in spec.split("=", 1))
        field, factor = ALIASES.get(name, (name, 1.0))
        if field not in PARAMETERS:
            raise did_you_mean("--vary parameter", name, [*PARAMETERS, *ALIASES])
        if field in seen:
            raise CapplanError(f"--vary {name}: {field} is varied twice")
        seen.add(field)
        values, relative = _values(name, text)
        values = tuple(v if rel else v * factor for v, rel in zip(values, relative, strict=True))
        axes.append(Axis(field, values, relative))
    points = math.prod(len(a.values) for a in axes)
    if points > MAX_POINTS:
        raise CapplanError(f"--vary: the grid has {points:,} hardware points; at most "
                           f"{MAX_POINTS:,} are allowed")
    return axes


def _values(name: str, text: str) -> tuple[tuple[float, ...], tuple[bool, ...]]:
    usage = (f"--vary {one_line(name)}='{one_line(text)}': expected numbers v1,v2,... or a "
             "range lo..hi:n (n >= 2 points, geometric); a value ending in x is relative "
             "to the catalog accelerator (e.g. 0.5x..2x:5 or 80e9,141e9)")
    match = _RANGE.match(text)
    if match:
        lo, lo_rel, hi, hi_rel, count = match.groups()
        count = int(count)
        if lo_rel != hi_rel or not 2 <= count <= MAX_AXIS_VALUES or float(lo) <= 0 \
                or float(hi) <= 0:
            raise CapplanError(usage + f"; both ends > 0, both relative or both absolute, "
                               f"2 <= n <= {MAX_AXIS_VALUES:,}")
        values = np.geomspace(float(lo), float(hi), count)
        values[0], values[-1] = float(lo), float(hi)  # exact ends
        return tuple(float(v) for v in values), (lo_rel == "x",) * count
    items = [t.strip() for t in text.split(",")]
    matches = [_VALUE.match(t) for t in items]
    if not items or not all(matches) or len(items) > MAX_AXIS_VALUES:
        raise CapplanError(usage)
    values = tuple(float(m.group(1)) for m in matches)
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise CapplanError(usage + "; every value must be > 0")
    return values, tuple(m.group(2) == "x" for m in matches)


def input_scale(parameter: Parameter, node) -> float:
    """Kernel-input units per field unit (the per-GPU scale-out bandwidth of a NIC speed;
    the capital per GPU of a purchase price, with its node, network and storage share)."""
    if parameter.per_user_unit == "nic":
        return float(node.nics_per_node) / 8.0 / float(node.gpus_per_node)
    if parameter.per_user_unit == "capex":
        return ownership_inputs(1.0)["capex_usd_per_gpu"]
    return 1.0


@dataclass(frozen=True)
class HardwarePoint:
    """One hypothetical accelerator: the field values it changes, and its kernel inputs."""

    index: int
    values: dict  # field -> value (field units)
    inputs: dict


def kernel_inputs(parameter: Parameter, precision: str) -> tuple[str, ...]:
    """The kernel inputs a varied field sets in a run at ``precision``: a peak sets the
    GEMMs' peak if it is the run's precision and the attention core's if the core runs in
    it (BF16 under FP8/FP4, :func:`planner.engine.inputs.scenario.attention_precision`);
    the (BF16) large-GEMM efficiency likewise sets the GEMMs' and the attention core's."""
    gemm = gemm_precision(precision)  # a recipe's GEMM peak (mxfp8 -> fp8)
    if parameter.input == "gemm_max_efficiency":
        return tuple(name for name, used in (
            ("gemm_max_efficiency", gemm == "bf16"),
            ("attention_gemm_max_efficiency", attention_precision(precision) == "bf16"))
            if used) or (parameter.input,)
    if parameter.input != "peak_flops_per_s":
        return (parameter.input,)
    own = parameter.name.removeprefix("peak_").removesuffix("_flops_per_s")
    inputs = tuple(name for name, used in (
        ("peak_flops_per_s", own == gemm),
        ("attention_peak_flops_per_s", own == attention_precision(precision))) if used)
    if not inputs:
        raise CapplanError(f"--vary {parameter.name}: the run uses --precision {precision}; "
                           f"vary peak_{gemm}_flops_per_s (peak_{gemm}) instead")
    return inputs


def hardware_points(x: dict, axes: list[Axis], node, precision: str) -> list[HardwarePoint]:
    """Point 0 = the catalog accelerator (``x``), then the grid in order (last axis fastest)."""
    scales, bases, targets = {}, {}, {}
    for axis in axes:
        p = PARAMETERS[axis.name]
        targets[axis.name] = kernel_inputs(p, precision)
        scales[axis.name] = input_scale(p, node)
        bases[axis.name] = float(x[targets[axis.name][0]]) / scales[axis.name]
    points = [HardwarePoint(0, {a.name: bases[a.name] for a in axes}, dict(x))]
    for combo in itertools.product(*(range(len(a.values)) for a in axes)):
        values, inputs = {}, dict(x)
        for axis, i in zip(axes, combo, strict=True):
            v = axis.values[i] * bases[axis.name] if axis.relative[i] else axis.values[i]
            p = PARAMETERS[axis.name]
            if p.integer:
                if abs(v - round(v)) > 1e-9 * max(1.0, abs(v)) or v < 1:
                    raise CapplanError(f"--vary {axis.name}: values must be whole numbers "
                                       f">= 1, got {v:g}")
                v = float(round(v))
            values[axis.name] = v
            for name in targets[axis.name]:
                inputs[name] = v * scales[axis.name]
        for axis in axes:  # named by the field the user varied (it may set two inputs)
            check({name: inputs[name] for name in targets[axis.name]},
                  where=f"--vary {axis.name}")
        points.append(HardwarePoint(len(points), values, inputs))
    return points


@dataclass(frozen=True)
class PointsTask:
    """A batch of hardware points searched by one worker."""

    points: tuple[HardwarePoint, ...]
    hardware: str
    options: SpaceOptions
    scenario: Scenario
    spaces: dict  # scale-up domain -> its LayoutSpace (the only varied input that shapes it)


def point_batches(points, hardware: str, options: SpaceOptions, s: Scenario,
                  rows: int = TASK_ROWS) -> list[PointsTask]:
    """Consecutive points in tasks of about ``rows`` layouts (at least one point each)."""
    spaces = {}
    for point in points:
        domain = point.inputs["scale_up_domain_gpus"]
        if domain not in spaces:
            spaces[domain] = layout_space(point.inputs, options)
    tasks, batch, size = [], [], 0

    def flush():
        used = {p.inputs["scale_up_domain_gpus"] for p in batch}
        tasks.append(PointsTask(tuple(batch), hardware, options, s,
                                {d: spaces[d] for d in sorted(used)}))

    for point in points:
        size += spaces[point.inputs["scale_up_domain_gpus"]].size
        batch.append(point)
        if size >= rows:
            flush()
            batch, size = [], 0
    if batch:
        flush()
    return tasks


def search_points(task: PointsTask) -> list[dict]:
    """Per point of the batch: evaluated and fitting counts, best row per objective, Pareto rows."""
    return [reduce_point(point, task) for point in task.points]


def reduce_point(point: HardwarePoint, task: PointsTask) -> dict:
    """Search every layout of one point; the best feasible row per objective and the Pareto
    front (wall time, cost, energy) of the kept rows, as in ``capplan plan``."""
    space = task.spaces[point.inputs["scale_up_domain_gpus"]]
    partials = [search_slice(t) for t in search_tasks(task.hardware, point.inputs, task.options,
                                                       task.scenario, space)]
    kept = [p["rows"] for p in partials if p["rows"] is not None]
    result = {"index": point.index, "values": point.values,
              "evaluated": sum(p["evaluated"] for p in partials),
              "fitting": sum(p["fitting"] for p in partials), "best": {}, "pareto": []}
    if not kept:
        result["best"] = dict.fromkeys(OBJECTIVE_COLUMNS)
        return result
    rows = {c: np.concatenate([k[c] for k in kept]) for c in kept[0]}
    frontier = frontier_rows(rows)  # the best per GPU count and objective, as plan keeps
    rows = {c: v[frontier] for c, v in rows.items()}
    feasible = np.flatnonzero(rows["feasible"].astype(bool))
    for objective, column in OBJECTIVE_COLUMNS.items():
        values = rows[column][feasible]
        finite = ~np.isnan(values)
        result["best"][objective] = None if not finite.any() else _row(
            rows, feasible[np.flatnonzero(finite)[np.argmin(values[finite])]], task.hardware)
    if feasible.size:
        values = np.column_stack([rows[c][feasible] for c in
                                  ("wall_time_s", "cost_usd", "energy_kwh")]).astype(float)
        front = feasible[pareto_mask(values)]
        order = np.lexsort((rows["energy_kwh"][front], rows["cost_usd"][front],
                            rows["wall_time_s"][front]))
        result["pareto"] = [_row(rows, i, task.hardware) for i in front[order]]
    return result


def _row(rows: dict, i: int, hardware: str) -> dict:
    """One kept row with the plan-summary columns (plain Python values)."""
    row = {"hardware": hardware}
    for c in plan_summary():
        if c.name == "hardware":
            continue
        v = rows[c.name][i]
        row[c.name] = RECOMPUTE_NAMES[int(v)] if c.name == "recompute" else v.item()
    return row


@dataclass
class CodesignResult:
    """Points in grid order (point 0: the catalog accelerator) and the axes varied."""

    scenario: Scenario
    hardware: str
    axes: list[Axis]
    points: list[dict]
    evaluated: int


def codesign(scenario: Scenario, hardware: str, vary: list[str], *, catalog=None,
             options: SpaceOptions | None = None, scheduler: str | None = None,
             workers: int | None = None, progress=None) -> CodesignResult:
    """Plan ``scenario`` on every point of the grid ``vary`` around accelerator ``hardware``."""
    check_scheduler(scheduler, workers)
    s = scenario
    if s.deadline_days == float("inf"):
        s = s.with_(deadline_days=None)
    s.validate()
    axes = parse_vary(list(vary))
    if catalog is None:
        catalog = load_catalog(s.catalog_dirs, s.price_files)
    accelerator = catalog.accelerator(hardware)
    options = options or SpaceOptions()
    options = SpaceOptions(**{**options.__dict__, "min_gpus": s.min_gpus, "max_gpus": s.max_gpus})
    options.validate()
    x = base_inputs(catalog, RunChoices.from_scenario(s, hardware))
    x.update(s.extra)
    points = hardware_points(x, axes, catalog.node(accelerator.node), s.precision)
    tasks = point_batches(points, hardware, options, s)
    batches = run_tasks(search_points, tasks, scheduler=scheduler, workers=workers,
                        progress=progress,
                        labels=[f"points {t.points[0].index}-{t.points[-1].index}"
                                for t in tasks])
    results = [point for batch in batches for point in batch]
    return CodesignResult(scenario=s, hardware=hardware, axes=axes, points=results,
                          evaluated=sum(p["evaluated"] for p in results))
