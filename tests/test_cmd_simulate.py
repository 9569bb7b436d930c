"""`capplan simulate`: the Monte Carlo distribution next to the planner's closed forms."""

import json

import pytest

from planner.cli.main import main

ARGS = ["simulate", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "4096",
        "--tp", "8", "--pp", "4", "--tokens", "2e12", "--checkpoint", "sync",
        "--replicas", "3000", "--seed", "11", "--format", "json"]


def test_simulated_means_match_the_planner_closed_forms(capsys):
    code = main(ARGS)
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["seed"] == 11 and data["replicas"] == 3000
    for name in ("wall_days", "gpu_hours", "energy_kwh", "failures"):
        q = data[name]
        assert set(q) >= {"mean", "p10", "p50", "p90", "closed_form"}
        assert q["p10"] <= q["p50"] <= q["p90"]
    # exponential failures, independent stragglers: the closed forms hold within 1%
    assert data["wall_days"]["mean"] == pytest.approx(data["wall_days"]["closed_form"], rel=0.01)
    assert data["gpu_hours"]["mean"] == pytest.approx(data["gpu_hours"]["closed_form"], rel=0.01)
    assert data["energy_kwh"]["mean"] == pytest.approx(data["energy_kwh"]["closed_form"],
                                                       rel=0.01)
    # failures are a count: within 4 standard errors of the mean
    f = data["failures"]
    assert abs(f["mean"] - f["closed_form"]) < 4 * f["stderr"] + 1e-9


def test_weibull_components(capsys):
    main([*ARGS, "--weibull-shape", "1.0"])
    exponential = json.loads(capsys.readouterr()[0])
    # thousands of components in service: their superposition is nearly Poisson
    # (Palm-Khintchine), so k < 1 changes little
    main([*ARGS, "--weibull-shape", "0.6"])
    stationary = json.loads(capsys.readouterr()[0])
    assert stationary["weibull_shape"] == 0.6
    assert stationary["wall_days"]["mean"] == pytest.approx(exponential["wall_days"]["mean"],
                                                            rel=0.01)
    # all components new at the start: infant mortality front-loads failures
    main([*ARGS, "--weibull-shape", "0.6", "--component-age", "new"])
    new = json.loads(capsys.readouterr()[0])
    assert new["failures"]["mean"] > exponential["failures"]["mean"]


def test_bad_replicas(capsys):
    code = main(["simulate", "--replicas", "0"])
    err = capsys.readouterr()[1]
    assert code == 2 and "--replicas" in err and len(err.splitlines()) == 1
