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
from reference_reductions import reference_group_best, reference_pareto_mask

from planner import plan
from planner.engine.evaluator import base_inputs, evaluate_columns, evaluate_inputs
from planner.engine.model import OUTPUTS
from planner.engine.optimize import (
    KEEP_COLUMNS,
    OBJECTIVE_COLUMNS,
    PLAN_CHUNK,
    feasible_mask,
    knee_row,
    reduce_block,
)
from planner.engine.scenario import Scenario
from planner.engine.space import SpaceOptions, enumerate_layouts, layout_flags

CASES = [
    ("llama3-70b", "h100-sxm", {"deadline_days": None}),  # no deadline (the default is 90 d)
    ("mixtral-8x7b", "mi300x", {"deadline_days": 30.0}),
    ("gpt3-175b", "a100-80gb", {"budget_usd": 1.13e8, "max_power_mw": 2.0,
                                "deadline_days": None}),
    ("llama2-7b", "l40s", {"deadline_days": 1e-3}),  # nothing feasible: fitting rows only
]


def _blocks(catalog, s: Scenario, hardware):
    """The blocks of candidates ``plan`` reduces for ``s`` on one accelerator."""
    x = base_inputs(catalog, model=s.model, hardware=hardware, site=s.site,
                    reliability=s.reliability, precision=s.precision, checkpoint=s.checkpoint,
                    cost_basis=s.cost_basis, seq_len=s.seq_len, tokens=s.tokens,
                    global_batch=s.global_batch)
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
    """The former per-block reduction: every output of every candidate, a lexsort per call."""
    out = evaluate_inputs(inputs)
    out.update(part)
    feasible = feasible_mask(out, s)
    rows = set()
    for column in OBJECTIVE_COLUMNS.values():
        rows.update(reference_group_best(out["gpus"], out[column], feasible).tolist())
        rows.update(reference_group_best(out["gpus"], out[column], out["fits"]).tolist())
    return np.array(sorted(rows), dtype=int), out, feasible


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


@pytest.mark.parametrize("model,hardware,constraints", CASES[:3])
def test_plan_pareto_and_knee_equal_the_reference(catalog, model, hardware, constraints):
    result = plan(model=model, hardware=[hardware], max_gpus=2048, catalog=catalog,
                  **constraints)
    feasible = result.frontier.loc[result.frontier["feasible"].astype(bool)]
    objectives = ["wall_time_s", "cost_usd", "energy_kwh"]
    reference = feasible[reference_pareto_mask(feasible[objectives].to_numpy(dtype=float))]
    reference = reference.sort_values(objectives)
    got = pd.DataFrame(result.pareto)
    assert len(got) == len(reference) >= 1
    assert got[objectives].to_numpy().tolist() == reference[objectives].to_numpy().tolist()
    # the knee of the reference frontier (every block reduced the former way)
    rows = []
    s = result.scenario
    for inputs, part in _blocks(catalog, s, hardware):
        picked, out, _ = _reference_block(inputs, part, s)
        rows.append(pd.DataFrame({c: out[c][picked] for c in KEEP_COLUMNS}))
    frontier = pd.concat(rows, ignore_index=True).drop_duplicates(
        subset=["gpus", "tp", "pp", "cp", "ep", "vp", "micro_batch", "recompute", "zero",
                "sequence_parallel"])
    assert len(frontier) == len(result.frontier)
    knee = knee_row(frontier.loc[frontier["fits"].astype(bool)], s.knee_threshold)
    for key in ("gpus", "wall_time_s", "cost_usd", "tp", "pp", "marginal_efficiency"):
        assert result.knee[hardware][key] == knee[key] or (
            np.isnan(knee[key]) and np.isnan(result.knee[hardware][key])), key
