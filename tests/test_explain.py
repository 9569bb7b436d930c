"""Explanations against brute force: every layout of a small space evaluated, filtered
with pandas.  What bound each objective, the plan cited when nothing is feasible, and
each accelerator's verdict must be the optima of the whole space under the same subsets
of constraints (planner.engine.search.explain)."""

import numpy as np
import pandas as pd
import pytest

from planner import plan
from planner.engine.inputs.scenario import OBJECTIVE_COLUMNS, Scenario
from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
from planner.engine.run.kernel_run import evaluate_inputs
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.search.explain import (
    CONSTRAINTS,
    NEAREST_COLUMNS,
    accelerator_verdicts,
    usd_text,
)

SMALL = dict(model="llama2-7b", tokens=1e12, hardware=["h100-sxm", "a100-80gb", "l40s"],
             min_gpus=8, max_gpus=256)


def _whole_space(catalog, s: Scenario) -> pd.DataFrame:
    """Every layout of ``s`` on each of its accelerators, every output (numpy kernel)."""
    frames = []
    for hw in s.hardware:
        x = base_inputs(catalog, RunChoices(model=s.model, hardware=hw, site=s.site,
                        reliability=s.reliability, precision=s.precision,
                        checkpoint=s.checkpoint, cost_basis=s.cost_basis, seq_len=s.seq_len,
                        tokens=s.tokens, global_batch=s.global_batch))
        part = enumerate_layouts(
            layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
            seq_len=int(x["seq_len"]), experts=int(x["experts"]),
            global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
            scale_up_domain=int(x["scale_up_domain_gpus"]),
            options=SpaceOptions(min_gpus=s.min_gpus, max_gpus=s.max_gpus))
        out = evaluate_inputs({**x, **layout_flags(part, scale_up_domain=x["scale_up_domain_gpus"],
                                                   layers=x["layers"])}, compiled=False)
        columns = {c: np.broadcast_to(out[c], part["gpus"].shape) for c in
                   ("fits", "wall_time_s", "wall_days", "cost_usd", "peak_power_mw",
                    *OBJECTIVE_COLUMNS.values())}
        frames.append(pd.DataFrame({"hardware": hw, "gpus": part["gpus"], **columns}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def space(catalog):
    return _whole_space(catalog, Scenario(**{**SMALL, "hardware": tuple(SMALL["hardware"])}))


def _meeting(frame: pd.DataFrame, s: Scenario, constraints) -> pd.DataFrame:
    ok = frame["fits"].astype(bool)
    for c in constraints:
        column, limit = CONSTRAINTS[c]
        ok &= frame[column] <= getattr(s, limit)
    return frame.loc[ok]


def _brute_min(frame, s, constraints, column) -> float | None:
    rows = _meeting(frame, s, constraints)
    return None if rows.empty else float(rows[column].min())


def _limits(space: pd.DataFrame) -> list[dict]:
    """Constraint sets that cut the fitting rows: one, two and three constraints."""
    fits = space.loc[space["fits"].astype(bool)]
    days = float(fits["wall_days"].quantile(0.3))
    usd = float(fits["cost_usd"].quantile(0.5))
    mw = float(fits["peak_power_mw"].quantile(0.6))
    return [{"deadline_days": days},
            {"deadline_days": days, "budget_usd": usd},
            {"deadline_days": days * 2, "budget_usd": usd, "max_power_mw": mw},
            {"deadline_days": None, "max_power_mw": mw / 4}]


@pytest.mark.parametrize("case", range(4))
def test_binding_is_the_brute_force_optimum_without_each_constraint(catalog, space, case):
    limits = _limits(space)[case]
    result = plan(catalog=catalog, **SMALL, **limits)
    s = result.scenario
    active = [c for c, (_, field) in CONSTRAINTS.items() if getattr(s, field) is not None]
    for objective, column in OBJECTIVE_COLUMNS.items():
        b = result.binding[objective]
        best = _brute_min(space, s, active, column)
        assert (b.best is None) == (best is None)
        if best is None:
            continue
        assert b.best[column] == pytest.approx(best, rel=1e-12)
        assert b.unconstrained[column] == pytest.approx(
            _brute_min(space, s, (), column), rel=1e-12)
        expected = []
        for c in active:
            without = _brute_min(space, s, [k for k in active if k != c], column)
            assert b.without[c][column] == pytest.approx(without, rel=1e-12), (objective, c)
            # the optimum without c meets every other constraint
            row = b.without[c]
            for k in active:
                if k != c:
                    column_k, limit = CONSTRAINTS[k]
                    assert row[column_k] <= getattr(s, limit)
            if without < best:
                expected.append(c)
        assert list(b.constraints) == expected, objective
        assert b.together == (not expected and _brute_min(space, s, (), column) < best)


def test_a_deadline_that_moves_the_cheapest_plan_is_named(catalog, space):
    """The default-plan bug: 'binding: none' while the deadline moved the optimum."""
    fits = space.loc[space["fits"].astype(bool)]
    cheapest = fits.loc[fits["cost_usd"].idxmin()]
    result = plan(catalog=catalog, **SMALL, deadline_days=float(cheapest["wall_days"]) / 2)
    b = result.binding["cost"]
    assert b.constraints == ("deadline",)
    assert b.unconstrained["cost_usd"] == pytest.approx(cheapest["cost_usd"], rel=1e-12)
    assert b.best["cost_usd"] > b.unconstrained["cost_usd"]
    from planner.report.tables import render_plan

    text = render_plan(result, width=160)
    assert "binding: none" not in text
    assert f"{int(cheapest['gpus']):,} GPUs: {cheapest['wall_days']:,.1f} days" in text


def test_an_optimum_on_the_edge_of_the_gpu_range_says_so(catalog, space):
    # 'binding: none' was printed for a fastest plan at --max-gpus, which a wider range
    # moves; the range is named as what bound it, in the table and the JSON
    result = plan(catalog=catalog, **SMALL)
    s = result.scenario
    fits = space.loc[space["fits"].astype(bool)]
    for objective in OBJECTIVE_COLUMNS:
        b = result.binding[objective]
        gpus = int(b.best["gpus"])
        expected = ("max_gpus" if gpus == s.max_gpus else "min_gpus" if gpus == s.min_gpus
                    else None)
        assert b.range_edge == expected, objective
    fastest = fits.loc[fits["wall_time_s"].idxmin()]
    assert int(fastest["gpus"]) == s.max_gpus  # llama2-7b still scales at 256 GPUs
    assert result.binding["time"].range_edge == "max_gpus"
    from planner.report.plan_report import binding_payload
    from planner.report.tables import binding_rows

    assert binding_payload(result.binding["time"])["range_edge"] == "max_gpus"
    rows = {r["objective"]: r["binding"] for r in binding_rows(result)}
    assert rows["time"] == "--max-gpus 256 (the edge of the GPU range)"
    # a wider range moves it: the edge bound it
    wider = plan(catalog=catalog, **{**SMALL, "max_gpus": 1024})
    assert wider.best["time"]["wall_time_s"] < result.best["time"]["wall_time_s"]


def test_a_nearest_plan_on_the_edge_of_the_range_says_a_wider_one_may_come_nearer(catalog):
    # 'the deadline binds' alone hid that the fastest plan sat on --max-gpus; a wider range
    # meets the same deadline
    from planner.engine.search.optimize import require
    from planner.errors import CapplanError

    tight = {**SMALL, "hardware": ["h100-sxm"], "max_gpus": 64}
    fastest = plan(catalog=catalog, **tight).best["time"]
    assert int(fastest["gpus"]) == 64
    deadline = float(fastest["wall_days"]) * 0.9
    result = plan(catalog=catalog, **tight, deadline_days=deadline)
    with pytest.raises(CapplanError) as err:
        require(result, "cost")
    assert ("(on --max-gpus 64, the edge of the GPU range searched: a wider range may come "
            "nearer)") in str(err.value)
    (verdict,) = accelerator_verdicts(result)
    assert verdict["verdict"] == "deadline" and "on --max-gpus 64" in verdict["reason"]
    assert plan(catalog=catalog, **{**tight, "max_gpus": 256},
                deadline_days=deadline).best["cost"] is not None


def test_a_knee_beyond_the_range_is_not_called_the_knee(catalog):
    from planner.report.tables import per_hardware_rows, render_plan

    result = plan(catalog=catalog, **{**SMALL, "hardware": ["h100-sxm"]})
    knee = result.knee["h100-sxm"]
    assert knee["beyond_range"] and int(knee["gpus"]) == 256
    assert knee["marginal_efficiency"] >= result.scenario.knee_threshold
    text = render_plan(result, width=200)
    assert "beyond it adding GPUs stops paying" not in text
    assert "Knee on h100-sxm: not reached by 256 GPUs, the largest cluster searched" in text
    assert "256+" in text
    assert per_hardware_rows(result, "cost")[0]["knee_beyond_range"] is True
    # a threshold the curve falls below inside the range gives a knee inside it
    inside = plan(catalog=catalog, **{**SMALL, "hardware": ["h100-sxm"],
                                      "knee_threshold": 0.99})
    knee = inside.knee["h100-sxm"]
    assert knee["marginal_efficiency"] >= 0.99  # 64 GPUs here
    assert not knee["beyond_range"] and int(knee["gpus"]) < 256
    assert "beyond it adding GPUs stops paying" in render_plan(inside, width=200)


@pytest.mark.parametrize("limits", [
    {"deadline_days": 1e-3},  # one constraint: the nearest plan of all that fit
    {"budget_usd": 1.0, "max_power_mw": 1e3},
    {"deadline_days": 4.0, "budget_usd": 1.0, "max_power_mw": 0.5},
])
def test_infeasible_cites_the_optimum_meeting_every_other_constraint(catalog, space, limits):
    result = plan(catalog=catalog, **SMALL, **limits)
    s = result.scenario
    assert result.best["cost"] is None
    text = result.infeasible["cost"]
    active = [c for c, (_, field) in CONSTRAINTS.items() if getattr(s, field) is not None]
    cited = 0
    for c in active:
        others = [k for k in active if k != c]
        rows = _meeting(space, s, others)
        if rows.empty:
            continue
        nearest = rows.loc[rows[NEAREST_COLUMNS[c]].idxmin()]
        for k in others:  # the plan cited meets every other constraint
            column, limit = CONSTRAINTS[k]
            assert nearest[column] <= getattr(s, limit)
        assert (f"{nearest['hardware']} x {int(nearest['gpus']):,} GPUs: "
                f"{nearest['wall_days']:,.1f} days, {usd_text(nearest['cost_usd'])}") \
            in text, (c, text)
        cited += 1
    if cited == 0:  # no constraint alone to blame: each one's nearest plan that fits
        assert "no plan meets all but any one of the constraints" in text
        for c in active:
            fits = _meeting(space, s, [])
            nearest = fits.loc[fits[NEAREST_COLUMNS[c]].idxmin()]
            assert f"{nearest['hardware']} x {int(nearest['gpus']):,} GPUs" in text, (c, text)
    assert cited >= 1 or len(active) == 3


def test_every_accelerator_has_a_verdict(catalog, space):
    """The winner, the losers by their best plan, and the reasons of the others."""
    fits = space.loc[space["fits"].astype(bool)]
    fastest_days = sorted(fits.groupby("hardware")["wall_days"].min())
    assert fastest_days[1] * 1.01 < fastest_days[2]
    result = plan(catalog=catalog, **SMALL, deadline_days=fastest_days[1] * 1.01)
    verdicts = {r["hardware"]: r for r in accelerator_verdicts(result)}
    assert set(verdicts) == set(SMALL["hardware"])
    s = result.scenario
    for hw, v in verdicts.items():
        mine = _meeting(space.loc[space["hardware"] == hw], s, ["deadline"])
        if v["verdict"] in ("winner", "lost"):
            cheapest = mine.loc[mine["cost_usd"].idxmin()]
            assert f"{int(cheapest['gpus']):,} GPUs: {cheapest['wall_days']:,.1f} days, " \
                   f"{usd_text(cheapest['cost_usd'])}" in v["reason"]
            assert (v["verdict"] == "winner") == (hw == result.best["cost"]["hardware"])
        else:  # its fastest plan is the one cited
            assert mine.empty and v["verdict"] == "deadline", (hw, v)
            fastest = space.loc[(space["hardware"] == hw) & space["fits"].astype(bool)]
            fastest = fastest.loc[fastest["wall_time_s"].idxmin()]
            assert f"{fastest['wall_days']:,.1f} days" in v["reason"]
    assert {v["verdict"] for v in verdicts.values()} == {"winner", "lost", "deadline"}


def test_skipped_accelerators_have_their_reason(catalog):
    result = plan(catalog=catalog, **{**SMALL, "hardware": ["h100-sxm", "gaudi3"]},
                  pricing="spot")
    verdicts = {r["hardware"]: r for r in accelerator_verdicts(result)}
    assert verdicts["gaudi3"]["verdict"] == "skipped"
    assert verdicts["gaudi3"]["reason"] == result.skipped["gaudi3"]


def test_memory_and_no_layout_verdicts(catalog):
    result = plan(catalog=catalog, model="llama3.1-405b", tokens=1e12,
                  hardware=["l40s", "h100-sxm"], min_gpus=8, max_gpus=16)
    verdicts = {r["hardware"]: r for r in accelerator_verdicts(result)}
    assert verdicts["l40s"]["verdict"] == "memory"
    assert "GB per GPU" in verdicts["l40s"]["reason"]
    assert "memory" in result.infeasible["cost"]
