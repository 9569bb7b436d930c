"""Leave-one-source-out, leave-one-accelerator-out and the speedup-ratio error (issue 42)."""

import json

import numpy as np
import pandas as pd
import pytest

from planner.analysis import calibration as c
from planner.analysis import crossval as x
from planner.analysis import validate as v


@pytest.mark.parametrize("text, source", [
    ("mosaicml/llm-foundry@8c8dd48f scripts/train/benchmarking/README.md", "mosaicml/llm-foundry"),
    ("NVIDIA/Megatron-LM README at commit 152aab304d (2021-01-11)", "NVIDIA/Megatron-LM"),
    ("https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/x.html (stored)",
     "NVIDIA-NeMo/Megatron-Bridge"),
    ("https://rocm.blogs.amd.com/artificial-intelligence/x/README.html", "rocm.blogs.amd.com/artificial-intelligence"),
    ("Narayanan et al. SC'21 arXiv:2104.04473 Table 1 (values via transcription X/y@e9f)",
     "arXiv:2104.04473"),
    ("arXiv 2412.19437 (DeepSeek-V3 Technical Report): Sec.1", "arXiv:2412.19437"),
    ("vTrain (Bang et al., MICRO'24, arXiv:2312.12391) measured", "arXiv:2312.12391"),
    ("a lab notebook", "a lab notebook"),
])
def test_source_of_names_the_publication(text, source):
    assert x.source_of(text) == source


@pytest.mark.parametrize("text, publication", [
    ("NVIDIA-NeMo/Megatron-Bridge@fa0315ae2684693a666be9d247adf9baf1e30028 docs/performance-"
     "summary.md, table '25.09'", "NVIDIA-NeMo/Megatron-Bridge@fa0315a"),
    ("NVIDIA/dgxc-benchmarking@68eaf7e (v25.05) grok1/README.md (GB200)",
     "NVIDIA/dgxc-benchmarking@68eaf7e"),
    # a commit later in the cell (a script cited beside the table) is not the table's
    ("pytorch/torchtune README.md (v0.3), table, from pytorch/torchtune@0123abcd recipes",
     "pytorch/torchtune"),
    ("arXiv 2407.21783 (The Llama 3 Herd of Models) Table 4", "arXiv:2407.21783"),
])
def test_publication_of_pins_the_release_a_cell_cites(text, publication):
    assert x.publication_of(text) == publication


def test_every_case_has_a_source_and_a_generation(catalog):
    cases = v.load_cases(None)
    units = x.units_of(cases)
    assert units["loso"].notna().all() and (units["loso"] != "").all()
    # at least the ten publishers of the shipped data (repositories and papers)
    assert units["loso"].nunique() >= 10
    # every predicted row is on a calibrated generation (an unnamed part is excluded), but
    # Intel's Gaudi 2 table, AMD's MI355X run report and Primus MI325X rows and Google's TPU7x
    # and v6e recipes (held out: parts of their own, no fit row on them), torchao's MI300X
    # table and Megatron-LM's 2020 V100 rows
    held_out_parts = ["gaudi2", "mi300x", "mi325x", "mi355x", "tpu-v7", "tpu-v6e", "v100-32gb"]
    assert set(units["loao"][v.predictable(cases)]) == {"A100", "Hopper", "Blackwell",
                                                        *held_out_parts}
    assert not cases.fit[units["loao"].isin(held_out_parts)].any()


def _recording_fit(calls):
    def fit(catalog, verbose=False, rounds=1, cases=None, grid=None, values=None, memo=None):
        calls.append((cases, grid, values))
        return values, 0.0
    return fit


def test_a_source_left_out_is_never_in_its_fit(monkeypatch, catalog):
    """Each refit sees every fit row except the held-out source's: counts add up."""
    cases = v.load_cases(["sc21", "llm-foundry-h100", "modern-runs"])
    calls = []
    monkeypatch.setattr(c, "fit", _recording_fit(calls))
    units = cases["source"].map(x.source_of)
    pred, trained = x.leave_one_out(cases, units, catalog)
    fit_rows = c.fit_cases(v.with_shape_defaults(cases))
    names = sorted(units.unique())
    assert len(calls) == len(names) == len(trained)
    for name, (train, grid, _) in zip(names, calls, strict=True):
        assert not (train["source"].map(x.source_of) == name).any()
        assert len(train) == (units.loc[fit_rows.index] != name).sum() == trained[name]
        assert grid == c.GRID  # every calibrated parameter is refitted
    # refitting nothing (the recording fit keeps the catalog's values) predicts as validate
    plain = v.predict(cases, catalog=catalog)["predicted"]
    ok = v.predictable(cases).to_numpy()
    assert np.allclose(pred[ok], plain[ok])
    assert pred[~ok].isna().all()


def test_a_generation_left_out_starts_from_a_prior_and_stays_there(monkeypatch, catalog):
    start = c.start_values(catalog)
    values, fixed = x.generation_priors("Hopper", start)
    hopper = (c.HOPPER, "gemm_max_efficiency")
    assert hopper in fixed
    assert values[hopper] == pytest.approx(np.mean(
        [start[(c.A100, "gemm_max_efficiency")], start[(c.BLACKWELL, "gemm_max_efficiency")]]))
    assert values[(c.HOPPER, "gemm_max_efficiency_fp8")] == start[
        (c.BLACKWELL, "gemm_max_efficiency_fp8")]
    foundry = tuple(f"stack:llm-foundry-2023@{hw}" for hw in ("h100-sxm", "h200", "h800"))
    # FlashAttention-2 on Hopper is a published ratio, not a fitted value: no prior replaces it
    assert (foundry, "attention_efficiency_factor") not in values
    # the autocast GEMM share on Hopper, llm-foundry's and the stacks that take it, resets
    # to the neutral 1.0 together (torchtitan's Hopper rows keep no Hopper-fitted value)
    assert values[(c.AUTOCAST_HOPPER, "gemm_efficiency_factor")] == 1.0
    assert {"stack:torchtitan-fsdp2@gt-h100-96gb", "stack:deepspeed-zero@h200",
            *foundry} <= set(c.AUTOCAST_HOPPER)
    params = c.to_params(values)
    assert params["stack:torchtitan-fsdp2-eager@h100-sxm"]["gemm_efficiency_factor"] == 1.0
    # shared parameters (execution terms, a stack in general) are not the generation's own
    assert all(k[0][0] not in ("*", "stack:megatron-core-2025") for k in fixed)
    values, fixed = x.generation_priors("Blackwell", start)
    # the Grace host launch factor no other generation has: GH200's published CPU-bound
    # range against x86 hosts (arXiv:2504.11750: 4x the batch, GPU 1.9-2.7x faster), not
    # the GB200/GB300 rows' fitted 2.0 nor a neutral 1.0
    grace = values[(("gb200", "gb300"), "host_launch_factor")]
    assert grace == pytest.approx(1.766, abs=0.001)
    assert 4 / 2.7 <= grace <= 4 / 1.9
    assert start[(("gb200", "gb300"), "host_launch_factor")] == 2.0

    cases = v.load_cases(["llm-foundry-a100", "llm-foundry-h100"])
    calls = []
    monkeypatch.setattr(c, "fit", _recording_fit(calls))
    x.leave_one_out(cases, cases["hardware"].map(x.generation_of), catalog,
                    priors=x.generation_priors)
    for train, grid, _ in calls:
        held = "A100" if not train.hardware.str.startswith("a100").any() else "Hopper"
        assert not (train.hardware.map(x.generation_of) == held).any()
        own = [k for k in c.GRID if x._owned_by(k, x.GENERATIONS[held])]
        assert own and not any(k in grid for k in own)


def test_a_generation_left_out_loses_its_shape_terms_fitted_outside_the_grid(catalog):
    # Blackwell's grouped-GEMM per-tile costs were fitted on the Blackwell MoE rows
    # (calibration.GROUPED_GEMM_GRID, outside GRID): left out, Blackwell takes Hopper's
    # (DeepGEMM's H800 tables), fixed; its tile rows (tcgen05, an architectural fact) stay
    start = c.start_values(catalog)
    shapes = x.shape_term_priors(catalog)
    values, fixed = x.generation_priors("Blackwell", start, shape_priors=shapes)
    hopper = catalog.accelerator("h100-sxm")
    for name in ("grouped_gemm_token_half_dim", "grouped_gemm_inner_half_dim"):
        key = (c.BLACKWELL, name)
        assert values[key] == getattr(hopper, name).value and key in fixed
        assert catalog.accelerator("b200").__getattribute__(name).value != values[key]
    assert (c.BLACKWELL, "grouped_gemm_tile_tokens") not in values
    values, fixed = x.generation_priors("Hopper", start, shape_priors=shapes)
    assert not any(k[1].startswith("grouped_gemm") for k in values)


def _pair_frame(rows):
    base = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336,
            "mlp_matrices": 3, "vocab": 128256, "experts": 1, "experts_per_token": 1,
            "moe_ffn": 14336, "moe_layers": 0, "seq_len": 8192, "precision": "bf16",
            "global_batch": 128, "stack": "megatron-core-2025", "dataset": "d",
            "metric": "tokens_per_s_per_gpu"}
    frame = pd.DataFrame([base | r for r in rows])
    frame["case_id"] = [f"r{i}" for i in range(len(frame))]
    return frame


def test_speedup_pairs_only_pair_one_workload_on_two_accelerators():
    pred = _pair_frame([
        # the workload on H100 and B200: one pair
        {"hardware": "h100-sxm", "gpus": 8, "measured": 1000, "predicted": 1000,
         "step_time_s": 128 * 8192 / 1000 / 8},
        {"hardware": "b200", "gpus": 8, "measured": 2000, "predicted": 2200,
         "step_time_s": 128 * 8192 / 2200 / 8},
        # same accelerator again (a second layout): no pair with the H100 row
        {"hardware": "h100-sxm", "gpus": 64, "measured": 900, "predicted": 900,
         "step_time_s": 128 * 8192 / 900 / 64},
        # another precision, another sequence length: other workloads, alone
        {"hardware": "gb200", "gpus": 8, "precision": "fp8", "measured": 3000,
         "predicted": 3000, "step_time_s": 128 * 8192 / 3000 / 8},
        {"hardware": "gb200", "gpus": 8, "seq_len": 4096, "measured": 3000, "predicted": 3000,
         "step_time_s": 128 * 4096 / 3000 / 8},
    ])
    pairs = x.speedup_pairs(pred)
    assert len(pairs) == 1
    (p,) = pairs
    assert (p["older"], p["newer"]) == ("h100-sxm", "b200")
    assert p["older_case"] == "d/r0"  # the H100 row with the nearest GPU count
    assert p["published_ratio"] == pytest.approx(2.0)
    assert p["predicted_ratio"] == pytest.approx(2.2)
    assert p["error"] == pytest.approx(0.1)
    assert x.speedup_summary(pairs)["all"] == {"pairs": 1, "mean_abs_error": pytest.approx(0.1),
                                               "bias": pytest.approx(0.1),
                                               "max_error": pytest.approx(0.1)}


def test_speedup_pairs_prefer_the_publishers_own_comparison():
    """A row pairs with the other accelerator's row of its own publication (one software
    release on both) before a row of another release at a nearer GPU count."""
    old, new = "o/r@1111111 perf.md, table", "o/r@2222222 perf.md, table"
    pred = _pair_frame([
        {"hardware": "h100-sxm", "gpus": 8, "measured": 1000, "predicted": 1000,
         "step_time_s": 128 * 8192 / 1000 / 8, "source": old},
        {"hardware": "b200", "gpus": 8, "measured": 3000, "predicted": 2200,
         "step_time_s": 128 * 8192 / 2200 / 8, "source": new},
        {"hardware": "b200", "gpus": 64, "measured": 2000, "predicted": 2200,
         "step_time_s": 128 * 8192 / 2200 / 64, "source": old},
    ])
    (p,) = x.speedup_pairs(pred)
    assert p["newer_case"] == "d/r2" and p["same_publication"]
    assert p["error"] == pytest.approx(0.1)
    summary = x.speedup_summary([p])
    assert summary["one publication"]["pairs"] == 1 and summary["two publications"]["pairs"] == 0
    # without the publication's own row, the nearest GPU count across releases
    (q,) = x.speedup_pairs(pred.drop(index=2))
    assert q["newer_case"] == "d/r1" and not q["same_publication"]


def test_speedup_pairs_score_another_column_against_the_same_published_ratio():
    pred = _pair_frame([
        {"hardware": "h100-sxm", "gpus": 8, "measured": 1000, "predicted": 1000,
         "step_time_s": 128 * 8192 / 1000 / 8, "loao_predicted": 800},
        {"hardware": "b200", "gpus": 8, "measured": 2000, "predicted": 2200,
         "step_time_s": 128 * 8192 / 2200 / 8, "loao_predicted": 2000},
    ])
    (p,) = x.speedup_pairs(pred, "loao_predicted")
    assert p["published_ratio"] == pytest.approx(2.0)
    assert p["error"] == pytest.approx((2000 / 2000) / (800 / 1000) - 1)
    assert p["predicted_ratio"] == pytest.approx(2.5)


def test_speedup_error_inverts_step_times():
    """A step time predicted 10 % short on the newer accelerator is a 1/0.9 - 1 speedup
    error, whatever metric each row publishes."""
    pred = _pair_frame([
        {"hardware": "a100-80gb", "gpus": 8, "metric": "step_time_s", "measured": 10.0,
         "predicted": 10.0, "step_time_s": 10.0},
        {"hardware": "h100-sxm", "gpus": 16, "metric": "step_time_s", "measured": 5.0,
         "predicted": 4.5, "step_time_s": 4.5},
    ])
    (p,) = x.speedup_pairs(pred)
    assert p["error"] == pytest.approx(1 / 0.9 - 1)
    assert p["published_ratio"] == pytest.approx(2.0 * 8 / 16)


def test_shipped_speedup_pairs_are_one_workload_each(catalog):
    pred = v.predict(v.load_cases(None), catalog=catalog)
    pairs = x.speedup_pairs(pred)
    assert len(pairs) >= 100
    rows = (pred.dataset + "/" + pred.case_id).to_frame("key").join(pred).set_index("key")
    for p in pairs:
        # (a case id may repeat within a dataset: its rows are one workload)
        a, b = rows.loc[[p["older_case"]]].iloc[0], rows.loc[[p["newer_case"]]].iloc[0]
        assert a.hardware != b.hardware
        assert all(a[k] == b[k] for k in ("layers", "hidden", "heads", "seq_len", "precision",
                                          "experts", "vocab"))


def test_crossval_reads_the_precomputed_values(monkeypatch, tmp_path):
    assert x.precomputed_is_fresh(), "run: python -m planner.codegen --only validation"
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(x, "compute_all", lambda *a, **k: pytest.fail("refitted"))
    cases = v.load_cases(["sc21", "modern-runs"])
    got = x.predictions(cases)
    ok = v.predictable(cases).to_numpy()
    for split in ("loso", "loao"):
        assert np.isfinite(got[split][ok]).all()


def test_crossval_refits_once_for_another_catalog_and_caches(monkeypatch, tmp_path, capsys):
    from hardware_catalog.toml_cache import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.setattr(x, "crossval_key", lambda catalog=None: "a-user-catalog")
    calls = []

    def compute(catalog=None):
        calls.append(1)
        return {"loso/sc21/megatron-gpt3-175b-1024": 1.0, "loao/sc21/megatron-gpt3-175b-1024": 2.0}

    monkeypatch.setattr(x, "compute_all", compute)
    cases = v.load_cases(["sc21"])
    first = x.predictions(cases)
    assert capsys.readouterr().err.startswith("capplan: validate --lofo: refitting")
    last = cases.case_id == "megatron-gpt3-175b-1024"
    assert first["loso"][last].item() == 1.0 and first["loao"][last].item() == 2.0
    assert first["loso"][~last].isna().all()
    x.predictions(cases)
    assert calls == [1]  # the second run read the cache
    (saved,) = tmp_path.rglob("crossval-a-user-catalog.json")
    assert saved.stat().st_mode & 0o777 == 0o600


def test_cli_shows_the_cross_validated_errors_and_speedups(capsys):
    from planner.cli.main import main

    assert main(["validate", "-d", "llm-foundry-a100,llm-foundry-h100", "--lofo",
                 "-f", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for s in out["datasets"]:
        assert s["loso_mape"] > 0 and s["loao_mape"] > 0 and s["loso_count"] == s["count"]
    assert out["speedup"]["summary"]["all"]["pairs"] == len(out["speedup"]["pairs"]) > 50
    # with each generation left out: the same pairs, each row from a refit without it
    left_out = out["speedup"]["generation_left_out_summary"]["all"]
    assert left_out["pairs"] == len(out["speedup"]["pairs"])
    assert left_out["mean_abs_error"] != out["speedup"]["summary"]["all"]["mean_abs_error"]
    assert main(["validate", "-d", "llm-foundry-a100,llm-foundry-h100", "--lofo", "-f",
                 "csv"]) == 0
    text = capsys.readouterr().out
    header = text.splitlines()[0].split(",")
    assert {"lofo_mape_%", "loso_mape_%", "loao_mape_%"} <= set(header)
    assert "loso_x,loao_x" in text and "published_ratio,predicted_ratio" in text
    assert main(["validate", "-d", "llm-foundry-h100", "-f", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "speedup-ratio error" in text and "loso_x" not in text


@pytest.mark.slow
def test_precomputed_crossval_equals_a_fresh_computation(catalog):
    """~10 CPU-s: the committed values are what the refits give today."""
    saved = json.loads(x.PRECOMPUTED.read_text())
    assert saved["key"] == x.crossval_key(catalog)
    fresh = x.compute_all(catalog)
    assert fresh.keys() == saved["predictions"].keys()
    assert np.allclose([fresh[k] for k in fresh], [saved["predictions"][k] for k in fresh],
                       rtol=1e-9)


def test_flashattention2_on_hopper_is_the_published_ratio_not_a_fit(catalog):
    """llm-foundry's FlashAttention-2 on H100 runs at the FA2 stacks' factor times FA2's
    published fraction of peak on H100 over that on A100 (~35 %, arXiv:2407.08608; 50-73 %,
    midpoint 61.5 %, arXiv:2307.08691), times the A100 over this stack's H100 large-GEMM
    efficiency: 0.406, within 0.01 of the catalog's 0.4.  Not in the calibration grid, so
    leaving Hopper out keeps it, and llm-foundry-h100's leave-one-accelerator-out error stays
    within 1.5x its calibrated error (14.3 % against 5.9 % while it was fitted)."""
    from planner.engine.inputs.scenario import stack_factor

    foundry = catalog.stack("llm-foundry-2023")
    fa2 = foundry.attention_efficiency_factor.value
    gemm = {hw: catalog.accelerator(hw).gemm_max_efficiency.value for hw in ("a100-80gb", "h100-sxm")}
    share = stack_factor(foundry, "gemm_efficiency_factor", "h100-sxm").value
    derived = fa2 * (0.35 / 0.615) * gemm["a100-80gb"] / (gemm["h100-sxm"] * share)
    for hw in ("h100-sxm", "h200", "h800"):
        assert stack_factor(foundry, "attention_efficiency_factor", hw).value == pytest.approx(
            derived, abs=0.01)
    assert not any(name == "attention_efficiency_factor" and owners[0].startswith(
        "stack:llm-foundry-2023@") for owners, name in c.GRID)

    cases = v.load_cases(["llm-foundry-h100"])
    saved = json.loads(x.PRECOMPUTED.read_text())["predictions"]
    loao = cases.case_id.map(lambda k: saved[f"loao/llm-foundry-h100/{k}"])
    calibrated = v.predict(cases)
    fit_mape = (calibrated.predicted / calibrated.measured - 1).abs().mean()
    loao_mape = (loao / cases.measured - 1).abs().mean()
    assert loao_mape <= 1.5 * fit_mape


def test_independent_runs_load_every_row_with_its_reason():
    """102 rows: 84 predicted (Float8 rowwise as the fp8-rowwise recipe, rowwise_with_gw_hp
    as fp8-rowwise-gw-hp; the NVFP4 page's BF16, MXFP8 and partial-NVFP4 rows on the 4
    GB200 its commit message names; AMD's Primus Llama 3.1 8B FP8 rows on MI325X); 1
    unexpressible (torchtitan's default expert-parallel path beside DeepEP); 17 excluded
    (Llama 3's unpinned layouts; AMD's dropless-MoE A/B blog, whose absolute throughput its
    authors call a floor; torchao's power-limited B200 table and the H100 row that set
    fp8-rowwise's rate factor; the MI325X Llama 3.1 70B rows, whose recompute the table
    does not give); throughput per GPU in tokens/s or model TFLOP/s, none
    fitted; 26 of them Google's MaxText recipes on TPU7x and TPU v6e, one NVIDIA's MaxText
    on H100 (JAX-Toolbox)."""
    cases = v.load_cases(["independent-runs"])
    assert len(cases) == 102
    assert not cases.fit.any()
    unexpressible, excluded = cases.unexpressible != "", cases.excluded != ""
    assert unexpressible.sum() == 1 and excluded.sum() == 17 and (unexpressible & excluded).sum() == 0
    assert cases.unexpressible[unexpressible].str.contains("default expert-parallel path").all()
    assert cases.case_id[excluded].str.match("llama3-405b-|amd2606-dsv3-|torchao-|primus2601-l31-70b-").all()
    assert cases.excluded[cases.case_id.str.startswith("primus2601-l31-70b-")].str.contains(
        "recompute").all()
    assert cases.excluded[cases.case_id.str.startswith("amd2606-dsv3-")].str.contains(
        "The absolute throughput is a floor").all()
    nvfp4_page = cases[cases.case_id.str.startswith("tt-nvfp4doc-")]
    assert (nvfp4_page.hardware == "gb200").all() and set(nvfp4_page.precision) == {
        "bf16", "mxfp8", "nvfp4-bf16-tail"}
    assert v.predictable(cases).sum() == 84
    jax = cases[cases.case_id == "jaxtoolbox-l2-7b-bf16-h100-8"].iloc[0]
    assert (jax.stack, jax.zero, jax.recompute_norms) == ("maxtext-xla", 3, 1)
    assert set(cases.metric) == {"tokens_per_s_per_gpu", "model_tflops_per_gpu"}
    tokens = cases[cases.metric == "tokens_per_s_per_gpu"]
    # per GPU: a 405B model at 16-128 tokens/s on H100 (645 on MI355X in FP8 with three
    # 8k sequences a GPU; 1,444 with its 40-layer cut), an 8B model at 548-30,040
    # (B200-class, FP4)
    l405 = tokens[tokens.model == "llama3.1-405b"]
    assert l405.measured[~l405.hardware.isin(["mi355x", "tpu-v7", "tpu-v6e"])].between(16, 128).all()
    # Ironwood (tpu-recipes README): 500 (BF16) and 764 (FP8) tokens/s a chip, six 8k
    # sequences a chip
    assert sorted(l405.measured[l405.hardware == "tpu-v7"]) == [499.77, 763.54]
    assert l405.measured[l405.hardware == "mi355x"].tolist() == [645, 1444.4]
    assert tokens.measured[tokens.model == "llama3-8b"].between(548, 30040).all()
    # torchtitan's DeepEP README (2025-11-24): Qwen3-30B-A3B on 8-128 B200, EP 8, BF16
    qwen = cases[cases.model == "qwen3-30b-a3b"]
    assert len(qwen) == 7 and (qwen.hardware == "b200").all() and (qwen.ep == 8).all()
    assert (qwen.experts == 128).all() and (qwen.experts_per_token == 8).all()
    assert sorted(qwen.measured) == [9930, 13856, 14107, 14123, 14276, 14380, 14796]
    # AMD's MoE package (Primus, December 2025): the first and last bar of its two ladders
    # on MI355X, DeepSeek-V2-Lite on 8 GPUs and DeepSeek-V2 on 32, BF16, EP 8
    amd = cases[cases.case_id.str.startswith("amd2512-")]
    assert sorted(amd.model) == ["deepseek-v2", "deepseek-v2", "deepseek-v2-lite",
                                 "deepseek-v2-lite"]
    assert (amd.hardware == "mi355x").all() and (amd.ep == 8).all()
    assert sorted(amd.measured) == [1987.6, 2547.5, 30444.3, 40805.5]

    assert cases.measured[cases.metric == "model_tflops_per_gpu"].tolist() == [430, 400, 380]
    # the layout multiplies to the GPU count, the batch to whole micro-batches per DP rank
    dp = cases.gpus // (cases.tp * cases.pp * cases.cp)
    assert (dp * cases.tp * cases.pp * cases.cp == cases.gpus).all()
    assert (cases.global_batch % (dp * cases.micro_batch) == 0).all()
    # torchtitan's two uncompiled rows run eagerly (tests/test_elementwise_fusion.py), its
    # DeepEP rows (use_deepep = true) on the DeepEP stack (tests/test_moe_physics.py), its
    # 2026 NVFP4 page with the chunked loss of that year's configs
    assert set(cases["stack"]) == {"torchtitan-fsdp2", "torchtitan-fsdp2-eager",
                                   "torchtitan-fsdp2-deepep", "torchtitan-fsdp2-2026",
                                   "megatron-core-2025",
                                   "maxtext-xla", "megatron-core-moe-baseline",
                                   "megatron-core-moe-deepep"}
    assert (cases["stack"] == "torchtitan-fsdp2-eager").sum() == 2
    assert (cases["stack"] == "torchtitan-fsdp2-2026").sum() == 3
    assert set(x.units_of(cases)["loso"]) == {"pytorch/torchtitan", "arXiv:2407.21783",
                                              "www.intel.com/content", "amd-agi/maxtext-slurm",
                                              "ROCm/rocm-blogs", "AMD-AGI/Primus",
                                              "AI-Hypercomputer/tpu-recipes",
                                              "NVIDIA/JAX-Toolbox", "pytorch/ao"}
    pred = v.predict(cases)
    ok = v.predictable(cases).to_numpy()
    assert np.isfinite(pred.predicted[ok]).all() and pred.predicted[~ok].isna().all()


def test_amd_mi355x_maxtext_405b_run_is_predicted_as_published():
    """AMD's MaxText run report (amd-agi/maxtext-slurm, LLAMA31_405B_RUN_REPORT.md, job
    16784): Llama 3.1 405B, FP8 GEMMs, 64 MI355X, 64-way FSDP, 3 sequences of 8,192 a GPU,
    full remat; ~645 tokens/s per device published.  Held out, nothing fitted on AMD; the
    MI355X GEMM efficiency comes from its matmul benchmark (planner.analysis.transfer).
    Predicted 632 (-2.0 %, measured 2026-11-29; with the earlier estimate 0.55: -8 %)."""
    cases = v.load_cases(["independent-runs"]).set_index("case_id")
    row = cases.loc[["amd2606-l31-405b-fp8-mi355x-64"]]
    assert row.measured.item() == 645 and row["stack"].item() == "maxtext-xla"
    assert (row.zero.item(), row.tp.item(), row.micro_batch.item()) == (3, 1, 3)
    err = v.predict(row.reset_index()).error.item()
    assert -0.06 < err < 0.02


def test_amd_mi355x_40_layer_run_is_a_documented_miss():
    """AMD's two-node MaxText run (amd-agi/maxtext-slurm notes/anp-2n-report.md, RCCL's own
    RoCE transport): the Llama 3.1 405B shape cut to 40 layers, FP8, 16 MI355X, FSDP 16, one
    8k sequence a GPU; 1,444.4 tokens/s per device published (MFU 23.4 % against 32.5 % of
    the 126-layer run at three sequences a GPU).  Predicted 1,838, +27 % (measured
    2026-11-29): the model keeps most of the MFU at one sequence a GPU; held out, not fitted."""
    cases = v.load_cases(["independent-runs"]).set_index("case_id")
    row = cases.loc[["amd2604-l405b40l-fp8-mi355x-16"]]
    assert (row.layers.item(), row.gpus.item(), row.micro_batch.item()) == (40, 16, 1)
    err = v.predict(row.reset_index()).error.item()
    assert 0.20 < err < 0.35


def test_intel_gaudi2_rows_are_predicted_as_published():
    """Intel's Gaudi 2 table (software 1.19.0: Llama 3.1 8B on 8 cards, 70B on 64, FP8,
    global batch 128, sequence 8,192) with the layouts of Intel's Megatron-LM README (8B:
    TP 2 x DP 4; 70B: TP 8 x DP 8; sequence parallelism off): held out, nothing fitted on
    Gaudi; its GEMM efficiencies come from its matmul benchmark (planner.analysis.transfer:
    0.969 of the BF16 peak measured, 0.918 taken).  Published 4,680 and 677.06 tokens/s per
    card; predicted +32 % (8B) and -5 % (70B: TP 8 without sequence parallelism over the
    on-chip RoCE links), measured 2026-11-29: the two rows disagree by a quarter with one
    set of Gaudi parameters (with the earlier estimate 0.70 they were +5 % and -20 %)."""
    cases = v.load_cases(["independent-runs"]).set_index("case_id")
    gaudi = cases[cases.hardware == "gaudi2"]
    assert list(gaudi.index) == ["intel119-l31-8b-fp8-gaudi2-8", "intel119-l31-70b-fp8-gaudi2-64"]
    assert (gaudi.sequence_parallel == 0).all() and (gaudi.precision == "fp8-hpu").all()
    assert gaudi.measured.tolist() == [4680, 677.06]
    assert (gaudi.group == "other accelerators").all() and not gaudi.fit.any()
    err = v.predict(gaudi.reset_index()).set_index("case_id").error
    assert 0.25 < err["intel119-l31-8b-fp8-gaudi2-8"] < 0.40
    assert -0.10 < err["intel119-l31-70b-fp8-gaudi2-64"] < 0


def test_independent_runs_fit_the_memory_they_ran_in():
    """Every row ran: on H200 each fits; the H100 rows ran on 96 GiB parts (six 16 GiB
    HBM2e stacks) for which the 80 GB h100-sxm stands in, so a row may overflow 80 GB but
    not 96 GiB."""
    pred = v.predict(v.load_cases(["independent-runs"]))
    ran = pred[pred.predicted.notna()]
    assert ran.fits[ran.hardware == "h200"].all()
    assert (ran.memory_per_gpu_bytes[ran.hardware == "h100-sxm"] < 96 * 2**30).all()


def test_each_unit_left_out_is_listed_with_its_rows():
    from planner.report.validation import crossval_unit_rows, run

    pred, _ = run(["sc21", "llm-foundry-h100"], lofo=True)
    rows = crossval_unit_rows(pred)
    loso = {r["unit"]: r["rows"] for r in rows if r["left_out"] == "loso"}
    loao = {r["unit"]: r["rows"] for r in rows if r["left_out"] == "loao"}
    # SC21: Table 1's 10 rows and Table 2's 6 ZeRO-3 rows; Megatron-LM's GPT-3 example and
    # its 2020 README's 11 predicted rows (8 on A100, 3 on V100); MT-NLG's 3
    assert loso == {"arXiv:2104.04473": 16, "NVIDIA/Megatron-LM": 12, "arXiv:2205.05198": 8,
                    "arXiv:2201.11990": 3, "mosaicml/llm-foundry": 70}
    assert loao == {"A100": 36, "Hopper": 70, "v100-32gb": 3}
    assert all(r["mape_%"] > 0 for r in rows)


#: Megatron-Bridge commits whose performance tables stop at the 25.11 release (tables of
#: later releases are held out for judging): 25.09 (fa0315ae), the first and the corrected
#: 25.11 tables (97ad8cc6, 5776a6d90: the last docs commit before the 26.02 table) and the
#: 25.11 release tag v0.2.1 (1c43b392).
PRE_2602_TABLES = ("fa0315ae2", "97ad8cc6f", "5776a6d90", "1c43b3928")


def test_megatron_bridge_tables_are_cited_at_a_commit_before_the_held_out_releases():
    """Every validation row read from Megatron-Bridge's performance summary cites a commit
    whose tables end at 25.11; 4ab94dfad (2026-08, with 26.x tables) is cited nowhere."""
    import csv

    cited = []
    for path in sorted(v.DATA_DIR.glob("*.csv")):
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                source = row.get("source", "")
                if "Megatron-Bridge@" in source and "performance-summary" in source:
                    cited.append(source.split("Megatron-Bridge@")[1][:9])
    assert len(cited) >= 40
    assert set(cited) <= set(PRE_2602_TABLES), set(cited) - set(PRE_2602_TABLES)
    for path in v.DATA_DIR.glob("*.csv"):
        assert "4ab94dfad" not in path.read_text(), path.name


def test_crossval_key_covers_the_benchmark_rule(tmp_path, monkeypatch, catalog):
    """The held-out generations' priors come from planner.analysis.transfer: editing it
    makes the precomputed refits stale (a new key), as editing crossval.py does."""
    from planner.analysis import transfer

    before = x.crossval_key(catalog)
    edited = tmp_path / "transfer.py"
    edited.write_bytes(open(transfer.__file__, "rb").read() + b"\n# edited\n")
    monkeypatch.setattr(transfer, "__file__", str(edited))
    assert x.crossval_key(catalog) != before


def test_prior_rows_state_each_generations_start_and_its_offset():
    """The leave-one-accelerator-out priors as validate --lofo and docs/validation.md show
    them: the A100 GEMM efficiency's prior is its MAMF / peak times the mean ratio of the
    other generations' calibrated BF16 efficiencies to their MAMF / peak (by hand from the
    catalog), and every row's offset is prior / calibrated - 1."""
    from hardware_catalog import load_catalog
    from planner.analysis import transfer

    catalog = load_catalog()
    rows = x.prior_rows(catalog)
    start = c.start_values(catalog)
    measured = transfer.measured_by_key(catalog, c.GRID)
    others = [start[k] / m for k, m in measured.items()
              if k[0] != c.A100 and k[1] == "gemm_max_efficiency"]
    a100 = next(r for r in rows if r["generation"] == "A100"
                and r["parameter"] == "gemm_max_efficiency")
    mamf = catalog.accelerator("a100-80gb").mamf_bf16_flops_per_s.value \
        / catalog.accelerator("a100-80gb").peak_bf16_flops_per_s.value
    assert a100["mamf_over_peak"] == pytest.approx(mamf)
    assert a100["prior"] == pytest.approx(mamf * sum(others) / len(others), rel=1e-12)
    assert a100["calibrated"] == start[(c.A100, "gemm_max_efficiency")]
    for r in rows:
        if r["calibrated"]:
            assert r["prior_vs_calibrated_%"] == pytest.approx(
                100 * (r["prior"] / r["calibrated"] - 1))
    # every parameter a refit without the generation keeps fixed appears once
    assert len({(r["generation"], r["parameter"], r["of"]) for r in rows}) == len(rows)
    assert {r["generation"] for r in rows} == set(x.GENERATIONS)


def test_tpu7x_recipes_are_held_out_with_their_remat_policies():
    """Google's tpu-recipes Ironwood table (14 rows, tpu-recipes@c8cfe2f): MaxText on 64-256
    TPU7x chips, pure FSDP, no row fitted. The 70B recipes keep the attention inputs and
    outputs on device and recompute the MLP and the norms ('selective: mlp, layernorm', the
    flags the row's recompute cell names); the 405B and MoE recipes offload the layer input
    and recompute the rest (full). The TPU splash kernel pads head sizes to its 128 lanes
    (MLA's 192 runs as 256, gpt-oss's 64 as 128) and computes whole tiles of the recipes'
    sa_block_* sizes (1,024-2,048 tokens: the causal diagonal's and, for gpt-oss's
    128-token windows, about two tiles a query). Dense rows within 9 % out of sample,
    DeepSeek-V3 within 6 %, Qwen3-235B-A22B 16-30 % too fast, gpt-oss-120b (14 % MFU
    published) 1.47x too fast (docs/validation.md)."""
    cases = v.load_cases(["independent-runs"])
    tpu = cases[cases.case_id.str.startswith("tpurec-") & (cases.hardware == "tpu-v7")]
    tpu = tpu.set_index("case_id")
    assert len(tpu) == 14 and not tpu.fit.any()
    assert set(tpu["stack"]) == {"maxtext-xla"} and set(tpu.tp) == {1} and set(tpu.zero) == {3}
    assert (tpu.global_batch == tpu.gpus * tpu.micro_batch).all()
    l70 = tpu[tpu.model == "llama3.1-70b"]
    assert (l70.recompute == "selective").all()
    assert (l70.recompute_mlp == 1).all() and (l70.recompute_norms == 1).all()
    assert tpu.recompute_mlp[tpu.model != "llama3.1-70b"].isna().all()
    assert (tpu.recompute[tpu.model != "llama3.1-70b"] == "full").all()
    assert not (tpu.mtp_layers > 0).any()  # MaxText's DeepSeek-V3 config trains no MTP
    pred = v.predict(cases[cases.case_id.isin(tpu.index)]).set_index("case_id")
    dense = pred.model.isin(["llama3.1-70b", "llama3.1-405b"])
    assert (pred.error[dense].abs() < 0.09).all()
    gpt_oss = pred.model == "gpt-oss-120b"
    assert pred.error[pred.model == "deepseek-v3"].between(-0.06, 0.06).all()
    assert pred.error[pred.model == "qwen3-235b-a22b"].between(0.1, 0.32).all()
    # every row states its recipe's splash tiles (forward 1,024-2,048, backward 2,048)
    assert tpu.attention_block_tokens.between(1024, 2048).all()
    assert (tpu.attention_block_tokens_bwd == 2048).all()
    # the TPU kernel's 128 lanes: gpt-oss's heads of 64 do half the work they occupy,
    # MLA's 192/128 five sixths (the dense rows' heads of 128 none less)
    from formulas import compute
    from hardware_catalog import load_catalog
    stack = load_catalog().stack("maxtext-xla")
    granules = {acc: own.attention_head_dim_granule.value
                for acc, own in stack.on_accelerator.items()}
    assert granules == dict.fromkeys(("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7"), 128)
    assert compute.attention_head_padding_efficiency(64, 64, 128, 1) == 0.5
    assert compute.attention_head_padding_efficiency(128, 128, 128, 1) == 1.0
    # MaxText's TPU flash kernel takes gpt-oss's sinks (the maxtext-xla stack on TPUs)
    assert (cases.loc[cases.case_id.str.startswith("tpurec-gptoss"), "shard_group"] == 32).all()
    # (its layer input and MLP output offloaded: 2 h-vectors a token and layer, 1.9 GB a layer
    # at 20 sequences of 8,192 a chip, over the host's estimated 20 GB/s: exposed)
    assert pred.error[gpt_oss].between(0.35, 0.55).all()


def test_torchao_tables_are_a_held_out_source_of_their_own():
    """torchao's end-to-end Float8 tables (pytorch/ao@36027d82, torchtitan Llama 3 8B on 8
    GPUs): a source of its own for leave-one-source-out, nothing fitted; the rows whose
    hardware no input states are excluded with their reason; rowwise_with_gw_hp is the
    fp8-rowwise-gw-hp recipe. The MI300X rows, the first of that part, are predicted 15-50 %
    too fast with its transferred
    (uncalibrated) GEMM efficiencies and Azure's FlashAttention-2 measurement (34-67 % before
    that measurement and its FP8 GEMM rate were used; docs/validation.md)."""
    cases = v.load_cases(["independent-runs"])
    ao = cases[cases.case_id.str.startswith("torchao-")].set_index("case_id")
    assert len(ao) == 12 and not ao.fit.any() and set(ao["stack"]) == {"torchtitan-fsdp2"}
    assert {x.source_of(s) for s in ao.source} == {"pytorch/ao"}
    assert ao.excluded[ao.hardware == "b200"].str.contains("power limited").all()
    assert "gemm_rate_factor" in ao.excluded["torchao-l3-8b-fp8-rowwise-h100-8"]
    gw_hp = ao.loc["torchao-l3-8b-fp8-rowwise-gwhp-mi300x-8"]
    assert gw_hp.precision == "fp8-rowwise-gw-hp" and gw_hp.unexpressible == ""
    pred = v.predict(cases[cases.case_id.isin(ao.index)]).set_index("case_id")
    assert pred.predicted.notna().sum() == 6
    # the weight gradients in BF16: slower than row-wise FP8 throughout, faster than BF16
    p = pred.predicted
    assert p["torchao-l3-8b-bf16-mi300x-8"] < p["torchao-l3-8b-fp8-rowwise-gwhp-mi300x-8"] \
        < p["torchao-l3-8b-fp8-rowwise-mi300x-8"]
    mi300x = pred[(pred.hardware == "mi300x") & pred.predicted.notna()]
    assert mi300x.error.abs().between(0.15, 0.5).all()


def test_tpu_v6e_recipes_are_held_out_and_predicted_too_fast():
    """tpu-recipes' Trillium READMEs (12 rows: Llama 3.1 8B on 8-256 chips, 70B on 32-256,
    405B on two slices, GPT-3 175B): each README's example step-time line, the workload it
    quotes. The 8B and 70B policies do not keep the attention output (core_attn: the
    splash forward again in backward); with it and splash's 512-token tiles (the READMEs
    set no sa_block_*: MaxText's base.yml) the 8B rows are within 3 %, the rest predicted
    too fast by up to 19 % (405B and GPT-3 175B, full recompute) with the TPU family's
    GEMM efficiency estimate (0.8) (docs/validation.md)."""
    cases = v.load_cases(["independent-runs"])
    v6e = cases[cases.hardware == "tpu-v6e"]
    assert len(v6e) == 12 and not v6e.fit.any() and set(v6e["stack"]) == {"maxtext-xla"}
    # the h-vectors a token and layer each policy keeps in host memory (MaxText's custom
    # policies: the layer input, q, k, v and, for 8B, the attention output)
    offloaded = v6e.set_index("model").offloaded_activation_vectors
    assert set(offloaded["llama3.1-8b"]) == {3.5} and set(offloaded["llama3.1-70b"]) == {2.25}
    assert offloaded["llama3.1-405b"] == 1 and np.isnan(offloaded["gpt3-175b"])
    core = v6e.set_index("model").recompute_core_attn
    assert set(core["llama3.1-8b"]) == {1} and set(core["llama3.1-70b"]) == {1}
    assert v6e.attention_block_tokens.isna().all()  # the stack's tiles on TPU: 512
    pred = v.predict(v6e)
    assert pred.error.between(-0.03, 0.2).all()
    assert (pred[pred.model == "llama3.1-8b"].error.abs() < 0.03).all()
