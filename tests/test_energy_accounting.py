"""Energy with measured averages: PUE by class of data centre, node power beside the GPUs
at its measured average, and GPU / IT / facility energy in every format.

Published values (hardware_catalog/data/validation/published_runs.csv): BLOOM-176B (row
bloom-176b; Luccioni et al. arXiv:2211.02001: 690 MWh with the idle infrastructure,
50.5 t CO2e with idle and embodied), Llama 3 405B (row llama31-405b-total: 8,930 t CO2e
location-based).  Tolerance 0.75-1.33x (issue 26's whole-run band); before this accounting
the ratios were 1.53, 1.41 and 2.61. OPT-175B's 75 t is compared like for like by
``capplan validate --whole-runs`` (tests/test_whole_runs.py), not here.
"""

import csv
import io
import json

import pytest

from hardware_catalog.loader import load_catalog
from planner.analysis import validate as v
from planner.cli.main import main
from planner.engine.inputs.scenario import DEFAULTS
from planner.engine.layouts.evaluator import evaluate

SMALL = dict(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1, global_batch=512,
             micro_batch=2, tokens=2e11)
ARGS = ["-m", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "64", "--tp", "1", "--pp",
        "1", "--global-batch", "512", "--micro-batch", "2", "--tokens", "2e11"]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_site_classes_have_sourced_pues(catalog):
    pue = {k: e.pue.value for k, e in catalog.site_classes.items()}
    assert pue == {"hyperscale": 1.10, "hpc": 1.2, "colocation": 1.4, "enterprise": 1.58}
    for e in catalog.site_classes.values():
        assert e.pue.source and e.pue.as_of and e.pue.note
    assert DEFAULTS["site_class"] == "hyperscale"
    # the Uptime Institute industry average, the former default, is a class of its own
    assert "Uptime Institute" in catalog.site_class("enterprise").pue.source


@pytest.mark.parametrize("site_class,site,pue", [
    (None, "us-average", 1.10),            # the default: hyperscale
    ("enterprise", "us-average", 1.58),
    ("hpc", "france", 1.2),
    ("site", "norway", 1.2),               # the site entry's own regional PUE
    ("site", "us-average", 1.58),
])
def test_facility_energy_is_it_energy_times_the_class_pue(catalog, site_class, site, pue):
    extra = {} if site_class is None else {"site_class": site_class}
    r = evaluate(catalog=catalog, site=site, **SMALL, **extra).iloc[0]
    assert r.energy_facility_j / r.energy_it_j == pytest.approx(pue, rel=1e-12)
    assert r.energy_gpu_j < r.energy_it_j < r.energy_facility_j


def test_grid_follows_the_site_and_pue_the_class(catalog):
    a = evaluate(catalog=catalog, site="norway", **SMALL).iloc[0]
    b = evaluate(catalog=catalog, site="singapore", **SMALL).iloc[0]
    assert a.energy_facility_j == pytest.approx(b.energy_facility_j, rel=1e-12)
    assert a.co2e_operational_kg < b.co2e_operational_kg


def test_node_power_beside_the_gpus_is_a_measured_average(catalog):
    h100 = catalog.node("dgx-h100").node_overhead_power_w
    assert h100.value == 2400 and h100.estimate
    assert "arXiv:2412.08602" in h100.source and "arXiv:2506.14551" in h100.source
    # measured 8.4 kW at most for 8 x 700 W GPUs: at most 2.8 kW beside them
    assert h100.value <= 8400 - 8 * 700
    for node in catalog.nodes.values():
        note = (node.node_overhead_power_w.note or "").lower()
        assert "upper bound" not in note and "max system power)" not in note, node.id


def test_unknown_site_class_is_one_line_exit_2(capsys):
    assert main(["evaluate", *ARGS, "--site-class", "hyperscal"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "hyperscale" in err[0]


def test_three_energy_columns_in_every_format(capsys, tmp_path):
    assert main(["evaluate", *ARGS, "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"energy_gpu_kwh", "energy_it_kwh", "energy_kwh"} <= set(data)
    assert data["energy_gpu_kwh"] < data["energy_it_kwh"] < data["energy_kwh"]
    plan = ["plan", "-m", "llama2-7b", "--tokens", "2e11", "-H", "h100-sxm", "--max-gpus", "64"]
    assert main([*plan, "-f", "json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]["cost"]
    assert {"energy_gpu_mwh", "energy_it_mwh", "energy_mwh"} <= set(best)
    assert main([*plan, "-f", "csv"]) == 0
    header = next(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert {"gpu_mwh", "it_mwh", "mwh"} <= set(header)
    assert main([*plan, "-f", "table"]) == 0
    text = capsys.readouterr().out
    assert all(h in text for h in ("GPU MWh", "IT MWh", "facility MWh"))
    import openpyxl

    path = tmp_path / "run.xlsx"
    assert main(["export", "xlsx", *ARGS, "-o", str(path)]) == 0
    capsys.readouterr()
    sweep = list(openpyxl.load_workbook(path)["Sweep"].iter_rows(values_only=True))
    assert {"energy_gpu_kwh", "energy_it_kwh", "energy_kwh"} <= set(sweep[0])


@pytest.mark.parametrize("run,quantity", [
    ("bloom-176b", "energy_total_mwh"), ("bloom-176b", "co2e_t"),
    ("llama3-405b", "co2e_operational_t")])
def test_whole_run_energy_and_carbon_within_the_band(catalog, run, quantity):
    rows = {(r["run"], r["quantity"]): r for r in v.whole_run_energy_check(catalog)}
    r = rows[(run, quantity)]
    assert 0.75 <= r["ratio"] <= 1.33, r
    assert abs(r["ratio"] - 1) < abs(r["ratio_before"] - 1)  # closer than before


def test_published_values_are_the_rows(catalog):
    runs = v.published_runs().set_index("run_id")
    assert runs.loc["bloom-176b", "energy_MWh"].startswith("433.196")
    assert runs.loc["bloom-176b", "tCO2e"].startswith("24.7 dynamic / 50.5")
    assert runs.loc["opt-175b", "tCO2e"].startswith("75")
    assert runs.loc["llama31-405b-total", "tCO2e"].startswith("8930")
    published = {run: pub for run, (_, pub) in v.WHOLE_RUN_ENERGY.items()}
    assert published["bloom-176b"]["energy_gpu_mwh"] == 433.196
    assert published["bloom-176b"]["co2e_t"] == 50.5
    assert published["llama3-405b"]["co2e_operational_t"] == 8930.0
