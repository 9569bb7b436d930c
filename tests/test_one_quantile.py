"""One quantile everywhere (issue 41 item 4): with --confidence Q every number a plan
reports for a winner (days, cost, energy, power) is that plan's Q-quantile under the
uncertainty model, labelled; the default plan is the nominal run and says "nominal",
never "P50" (the nominal run is not the model's median)."""

import contextlib
import io
import json

import pytest

from planner.cli.main import main

PLAN = ["plan", "-m", "llama3-8b", "--tokens", "2e12", "--hardware", "h100-sxm,mi300x",
        "--max-gpus", "512", "--budget-usd", "1.5e6"]


def _run(capsys, *argv):
    code = main([*PLAN, *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


@pytest.fixture(scope="module")
def at_p90():
    """The JSON of the plan at --confidence 0.9 with --uncertainty (seed 0, 400 draws)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*PLAN, "--confidence", "0.9", "--uncertainty", "--seed", "0", "-f",
                     "json"])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def test_winners_are_the_p90_of_the_uncertainty_draws(at_p90):
    drawn = at_p90["uncertainty"]["nominal_winners"]
    checked = 0
    for objective, row in at_p90["best"].items():
        if row is None:
            continue
        assert row["quantile"] == 0.9
        for quantity in ("wall_days", "cost_usd", "energy_mwh", "peak_power_mw"):
            assert row[quantity] == pytest.approx(drawn[objective][quantity]["p90"], rel=0.03)
        # and not the nominal run: the spread of the price alone moves the cost
        assert row["cost_usd"] > row["nominal"]["cost_usd"] * 1.03
        checked += 1
    assert checked == 6
    assert at_p90["assumptions"]["quantile_label"] == "P90"


def test_the_constraints_hold_at_the_quantile(at_p90):
    for row in at_p90["best"].values():
        assert row["wall_days"] <= 90.0 * 1.03 and row["cost_usd"] <= 1.5e6 * 1.03


def test_explanations_are_at_the_quantile_too(at_p90):
    for b in at_p90["binding"].values():
        if b["unconstrained"] is not None:
            assert b["unconstrained"]["quantile"] == 0.9
    for per in at_p90["per_hardware"].values():
        for row in per.values():
            assert row is None or row["quantile"] == 0.9


def test_table_and_csv_say_the_quantile(capsys):
    out, _ = _run(capsys, "--confidence", "0.9")
    out = " ".join(out.split())
    assert "Winners per objective at P90 (uncertainty model)" in out
    assert "quantile P90 (uncertainty model)" in out
    assert "numbers and constraints at P90 of the uncertainty model" in out
    out, err = _run(capsys, "--confidence", "0.9", "-f", "csv")
    header, *rows = out.splitlines()
    assert "quantile" in header.split(",") and all(",P90," in r for r in rows)
    assert "quantile P90" in err


def test_the_default_plan_is_labelled_nominal_not_p50(capsys):
    out, _ = _run(capsys)
    out = " ".join(out.split())  # the table wraps lines
    assert "nominal run (not the P50 of the uncertainty model)" in out
    assert "P50" not in out.replace("not the P50", "")
    out, _ = _run(capsys, "-f", "json")
    data = json.loads(out)
    assert data["assumptions"]["quantile_label"] == "nominal"
    assert all("quantile" not in row for row in data["best"].values() if row)


PHASES = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "scenarios"
             / "llama3-phases.toml")


def _json(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


QUANTITIES = ("wall_days", "cost_usd", "energy_mwh", "co2e_t", "peak_power_mw")


def test_a_plan_of_phases_shows_its_winners_at_the_quantile():
    """Each winner's whole-run totals are the P90 of its drawn totals (the draws of
    --uncertainty, same seed); each of its phases is labelled and moved off nominal."""
    data = _json("plan", "--scenario", PHASES, "--confidence", "0.9", "--uncertainty",
                 "--draws", "100", "--seed", "0", "-f", "json")
    drawn = data["uncertainty"]["nominal_winners"]
    checked = 0
    for objective, row in data["best"].items():
        if row is None:
            continue
        assert row["quantile"] == 0.9
        for quantity in QUANTITIES:
            assert row[quantity] == pytest.approx(drawn[objective][quantity]["p90"], rel=0.03)
        assert row["wall_days"] > row["nominal"]["wall_days"] * 1.03
        assert row["wall_time_s"] == pytest.approx(row["wall_days"] * 86400.0, rel=1e-12)
        for phase in row["phases"]:
            assert phase["quantile"] == 0.9
            assert phase["wall_days"] > phase["nominal"]["wall_days"]
        checked += 1
    assert checked == 6
    # the deadline of the file (120 days) holds at the quantile shown
    assert all(row["wall_days"] <= 120 * 1.03 for row in data["best"].values())


def test_a_plan_of_phases_table_and_csv_say_the_quantile(capsys):
    assert main(["plan", "--scenario", PHASES, "--confidence", "0.9", "--draws", "50"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "numbers and constraints at P90 of the uncertainty model" in out
    assert "numbers of the nominal run" not in out
    assert "each phase row is that phase's own P90; the phases' P90s do not add up" in out
    assert main(["plan", "--scenario", PHASES, "--confidence", "0.9", "--draws", "50",
                 "-f", "csv"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    column = header.split(",").index("quantile")
    assert rows and all(r.split(",")[column] == "P90" for r in rows)


def test_several_sites_show_each_sites_winners_at_the_quantile():
    """At every site, each winner's numbers are the P90 of that site's --uncertainty draws,
    and the ranking ranks those P90 values."""
    data = _json(*PLAN[:-2], "--site", "norway,us-average", "--confidence", "0.9",
                 "--uncertainty", "--draws", "100", "--seed", "0", "-f", "json")
    for name, site in data["sites"].items():
        drawn = site["uncertainty"]["nominal_winners"]
        for objective, row in site["best"].items():
            if row is None:
                continue
            assert row["quantile"] == 0.9
            for quantity in ("wall_days", "cost_usd", "energy_mwh", "peak_power_mw"):
                assert row[quantity] == pytest.approx(drawn[objective][quantity]["p90"],
                                                      rel=0.03), (name, objective, quantity)
            assert row["cost_usd"] > row["nominal"]["cost_usd"] * 1.03
        ranked = next(r for r in data["ranking"] if r["site"] == name)
        assert ranked["best_cost_usd"] == site["best"]["cost"]["cost_usd"]


def test_several_sites_table_and_csv_say_the_quantile(capsys):
    argv = [*PLAN[:-2], "--site", "norway,us-average", "--confidence", "0.9", "--draws", "50"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "numbers and constraints at P90 of the uncertainty model at every site" in out
    assert main([*argv, "-f", "csv"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    column = header.split(",").index("quantile")
    assert len(rows) == 2 and all(r.split(",")[column] == "P90" for r in rows)


def test_confidence_one_half_is_the_median_not_the_nominal_run():
    """``--confidence 0.5`` asks for P50: the winners' numbers are the medians of the
    --uncertainty draws (fixed seed), labelled P50, planned with P50 margins; only a plan
    without --confidence is the nominal run."""
    data = _json(*PLAN, "--confidence", "0.5", "--uncertainty", "--seed", "0", "-f", "json")
    assert data["assumptions"]["quantile_label"] == "P50"
    assert data["planned_quantile"] == 0.5 and data["margins"] and data["margin_draws"] == 200
    drawn = data["uncertainty"]["nominal_winners"]
    moved = 0
    for objective, row in data["best"].items():
        assert row["quantile"] == 0.5
        for quantity in ("wall_days", "cost_usd", "energy_mwh", "peak_power_mw"):
            assert row[quantity] == pytest.approx(drawn[objective][quantity]["p50"], rel=0.03)
        moved += row["cost_usd"] != row["nominal"]["cost_usd"]
    assert moved == 6  # the median is not the nominal run
    nominal = _json(*PLAN, "-f", "json")
    assert nominal["planned_quantile"] is None and nominal["margins"] == {}
    assert nominal["assumptions"]["quantile_label"] == "nominal"


def test_confidence_one_half_says_p50_on_screen(capsys):
    out, _ = _run(capsys, "--confidence", "0.5")
    out = " ".join(out.split())
    assert "numbers and constraints at P50 of the uncertainty model" in out
    assert "Winners per objective at P50 (uncertainty model)" in out
    assert "nominal run" not in out.replace("(nominal run)", "")
