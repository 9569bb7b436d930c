"""Validation targets (issue 6): predictions of published measurements, failing above target.

Targets the current model misses because of a documented modelling gap are marked
``xfail(strict=True)`` with the gap named: they turn into failures (XPASS) as soon as the
model closes the gap, so the marker is removed then. See docs/validation.md.
"""

import json

import numpy as np
import pandas as pd
import pytest

from hardware_catalog import load_catalog
from planner.analysis import validate as v


@pytest.fixture(scope="module")
def pred(catalog):
    return v.predict(v.load_cases(), catalog=catalog)


def mape(pred, dataset):
    return v.metrics(pred.error[pred.dataset == dataset])["mape"]


def test_datasets_are_complete(pred):
    counts = pred.groupby("dataset").size()
    assert counts["vtrain-multi"] == 109 and counts["vtrain-single"] == 1440
    assert counts["sc21"] == 40  # 25 + Megatron-LM's 2020 README (12) + MT-NLG (3)
    assert counts["llm-foundry-a100"] > 100 and counts["llm-foundry-h100"] > 60
    assert counts["modern-runs"] == 92
    expressible = v.predictable(pred)
    assert np.isfinite(pred.predicted[expressible]).all()
    assert counts["moe-runs"] == 115
    assert counts["finetune-runs"] == 12
    # the datasets whose data files list rows the planner cannot express or excludes
    grouped = pred.dataset.isin(["modern-runs", "moe-runs", "independent-runs", "finetune-runs"])
    assert (pred.unexpressible[~grouped] == "").all()
    # and the one V100 row that set v100-32gb's GEMM efficiency
    excluded = pred.case_id[~grouped & (pred.excluded != "")]
    assert excluded.tolist() == ["megatron2020-1b-dgx2-v100-1"]


def test_vtrain_licence_shipped():
    assert "KAIST" in (v.DATA_DIR / "vtrain" / "LICENSE").read_text()
    assert "source" in v.published_runs().columns and "verification" in v.published_runs().columns


def test_sc21_and_gpt3_example_mape_within_6_percent(pred):
    assert mape(pred, "sc21") <= 0.06


def test_deepspeed_zero3_rows_of_sc21_table_2(pred):
    """SC21 Table 2 (arXiv:2104.04473 s5.2): DeepSpeed ZeRO-3 without model parallelism,
    batch fixed while the GPUs double, held out. Its collectives run flat over the DP group
    (stack field dp_collectives_flat): every GPU's bytes through its own HDR link. Read as
    node-aware they were predicted +31 to +206 % (docs/model.md)."""
    rows = pred[(pred.dataset == "sc21") & pred.case_id.str.startswith("sc21-zero3-")]
    rows = rows.set_index("case_id")
    assert len(rows) == 6 and not rows.fit.any() and set(rows["stack"]) == {"deepspeed-zero"}
    expected = {"sc21-zero3-175b-384": -9.6, "sc21-zero3-175b-768": -6.3,
                "sc21-zero3-175b-1536": 4.8, "sc21-zero3-530b-640": -2.8,
                "sc21-zero3-530b-1120": -14.3, "sc21-zero3-530b-2240": -1.4}
    for case, error_pct in expected.items():
        assert 100 * rows.loc[case, "error"] == pytest.approx(error_pct, abs=0.1), case
    assert rows.fits.astype(bool).all()
    # the step is bound by the gathers as the GPUs double: TFLOP/s per GPU halves
    ratio = rows.loc["sc21-zero3-175b-1536", "predicted"] / rows.loc[
        "sc21-zero3-175b-768", "predicted"]
    assert 0.5 < ratio < 0.6  # published 44 / 88
    node_aware = v.predict(v.load_cases(["sc21"]).query("case_id == 'sc21-zero3-175b-1536'"),
                           params={"*": {"dp_collectives_flat": 0.0}})
    assert node_aware.error.iloc[0] > 1.5  # +206 %: the node's eight links


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
    # modern rows: test_modern_runs_fit_in_memory; MoE rows: test_moe_runs_fit_in_memory;
    # independent rows (96 GB H100 with the 80 GB part standing in): tests/test_crossval.py;
    # fine-tuning rows: tests/test_finetune.py::test_finetune_validation_group_within_target
    old = pred[~pred.dataset.isin(["modern-runs", "moe-runs", "independent-runs",
                                   "finetune-runs"])]
    m = v.memory_check(old)
    assert m["runs"] == int(v.predictable(old).sum()) == len(old) - 1  # the V100 row
    assert v.memory_check(pred)["runs"] == int(v.predictable(pred).sum())
    assert m["reported_oom_rows"] == 0  # the shared data reports no OOM layout yet
    # every measured run ran, so none may be predicted not to fit (memory_reserve_bytes is
    # the largest reserve for which this holds)
    assert m["predicted_oom_for_runs_that_ran"] == 0, m["examples"]


def test_korthikanti_activations_within_3_percent():
    for row in v.korthikanti_check():
        assert abs(row["error"]) <= 0.03, row


def test_llama3_failure_rate_and_ettr(catalog):
    # rows rsc-mttf1024, rsc-mttf16k (Kokolis et al.), l3-int (Llama 3 Table 5): the kernel's
    # job MTTF within 0.67-1.5x at 8, 1,024 and 16,384 GPUs (tests/test_reliability_scaling.py)
    rows = {r["check"]: r for r in v.reliability_check(catalog)}
    for name, published in (("Meta RSC job MTTF, 8 GPUs [h]", 47.7 * 24),
                            ("Meta RSC job MTTF, 1,024 GPUs [h]", 7.9),
                            ("Meta RSC job MTTF, 16,384 GPUs [h]", 1.8),
                            ("Llama 3 405B job MTTF, 16,384 GPUs [h]", 54 * 24 / 419)):
        assert rows[name]["published"] == pytest.approx(published, rel=1e-9)
        assert 1 / 1.5 <= rows[name]["predicted"] / published <= 1.5, name
    assert rows["default profile, 8-GPU job MTTF [d]"]["predicted"] >= 10
    assert rows["Llama 3 405B effective training time ratio"]["predicted"] > 0.90
    assert all(r["ok"] for r in rows.values())


OLMO_XFAIL = pytest.mark.xfail(strict=True, reason=(
    "OLMo energies under-predicted by 41-53% with the published layouts although the steady "
    "state matches OLMo-core's published throughput (test below): the published energies "
    "imply 1.2-1.8x the predicted GPU time, spent on in-loop evaluation, restarts and stalls "
    "that no published number lets the model cost"))


def test_olmo_core_steady_state_throughput(catalog):
    # the llm-foundry target (MFU MAPE <= 10 %) for the code base that trained OLMo 2
    rows = v.steady_state_check(catalog)
    assert len(rows) == 3
    mape = sum(abs(r["error"]) for r in rows) / len(rows)
    assert mape <= 0.10, rows
    assert all(r["ok"] for r in rows), rows  # each within 15 % of its published range


def test_deepseek_v3_under_a_later_stack_within_the_modern_target(catalog):
    # Megatron-Bridge 25.11 on the same GB200/GB300 as the worst modern row (its software
    # is 3.3x slower): the modern-runs target, MAPE <= 10 %, on these four published runs
    rows = v.later_stack_check(catalog)
    assert len(rows) == 4
    mape = sum(abs(r["error"]) for r in rows) / len(rows)
    assert mape <= 0.10, rows


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


def test_cli_validate_does_not_write_docs_unless_asked(tmp_path, monkeypatch):
    import planner.report.validation as report
    from planner.cli.main import main

    calls = []
    monkeypatch.setattr(report, "write_docs", lambda **kw: calls.append(kw) or 0)
    assert main(["validate", "-d", "sc21", "-f", "json", "-o", str(tmp_path / "v.json")]) == 0
    assert calls == []
    assert main(["validate", "-d", "sc21", "--write-docs", "-f", "json",
                 "-o", str(tmp_path / "w.json")]) == 0
    assert len(calls) == 1


def test_older_datasets_keep_their_gpt_style_shape():
    # the shape columns the modern loader fills default, for the older datasets, to what
    # their mapping always was (GPT MLP 4h x 2 matrices, MHA, tied, dense, bf16, no CP/EP/SP)
    cases = v.load_cases(["sc21", "vtrain-multi", "llm-foundry-h100", "full-runs"])
    assert (cases.kv_heads == cases.heads).all() and (cases.ffn == 4 * cases.hidden).all()
    assert (cases.moe_ffn == 4 * cases.hidden).all()
    assert (cases.mlp_matrices == 2).all() and (cases.embedding_matrices == 1).all()
    assert (cases.moe_layers == 0).all() and (cases.experts == 1).all()
    assert (cases.cp == 1).all() and (cases.ep == 1).all()
    # sequence parallelism only where the row says so: Korthikanti 2022's selective rows
    korthikanti_seqsel = cases.case_id.str.match(r"korthikanti-.*-seqsel")
    assert (cases.sequence_parallel == korthikanti_seqsel.astype(float)).all()
    # 16-bit: BF16, but FP16 as Megatron-LM's 2020 README rows state (V100 has no BF16)
    readme_2020 = cases.case_id.str.startswith("megatron2020-")
    assert korthikanti_seqsel.sum() == 4 and readme_2020.sum() == 12
    assert (cases.precision == np.where(readme_2020, "fp16", "bf16")).all()
    assert (cases.unexpressible == "").all()


# ---- modern runs (issue 13): dataset, groups, unexpressible rows, targets ---------------

MODERN_GROUP_NAMES = [name for name, _ in v.MODERN_GROUPS]


@pytest.fixture(scope="module")
def modern(pred):
    return pred[pred.dataset == "modern-runs"].set_index("case_id")


@pytest.fixture(scope="module")
def modern_summary(pred):
    return next(s for s in v.summarise(pred) if s["dataset"] == "modern-runs")


def test_modern_dataset_loads_and_every_row_is_predicted_or_listed(modern, modern_summary):
    raw = v.pd.read_csv(v.DATA_DIR / "modern_runs.csv", dtype=str, keep_default_na=False)
    assert len(raw) == len(modern) == 92
    assert {"source", "notes", "published"} <= set(raw.columns)
    assert (raw.source.str.len() > 10).all()
    predicted = np.isfinite(modern.predicted)
    listed = modern.unexpressible != ""
    assert (predicted ^ listed).all(), modern.index[~(predicted ^ listed)].tolist()
    assert modern_summary["count"] == predicted.sum()
    assert modern_summary["unexpressible_count"] == listed.sum()
    assert {u["case"] for u in modern_summary["unexpressible"]} == set(modern.index[listed])
    assert all(len(u["reason"]) > 10 for u in modern_summary["unexpressible"])
    assert (modern.measured > 0).all()


def test_modern_groups_partition_the_rows(modern, modern_summary):
    assert set(modern.group) <= set(MODERN_GROUP_NAMES)
    counts = modern.group.value_counts().to_dict()
    # from the file: 7 MoE (Grok-1, DeepSeek-V3), 7 A100 (InternLM, torchtitan), 16 dense
    # B200/GB200 (4 dgxc and Megatron-Bridge 25.11, 12 Megatron-Bridge 25.09/25.11 Llama 3
    # at FP8 current scaling and MXFP8), 2 GB300 (Megatron-Bridge 25.11 Llama 3 8B), 11
    # dense H100 FP8 (6 dgxc, 5 Megatron-Bridge 25.09/25.11 at FP8 current scaling), 7
    # dense H100 BF16, 36 NeMo 2024-release rows (24.03, 24.05, 24.07: H100 FP8, held out),
    # 6 low-precision recipe comparisons (4 GB200 of the Megatron-Bridge tutorial, 2 GB300
    # of the DGX Station playbook: BF16 to NVFP4, held out)
    assert counts == {"MoE": 7, "NeMo 2024 releases": 36, "A100 on non-DGX networks": 7,
                      "B200/GB200": 16, "GB300": 2, "H100 FP8": 11, "H100 BF16": 7,
                      "NVIDIA low-precision recipes": 6}
    rows = {g["group"]: g for g in modern_summary["groups"]}
    assert sum(g["rows"] for g in rows.values()) == 92
    for name, g in rows.items():
        assert g["predicted"] + g["unexpressible"] == g["rows"] == counts[name]


@pytest.mark.parametrize("case, group", [
    (dict(experts=8, hardware="h100-sxm", precision="bf16"), "MoE"),
    (dict(experts=256, hardware="a100-80gb", precision="bf16"), "MoE"),
    (dict(experts=1, hardware="a100-80gb", precision="bf16"), "A100 on non-DGX networks"),
    (dict(experts=1, hardware="gb200", precision="bf16"), "B200/GB200"),
    (dict(experts=1, hardware="b200", precision="fp8"), "B200/GB200"),
    (dict(experts=1, hardware="gb300", precision="mxfp8"), "GB300"),
    (dict(experts=1, hardware="h100-sxm", precision="fp8"), "H100 FP8"),
    (dict(experts=1, hardware="h100-sxm", precision="fp8-cs"), "H100 FP8"),
    (dict(experts=1, hardware="h100-sxm", precision="bf16"), "H100 BF16"),
    (dict(experts=1, hardware="h100-sxm", precision="fp8",
          source="NVIDIA/NeMo@8e3d65dc docs/source/performance/performance_summary.md"),
     "NeMo 2024 releases"),
    (dict(experts=8, hardware="h100-sxm", precision="fp8",
          source="NVIDIA/NeMo-Framework-Launcher@5dcb6bb8 examples/README.md"), "MoE"),
])
def test_modern_group_definitions(case, group):
    from types import SimpleNamespace

    assert v.modern_group(SimpleNamespace(**{"source": "NVIDIA/dgxc-benchmarking@741c886"}
                                         | case)) == group


def test_modern_fit_split_by_model_family(modern):
    fit = modern.fit.astype(bool)
    gb300 = modern.hardware == "gb300"
    nemo2024 = modern.source.str.startswith(v.NEMO_2024_SOURCES)
    low_precision = modern.source.str.startswith(v.LOW_PRECISION_SOURCES)
    fit_models = set(modern.model[fit])
    held_models = set(modern.model[~fit & ~gb300 & ~nemo2024 & ~low_precision])
    assert all(m.startswith(("llama", "grok")) for m in fit_models)
    assert held_models == {"nemotron4-15b", "nemotron4-340b", "deepseek-v3", "internlm-7b"}
    # GB300's rows are held out whatever their family: they measure the part's sharing of
    # Blackwell's parameters (validate.MODERN_HELD_OUT_PARTS); so are the NeMo tables of
    # the 2024 releases, Llama rows included (validate.MODERN_HELD_OUT_SOURCES)
    assert gb300.any() and not (fit & gb300).any()
    assert nemo2024.sum() == 36 and not (fit & nemo2024).any()
    assert (modern.model[nemo2024].str.startswith("llama")).sum() == 22
    # and NVIDIA's low-precision recipe comparisons (the Megatron-Bridge tutorial, the DGX
    # Station playbook): no FP4 row is fitted
    assert low_precision.sum() == 6 and not (fit & low_precision).any()
    # every other group: fit and held out
    for name in set(MODERN_GROUP_NAMES) - {"GB300", "NeMo 2024 releases",
                                           "NVIDIA low-precision recipes"}:
        g = modern[modern.group == name]
        assert g.fit.astype(bool).any() and (~g.fit.astype(bool)).any(), name


def test_modern_shapes_match_catalog_and_published_sizes(modern, catalog):
    raw = v.pd.read_csv(v.DATA_DIR / "modern_runs.csv", dtype=str, keep_default_na=False)
    for r in raw.itertuples():
        shape = v.modern_shape(r, catalog)
        if r.model in catalog.models:  # the row and the catalog describe the same model
            m = catalog.model(r.model)
            assert (shape["layers"], shape["hidden"], shape["heads"], shape["kv_heads"],
                    shape["ffn"]) == (m.layers, m.hidden, m.heads, m.kv_heads,
                                      m.ffn), r.case_id
            # NeMo's Grok-1 recipe trains a 128,256-token vocabulary (xAI's: 131,072)
            assert shape["vocab"] == m.vocab or r.model == "grok1-314b", r.case_id
            assert shape["mlp_matrices"] == m.mlp_matrices
            assert shape["experts"] == max(m.experts, 1)
            from planner.engine.inputs.scenario import model_inputs
            from planner.engine.run.model import param_counts

            # MTP modules where the row says the run trained them
            x = {**model_inputs(m), "mtp_layers": shape["mtp_layers"]}
            assert v.shape_param_count(shape) == pytest.approx(param_counts(x)["params"],
                                                               rel=1e-3)
            for name in v.ATTENTION_SHAPE:  # head sizes, MLA, window from the catalog
                if name == "window" and not x["window_layers"]:
                    # no sliding window: every query sees the row's whole sequence (the
                    # long-context rows train beyond the catalog model's context)
                    assert shape[name] == shape["seq_len"], r.case_id
                    continue
                assert shape[name] == x[name], (r.case_id, name)
        else:  # the row's published size decides tied vs untied embeddings
            assert v.shape_param_count(shape) == pytest.approx(float(r.params), rel=0.02)
    assert modern.loc["dgxc-nemotron4-15b-bf16-h100-16", "embedding_matrices"] == 2
    assert modern.loc["dgxc-grok1-bf16-h100-2048", "embedding_matrices"] == 1
    assert modern.loc["dgxc-dsv3-bf16-h100-1024", "moe_layers"] == 58  # 3 dense-first layers


def test_modern_layout_mapping(modern):
    r = modern.loc["dgxc-l31-70b-bf16-h100-64"]
    assert (r.tp, r.pp, r.vp, r.cp, r.ep, r.zero) == (4, 4, 5, 2, 1, 1)
    assert r.sequence_parallel == 1 and r.precision == "bf16" and r.flash
    assert modern.loc["dgxc-l31-8b-fp8-h100-128", "precision"] == "fp8"
    # expert TP: the notes' ETP=1; else TP where EP x TP folds over TP x CP x DP, else 1
    assert modern.loc["dgxc-dsv3-bf16-gb200-256", "etp"] == 1
    assert modern.loc["dgxc-dsv3-bf16-h100-1024", "etp"] == 1  # EP 64 x TP 2 > TP 2 x DP 32
    assert modern.loc["mb2511-dsv3-fp8-b200-256", "etp"] == 1  # TP 1
    dense = modern[modern.experts == 1]
    assert (dense.etp == dense.tp).all()
    # InternLM: 4 x 100 Gb/s RoCE per 8-GPU node (its notes) replaces the DGX network
    internlm = modern[modern.model == "internlm-7b"]
    assert (internlm.scale_out_bytes_per_s == 4 * 100e9 / 8 / 8).all()
    assert not np.isfinite(modern.scale_out_bytes_per_s[modern.model != "internlm-7b"]).any()


def _fake_case(**kw):
    from types import SimpleNamespace

    base = dict(hardware="h100-sxm", precision="bf16", gpus=64, tp=8, pp=2, cp=1, ep=1, etp=8, vp=1,
                micro_batch=1, global_batch=64, heads=64, kv_heads=8, seq_len=4096, layers=80,
                experts=1.0, notes="")
    return SimpleNamespace(**(base | kw))


@pytest.mark.parametrize("change, reason", [
    ({}, ""),
    # uneven stages: Megatron-Core's split (embedding and loss as stage units) is expressible
    (dict(vp=8, pp=8, layers=126, gpus=512), ""),
    # up to L + 2 virtual stages (the embedding and the loss as stage units)
    (dict(vp=16, pp=8, layers=126, gpus=512), ""),
    (dict(vp=17, pp=8, layers=126, gpus=512), "PP*VP = 136 virtual stages exceed the 126 layers"),
    # MoE parallel folding: EP 64 over TP 2 x DP 32 with ETP 1, not with ETP = TP
    (dict(ep=64, experts=256.0, gpus=256, tp=2, pp=4, global_batch=2048, etp=1), ""),
    (dict(ep=64, experts=256.0, gpus=256, tp=2, pp=4, global_batch=2048, etp=2),
     "EP*ETP = 64*2 = 128 must divide TP*CP*DP = 2*1*32 = 64"),
    (dict(tp=16), "exceeds the scale-up domain of 8 GPUs"),
    (dict(precision="fp4"), "precision fp4 has no peak on h100-sxm"),
    (dict(hardware="a100-80gb", precision="fp8"), "precision fp8 has no peak on a100-80gb"),
    (dict(etp=1, experts=8.0), ""),
    (dict(notes="FP8-MX, with MTP (not modelled)"), ""),  # MTP modules: issue 13
    (dict(hardware="tpu-v9"), "accelerator 'tpu-v9' is not in the catalog"),
])
def test_modern_unexpressible_reasons(catalog, change, reason):
    got = v.modern_unexpressible(_fake_case(**change), catalog)
    assert (reason in got) if reason else got == ""


def _modern_mape(modern, group=None):
    rows = modern if group is None else modern[modern.group == group]
    return v.metrics(rows.error)["mape"]


# Issue 13's targets. Baseline before the issue-13 calibration (2026-11-23): MAPE 21.2 %,
# H100 BF16 36.0 %, MoE 20.8 %, A100 17.8 %, H100 FP8 13.7 %, B200/GB200 7.4 %. After the
# per-precision GEMM efficiencies and software stacks (benchmarks/calibrate.py): 9.1 %,
# 3.3 %, 8.5 %, 17 %, 6.6 %, 4.1 %. 2026-11-25, InternLM's ZeRO-1 sharing llm-foundry's
# fitted dp_overlap (31 rows): 9.1 %, A100 group 6.3 %, MoE 22.1 %. A target still missed
# is a strict xfail naming the gap.
def test_modern_runs_mape_within_10_percent(modern):
    # the rows of the 2025-2026 stacks (the NeMo tables of the 2024 releases: below)
    assert _modern_mape(modern[modern.group != "NeMo 2024 releases"]) <= 0.10


def test_nemo_2024_releases_are_predicted_too_fast_and_less_so_each_release(modern):
    """The NeMo tables of 24.03, 24.05 and 24.07 (H100 FP8, held out) predicted by the stack
    calibrated on the 2025 releases: within 15 % MAPE, biased fast (the software improved),
    and the bias shrinks release by release on the rows each table repeats."""
    nemo = modern[modern.group == "NeMo 2024 releases"]
    assert len(nemo) == 36 and _modern_mape(nemo) <= 0.15
    short = nemo[~nemo.index.str.contains("seq")]
    release, workload = short.index.str[4:8], short.index.str[9:].str.split("-fp8").str[0]
    repeated = [w for w in set(workload) if (workload == w).sum() == 3]
    assert len(repeated) == 7  # GPT3 5B/20B, Llama 2 7B/13B/70B, Nemotron 8B/22B
    bias = {rel: short.error[(release == rel) & workload.isin(repeated)].mean()
            for rel in ("2403", "2405", "2407")}
    assert 0 < bias["2407"] < bias["2405"] < bias["2403"], bias


@pytest.mark.parametrize("group", [
    "H100 BF16",
    "H100 FP8",
    "B200/GB200",
    pytest.param("MoE", marks=pytest.mark.xfail(strict=True, reason=(
        "22 % (7 of 7 rows predicted): DeepSeek-V3 on Blackwell is predicted too fast, "
        "FP8 on 256 B200 (EP8 x PP16) +52 % in tokens/s and BF16 on 256 GB200 (EP64 folded "
        "over TP2 x DP32, ETP 1) -63 % in step time; on 1,024 H100 the folded recipe is "
        "within -5.5 %"))),
    "A100 on non-DGX networks",
])
def test_modern_runs_group_mape_within_15_percent(modern, group):
    assert _modern_mape(modern, group) <= 0.15


#: Issue 13: no dataset that existed before the modern set may get worse by more than one
#: point (MAPE of every predicted row, 2026-11-23, before the stacks and the calibration).
BASELINE_MAPE = {"sc21": 0.0240, "vtrain-multi": 0.0824, "vtrain-single": 0.0788,
                 "llm-foundry-a100": 0.0801, "llm-foundry-h100": 0.0682, "full-runs": 0.0774}


#: Rows a dataset gained after that baseline (SC21's Table 2 ZeRO-3 rows, Megatron-LM's 2020
#: README and MT-NLG, 2026-11-30): not in it, scored by their own tests
#: (test_deepspeed_zero3_rows_of_sc21_table_2, test_megatron_2020_readme_and_mtnlg_rows).
ADDED_AFTER_BASELINE = ("sc21-zero3-", "megatron2020-", "mtnlg-")


@pytest.mark.parametrize("dataset", sorted(BASELINE_MAPE))
def test_older_datasets_not_worse_by_more_than_a_point(dataset):
    pred = v.predict(v.load_cases([dataset]))
    pred = pred[~pred.case_id.str.startswith(ADDED_AFTER_BASELINE)]
    assert v.metrics(pred.error)["mape"] <= BASELINE_MAPE[dataset] + 0.01


# the 4 Llama 3.1 405B rows at PP x VP = 64 are expressible since uneven stages, the MTP
# row since issue 13's model shapes, the two DeepSeek-V3 rows with EP 64 > DP 32 since MoE
# parallel folding (EP x ETP over TP x CP x DP)
def test_modern_runs_no_unexpressible_row(modern_summary):
    assert modern_summary["unexpressible_count"] == 0


def test_modern_runs_fit_in_memory(modern):
    """Every run that ran fits its HBM (Llama 3.1 405B FP8 on 576 H100, TP8 PP9 VP7 CP2 DP4,
    was predicted at 81.8 GB of 80 until the ZeRO state was sharded over DP x CP as
    Megatron-Core's distributed optimizer shards it)."""
    ran = modern[np.isfinite(modern.predicted)]
    over = ran.index[~ran.fits.astype(bool)].tolist()
    # one held-out row the planner puts over its HBM: Nemotron-4 340B FP8 on 128 H100 (NeMo
    # 24.07, TP8 PP8 VP12, DP 2, recompute not published; selective assumed as the launcher
    # yaml) at 82.8 GB of 80 - the distributed optimizer's state over only 2 DP ranks; the
    # same layout on 256 GPUs (DP 4, dgxc) fits
    assert over == ["nemo2407-nemotron4-340b-fp8-h100-128"], over
    assert ran.loc[over[0], "memory_per_gpu_bytes"] == pytest.approx(82.8e9, rel=0.01)


def test_cli_validate_modern_json_lists_groups_and_unexpressible(tmp_path):
    import json

    from planner.cli.main import main

    out = tmp_path / "m.json"
    assert main(["validate", "-d", "modern-runs", "-f", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())["datasets"][0]
    assert data["dataset"] == "modern-runs"
    assert [g["group"] for g in data["groups"]] == MODERN_GROUP_NAMES
    assert data["unexpressible_count"] == len(data["unexpressible"])
    assert data["count"] + data["unexpressible_count"] == 92


# ---- MoE runs (issue 27): dataset, stacks, exclusions, leave-one-family-out ------------

@pytest.fixture(scope="module")
def moe(pred):
    return pred[pred.dataset == "moe-runs"].set_index("case_id")


#: Rows of moe_runs.csv whose empty cells the project's copy fills (their notes say
#: 'capplan INFERRED layout'): the Megatron-LM MoE README's 'Reference Best Parallel
#: Mapping' for Mixtral 8x7B on H100 (the headline rows), and MegaScale-MoE's architecture
#: (its Table 2) and layout (s6.1); the expert-tensor-parallel size and micro-batch of
#: ModelZoo's long-context Qwen3-235B rows, which its README's command line leaves to the
#: repository's model and runtime configs (ETP 1, MBS 1); the expert-tensor-parallel size
#: of NeMo's Mixtral 8x22B rows, from NeMo's recommended configuration of that layout.
MOE_INFERRED = {"MLMREADME-01", "MLMREADME-02", "MEGASCALE-01",
                *(f"MZOO-{i:02d}" for i in range(7, 15)), "NEMODOCS-03", "NEMODOCS-05"}
#: Rows whose ``software`` cell the project's copy extends with settings read from the
#: source's own launch script of the period ('capplan ADDED from ...'): DeepSeek-V3 on
#: H100 in Megatron-Bridge 25.09 (run_script.py @fa0315ae26: DeepEP, A2A 1F1B overlap);
#: dgxc-benchmarking's DeepSeek-V3 rows from NeMo's pretrain_deepseek_v3.py of their
#: containers (25.04: token drop at capacity factor 1.0 on every GPU; 25.07: DeepEP on H100);
#: NeMo AutoModel's first Qwen3-30B-A3B row from the benchmark config its table links, at
#: the table's commit (activation checkpointing, as the later row AUTOMODEL-04 says).
MOE_ADDED = {"MB2509-12", *(f"DGXC-{i:02d}" for i in range(1, 7)), "AUTOMODEL-05"}
#: Rows the project's copy appends after the shared file's 111 (their software cell starts
#: 'capplan ADDED row'): the gpt-oss-120b rows of the same Megatron-Bridge 25.11 tables.
MOE_APPENDED = {"MB2511G-01", "MB2511G-02", "MB2511G-03", "MB2511G-04"}


def test_moe_dataset_keeps_its_sources_and_lists_every_exclusion(moe):
    raw = v.pd.read_csv(v.DATA_DIR / "moe_runs.csv", dtype=str, keep_default_na=False)
    assert len(raw) == len(moe) == 115
    shared = v.DATA_DIR.parents[3] / "shared" / "validation" / "moe_runs.csv"
    if shared.is_file():  # every source column of the shared file, plus `excluded`
        src = v.pd.read_csv(shared, dtype=str, keep_default_na=False)
        assert list(raw.columns) == [*src.columns, "excluded"]
        appended = raw.iloc[len(src):]
        assert set(appended.case_id) == MOE_APPENDED
        assert appended.software.str.startswith("capplan ADDED row; ").all()
        raw = raw.iloc[:len(src)]
        same = ~raw.case_id.isin(MOE_INFERRED | MOE_ADDED).to_numpy()
        assert (raw[src.columns].to_numpy()[same] == src.to_numpy()[same]).all()
        # an extended row keeps every cell but appends to its software cell
        for i in np.flatnonzero(raw.case_id.isin(MOE_ADDED).to_numpy()):
            for col in src.columns:
                mine, theirs = raw.at[i, col], src.at[i, col]
                if col == "software":
                    assert mine.startswith(theirs + "; capplan ADDED from "), raw.case_id[i]
                else:
                    assert mine == theirs, (raw.case_id[i], col)
        # an inferred row fills only cells the shared file leaves empty, and keeps its notes
        for i in np.flatnonzero(raw.case_id.isin(MOE_INFERRED).to_numpy()):
            for col in src.columns:
                mine, theirs = raw.at[i, col], src.at[i, col]
                if col == "notes":
                    assert mine.startswith(theirs) and "capplan INFERRED layout" in mine
                else:
                    assert mine == theirs or theirs == "", (raw.case_id[i], col)
    predicted = np.isfinite(moe.predicted)
    unexpressible, excluded = moe.unexpressible != "", moe.excluded != ""
    assert (predicted ^ (unexpressible | excluded)).all()
    assert not (unexpressible & excluded).any()
    # excluded (data file): the row contradicts itself, or its source does not pin it down
    assert set(raw.case_id[raw.excluded != ""]) == set(moe.index[excluded]) == {
        "MB2511D-01", "MB2509-02"}
    for case in ("MB2511D-01", "MB2509-02"):  # EP 64 x PP 8 = 512 ranks of 256 GPUs
        assert "self-contradictory" in moe.loc[case, "excluded"]
        assert "1 x 64 x 8 = 512 > 256" in moe.loc[case, "excluded"]
    # MegaScale-MoE's architecture is the paper's Table 2 (a text copy; the PDF's is an image)
    assert np.isfinite(moe.loc["MEGASCALE-01", "predicted"])
    assert not unexpressible.any()  # DSV3PAPER-01 runs DualPipe (deepseek-hai-llm-2024)


def test_cli_validate_moe_json_reports_excluded_rows_apart(tmp_path):
    from planner.cli.main import main

    out = tmp_path / "moe.json"
    assert main(["validate", "-d", "moe-runs", "-f", "json", "-o", str(out)]) == 0
    (data,) = json.loads(out.read_text())["datasets"]
    assert data["excluded_count"] == len(data["excluded"]) == 2
    assert {e["case"] for e in data["excluded"]} == {"MB2511D-01", "MB2509-02"}
    assert all(len(e["reason"]) > 40 for e in data["excluded"])
    assert not {e["case"] for e in data["excluded"]} & {u["case"] for u in data["unexpressible"]}
    assert data["count"] + data["unexpressible_count"] + data["excluded_count"] == 115
    for g in data["groups"]:
        assert g["predicted"] + g["unexpressible"] + g["excluded"] == g["rows"]


@pytest.mark.parametrize("case, stack", [
    ("MLMGB200-01", "megatron-core-moe-gb200-guide-01"),  # guide step 1: NCCL A2A, eager
    ("MLMGB200-06", "megatron-core-moe-gb200-guide-06"),  # step 6: + TE partial CUDA graphs
    ("MLMGB200-13", "megatron-core-moe-gb200-guide-13"),  # step 13: HybridEP, fused norm-quant
    ("MB2511-11", "megatron-core-moe-baseline"),    # B200 baseline config (Bridge 25.11)
    ("MB2511-06", "megatron-core-moe-hybridep"),    # hybridep + TE CUDA graphs
    ("MZOO-07", "megatron-core-moe-deepep"),        # DeepEP, no graphs named
    ("DGXC-06", "megatron-core-moe-deepep"),        # NeMo 25.07's H100 DeepSeek-V3: DeepEP
    ("DGXC-04", "megatron-core-moe-baseline"),      # NeMo 25.04: NCCL alltoall, token drop
    ("MB2511-07", "megatron-core-moe-hybridep"),    # GB200, 25.11, settings unstated
    # moe_a2a_overlap=True on the Qwen3 provider's default NCCL alltoall dispatcher
    ("MB2511-17", "megatron-core-moe-a2a-overlap-alltoall"),
    ("MB2511-14", "megatron-core-moe-a2a-overlap-alltoall"),
    ("MB2511-16", "megatron-core-moe-a2a-overlap-alltoall"),
    ("MZOO-02", "megatron-core-moe-a2a-overlap"),   # EP A2A 1F1B overlap on, DeepEP
    ("DGXC-15", "megatron-core-moe-graphs"),        # "CUDA graphs true", no DeepEP named
    ("DGXC-14", "megatron-core-moe-baseline"),      # "CUDA graphs false"
    ("MB2509-04", "megatron-core-moe-graphs"),      # "same yaml settings" as MB2509-03
    ("MB2511-13", "megatron-core-moe-graphs"),      # TE graphs, no flex backend (alltoall)
    ("MB2509-08", "megatron-core-moe-baseline"),    # "same" as MB2509-07
    ("AUTOMODEL-01", "nemo-automodel-fsdp2"),       # PyTorch FSDP2 + DeepEP
])
def test_moe_rows_run_on_the_stack_their_software_names(moe, case, stack):
    assert moe.loc[case, "stack"] == stack


def test_moe_stacks_dispatch_and_graph_as_the_configs_of_their_rows_did():
    # Megatron-Bridge 25.11 (@5776a6d90b scripts/performance/configs/qwen/
    # qwen3_workload_base_configs.py): the Qwen3 B200/H100 presets name no
    # moe_flex_dispatcher_backend (the Qwen3 provider's "alltoall" stands), the 235B B200/H100
    # and 30B H100 FP8-CS presets no cuda_graph_impl; 25.09 (@684a686165 run_script.py)
    # enables DeepEP for DeepSeek-V3 on H100 only, with cuda_graphs false in its yaml
    cat = load_catalog()
    graphs, tuned = cat.stack("megatron-core-moe-graphs"), cat.stack("megatron-core-moe-tuned")
    assert graphs.cuda_graphs.value == 1 and graphs.hierarchical_dispatch.value == 0
    assert graphs.deepep_dispatch is None or graphs.deepep_dispatch.value == 0
    assert tuned.hierarchical_dispatch.value == 1 and tuned.deepep_dispatch.value == 1
    nccl = cat.stack("megatron-core-moe-a2a-overlap-alltoall")
    deepep = cat.stack("megatron-core-moe-a2a-overlap")
    assert nccl.cuda_graphs.value == deepep.cuda_graphs.value == 0
    assert nccl.hierarchical_dispatch.value == 0 and deepep.hierarchical_dispatch.value == 1
    assert deepep.deepep_dispatch.value == 1
    # the eager overlap stacks share the eager launch time, the graphed NCCL stack the
    # graphed one
    assert nccl.layer_overhead_s.value == cat.stack("megatron-core-moe-baseline").layer_overhead_s.value
    assert graphs.layer_overhead_s.value == tuned.layer_overhead_s.value


def test_deepseek_v3_h100_bridge_2509_row_runs_deepep_with_a2a_overlap(moe, pred):
    # Megatron-Bridge 25.09 scripts/performance/run_script.py @fa0315ae26 sets, for DeepSeek-V3
    # on H100 only, enable_deepep (flex dispatcher) and overlap_moe_expert_parallel_comm: the
    # row ran DeepEP's hierarchical dispatch, not the flat NCCL all-to-all (as costed until
    # 2026-11-29: -32 % on its published 1,297 tokens/s/GPU)
    assert moe.loc["MB2509-12", "stack"] == "megatron-core-moe-a2a-overlap"
    row = pred[(pred.dataset == "moe-runs") & (pred.case_id == "MB2509-12")].iloc[0]
    assert row.measured == 1297
    assert abs(row.error) <= 0.12


def test_gpt_oss_ran_with_fused_sink_attention(moe, pred):
    # Megatron-Bridge 25.11 trained gpt-oss-120b (learnable softmax sinks) in its HBM: the
    # unfused fallback would store b x heads x s^2 scores per layer (0.9-1.7 TB per GPU); the
    # Megatron-Core MoE stacks run TE 2.8's cuDNN sink attention (TE PR 2148, cuDNN 9.13.1+)
    rows = pred[(pred.dataset == "moe-runs") & pred.case_id.str.startswith("MB2511G")]
    assert len(rows) == 4 and set(rows.model) == {"GPT-OSS-120B"}
    assert set(moe.loc[list(rows.case_id), "family"]) == {"gpt-oss"}
    gb = rows.set_index("case_id")
    assert gb.loc["MB2511G-02", "measured"] == 15876  # GB200, 64 GPUs, EP 64, seq 8192
    # +14.7 % since the Grace launch factor's refit (2.5 -> 2.0, 2026-11-30); unfused, the
    # row would not fit at all (below)
    assert abs(gb.loc["MB2511G-02", "error"]) <= 0.16
    assert gb.loc[["MB2511G-01", "MB2511G-02"], "fits"].all()
    cases = v.load_cases(["moe-runs"])
    cases = cases[cases.case_id.isin(["MB2511G-01", "MB2511G-02"])]
    unfused = v.predict(cases, params={"*": {"fused_attention_sinks": 0.0}})
    assert (unfused.memory_per_gpu_bytes > 500e9).all() and not unfused.fits.any()


def test_moe_row_mapping(moe):
    r = moe.loc["MB2511-06"]  # DeepSeek-V3 w/o MTP, 256 GB200, TP1 PP4 VP4 EP64
    assert (r.tp, r.pp, r.vp, r.ep, r.etp, r.zero) == (1, 4, 4, 64, 1, 1)
    assert r.mtp_layers == 0 and r.moe_layers == 58 and r.precision == "bf16"
    assert moe.loc["MB2511-11", "mtp_layers"] == 1  # 'DeepSeekV3 (w/ MTP)'
    assert moe.loc["MB2509-12", "mtp_layers"] == 1  # pipeline layout with an MTP stage
    assert moe.loc["MB2511-02", "precision"] == "fp8"  # MXFP8 at the FP8 peak
    assert moe.loc["AUTOMODEL-01", "zero"] == 3  # fsdp2
    # the long-context rows' ETP and MBS from the repository's configs, not the README
    assert moe.loc["MZOO-07", "micro_batch"] == 1 and moe.loc["MZOO-07", "etp"] == 1
    # NeMo 25.04's DeepSeek-V3 script drops tokens at capacity 1.0; 25.07 runs H100 dropless
    assert moe.loc["DGXC-01", "token_drop"] == 1 and moe.loc["DGXC-01", "capacity_factor"] == 1
    assert moe.loc["DGXC-06", "token_drop"] == 0
    assert moe.loc["MLMGB200-01", "metric"] == "model_tflops_per_gpu"
    assert moe.loc["DGXC-14", "vp"] == 1 and moe.loc["DGXC-17", "cp"] == 2
    assert moe.loc["NEMODOCS-03", "model"] == "Mixtral-8x22B"
    assert moe.loc["AUTOMODEL-03", "family"] == "kimi"


def test_moe_mape_recorded_in_docs(pred):
    # the honest "before" of issue 27 (29.0 % on 103 rows) is in docs/validation.md
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "validation.md").read_text()
    assert "moe-runs MAPE 29.0 % on 103 predicted" in text
    assert np.isfinite(mape(pred, "moe-runs"))


def test_moe_runs_mape_within_15_percent(pred):
    # 13.0 % on 104 rows; 14.1 % without the GB200 guide's 13 rows, whose step stacks'
    # launch counts are set on them (hardware_catalog/data/stacks/megatron-core-moe-gb200-guide-*)
    assert mape(pred, "moe-runs") <= 0.15
    moe = pred[pred.dataset == "moe-runs"]
    assert v.metrics(moe.error[~moe.case_id.str.startswith("MLMGB200")])["mape"] <= 0.15


def test_leave_one_family_out_never_fits_on_the_family_it_predicts(catalog, monkeypatch):
    from planner.analysis import calibration as c

    cases = v.load_cases(["modern-runs", "moe-runs"])
    seen = []
    real_fit = c.fit

    def spy(catalog=None, verbose=True, rounds=4, cases=None, grid=None, values=None,
            memo=None):
        seen.append(set(cases.family.dropna()))
        return values, 0.0  # the catalog's values: the predictions are the plain ones

    monkeypatch.setattr(c, "fit", spy)
    lofo = c.leave_one_family_out(cases, catalog)
    families = set(cases.family[v.predictable(cases)].dropna())
    assert len(seen) == len(families) >= 9
    for trained, name in zip(seen, sorted(families), strict=True):
        assert name not in trained and trained <= families and len(trained) >= 5
    plain = v.predict(cases, catalog=catalog).predicted
    ok = np.isfinite(plain)
    assert np.allclose(lofo[ok], plain[ok])
    assert real_fit is not spy


def test_incremental_objective_equals_the_full_objective(catalog):
    # the search's objective re-predicts only the groups a trial moves and sums as pandas
    # does: the same value to the last bit as objective() (v.predict over every row), on
    # random trials of a few LOFO parameters each, memo shared as the refits share it
    from planner.analysis import calibration as c

    cases = c.fit_cases(v.load_cases(["modern-runs", "moe-runs"]))
    start = c.start_values(catalog)
    memo: dict = {}
    incremental = c.Objective(cases, catalog, memo)
    other_slice = c.Objective(cases[cases.dataset == "moe-runs"], catalog, memo)
    rng = np.random.default_rng(20261129)
    keys = list(c.LOFO_GRID)
    groups = len(incremental.groups)
    for trial in range(5):
        values = dict(start)
        for i in rng.choice(len(keys), size=1 + trial % 3, replace=False):
            values[keys[i]] = float(rng.choice(c.LOFO_GRID[keys[i]]))
        assert incremental(values) == c.objective(cases, catalog, values)
        part = cases[cases.dataset == "moe-runs"]
        assert other_slice(values) == c.objective(part, catalog, values)
    assert incremental(start) == c.objective(cases, catalog, start)
    # a trial predicts again only the groups whose parameters it moves: the all-to-all
    # overlap, the a2a-overlap stack's groups; the moe-runs slice's groups are the same
    fresh: dict = {}
    c.Objective(cases, catalog, fresh)(start)
    assert len(fresh["predicted"]) == groups
    key = (c.MOE_A2A_OVERLAP, "ep_overlap")
    c.Objective(cases, catalog, fresh)({**start, key: 0.9 if start[key] != 0.9 else 0.5})
    overlap = {s.removeprefix("stack:") for s in c.MOE_A2A_OVERLAP}
    moved = sum(g.key[4] in overlap for _, g in incremental.groups)
    assert 0 < moved < groups and len(fresh["predicted"]) == groups + moved


def test_incremental_objective_sees_every_gemm_efficiency(catalog):
    """A generation's GEMM efficiency at one precision reaches every case of that GEMM
    precision, whatever its recipe is called (fp8-cs, mxfp8 read ``<part>:fp8``): moving it
    alone, the memoised objective equals the full one (a memo keyed by the recipe's name
    once kept the Megatron-Bridge FP8-CS rows' stale predictions)."""
    from planner.analysis import calibration as c

    cases = c.fit_cases(v.load_cases(["modern-runs"]))
    assert {"fp8-cs", "mxfp8"} <= set(cases.precision)
    start = c.start_values(catalog)
    memo: dict = {}
    incremental = c.Objective(cases, catalog, memo)
    assert incremental(start) == c.objective(cases, catalog, start)
    for key in c.GRID:
        if key[1].startswith("gemm_max_efficiency"):
            values = {**start, key: start[key] - 0.1}
            assert incremental(values) == c.objective(cases, catalog, values), key


def test_mean_of_means_sums_as_pandas():
    from planner.analysis.calibration import _mean_of_means

    rng = np.random.default_rng(3)
    for n in (1, 7, 40, 300):
        values = rng.lognormal(-2.0, 1.5, n)
        values[rng.random(n) < 0.1] = np.nan
        label = rng.integers(0, 13, n)
        expected = pd.Series(values).groupby(label).mean().mean()
        sets = np.unique(label, return_inverse=True)[1]
        assert _mean_of_means(values, sets, sets.max() + 1) == expected


def test_moe_runs_fit_in_memory(moe):
    # every row ran; the rows that list Megatron-Core recompute modules keep what those
    # modules leave (validate.recompute_module_flags: 'moe' and 'mlp' recompute the whole
    # layer's MoE block or dense MLP from its input), so DGXC-06 and ModelZoo's
    # long-sequence rows fit; so do the superseded AutoModel row (AUTOMODEL-05: its config at
    # its commit checkpoints every layer, as AUTOMODEL-04's) and the gpt-oss H100 row at its
    # workload config's micro-batch 1 (the table's MBS 4 and GA 2 contradict its PP 4 x DP 16
    # and GBS 512; at MBS 4 the run would need 1.47x the HBM)
    ran = moe[np.isfinite(moe.predicted)]
    over = set(ran.index[~ran.fits.astype(bool)])
    assert over == set()
    assert moe.loc["AUTOMODEL-05", "recompute"] == "full"
    assert moe.loc["MB2511G-04", "micro_batch"] == 1
    listed = v.pd.read_csv(v.DATA_DIR / "moe_runs.csv", dtype=str,
                           keep_default_na=False).set_index("case_id")["recompute"]
    moe_module = [c for c in ran.index if c in listed.index
                  and v.recompute_module_flags(listed[c])["recompute_moe"] == 1]
    assert {"DGXC-06", *(f"MZOO-{i:02d}" for i in range(7, 15))} <= set(moe_module)
    assert ran.fits[moe_module].astype(bool).all()


def test_recompute_module_cells_set_the_stack_flags():
    """A listed module sets its flag, an unlisted one keeps the stack's (NaN) but core_attn,
    which a list leaves out (0); a cell without a list states nothing; an unknown module
    is an error, not a silent default."""
    flags = v.recompute_module_flags("selective: layernorm, moe")
    assert flags["recompute_norms"] == 1 and flags["recompute_moe"] == 1
    assert np.isnan(flags["recompute_mlp"]) and np.isnan(flags["recompute_moe_act"])
    flags = v.recompute_module_flags("selective: mlp, up_proj (MLA up-projection; doc flag)")
    assert flags["recompute_mlp"] == 1 and flags["recompute_mla_up_proj"] == 1
    flags = v.recompute_module_flags("selective: RMSNorm, MLA up-projection")
    assert {k for k, x in flags.items() if x == 1} == {"recompute_norms",
                                                       "recompute_mla_up_proj"}
    assert sum(np.isnan(x) for x in flags.values()) == 3
    # a list replaces Megatron-Core's default ['core_attn']: the core is kept unless listed
    assert flags["recompute_core_attn"] == 0
    core = v.recompute_module_flags("selective: core_attn")
    assert core.pop("recompute_core_attn") == 1 and all(np.isnan(x) for x in core.values())
    assert all(np.isnan(x) for x in v.recompute_module_flags(
        "selective (yaml recompute_granularity; modules not listed)").values())
    with pytest.raises(ValueError, match="unknown recompute module"):
        v.recompute_module_flags("selective: attention_everything")


def test_cli_refits_per_family_only_when_asked(monkeypatch, capsys):
    """`capplan validate` reports the fit error in seconds; the leave-one-family-out refits
    (~2 min on a cold cache) run with --lofo (and --write-docs) only."""
    import json

    import planner.analysis.calibration as calibration
    import planner.analysis.crossval as crossval
    from planner.cli.main import main

    calls = []

    def refit(cases):
        calls.append(len(cases))
        return np.full(len(cases), np.nan)

    monkeypatch.setattr(calibration, "lofo_predictions", refit)
    monkeypatch.setattr(crossval, "predictions", lambda cases: {
        split: v.pd.Series(np.nan, index=cases.index) for split in v.CROSS_SPLITS})
    assert main(["validate", "-d", "sc21", "-f", "json"]) == 0
    assert calls == []
    summary = json.loads(capsys.readouterr().out)["datasets"]
    assert summary[0]["dataset"] == "sc21" and summary[0]["mape"] > 0
    assert main(["validate", "-d", "sc21", "--lofo", "-f", "json"]) == 0
    assert len(calls) == 1


def test_lofo_reads_the_precomputed_values_when_the_key_matches(monkeypatch, tmp_path):
    """`validate --lofo` on the shipped catalog reads planner/analysis/_lofo_generated.json
    (no refit: seconds instead of ~2 min of CPU); the file is fresh (codegen --check)."""
    from planner.analysis import calibration as c

    assert c.precomputed_is_fresh(), "run: python -m planner.codegen --only validation"
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", str(tmp_path))  # an empty cache folder
    monkeypatch.setattr(c, "leave_one_family_out", lambda *a, **k: pytest.fail("refitted"))
    cases = v.load_cases(["modern-runs", "moe-runs"])
    pred = c.lofo_predictions(cases)
    saved = json.loads(c.PRECOMPUTED.read_text())["predictions"]
    keys = cases.dataset + "/" + cases.case_id
    held = (cases.family.notna() & v.predictable(cases)).to_numpy()
    assert held.sum() >= 20
    assert np.allclose(pred[held], [saved[k] for k in keys[held]])


def test_the_lofo_key_covers_the_recipes_and_the_input_code():
    """A recipe or the code that turns choices into inputs changes every prediction the
    precomputed leave-one-out files hold: their key reads those files (a recipe change
    once left the files stale under a matching key; the slow fresh-computation tests
    caught it)."""
    from planner.analysis import calibration as c

    names = {p.name for p in c.lofo_key_files()}
    assert {"recipes.csv", "scenario.py", "run_inputs.py", "execution.toml",
            "independent_runs.csv", "validate.py", "calibration.py"} <= names
    assert all(p.is_file() for p in c.lofo_key_files())


def test_lofo_recomputes_when_the_key_does_not_match(monkeypatch, tmp_path, capsys):
    """A catalog other than the shipped one (a user override) has another key: the values
    are refitted (an estimate and progress on stderr, terminal or not), cached under that
    key and reused."""
    from hardware_catalog.toml_cache import ENV_VAR
    from planner.analysis import calibration as c

    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.setattr(c, "lofo_key", lambda catalog=None: "a-user-catalog")
    calls = []

    def refit(cases, catalog=None, progress=None):
        calls.append(progress)
        progress(0, 1, "llama")
        return v.pd.Series(1.0, index=cases.index)

    monkeypatch.setattr(c, "leave_one_family_out", refit)
    cases = v.load_cases(["modern-runs"])
    first = c.lofo_predictions(cases)
    assert len(calls) == 1 and isinstance(calls[0], c.RefitProgress)
    err = capsys.readouterr().err.splitlines()  # not a terminal: the lines all the same
    assert err == ["capplan: validate --lofo: refitting the calibration without each of 1 "
                   "model families (~1 s; not precomputed for this catalog, cached once "
                   "done)",
                   "capplan: validate: refitting the calibration without llama (1/1), 0 s "
                   "elapsed"]
    held = (cases.family.notna() & v.predictable(cases)).to_numpy()
    assert (first[held] == 1.0).all()
    (saved,) = tmp_path.rglob("lofo-a-user-catalog.json")
    assert saved.stat().st_mode & 0o777 == 0o600
    again = c.lofo_predictions(cases)  # from the cache folder, no second refit
    assert len(calls) == 1 and np.allclose(again[held], first[held])
    saved.chmod(0o666)  # world-writable: not trusted, refitted (with one warning line)
    c.lofo_predictions(cases)
    assert len(calls) == 2
    assert capsys.readouterr().err.count("warning") <= 1


def test_refit_progress_says_the_estimate_once_then_a_line_per_refit():
    import io

    from planner.analysis.calibration import REFIT_S, RefitProgress

    now = [50.0]
    stream = io.StringIO()
    progress = RefitProgress(stream, clock=lambda: now[0])
    for done, family in enumerate(["gpt", "llama", "mixtral"]):
        progress(done, 11, family)
        now[0] += REFIT_S
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("capplan: validate --lofo: refitting the calibration without each of "
                        "11 model families (~11 s; not precomputed for this catalog, cached "
                        "once done)")
    assert lines[1:] == [f"capplan: validate: refitting the calibration without {f} "
                         f"({i + 1}/11), {round(i * REFIT_S)} s elapsed"
                         for i, f in enumerate(["gpt", "llama", "mixtral"])]


@pytest.mark.slow
def test_precomputed_lofo_equals_a_fresh_computation(catalog):
    """~5 CPU-s: the committed values are what the refits give today."""
    from planner.analysis import calibration as c

    saved = json.loads(c.PRECOMPUTED.read_text())
    assert saved["key"] == c.lofo_key(catalog)
    fresh = c.compute_all(catalog)
    assert fresh.keys() == saved["predictions"].keys()
    assert np.allclose([fresh[k] for k in fresh], [saved["predictions"][k] for k in fresh],
                       rtol=1e-9)


def test_published_memory_is_compared_and_every_row_fits():
    # torchtitan's published peak memory (published_memory.csv): every run ran, so each
    # must fit its 96 GB part; the allocator's peak is above the model's count, and the
    # 8B rows (FSDP alone, the layouts the model describes fully) come within 25 % of it
    pred = v.predict(v.load_cases(["independent-runs"]))
    rows = v.published_memory_check(pred)
    assert len(rows) == 21
    assert all(r["fits"] for r in rows)
    # torchao's NVFP4 linears keep their inputs quantized for backward ('reduces memory
    # use', torchtitan nvfp4.md): 111 GiB against BF16's 174; the model keeps them at the
    # activations' BF16 (1.49x), a gap it reports
    fp4 = "tt-nvfp4doc-l3-8b-nvfp4-4"
    assert all(r["ratio"] < 1.0 for r in rows if r["run"] != fp4)
    assert next(r["ratio"] for r in rows if r["run"] == fp4) == pytest.approx(1.49, abs=0.01)
    small = [r["ratio"] for r in rows if "-l3-8b-" in r["run"] and r["run"] != fp4]
    assert len(small) == 12 and min(small) > 0.75
    # torchtitan's 2026 chunked loss (torchtitan-fsdp2-2026): the BF16 run's 174.5 GiB at
    # 0.95x; with the 2024 unfused loss it was predicted at 1.35x its 184.3 GiB part
    bf16 = next(r for r in rows if r["run"] == "tt-nvfp4doc-l3-8b-bf16-4")
    assert bf16["ratio"] == pytest.approx(0.948, abs=0.005)
    # the 405B rows under PP, with FSDP's gathered stage counted (half without it)
    assert min(r["ratio"] for r in rows if "-l31-405b-" in r["run"]) > 0.7


def test_modern_row_stack_column_names_the_preset_stack(modern):
    """Megatron-Bridge presets that capture whole iterations in CUDA graphs (Llama 3 8B on
    Blackwell) run on megatron-bridge-2025; the presets without graphs (70B, 405B, H100)
    on the eager megatron-core-2025 (the data file's ``stack`` column)."""
    bridge = modern[modern.source.str.contains("Megatron-Bridge") & (modern.experts <= 1)
                    & ~modern.source.str.startswith(v.LOW_PRECISION_SOURCES)]
    graphed = bridge[bridge["stack"] == "megatron-bridge-2025"]
    assert set(graphed.model) == {"llama3-8b"}
    assert set(graphed.hardware) == {"b200", "gb200", "gb300"}
    eager = bridge[bridge["stack"] == "megatron-core-2025"]
    assert len(graphed) + len(eager) == len(bridge)
    assert set(eager.model) == {"llama3-70b", "llama3.1-405b", "llama3-8b"}
    assert (eager[eager.model == "llama3-8b"].hardware == "h100-sxm").all()


def test_megatron_2020_readme_and_mtnlg_rows():
    """Held-out Megatron iteration times: the 2020 README's tensor- and data-parallel rows on
    DGX-2 (V100) and DGX-A100 within 4 % MAPE and 7 % each (2.7 % / 5.4 % measured
    2026-11-30); MT-NLG 530B (Megatron-DeepSpeed, 2,240-3,360 A100s) is predicted 20-23 %
    fast, a gap the model does not explain (docs/validation.md): it may not widen."""
    pred = v.predict(v.load_cases(["sc21"]))
    readme = pred[pred.case_id.str.startswith("megatron2020-") & v.predictable(pred)]
    assert len(readme) == 11 and set(readme.hardware) == {"v100-32gb", "a100-40gb"}
    assert v.metrics(readme.error)["mape"] <= 0.04 and readme.error.abs().max() <= 0.07
    mtnlg = pred[pred.case_id.str.startswith("mtnlg-")]
    assert len(mtnlg) == 3 and (mtnlg.error.abs() <= 0.25).all()
