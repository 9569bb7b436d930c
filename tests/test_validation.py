"""Validation targets (issue 6): predictions of published measurements, failing above target.

Targets the current model misses because of a documented modelling gap are marked
``xfail(strict=True)`` with the gap named: they turn into failures (XPASS) as soon as the
model closes the gap, so the marker is removed then. See docs/validation.md.
"""

import numpy as np
import pytest

from planner.analysis import validate as v


@pytest.fixture(scope="module")
def pred(catalog):
    return v.predict(v.load_cases(), catalog=catalog)


def mape(pred, dataset):
    return v.metrics(pred.error[pred.dataset == dataset])["mape"]


def test_datasets_are_complete(pred):
    counts = pred.groupby("dataset").size()
    assert counts["vtrain-multi"] == 109 and counts["vtrain-single"] == 1440
    assert counts["sc21"] == 11
    assert counts["llm-foundry-a100"] > 100 and counts["llm-foundry-h100"] > 60
    assert np.isfinite(pred.predicted).all()


def test_vtrain_licence_shipped():
    assert "KAIST" in (v.DATA_DIR / "vtrain" / "LICENSE").read_text()
    assert "source" in v.published_runs().columns and "verification" in v.published_runs().columns


def test_sc21_and_gpt3_example_mape_within_6_percent(pred):
    assert mape(pred, "sc21") <= 0.06


def test_vtrain_multi_node_mape_within_10_percent(pred):
    assert mape(pred, "vtrain-multi") <= 0.10


def test_vtrain_single_node_mape_within_12_percent(pred):
    assert mape(pred, "vtrain-single") <= 0.12


def test_llm_foundry_a100_mfu_mape_within_10_percent(pred):
    assert mape(pred, "llm-foundry-a100") <= 0.10


def test_llm_foundry_h100_mfu_mape_within_10_percent(pred):
    assert mape(pred, "llm-foundry-h100") <= 0.10


def _row(pred, case):
    return pred.set_index("case_id").loc[case]


def test_bloom_step_time_within_8_percent(pred):
    assert abs(_row(pred, "bloom-176b").error) <= 0.08


@pytest.mark.xfail(strict=True, reason="OPT +13% against its 'up to 147 TFLOP/s' (recompute "
                   "counted): the model has no cost for 2021 fairscale FSDP with fp16 dynamic "
                   "loss scaling beyond its collectives, which it hides at dp_overlap 0.9")
def test_opt_tflops_within_10_percent(pred):
    assert abs(_row(pred, "opt-175b").error) <= 0.10


def test_no_run_that_ran_is_predicted_out_of_memory(pred):
    # Megatron/vTrain rows: the memory model must never refuse a layout that ran.
    ran = pred[pred.dataset.isin(["sc21", "vtrain-multi", "full-runs"])]
    assert ran.fits.all(), ran.case_id[~ran.fits].tolist()


def test_memory_check_counts(pred):
    m = v.memory_check(pred)
    assert m["runs"] == len(pred)
    assert m["reported_oom_rows"] == 0  # the shared data reports no OOM layout yet
    # every measured run ran, so none may be predicted not to fit (memory_reserve_bytes is
    # the largest reserve for which this holds)
    assert m["predicted_oom_for_runs_that_ran"] == 0, m["examples"]


def test_korthikanti_activations_within_3_percent():
    for row in v.korthikanti_check():
        assert abs(row["error"]) <= 0.03, row


def test_llama3_failure_rate_and_ettr(catalog):
    mtbf, ettr, rsc = v.reliability_check(catalog)
    assert mtbf["predicted"] == pytest.approx(54 * 24 * 16384 / 419, rel=1e-4)
    assert ettr["predicted"] > 0.90
    # Meta RSC 7.9 h at 1024 GPUs vs the catalog default rate: within a factor of 8
    assert 1 / 8 <= rsc["predicted"] / rsc["published"] <= 8


OLMO_XFAIL = pytest.mark.xfail(strict=True, reason=(
    "OLMo energies under-predicted by 20-46% with the published layouts although the steady "
    "state matches OLMo-core's published throughput (test below): the published energies "
    "imply 1.2-1.8x the predicted GPU time, spent on in-loop evaluation, restarts and stalls "
    "that no published number lets the model cost"))


def test_olmo_core_steady_state_throughput(catalog):
    # the llm-foundry target (MFU MAPE <= 10 %) for the code base that trained OLMo 2
    rows = v.steady_state_check(catalog)
    assert len(rows) == 3
    mape = sum(abs(r["error"]) for r in rows) / len(rows)
    assert mape <= 0.10, rows
    assert all(r["ok"] for r in rows), rows  # each within 15 %


@pytest.mark.parametrize("run", [
    pytest.param("olmo1-7b-a100", marks=OLMO_XFAIL),
    pytest.param("olmo2-7b", marks=OLMO_XFAIL),
    pytest.param("olmo2-13b", marks=OLMO_XFAIL),
])
def test_olmo_energy_within_15_percent(catalog, run):
    rows = {r["check"].split()[0]: r for r in v.energy_check(catalog)}
    assert abs(rows[run]["error"]) <= 0.15


def test_cli_validate_json_and_unknown_dataset(tmp_path):
    import json

    from planner.cli.main import main

    out = tmp_path / "v.json"
    assert main(["validate", "-d", "sc21", "-f", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["datasets"][0]["dataset"] == "sc21"
    assert main(["validate", "-d", "vtrian"]) == 2


def test_cli_validate_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from planner.cli.main import main

    png = tmp_path / "v.png"
    assert main(["validate", "-d", "sc21,full-runs", "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_docs_validation_md_is_up_to_date():
    """docs/validation.md is what `capplan validate --write-docs` writes today."""
    from pathlib import Path

    from planner.report.validation import checks, docs_text, run

    pred, summary = run()
    current = (Path(__file__).parents[1] / "docs" / "validation.md").read_text()
    assert current == docs_text(pred, summary, checks()), (
        "docs/validation.md is stale: run `capplan validate --write-docs`")
