"""Several sites in one plan: --site a,b,c|all ranks sites by each objective."""

import json

import pytest

from hardware_catalog.errors import CatalogError
from planner.engine.inputs.scenario import Scenario
from planner.engine.search.sites import plan_sites, site_names, site_ranking, site_winners
from planner.errors import CapplanError

SMALL = dict(model="llama2-7b", tokens=2e12, hardware=("h100-sxm", "a100-80gb"), max_gpus=64)
SMALL_ARGS = ["-m", "llama2-7b", "--tokens", "2e12", "-H", "h100-sxm,a100-80gb",
              "--max-gpus", "64"]


def test_site_names(catalog):
    assert site_names(catalog, "all") == sorted(catalog.table("site"))
    assert site_names(catalog, " norway, quebec ,norway") == ["norway", "quebec"]
    with pytest.raises(CatalogError, match="did you mean: quebec"):
        site_names(catalog, "norway,quebc")
    with pytest.raises(CapplanError, match="names no site"):
        site_names(catalog, ",")


@pytest.fixture(scope="module")
def three(catalog):
    # the sites' own regional PUEs (--site-class site)
    results = plan_sites(Scenario(**SMALL, site="germany,norway,quebec", site_class="site"),
                         catalog=catalog)
    return results, site_ranking(results, catalog)


def test_each_site_is_its_own_plan(three, catalog):
    from planner.engine.search.optimize import plan

    results, _ = three
    alone = plan(Scenario(**SMALL, site="norway", site_class="site"), catalog=catalog)
    for objective, row in alone.best.items():
        assert results["norway"].best[objective]["co2e_t"] == pytest.approx(row["co2e_t"])


def test_site_inputs_move_energy_and_carbon_optima(three, catalog):
    results, ranking = three
    by_site = {r["site"]: r for r in ranking}
    # facility energy is IT energy x PUE and the IT optimum is site-independent
    assert by_site["germany"]["best_energy_mwh"] / by_site["norway"]["best_energy_mwh"] \
        == pytest.approx(1.5 / 1.2, rel=1e-9)
    winners = site_winners(ranking)
    assert winners["carbon"] == ["quebec"] and winners["energy"] == ["norway", "quebec"]
    # on the cloud price the cost does not depend on the site: every site ties
    assert winners["cost"] == ["germany", "norway", "quebec"]
    # the ranking follows the scenario's objective (cost: a tie, then by name)
    assert [r["site"] for r in ranking] == ["germany", "norway", "quebec"]


def test_default_site_class_sets_one_pue_for_every_site(catalog):
    """The default class (hyperscale, PUE 1.10) applies whatever the site: the energy
    optimum is the same everywhere and only the grid moves the carbon."""
    results = plan_sites(Scenario(**SMALL, site="germany,singapore"), catalog=catalog)
    ranking = {r["site"]: r for r in site_ranking(results, catalog)}
    assert [r["pue"] for r in ranking.values()] == [1.10, 1.10]
    assert catalog.site_class("hyperscale").pue.value == 1.10
    assert ranking["germany"]["best_energy_mwh"] == pytest.approx(
        ranking["singapore"]["best_energy_mwh"], rel=1e-12)
    best = results["germany"].best["energy"]
    assert best["energy_mwh"] == pytest.approx(1.10 * best["energy_it_mwh"], rel=1e-9)
    enterprise = plan_sites(Scenario(**SMALL, site="germany", site_class="enterprise"),
                            catalog=catalog)["germany"].best["energy"]
    assert enterprise["energy_mwh"] == pytest.approx(1.58 / 1.10 * best["energy_mwh"],
                                                     rel=1e-9)


def test_owned_pricing_ranks_sites_by_energy_price(catalog):
    results = plan_sites(Scenario(**SMALL, site="germany,quebec", pricing="owned",
                                  site_class="site"), catalog=catalog)
    ranking = site_ranking(results, catalog)
    # TCO includes energy at the site's price x PUE: Quebec (0.045 x 1.2) beats Germany
    assert [r["site"] for r in ranking] == ["quebec", "germany"]
    assert site_winners(ranking)["cost"] == ["quebec"]


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_plan_site_all_every_format(capsys, tmp_path, fmt):
    from planner.cli.main import main

    out = tmp_path / f"sites.{ {'table': 'txt', 'markdown': 'md'}.get(fmt, fmt)}"
    assert main(["plan", *SMALL_ARGS, "--site", "all", "-f", fmt, "-o", str(out)]) == 0
    text = out.read_text()
    if fmt == "json":
        data = json.loads(text)
        assert set(data["sites"]) == set(data["winners"]["cost"])  # cloud cost: all tie
        assert data["winners"]["carbon"] == ["quebec"]
        price = data["sites"]["quebec"]["best"]["cost"]["price"]
        assert price["tier"] == "on-demand" and price["provider"] == "median" and price["source"]
    else:
        assert "quebec" in text and "norway" in text
    # nothing the user wrote is overwritten without --force
    assert main(["plan", *SMALL_ARGS, "--site", "all", "-f", fmt, "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err


def test_plot_of_a_plan_takes_one_site(capsys):
    from planner.cli.main import main

    assert main(["plan", *SMALL_ARGS, "--site", "norway,quebec", "--plot", "x.png"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--plot takes one site" in err[0]


def test_several_sites_plan_at_the_confidence_each_with_its_own_margins(tmp_path, catalog):
    """--confidence with several sites: each site's plan is the one-site plan at that
    quantile (its own margins), and the JSON says the quantile per site."""
    from planner.analysis.confidence import plan_at_confidence
    from planner.analysis.uncertainty import default_spreads
    from planner.cli.main import main

    out = tmp_path / "sites.json"
    assert main(["plan", *SMALL_ARGS, "--site", "norway,germany", "--site-class", "site",
                 "--confidence", "0.9", "-f", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    alone = plan_at_confidence(Scenario(**SMALL, site="germany", site_class="site",
                                        confidence=0.9), default_spreads(), catalog=catalog)
    germany = data["sites"]["germany"]
    assert germany["planned_quantile"] == 0.9
    assert set(germany["margins"]) == {hw for hw, *_ in alone.scenario.margins}
    for hw, days, cost, power in alone.scenario.margins:
        assert germany["margins"][hw]["wall_days"] == pytest.approx(days, rel=1e-9)
        assert germany["margins"][hw]["cost_usd"] == pytest.approx(cost, rel=1e-9)
        assert germany["margins"][hw]["peak_power_mw"] == pytest.approx(power, rel=1e-9)
    for objective, row in alone.best.items():
        got = germany["best"][objective]
        assert (got is None) == (row is None)
        if row is not None:
            assert got["gpus"] == row["gpus"] and got["hardware"] == row["hardware"]
            # shown at P90 (tests/test_one_quantile.py), its nominal run the one-site plan's
            assert got["quantile"] == 0.9
            assert got["nominal"]["cost_usd"] == pytest.approx(row["cost_usd"], rel=1e-9)
            # each site's winners carry their estimate flags (they were [] at every site)
            assert got["estimate_flags"] == alone.estimate_flags[row["hardware"]]
    assert data["sites"]["norway"]["planned_quantile"] == 0.9
    b300 = tmp_path / "b300.json"
    assert main(["plan", "-m", "llama2-7b", "--tokens", "2e12", "-H", "b300", "--max-gpus",
                 "64", "--site", "norway,germany", "-f", "json", "-o", str(b300)]) == 0
    for site in json.loads(b300.read_text())["sites"].values():
        assert "performance" in site["best"]["cost"]["estimate_flags"]  # no validation row


def test_several_sites_uncertainty_every_format(tmp_path):
    """--uncertainty with several sites: each site's winners' bands (JSON), the constraints
    they miss at P90 per site (csv), one uncertainty table per site (table)."""
    from planner.cli.main import main

    args = [*SMALL_ARGS, "--site", "norway,quebec", "--uncertainty", "--draws", "40",
            "--deadline-days", "60"]
    out = tmp_path / "sites.json"
    assert main(["plan", *args, "-f", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    for site in ("norway", "quebec"):
        report = data["sites"][site]["uncertainty"]
        assert report["draws"] == 40
        band = report["nominal_winners"]["cost"]["wall_days"]
        assert band["p10"] <= band["p50"] <= band["p90"]
    # the nominal cheapest plan on a 60-day deadline sits at the deadline: its P90 misses it
    assert data["sites"]["norway"]["uncertainty"]["constraint_risk"]["cost"]["deadline"][
        "missed_at_quantile"]
    csv = tmp_path / "sites.csv"
    assert main(["plan", *args, "-f", "csv", "-o", str(csv)]) == 0
    header, *lines = csv.read_text().splitlines()
    assert header.split(",")[-1] == "missed_at_p90" and "cost:deadline" in lines[0]
    table = tmp_path / "sites.txt"
    assert main(["plan", *args, "-f", "table", "-o", str(table)]) == 0
    text = table.read_text()
    assert "Site norway:" in text and "Site quebec:" in text
    assert "Probability of being the winner" in text


def test_plot_takes_one_site(capsys, tmp_path):
    from planner.cli.main import main

    assert main(["plot", "plan", *SMALL_ARGS, "--site", "all", "-o",
                 str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "takes one site" in err[0]
    assert not (tmp_path / "p.png").exists()
