"""Reserved tiers bill their committed term (issue 41 item 5): a 39-day run on reserved-1y
pays for 365 days of its GPUs, less the share of the unused term the user resells or
reuses (--commitment-reuse, default 0); pay-as-you-go tiers bill the wall time."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.cost import committed_time
from planner.cli.main import main
from planner.engine.layouts.evaluator import evaluate

DAY_S = 86400.0
YEAR_TERM_S = 365 * DAY_S  # AWS: one year = 31,536,000 s
#: Llama 3 70B on 4,096 H100 at TP8 PP4, 11.6T tokens: a 39-day run.
RUN = ["evaluate", "-m", "llama3-70b", "-H", "h100-sxm", "-n", "4096", "--tp", "8", "--pp",
       "4", "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch", "1", "--tokens", "11.6e12",
       "-f", "json"]


def _json(capsys, *extra):
    code = main([*RUN, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_a_39_day_run_on_reserved_1y_pays_the_year(capsys):
    data, err = _json(capsys, "--pricing", "reserved-1y")
    assert data["wall_days"] == pytest.approx(39.0, abs=0.5)
    billed_gpus = 4096 + data["spare_nodes"] * 8
    price = data["price"]["usd_per_gpu_hour"]
    assert data["cost_cloud_usd"] == pytest.approx(billed_gpus * 365 * 24 * price, rel=1e-9)
    assert data["assumptions"]["commitment"] == {"term_s": YEAR_TERM_S, "reuse_fraction": 0.0}
    assert "billed for the whole 365-day term (0 % of its unused time resold" in err


@pytest.mark.parametrize("reuse", [0.25, 0.5, 1.0])
def test_the_resold_share_of_the_unused_term_is_not_paid(capsys, reuse):
    data, err = _json(capsys, "--pricing", "reserved-1y", "--commitment-reuse", str(reuse))
    billed_gpus = 4096 + data["spare_nodes"] * 8
    wall_s = data["wall_days"] * DAY_S
    billed_s = wall_s + (1 - reuse) * (YEAR_TERM_S - wall_s)
    assert data["cost_cloud_usd"] == pytest.approx(
        billed_gpus * billed_s / 3600 * data["price"]["usd_per_gpu_hour"], rel=1e-9)
    assert f"{100 * reuse:.0f} % of its unused time resold" in err


def test_reserved_3y_commits_three_years_and_on_demand_nothing(capsys):
    three, _ = _json(capsys, "--pricing", "reserved-3y")
    gpus = 4096 + three["spare_nodes"] * 8
    assert three["cost_cloud_usd"] == pytest.approx(
        gpus * 1095 * 24 * three["price"]["usd_per_gpu_hour"], rel=1e-9)
    hourly, err = _json(capsys)
    assert hourly["cost_cloud_usd"] == pytest.approx(
        gpus * hourly["wall_days"] * 24 * hourly["price"]["usd_per_gpu_hour"], rel=1e-9)
    assert hourly["assumptions"]["commitment"] is None and "term" not in err


def test_a_run_longer_than_the_term_commits_whole_terms():
    row = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=256, tp=8, pp=4,
                   pricing="reserved-1y", as_frame=False)
    wall_s = row["wall_time_s"]
    assert wall_s > YEAR_TERM_S  # 256 GPUs: more than a year
    terms = np.ceil(wall_s / YEAR_TERM_S)
    gpus = 256 + row["spare_nodes"] * 8
    price = row["cost_cloud_usd"] / (gpus * terms * YEAR_TERM_S / 3600)
    on_demand = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=256, tp=8, pp=4,
                         pricing="reserved-1y", as_frame=False,
                         overrides={"commitment_reuse_fraction": 1.0})
    assert on_demand["cost_cloud_usd"] == pytest.approx(gpus * wall_s / 3600 * price, rel=1e-9)


def test_plan_says_it_and_costs_by_it(capsys):
    code = main(["plan", "-m", "llama3-8b", "--tokens", "2e12", "--hardware", "h100-sxm",
                 "--max-gpus", "256", "--pricing", "reserved-1y", "--commitment-reuse",
                 "0.5", "-f", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    assert data["assumptions"]["commitment"] == {"term_s": YEAR_TERM_S, "reuse_fraction": 0.5}
    best = data["best"]["cost"]
    wall_s = best["wall_days"] * DAY_S
    assert wall_s < YEAR_TERM_S
    gpus = best["gpus"] + best["spare_nodes"] * 8
    price = data["prices"]["h100-sxm"]["usd_per_gpu_hour"]
    billed_s = wall_s + 0.5 * (YEAR_TERM_S - wall_s)  # the run and half the rest of the year
    assert best["cost_usd"] == pytest.approx(gpus * billed_s / 3600 * price, rel=1e-6)


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_a_bad_reuse_share_is_one_line(capsys, value):
    code = main([*RUN, "--commitment-reuse", value])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--commitment-reuse must be" in err


@settings(max_examples=200, deadline=None)
@given(st.floats(1.0, 5 * YEAR_TERM_S), st.sampled_from([YEAR_TERM_S, 3 * YEAR_TERM_S]),
       st.floats(0.0, 1.0))
def test_billed_time_bounds(wall_s, term_s, reuse):
    """wall time <= billed time <= whole terms; less billed the more is resold."""
    billed = float(committed_time(wall_s, term_s, reuse))
    terms_s = np.ceil(wall_s / term_s) * term_s
    assert wall_s * (1 - 1e-12) <= billed <= terms_s * (1 + 1e-12)
    assert float(committed_time(wall_s, term_s, min(1.0, reuse + 0.1))) <= billed * (1 + 1e-12)
    assert float(committed_time(wall_s, 0.0, reuse)) == wall_s
