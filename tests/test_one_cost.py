"""One cost per plan: the winners table, the rent-vs-buy comparison and the cost's parts
agree in every format, on either cost basis (issue 29: 27.65 M USD in the table beside
'cloud 27.52 M USD', and 2.89 M by TCO beside 'owned 5.71 M')."""

import csv
import io
import json

import pytest

from planner import plan
from planner.cli.main import main
from planner.engine.economics.ownership import COST_PARTS, cost_parts
from planner.report.tables import _fmt_usd, render_plan

SMALL = dict(model="llama2-7b", tokens=1e12, hardware=["h100-sxm", "mi300x"], min_gpus=8,
             max_gpus=256)
CLI = ["plan", "-m", "llama2-7b", "--tokens", "1e12", "-H", "h100-sxm,mi300x",
       "--min-gpus", "8", "--max-gpus", "256"]


@pytest.fixture(scope="module", params=["cloud", "tco"])
def result(request, catalog):
    return plan(catalog=catalog, cost_basis=request.param, **SMALL)


def test_parts_sum_to_the_plan_cost(result, catalog):
    for objective, row in result.best.items():
        parts = result.cost_parts[objective]
        assert list(parts) == list(COST_PARTS)
        assert sum(parts.values()) == pytest.approx(row["cost_usd"], rel=1e-12)
        assert all(v >= 0 for v in parts.values()), parts
        assert parts == cost_parts(catalog, result.scenario, row)
        if result.scenario.cost_basis == "cloud":  # rental only: the energy is in the price
            assert parts["electricity"] == parts["capital_gpus"] == 0.0
            assert parts["gpu_rental"] > 0
        else:
            assert parts["gpu_rental"] == 0.0
            assert parts["capital_gpus"] > 0 and parts["electricity"] > 0
        if row["spare_nodes"] > 0:
            assert parts["hot_spares"] > 0


def test_rent_vs_buy_on_the_chosen_basis_is_the_winners_cost(result):
    basis = result.scenario.cost_basis
    text = render_plan(result, width=200)
    for objective, row in result.best.items():
        rvb = result.rent_vs_buy[objective]
        assert rvb["basis"] == basis
        chosen = rvb["cloud_usd"] if basis == "cloud" else rvb["owned_usd"]
        assert chosen == row["cost_usd"]
        # both figures count the job's GPUs and its hot spares, as the run model does
        assert rvb["cloud_usd"] == row["cost_cloud_usd"]
        assert rvb["owned_usd"] == row["cost_tco_usd"]
    head = result.best[result.scenario.objective]
    side = "cloud" if basis == "cloud" else "owned"
    assert f"{side} {_fmt_usd(head['cost_usd'])} USD (this plan's cost)" in text
    assert "Where the money goes" in text


@pytest.mark.parametrize("basis", ["cloud", "tco"])
def test_every_format_reconciles(capsys, basis):
    args = [*CLI, "--cost-basis", basis]
    assert main([*args, "-f", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    for objective, best in payload["best"].items():
        parts = payload["cost_parts"][objective]
        assert sum(parts.values()) == pytest.approx(best["cost_usd"], rel=1e-12)
        rvb = payload["rent_vs_buy"][objective]
        assert (rvb["cloud_usd"] if basis == "cloud" else rvb["owned_usd"]) == \
            pytest.approx(best["cost_usd"], rel=1e-15)
    assert main([*args, "-f", "csv"]) == 0
    for row in csv.DictReader(io.StringIO(capsys.readouterr().out)):
        parts = sum(float(row[f"usd_{p}"]) for p in COST_PARTS)
        assert parts == pytest.approx(float(row["usd"]), rel=1e-12)
    assert main([*args, "-f", "markdown"]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("| objective"))
    assert all(f"usd_{p}" in header for p in COST_PARTS)
