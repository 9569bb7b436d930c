"""The compiled search loop (planner.engine.search.native_search): its layouts and flags are
layout_flags' bit for bit, it keeps the rows the numpy block loop keeps, and a plan gives
the same answer through it, on threads or not."""

from __future__ import annotations

import os

import numpy as np
import pytest

import planner.engine.search.optimize as optimize
from planner.engine.layouts.space import SpaceOptions, layout_flags
from planner.engine.run import native
from planner.engine.run.kernel_run import evaluate_columns, needed_outputs
from planner.engine.run.reductions import GroupMinimum, tie_key
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.run.spares import resolve_spares
from planner.engine.search import native_search
from planner.engine.search.optimize import (
    OBJECTIVE_COLUMNS,
    SEARCH_COLUMNS,
    feasible_mask,
    layout_space,
    plan,
)

#: The extension is built by `pip install` wherever a compiler is found; under CI=true a
#: missing one is a failure, not a skip.
needs_compiler = pytest.mark.skipif(not native.available() and os.environ.get("CI") != "true",
                                    reason="the compiled extension is not installed")

OUTPUTS = needed_outputs(("memory_per_gpu_bytes", *SEARCH_COLUMNS))
OBJECTIVES = tuple(OBJECTIVE_COLUMNS.values())
CONSTRAINTS = ("wall_days", "cost_usd", "peak_power_mw")
KEYWORDS = {"outputs": OUTPUTS, "objectives": OBJECTIVES, "constraints": CONSTRAINTS}

#: (model, hardware, space options): dense on 8-GPU boards, MoE on an NVL72 rack (TP to
#: 64, ETP 1 beside TP, EP folding), MLA with HSDP on a TPU pod (domain 4,096 chips) and
#: a 2-GPU PCIe domain.
SPACES = [
    ("llama3-70b", "h100-sxm", {"max_gpus": 4096}),
    ("mixtral-8x7b", "gb200", {"max_gpus": 2048}),
    ("deepseek-v3", "tpu-v5p", {"max_gpus": 4096, "micro_batch": (1,)}),
    ("llama3-8b", "h100-pcie", {"max_gpus": 512}),
]


@pytest.fixture
def compiled(monkeypatch):
    """The compiled backend on: a missing extension is an error."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")


def _space(catalog, model, hardware, options, **inputs):
    x = base_inputs(catalog, RunChoices(model=model, hardware=hardware, **inputs))
    return x, layout_space(x, SpaceOptions(**options))


def _block_inputs(x, space, start, stop):
    """The numpy path's kernel inputs of rows ``start`` .. ``stop``, spare counts resolved."""
    part = next(space.blocks(stop - start, start, stop))
    inputs = resolve_spares({**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                                 layers=x["layers"])})
    return part, inputs


@needs_compiler
@pytest.mark.parametrize("model, hardware, options", SPACES)
def test_layouts_and_flags_equal_layout_flags_bit_for_bit(catalog, compiled, model, hardware,
                                                         options):
    x, space = _space(catalog, model, hardware, options)
    # a slice that starts and ends inside table rows and inside a chunk
    start, stop = 37, min(space.size, 37 + 3 * native_search.CHUNK + 101)
    found = native_search.layouts(space, x, start, stop, outputs=OUTPUTS,
                                  constraints=CONSTRAINTS)
    part, reference = _block_inputs(x, space, start, stop)
    for name in native_search.BUFFERS:
        assert np.array_equal(found[name], np.asarray(reference[name], dtype=float)), name
    assert np.array_equal(found["rec"], part["recompute"])
    assert np.array_equal(found["zero"], part["zero"])
    # each row's table row holds its GPU count
    gpus = space.gpu_counts(start, stop).astype(float)
    assert np.array_equal(gpus[found["table_row"].astype(int)], part["gpus"])


@needs_compiler
def test_layouts_of_a_whole_space(catalog, compiled):
    """Every row of a space (crossing every table row, the last chunk partial)."""
    x, space = _space(catalog, "mixtral-8x7b", "h100-sxm", {"max_gpus": 256})
    found = native_search.layouts(space, x, 0, space.size, outputs=OUTPUTS,
                                  constraints=CONSTRAINTS)
    _, reference = _block_inputs(x, space, 0, space.size)
    for name in native_search.BUFFERS:
        assert np.array_equal(found[name], np.asarray(reference[name], dtype=float)), name


def _reference_best(x, space, start, stop, s):
    """Per GPU count and objective, the first minimum among fitting and among feasible
    rows, by the numpy path: every row evaluated, then GroupMinimum."""
    part, inputs = _block_inputs(x, space, start, stop)
    out = evaluate_columns(inputs, ("memory_per_gpu_bytes", *SEARCH_COLUMNS), compiled=True)
    fits = out["memory_per_gpu_bytes"] <= x["hbm_bytes"]
    out["fits"] = fits
    feasible = feasible_mask(out, s)
    rows = np.flatnonzero(fits)
    gpus = np.asarray(part["gpus"])
    best = {}
    for mask, slot in ((None, 0), (feasible[rows], 1)):
        group = GroupMinimum(gpus[rows], mask)
        for k, column in enumerate(OBJECTIVES):
            chosen = rows[group.argmin(tie_key(out[column][rows]))]
            for row in chosen:
                best[(float(gpus[row]), k, slot)] = (start + row, tie_key(out[column][row]))
    return best, int(fits.sum()), out["memory_per_gpu_bytes"]


@needs_compiler
@pytest.mark.parametrize("model, hardware, options", SPACES)
@pytest.mark.parametrize("limited", [False, True])
def test_search_keeps_the_rows_of_the_numpy_reduction(catalog, compiled, model, hardware,
                                                      options, limited):
    x, space = _space(catalog, model, hardware, options)
    start, stop = 5, min(space.size, 40_000)
    s = optimize.Scenario()
    if limited:  # constraints that split the fitting rows into feasible and not
        part, inputs = _block_inputs(x, space, start, stop)
        out = evaluate_columns(inputs, SEARCH_COLUMNS, compiled=True)
        s = s.with_(deadline_days=float(np.nanmedian(out["wall_days"])),
                    budget_usd=float(np.nanpercentile(out["cost_usd"], 80)),
                    max_power_mw=float(np.nanpercentile(out["peak_power_mw"], 70)))
    found = native_search.search(space, x, start, stop, **KEYWORDS,
                                 limits=(s.deadline_days, s.budget_usd, s.max_power_mw))
    best, fitting, memory = _reference_best(x, space, start, stop, s)
    assert found.fitting == fitting
    assert found.min_memory_bytes == np.min(memory)
    assert found.min_memory_row == start + int(np.argmin(memory))
    kept = {}
    for g, gpus in enumerate(found.gpus):
        for k in range(len(OBJECTIVES)):
            for slot in (0, 1):
                row = int(found.best_rows[g, k, slot])
                if row >= 0:
                    kept[(float(gpus), k, slot)] = (row, found.best_values[g, k, slot])
    assert kept.keys() == best.keys()
    for key, (row, value) in best.items():
        assert kept[key][0] == row, key
        assert kept[key][1] == value or (np.isnan(value) and np.isnan(kept[key][1])), key
    if limited:
        assert any(slot == 1 for *_, slot in best) and len(best) > sum(
            1 for *_, slot in best if slot == 1)


@needs_compiler
def test_search_of_slices_in_any_order_is_the_same(catalog, compiled):
    """Rows are numbered over the whole space: a slice's rows are the whole search's."""
    x, space = _space(catalog, "llama3-70b", "h100-sxm", {"max_gpus": 1024})
    whole = native_search.search(space, x, 0, space.size, **KEYWORDS,
                                 limits=(None, None, None))
    cut = space.size // 3 + 7
    parts = [native_search.search(space, x, a, b, **KEYWORDS, limits=(None, None, None))
             for a, b in ((cut, space.size), (0, cut))]
    assert sum(p.fitting for p in parts) == whole.fitting
    assert set(np.concatenate([p.rows for p in parts])) >= set(whole.rows)


@needs_compiler
def test_search_falls_back_where_it_cannot_run(catalog, monkeypatch):
    x, space = _space(catalog, "llama3-8b", "h100-sxm", {"max_gpus": 64})
    arguments = dict(**KEYWORDS, limits=(None, None, None))
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    assert native_search.search(space, x, 0, space.size, **arguments) is None
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    varying = {**x, "hidden": np.full(3, x["hidden"])}  # an input per candidate it cannot decode
    assert native_search.search(space, varying, 0, space.size, **arguments) is None
    assert native_search.search(space, x, 0, space.size, **arguments) is not None


def _plans(monkeypatch, **scenario):
    """The plan through the compiled search and through the numpy block loop."""
    with_loop = plan(**scenario)
    monkeypatch.setattr(optimize, "compiled_slice", lambda task: None)
    without = plan(**scenario)
    monkeypatch.undo()
    return with_loop, without


@needs_compiler
@pytest.mark.parametrize("scenario", [
    {"model": "mixtral-8x7b", "hardware": ["h100-sxm", "gb200"], "max_gpus": 2048},
    {"model": "llama3-70b", "hardware": ["h100-sxm", "mi300x", "tpu-v5p"], "max_gpus": 4096,
     "deadline_days": 40.0, "budget_usd": 9e6},
    {"model": "llama3-70b", "hardware": ["h100-sxm"], "max_gpus": 64},  # nothing fits
    # a power cap alone: the loop keeps the least peak power too (planner.engine.search.explain)
    {"model": "llama3-70b", "hardware": ["h100-sxm", "mi300x"], "max_gpus": 4096,
     "deadline_days": None, "max_power_mw": 3.0},
    # a fixed spare count (a scalar input, not per GPU count) and an overridden input
    {"model": "mixtral-8x7b", "hardware": ["h100-sxm", "tpu-v5p"], "max_gpus": 2048,
     "extra": {"spare_nodes": 4.0, "gpu_mtbf_s": 1e7}},
    # torchtitan: op-level selective recompute (its layouts searched too)
    {"model": "llama3-8b", "hardware": ["h100-sxm"], "max_gpus": 512,
     "stack": "torchtitan-fsdp2"},
])
def test_plan_through_the_compiled_search_equals_the_block_loop(catalog, monkeypatch,
                                                                scenario):
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    compiled, loop = _plans(monkeypatch, catalog=catalog, **scenario)
    assert compiled.frontier.equals(loop.frontier)
    assert (compiled.evaluated, compiled.fitting) == (loop.evaluated, loop.fitting)
    assert compiled.best == loop.best or all(
        (a is None and b is None) or a == b for a, b in zip(compiled.best.values(),
                                                           loop.best.values(), strict=True))
    assert len(compiled.pareto) == len(loop.pareto)
    assert {o: (b.constraints, b.together) for o, b in compiled.binding.items()} == \
        {o: (b.constraints, b.together) for o, b in loop.binding.items()}
    assert compiled.infeasible == loop.infeasible


@needs_compiler
def test_plan_on_threads_equals_one_thread(catalog):
    scenario = {"model": "mixtral-8x7b", "hardware": ["h100-sxm", "b200", "gb200"],
                "max_gpus": 4096, "catalog": catalog}
    one = plan(workers=1, **scenario)
    two = plan(workers=2, **scenario)
    assert one.frontier.equals(two.frontier)
    assert (one.evaluated, one.fitting) == (two.evaluated, two.fitting)


LAYOUT = ["hardware", "gpus", "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch",
          "recompute", "zero", "shard_group", "sequence_parallel"]


def _layouts(rows) -> list:
    return [None if row is None else tuple(row[c] for c in LAYOUT) for row in rows]


def _same_choices(compiled, numpy_plan):
    """Both backends chose the same layouts for every objective, GPU count and Pareto
    point, and their values agree within the documented tolerance."""
    a, b = compiled.frontier, numpy_plan.frontier
    assert a[LAYOUT].equals(b[LAYOUT])  # the same kept rows: per GPU count and objective
    for column in a.columns.difference(LAYOUT):
        if column == "launch_s":  # (a^h + b^h)^(1/h) - a: near-equal terms, so compared
            # against the step time it is part of (as in tests/test_native.py)
            assert np.all(np.abs(a[column] - b[column]) <= 1e-13 * b["step_time_s"]), column
        elif column == "energy_fault_tolerance_j":  # facility energy minus the ideal run's:
            # against the facility energy it is part of (as in tests/test_native.py)
            scale = b["energy_kwh"] * 3.6e6
            assert np.all(np.abs(a[column] - b[column]) <= native.RELATIVE_TOLERANCE * scale)
        elif column == "waste_fraction":  # 1 - ETTR: against the ETTR it complements
            assert np.all(np.abs(a[column] - b[column]) <= native.RELATIVE_TOLERANCE), column
        elif a[column].dtype.kind == "f":
            np.testing.assert_allclose(a[column], b[column], rtol=native.RELATIVE_TOLERANCE,
                                       atol=1e-300, equal_nan=True, err_msg=column)
        else:
            assert a[column].equals(b[column]), column
    assert _layouts(compiled.best.values()) == _layouts(numpy_plan.best.values())
    assert _layouts(compiled.pareto) == _layouts(numpy_plan.pareto)
    assert (compiled.evaluated, compiled.fitting) == (numpy_plan.evaluated, numpy_plan.fitting)


def _on_both_backends(monkeypatch, **scenario):
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    compiled = plan(**scenario)
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    return compiled, plan(**scenario)


@needs_compiler
@pytest.mark.parametrize("scenario", [
    {"model": "mixtral-8x7b", "hardware": ["h100-sxm", "gb200"], "max_gpus": 2048},
    {"model": "llama3-70b", "hardware": ["h100-sxm", "mi300x", "tpu-v5p"], "max_gpus": 4096,
     "deadline_days": 40.0, "budget_usd": 9e6},
    {"model": "mixtral-8x7b", "hardware": ["h100-sxm", "tpu-v5p"], "max_gpus": 2048,
     "extra": {"spare_nodes": 4.0, "gpu_mtbf_s": 1e7}},
])
def test_both_backends_choose_the_same_layouts(catalog, monkeypatch, scenario):
    _same_choices(*_on_both_backends(monkeypatch, catalog=catalog, **scenario))


@pytest.mark.slow  # ~25 s of CPU, most of it the numpy backend's
@needs_compiler
def test_both_backends_choose_the_same_layouts_on_the_mixtral_plan(catalog, monkeypatch):
    """The 103-million-layout plan of docs/performance.md (to 1,048,576 GPUs), on two of its
    accelerators, a Hopper node and an NVL72 rack: the whole catalog took ~180 s of CPU
    on the numpy backend for no other code path."""
    _same_choices(*_on_both_backends(monkeypatch, catalog=catalog, model="mixtral-8x7b",
                                     hardware=["h100-sxm", "gb200"], global_batch=55440,
                                     max_gpus=1048576))
