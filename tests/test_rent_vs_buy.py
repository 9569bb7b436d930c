"""Rent vs buy: owned-cluster cost beside the cloud cost, break-even utilisation, payback."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.cost import (
    SECONDS_PER_HOUR,
    SECONDS_PER_MONTH,
    SECONDS_PER_YEAR,
    breakeven_utilisation,
    facility_usd_per_hour,
    owned_job_cost,
    ownership_usd_per_hour,
    payback_months,
)
from hardware_catalog.prices import load_ownership
from planner.errors import CapplanError


def test_every_ownership_default_is_sourced():
    rows = load_ownership()
    assert set(rows) == {"node_capex_fraction", "network_capex_fraction",
                         "storage_capex_fraction", "residual_value_fraction",
                         "facility_usd_per_kw_month", "utilisation", "opex_fraction_per_year"}
    for row in rows.values():
        assert len(row["source"]) > 20 and row["as_of"][:2] == "20" and row["unit"]


def test_cbre_colocation_rent_per_gpu_hour():
    # CBRE H2 2024: USD 184.06 per kW-month; one H100 with its DGX share at peak is
    # 700 W + (4,600 W + 8 x 25 W) / 8 = 1,300 W -> 184.06 x 1.3 / 730.5 h
    assert facility_usd_per_hour(184.06, 1300.0) == pytest.approx(184.06 * 1.3 / 730.485,
                                                                  rel=1e-5)


@settings(max_examples=300, deadline=None)
@given(st.floats(1e3, 1e5), st.floats(0, 0.9), st.floats(1, 8), st.floats(0, 0.2),
       st.floats(0, 2), st.floats(0.5, 20), st.floats(0, 0.4))
def test_owned_equals_cloud_at_the_breakeven_utilisation(capex, rho, years, m, fac, price,
                                                         energy_h):
    fixed = ownership_usd_per_hour(capex, rho, years * SECONDS_PER_YEAR, m, fac)
    u_star = breakeven_utilisation(fixed, price, energy_h)
    if not 0 < u_star <= 1:
        return
    gpus, t = 64.0, 86400.0
    energy_j = energy_h * gpus * t / SECONDS_PER_HOUR / 0.1 * 3.6e6  # at 0.1 USD/kWh
    owned = owned_job_cost(gpus, t, fixed, u_star, energy_j, 0.1)
    assert owned == pytest.approx(gpus * t / SECONDS_PER_HOUR * price, rel=1e-9)
    # and buying wins above it, renting below it
    assert owned_job_cost(gpus, t, fixed, min(1.0, u_star * 1.1), energy_j, 0.1) <= owned
    assert owned_job_cost(gpus, t, fixed, u_star * 0.9, energy_j, 0.1) > owned


@settings(max_examples=200, deadline=None)
@given(st.floats(1e3, 1e5), st.floats(1, 20), st.floats(0, 0.5), st.floats(0, 1),
       st.floats(0.1, 1))
def test_payback_months_pays_back_the_capital(capex, price, energy_h, running, u):
    if u * (price - energy_h) - running <= 1e-6:  # never pays back
        return
    months = payback_months(capex, price, energy_h, running, u)
    hours = months * SECONDS_PER_MONTH / SECONDS_PER_HOUR
    saved = hours * (u * (price - energy_h) - running)
    assert saved == pytest.approx(capex, rel=1e-9)


@pytest.fixture(scope="module")
def small(catalog):
    from planner.engine.search.optimize import plan

    return plan(model="llama2-7b", tokens=2e12, hardware=["h100-sxm"], max_gpus=256,
                catalog=catalog)


def test_plan_reports_rent_vs_buy_for_every_winner(small, catalog):
    assert set(small.rent_vs_buy) == {o for o, r in small.best.items() if r is not None}
    r = small.rent_vs_buy["cost"]
    row = small.best["cost"]
    acc = catalog.accelerator("h100-sxm")
    p = r["parameters"]
    capex = acc.purchase_price_usd.value * (1 + p["node_capex_fraction"]
                                            + p["network_capex_fraction"]
                                            + p["storage_capex_fraction"])
    assert r["capex_usd_per_gpu"] == pytest.approx(capex)
    # the cloud side is the plan's own cost at the cloud price
    assert r["cloud_usd"] == pytest.approx(row["cost_usd"], rel=1e-9)
    site = catalog.site("us-average")
    energy_usd = row["energy_kwh"] * site.electricity_usd_per_kwh.value
    hours = row["gpus"] * row["wall_time_s"] / 3600
    assert r["owned_usd"] == pytest.approx(
        hours * r["ownership_usd_per_gpu_hour"] / p["utilisation"] + energy_usd, rel=1e-9)
    assert r["buy_wins"] == (r["owned_usd"] < r["cloud_usd"])
    u = r["breakeven_utilisation"]
    assert u is not None and (u < p["utilisation"]) == r["buy_wins"]


def test_ownership_overrides_move_the_owned_cost(catalog):
    from planner.engine.search.optimize import plan

    args = dict(model="llama2-7b", tokens=2e12, hardware=["h100-sxm"], max_gpus=64,
                catalog=catalog)
    base = plan(**args).rent_vs_buy["cost"]
    busy = plan(**args, ownership={"utilisation": 1.0}).rent_vs_buy["cost"]
    assert busy["owned_usd"] < base["owned_usd"]
    assert busy["breakeven_utilisation"] == pytest.approx(base["breakeven_utilisation"])
    with pytest.raises(CapplanError, match="did you mean: utilisation"):
        plan(**args, ownership={"utilisaton": 0.5})
    with pytest.raises(CapplanError, match="outside its range"):
        plan(**args, ownership={"residual_value_fraction": 1.0})


def test_scenario_file_ownership_section_and_json(tmp_path, capsys):
    from planner.cli.main import main

    path = tmp_path / "s.toml"
    path.write_text('model = "llama2-7b"\ntokens = 2e12\nhardware = "h100-sxm"\n'
                    'max_gpus = 64\n[ownership]\nutilisation = 0.35\n')
    assert main(["plan", "--scenario", str(path), "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rvb = data["rent_vs_buy"]["cost"]
    assert rvb["utilisation"] == 0.35 and rvb["cloud_tier"] == "on-demand"
    path.write_text('model = "llama2-7b"\n[ownership]\nutilisation = 0\n')
    assert main(["plan", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("capplan: error:") and "utilisation" in err[0]


@pytest.mark.parametrize("flags, basis", [([], "cloud"), (["--pricing", "owned"], "tco"),
                                          (["--cost-basis", "tco"], "tco")])
def test_evaluate_and_plan_report_the_basis_they_cost_by(capsys, flags, basis):
    """evaluate's JSON, its stderr line and plan's JSON name one cost basis (issue 40:
    ``--pricing owned`` costs by TCO, evaluate's rent_vs_buy said 'cloud')."""
    from planner.cli.main import main

    small = ["--model", "llama2-7b", "--tokens", "2e12", "-H", "h100-sxm", *flags]
    assert main(["evaluate", *small, "--gpus", "64", "-f", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["rent_vs_buy"]["basis"] == basis
    assert ("cost by TCO" in err) == (basis == "tco"), err
    assert main(["plan", *small, "--max-gpus", "64", "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["basis"] for r in data["rent_vs_buy"].values()} == {basis}
