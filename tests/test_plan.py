"""Planner behaviour: optima respect constraints, checkpointing and knee move the right way."""

import numpy as np
import pytest

from planner import evaluate, plan
from planner.engine.search.optimize import marginal_efficiency, pareto_mask
from planner.errors import CapplanError

SMALL = dict(model="llama2-7b", tokens=1e12, hardware=["h100-sxm", "a100-80gb"],
             min_gpus=8, max_gpus=1024)


@pytest.fixture(scope="module")
def small_plan(catalog):
    return plan(catalog=catalog, **SMALL)


def test_best_rows_fit_and_are_feasible(small_plan):
    for objective, row in small_plan.best.items():
        assert row is not None, objective
        assert row["fits"] and row["memory_per_gpu_bytes"] <= row["hbm_bytes"]
        assert row["gpus"] == row["tp"] * row["pp"] * row["dp"] * row["cp"]


def test_each_objective_winner_is_minimal_among_feasible(small_plan):
    feasible = small_plan.frontier[small_plan.frontier["feasible"]]
    for objective, column in [("time", "wall_time_s"), ("cost", "cost_usd"),
                              ("energy", "energy_kwh"), ("carbon", "co2e_kg")]:
        assert small_plan.best[objective][column] == pytest.approx(feasible[column].min())


def test_cost_optimum_never_exceeds_budget(catalog, small_plan):
    cheapest = small_plan.best["cost"]["cost_usd"]
    fastest = small_plan.best["time"]
    budget = (cheapest + fastest["cost_usd"]) / 2
    constrained = plan(catalog=catalog, budget_usd=budget, objective="time", **SMALL)
    assert constrained.best["time"]["cost_usd"] <= budget
    for row in constrained.pareto:
        assert row["cost_usd"] <= budget


def test_deadline_respected_and_infeasible_explained(catalog, small_plan):
    fastest_days = small_plan.best["time"]["wall_days"]
    ok = plan(catalog=catalog, deadline_days=fastest_days * 1.5, **SMALL)
    assert ok.best["cost"]["wall_days"] <= fastest_days * 1.5
    impossible = plan(catalog=catalog, deadline_days=fastest_days / 2, **SMALL)
    assert impossible.best["cost"] is None
    assert "deadline" in impossible.infeasible["cost"]
    assert f"{fastest_days:.1f} days" in impossible.infeasible["cost"]


def test_checkpoint_interval_shrinks_as_cluster_grows(catalog):
    intervals = [evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=n,
                          tp=8, pp=4, micro_batch=1, checkpoint="sync")
                 .loc[0, "checkpoint_interval_s"] for n in (256, 1024, 4096, 16384)]
    assert all(a > b for a, b in zip(intervals, intervals[1:], strict=False))


def test_knee_moves_to_larger_clusters_with_faster_network(catalog):
    kwargs = dict(model="llama3-8b", tokens=1e12, hardware=["h100-sxm"], min_gpus=8,
                  max_gpus=16384)
    slow = plan(catalog=catalog, extra={"scale_out_bandwidth_bytes_per_s": 2e9}, **kwargs)
    fast = plan(catalog=catalog, extra={"scale_out_bandwidth_bytes_per_s": 200e9}, **kwargs)
    assert fast.knee["h100-sxm"]["gpus"] > slow.knee["h100-sxm"]["gpus"]


def test_nothing_fits_is_explained(catalog):
    result = plan(catalog=catalog, model="llama3.1-405b", tokens=1e12, hardware=["l40s"],
                  min_gpus=8, max_gpus=16)
    assert result.best["cost"] is None
    assert "memory" in result.infeasible["cost"]


def test_invalid_layout_names_the_rule(catalog):
    with pytest.raises(CapplanError, match="does not divide"):
        evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1000, tp=8,
                 pp=4)
    with pytest.raises(CapplanError, match="scale-up domain"):
        evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=16,
                 pp=1)
    with pytest.raises(CapplanError, match="global batch"):
        evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8,
                 pp=4, global_batch=100)


def test_pareto_mask_and_marginal_efficiency():
    v = np.array([[1, 5, 5], [2, 4, 4], [3, 3, 6], [3, 5, 6], [1, 5, 5.5]])
    assert pareto_mask(v).tolist() == [True, True, True, False, False]
    gpus = np.array([8, 16, 32, 64, 128.0])
    times = np.array([8, 4, 2, 1.6, 1.5])  # perfect, perfect, then poor
    eff = marginal_efficiency(gpus, times)
    assert eff[1] == pytest.approx(1.0) and eff[2] == pytest.approx(1.0)
    assert eff[4] < 0.3
