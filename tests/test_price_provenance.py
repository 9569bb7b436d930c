"""Prices as data (issue 41): one price per accelerator and tier on every screen, with its
listings, providers, spread and date; estimates flagged and drawn wide; --hardware market;
--prices FILE."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hardware_catalog import clear_cache, load_catalog
from hardware_catalog.loader import ENV_VAR
from hardware_catalog.prices import PriceRow
from planner import plan
from planner.analysis.uncertainty import (
    PRICE_INPUT,
    default_spreads,
    factors,
    plan_uncertainty,
)
from planner.cli.main import main
from planner.engine.economics.pricing import (
    ESTIMATE_SIGMA,
    IQR_SIGMAS,
    MARKET_MIN_LISTINGS,
    market_priced,
    price_quote,
    quote,
)

SMALL = ["--model", "llama2-7b", "--tokens", "1e11", "--min-gpus", "8", "--max-gpus", "64"]
COLUMNS = ("provider,instance_type,accelerator,accelerator_count,gpu_memory_gib,region,"
           "on_demand_usd_per_hour,spot_usd_per_hour,on_demand_usd_per_gpu_hour,"
           "spot_usd_per_gpu_hour,marketplace,source_path,source_commit")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    clear_cache()
    yield
    clear_cache()


def _json(capsys, *args) -> dict:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _row(provider, price, accelerator="h100-sxm", region="r", marketplace=False):
    return PriceRow(provider=provider, instance_type="i", accelerator_name="H100",
                    accelerator=accelerator, chips=8, region=region,
                    on_demand_usd_per_gpu_hour=price, spot_usd_per_gpu_hour=None,
                    marketplace=marketplace, accelerator_only=False, source="f@c")


def test_catalog_list_and_plan_json_report_the_same_price(capsys):
    listed = _json(capsys, "catalog", "list", "accelerators", "-f", "json")
    by_id = {e["id"]: e["price"] for e in listed["entries"]}
    for tier in ("on-demand", "spot"):
        planned = _json(capsys, "plan", *SMALL, "--hardware", "h100-sxm,h200,mi300x",
                        "--pricing", tier, "-f", "json") if tier == "on-demand" else _json(
            capsys, "plan", *SMALL, "--hardware", "h100-sxm,h200", "--pricing", tier,
            "-f", "json")
        assert planned["prices"], tier
        for hw, q in planned["prices"].items():
            shown = by_id[hw][tier]
            assert shown["usd_per_gpu_hour"] == q["usd_per_gpu_hour"], (hw, tier)
            for key in ("listings", "providers", "p25_usd_per_gpu_hour",
                        "p75_usd_per_gpu_hour", "as_of", "estimate", "basis", "sigma"):
                assert shown[key] == q[key], (hw, tier, key)
        for row in planned["best"].values():
            assert row["price"] == planned["prices"][row["hardware"]]


def test_every_price_carries_listings_date_and_spread(catalog):
    for acc in catalog.accelerators.values():
        q = price_quote(catalog, acc)
        assert q.as_of, acc.id
        assert q.basis, acc.id
        assert q.sigma > 0, acc.id
        if not q.estimate:
            assert q.listings >= MARKET_MIN_LISTINGS and q.providers >= 2
            assert q.p25_usd_per_gpu_hour <= q.usd_per_gpu_hour <= q.p75_usd_per_gpu_hour
            # the standard error of the providers' median: sqrt(pi/2) s / sqrt(providers)
            spread = math.log(q.p75_usd_per_gpu_hour / q.p25_usd_per_gpu_hour) / IQR_SIGMAS
            assert q.sigma == pytest.approx(max(0.05, math.sqrt(math.pi / 2) * spread
                                                / math.sqrt(q.providers)), rel=1e-12)
        else:
            assert q.sigma == ESTIMATE_SIGMA


def test_catalog_list_table_shows_the_planner_price(capsys):
    code = main(["catalog", "list", "accelerators", "-f", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    header = lines[0].split(",")
    h100 = dict(zip(header, next(li for li in lines if li.startswith("h100-sxm,")).split(","),
                    strict=False))
    cat = load_catalog(())
    q = price_quote(cat, cat.accelerator("h100-sxm"))
    assert float(h100["on_demand_usd_per_gpu_hour"]) == pytest.approx(q.usd_per_gpu_hour)
    assert int(h100["on_demand_listings"]) == q.listings
    assert "cloud_price_usd_per_gpu_hour" not in header  # the catalog's own estimate is gone


def test_one_provider_is_an_estimate_not_a_market():
    rows = [_row("oci", 6.0, region=f"r{i}") for i in range(4)]
    q = quote(rows, "h100-sxm")
    assert q.estimate and q.basis == "single provider" and q.listings == 4
    assert q.sigma == ESTIMATE_SIGMA
    two = quote(rows + [_row("aws", 3.0)], "h100-sxm")
    assert not two.estimate and two.basis == "market" and two.providers == 2
    few = quote([_row("oci", 6.0), _row("aws", 3.0)], "h100-sxm")  # 2 listings < 3
    assert few.estimate and few.basis == "few listings"
    market_only = quote(rows + [_row("vast", 1.0, marketplace=True)] * 3, "h100-sxm")
    assert market_only.estimate  # marketplaces neither vote nor make a market


def test_derived_price_says_where_it_comes_from(capsys, catalog):
    q = price_quote(catalog, catalog.accelerator("mi325x"))
    base = price_quote(catalog, catalog.accelerator("mi300x"))
    assert q.estimate and q.derived_from == "mi300x x 1.35"
    assert q.usd_per_gpu_hour == pytest.approx(base.usd_per_gpu_hour * 1.35, rel=1e-12)
    code = main(["catalog", "show", "mi325x", "-f", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    line = next(li for li in out.splitlines() if li.startswith("price.on-demand,"))
    assert "mi325x: estimated from mi300x x 1.35, no market listing" in line


def test_hardware_market_keeps_only_market_priced(catalog):
    market = market_priced(catalog)
    assert market and set(market) <= set(catalog.accelerators)
    for hw in catalog.accelerators:
        q = price_quote(catalog, catalog.accelerator(hw))
        assert (hw in market) == (not q.estimate), hw
    assert "mi300x" not in market and "mi325x" not in market and "h100-sxm" in market
    result = plan(catalog=catalog, model="llama2-7b", tokens=1e11, hardware=["market"],
                  min_gpus=8, max_gpus=64)
    assert set(result.prices) == set(market)


def test_an_estimates_spread_widens_its_draws():
    spreads = default_spreads()
    sigma = {PRICE_INPUT: np.array([0.1, ESTIMATE_SIGMA])}
    f = factors(spreads, 4000, 2, 0, sigma)[PRICE_INPUT]
    spread = np.log(np.percentile(f, 90, axis=0) / np.percentile(f, 10, axis=0))
    assert spread[1] / spread[0] == pytest.approx(ESTIMATE_SIGMA / 0.1, rel=0.1)
    # the other inputs draw the same numbers with or without per-accelerator price sigmas
    plain = factors(spreads, 50, 2, 0)
    with_price = factors(spreads, 50, 2, 0, sigma)
    for name in plain:
        if name != PRICE_INPUT:
            assert np.array_equal(plain[name], with_price[name])


def test_an_estimates_spread_widens_its_win_probability_interval(catalog):
    """The cost winner's P10-P90 cost band under --uncertainty is wider when its price is
    an estimate (mi300x: one provider) than with a market-like spread."""
    from dataclasses import replace

    result = plan(catalog=catalog, model="llama2-7b", tokens=1e11, hardware=["mi300x"],
                  min_gpus=8, max_gpus=64)
    assert result.prices["mi300x"]["estimate"]
    spreads = default_spreads()
    wide = plan_uncertainty(result, catalog, spreads, draws=200)
    result.prices["mi300x"] = {**result.prices["mi300x"], "sigma": 0.1}
    narrow = plan_uncertainty(result, catalog, spreads, draws=200)
    assert wide["price_sigma"]["mi300x"] == ESTIMATE_SIGMA

    def band(report):
        c = report["nominal_winners"]["cost"]["cost_usd"]
        return c["p90"] / c["p10"]

    assert band(wide) > 1.5 * band(narrow)
    # a scenario's own [uncertainty.price_usd_per_gpu_hour] replaces the data's sigmas
    own = {**spreads, PRICE_INPUT: replace(spreads[PRICE_INPUT], sigma=0.1, scope="hardware")}
    assert plan_uncertainty(result, catalog, own, draws=50)["price_sigma"] == {}


def test_prices_file_replaces_the_market_for_its_accelerators(capsys, tmp_path):
    quotes = tmp_path / "quotes.csv"
    quotes.write_text(COLUMNS + "\nacme,mi300x-8,MI300X,8,192,us-east,16.0,,2.0,,false,q,none\n")
    listed = _json(capsys, "catalog", "list", "accelerators", "-f", "json",
                   "--prices", str(quotes))
    by_id = {e["id"]: e["price"]["on-demand"] for e in listed["entries"]}
    assert by_id["mi300x"]["usd_per_gpu_hour"] == pytest.approx(2.0)
    assert by_id["mi300x"]["basis"] == "your quotes" and not by_id["mi300x"]["estimate"]
    assert by_id["mi325x"]["usd_per_gpu_hour"] == pytest.approx(2.0 * 1.35)  # derived follows
    planned = _json(capsys, "plan", *SMALL, "--hardware", "mi300x", "--prices", str(quotes),
                    "-f", "json")
    assert planned["prices"]["mi300x"]["usd_per_gpu_hour"] == pytest.approx(2.0)
    evaluated = _json(capsys, "evaluate", "-m", "llama2-7b", "-H", "mi300x", "-n", "8",
                      "--prices", str(quotes), "-f", "json")
    assert evaluated["price"]["usd_per_gpu_hour"] == pytest.approx(2.0)
    shipped = _json(capsys, "evaluate", "-m", "llama2-7b", "-H", "mi300x", "-n", "8",
                    "-f", "json")
    # the cloud cost is rent only: it scales with the price the run pays
    assert evaluated["cost_usd"] / shipped["cost_usd"] == pytest.approx(2.0 / 6.0, rel=1e-9)
    # without the file: the shipped data again
    listed = _json(capsys, "catalog", "list", "accelerators", "-f", "json")
    assert {e["id"]: e["price"]["on-demand"] for e in listed["entries"]}[
        "mi300x"]["usd_per_gpu_hour"] == pytest.approx(6.0)


def test_prices_file_missing_is_one_line(capsys, tmp_path):
    code = main(["catalog", "list", "accelerators", "--prices", str(tmp_path / "none.csv")])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "none.csv: no such file" in err


def test_prices_key_of_a_scenario_file(capsys, tmp_path):
    quotes = tmp_path / "quotes.csv"
    quotes.write_text(COLUMNS + "\nacme,mi300x-8,MI300X,8,192,us-east,16.0,,2.0,,false,q,none\n")
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'model = "llama2-7b"\ntokens = 1e10\nmin_gpus = 8\nmax_gpus = 64\n'
                        f'hardware = "mi300x"\nprices = ["{quotes}"]\n')
    planned = _json(capsys, "plan", "-s", str(scenario), "-f", "json")
    assert planned["prices"]["mi300x"]["usd_per_gpu_hour"] == pytest.approx(2.0)
