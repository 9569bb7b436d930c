"""Issue 14 'done when': the money and carbon options of ``capplan plan`` in every format."""

import csv
import io
import json

import pytest

from planner.cli.main import main

SMALL = ["plan", "--model", "llama2-7b", "--tokens", "1e12", "--max-gpus", "128",
         "-H", "h100-sxm"]
OPTIONS = {"spot": ["--pricing", "spot"], "owned": ["--pricing", "owned"],
           "lambda": ["--provider", "lambda"], "site-all": ["--site", "all"],
           "tcdp": ["--objective", "tcdp"]}
FORMATS = {"table": "txt", "json": "json", "csv": "csv", "markdown": "md"}


def _plans(data: dict) -> list[dict]:
    """The plan payloads in a plan JSON (one, or one per site)."""
    return list(data["sites"].values()) if "sites" in data else [data]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("option", OPTIONS)
def test_money_and_carbon_options_in_every_format(capsys, tmp_path, option, fmt):
    out = tmp_path / f"plan.{FORMATS[fmt]}"
    code = main([*SMALL, *OPTIONS[option], "-f", fmt, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    text = out.read_text()
    if fmt == "json":
        data = json.loads(text)
        for payload in _plans(data):
            for objective, row in payload["best"].items():
                price = row["price"]  # each winner names its price source, tier, provider
                assert price["tier"] == payload["scenario"]["pricing"]
                assert price["provider"] == payload["scenario"]["provider"]
                assert len(price["source"]) > 10
                rvb = payload["rent_vs_buy"][objective]  # and its owned-cluster cost
                assert rvb["owned_usd"] > 0 and rvb["cloud_usd"] > 0
            assert payload["best"]["tcdp"]["tcdp_t_d"] > 0
        if option == "lambda":
            assert data["best"]["cost"]["price"]["chosen_provider"] == "lambda"
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert rows and all(r.get("owned_usd") or r.get("site") for r in rows)
    elif fmt == "markdown":
        assert text.startswith("### ") and "|---|" in text
    else:
        assert ("Rent vs buy" in text) or ("Sites ranked" in text)
    # a second run to the same file needs --force
    assert main([*SMALL, *OPTIONS[option], "-f", fmt, "-o", str(out)]) == 2
    assert main([*SMALL, *OPTIONS[option], "-f", fmt, "-o", str(out), "--force"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("bad, words", [
    (["--objective", "tcpd"], ["objective", "tcdp"]),
    (["--site", "norway,narnia"], ["narnia"]),
])
def test_bad_values_give_one_error_line(capsys, bad, words):
    assert main([*SMALL, *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("capplan: error:")
    assert all(w in err[0] for w in words)


@pytest.mark.parametrize("fmt", FORMATS)
def test_evaluate_shows_rent_vs_buy_in_every_format(capsys, fmt):
    args = ["evaluate", "-m", "llama2-7b", "-H", "h100-sxm", "-n", "64", "--tokens", "1e12",
            "--site", "norway", "-f", fmt]
    assert main(args) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        rvb = json.loads(out)["rent_vs_buy"]
        assert rvb["site"] == "norway" and rvb["owned_usd"] > 0
        assert rvb["cloud_usd"] == pytest.approx(json.loads(out)["cost_usd"], rel=1e-9)
    elif fmt == "table":  # the label drops the unit the value shows ('1.2 M USD')
        assert "rent_vs_buy.owned " in out and "rent_vs_buy.breakeven_utilisation" in out
    else:
        assert "rent_vs_buy.owned_usd" in out and "rent_vs_buy.breakeven_utilisation" in out
