"""The search keeps exactly the rows, Pareto set and knee of the former full evaluation.

The former ``plan`` evaluated every output of every candidate and reduced each
block with a lexsort per objective and mask; :func:`reduce_block` computes
memory for all, objectives for those that fit and everything for the kept
rows only.  On real (small) spaces both must pick the same rows with the same
values, and the plan's Pareto set and knee must equal the reference ones.
"""

import numpy as np
import pandas as pd
import pytest
from reference_reductions import reference_kept_rows, reference_pareto_mask

from planner import plan
from planner.engine.inputs.scenario import Scenario
from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs
from planner.engine.run.model import OUTPUTS
from planner.engine.run.reductions import tie_key
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.search.explain import constraint_sets, meets, reduced_columns
from planner.engine.search.optimize import (
    KEEP_COLUMNS,
    OBJECTIVE_COLUMNS,
    PLAN_CHUNK,
    feasible_mask,
    knee_row,
    reduce_block,
)

CASES = [
    ("llama3-70b", "h100-sxm", {"deadline_days": None}),  # no deadline (the default is 90 d)
    ("mixtral-8x7b", "mi300x", {"deadline_days": 30.0}),
    ("gpt3-175b", "a100-80gb", {"budget_usd": 1.13e8, "max_power_mw": 2.0,
                                "deadline_days": None}),
    ("llama2-7b", "l40s", {"deadline_days": 1e-3}),  # nothing feasible: fitting rows only
]


def _blocks(catalog, s: Scenario, hardware):
    """The blocks of candidates ``plan`` reduces for ``s`` on one accelerator."""
    x = base_inputs(catalog, RunChoices(model=s.model, hardware=hardware, site=s.site,
                    reliability=s.reliability, precision=s.precision, checkpoint=s.checkpoint,
                    cost_basis=s.cost_basis, seq_len=s.seq_len, tokens=s.tokens,
                    global_batch=s.global_batch))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]),
        options=SpaceOptions(min_gpus=s.min_gpus, max_gpus=s.max_gpus))
    n = len(layout["gpus"])
    for start in range(0, n, PLAN_CHUNK):
        part = {k: v[start:start + PLAN_CHUNK] for k, v in layout.items()}
        yield {**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                   layers=x["layers"])}, part


def _reference_block(inputs, part, s):
    """The former per-block reduction: every output of every candidate, a lexsort per call
    on the values' tie keys (as the search compares them, planner.engine.run.reductions: values
    within ~1e-6 of each other are a tie that goes to the earlier row)."""
    out = evaluate_inputs(inputs)
    out.update(part)
    feasible = feasible_mask(out, s)
    rows = reference_kept_rows(out["gpus"], [tie_key(out[c]) for c in reduced_columns(s)],
                               [meets(out, s, c) for c in constraint_sets(s)])
    return rows, out, feasible


@pytest.mark.parametrize("model,hardware,constraints", CASES)
def test_reduce_block_keeps_the_reference_rows(catalog, model, hardware, constraints):
    s = Scenario(model=model, max_gpus=2048).with_(**constraints)
    blocks = 0
    for inputs, part in _blocks(catalog, s, hardware):
        rows, out, feasible = _reference_block(inputs, part, s)
        block = reduce_block(inputs, part, s)
        assert block.rows.tolist() == rows.tolist()
        assert block.fitting == int(out["fits"].sum())
        i = int(np.argmin(out["memory_per_gpu_bytes"]))
        assert block.min_memory_bytes == out["memory_per_gpu_bytes"][i]
        assert block.min_memory_hbm_bytes == out["hbm_bytes"][i]
        np.testing.assert_array_equal(block.feasible, feasible[rows])
        for column in KEEP_COLUMNS:
            np.testing.assert_array_equal(block.out[column], out[column][rows], err_msg=column)
        blocks += 1
    assert blocks >= 1


def test_evaluate_columns_is_bit_identical_to_the_full_kernel(catalog):
    inputs, _ = next(_blocks(catalog, Scenario(model="mixtral-8x7b", max_gpus=2048), "h200"))
    full = evaluate_inputs(inputs)
    columns = ("fits", "memory_per_gpu_bytes", "wall_days", "energy_mwh", "peak_power_mw",
               "co2e_kg", "mfu")
    part = evaluate_columns(inputs, columns, chunk=1000)
    assert list(part) == list(columns)
    for column in columns:
        np.testing.assert_array_equal(part[column], full[column], err_msg=column)
    every = evaluate_columns(inputs, tuple(OUTPUTS))
    for column in OUTPUTS:
        np.testing.assert_array_equal(every[column], full[column], err_msg=column)
    with pytest.raises(KeyError, match="not an output column"):
        evaluate_columns(inputs, ("step_time_days",))


def _reference_frontier(catalog, s: Scenario, hardware) -> pd.DataFrame:
    """The former full evaluation of the whole space, reduced once: per GPU count and
    objective, the first minimum among the rows meeting each constraint set - fitting,
    feasible, all constraints but one - (a lexsort each)."""
    outs = []
    for inputs, part in _blocks(catalog, s, hardware):
        out = evaluate_inputs(inputs)
        out.update(part)
        outs.append(out)
    out = {c: np.concatenate([o[c] for o in outs]) for c in (*KEEP_COLUMNS, "fits")}
    feasible = feasible_mask(out, s)
    rows = reference_kept_rows(out["gpus"], [tie_key(out[c]) for c in reduced_columns(s)],
                               [meets(out, s, c) for c in constraint_sets(s)])
    frame = pd.DataFrame({c: out[c][rows] for c in KEEP_COLUMNS})
    frame["feasible"] = feasible[rows]
    return frame


@pytest.mark.parametrize("model,hardware,constraints", CASES[:3])
def test_plan_frontier_pareto_and_knee_equal_the_reference(catalog, model, hardware,
                                                           constraints):
    result = plan(model=model, hardware=[hardware], max_gpus=2048, catalog=catalog,
                  **constraints)
    s = result.scenario
    reference = _reference_frontier(catalog, s, hardware)
    # the same rows, in search order, with the same values
    assert len(result.frontier) == len(reference)
    for column in ("gpus", "tp", "pp", "cp", "ep", "etp", "vp", "micro_batch", "zero",
                   "shard_group", "sequence_parallel", *OBJECTIVE_COLUMNS.values()):
        np.testing.assert_array_equal(result.frontier[column].to_numpy(),
                                      reference[column].to_numpy(), err_msg=column)
    objectives = ["wall_time_s", "cost_usd", "energy_kwh"]
    feasible = reference.loc[reference["feasible"].astype(bool)]
    front = feasible[reference_pareto_mask(feasible[objectives].to_numpy(dtype=float))]
    front = front.sort_values(objectives)
    got = pd.DataFrame(result.pareto)
    assert len(got) == len(front) >= 1
    assert got[objectives].to_numpy().tolist() == front[objectives].to_numpy().tolist()
    knee = knee_row(reference.loc[reference["fits"].astype(bool)], s.knee_threshold)
    for key in ("gpus", "wall_time_s", "cost_usd", "tp", "pp", "marginal_efficiency"):
        assert result.knee[hardware][key] == knee[key] or (
            np.isnan(knee[key]) and np.isnan(result.knee[hardware][key])), key


def test_frontier_does_not_depend_on_the_block_size(catalog, monkeypatch):
    # blocks keep their own best rows; the frontier is the best over all of them, so
    # other block boundaries (or tasks) give the same rows
    from planner.engine.search import optimize
    kwargs = dict(model="mixtral-8x7b", hardware=["h100-sxm"], max_gpus=1024,
                  catalog=catalog, deadline_days=None)
    whole = plan(**kwargs)
    monkeypatch.setattr(optimize, "PLAN_CHUNK", 3001)
    monkeypatch.setattr(optimize, "TASK_ROWS", 7 * 3001)
    pieces = plan(**kwargs)
    assert pieces.evaluated == whole.evaluated
    pd.testing.assert_frame_equal(pieces.frontier, whole.frontier)
    assert [r.to_dict() for r in pieces.pareto] == [r.to_dict() for r in whole.pareto]
