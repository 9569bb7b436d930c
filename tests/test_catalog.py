"""The catalog: every shipped file validates; derived facts; overrides; errors are one line."""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

import pytest

from hardware_catalog import CatalogError, clear_cache, load_catalog, parse_file
from hardware_catalog.loader import DATA_DIR, ENV_VAR
from hardware_catalog.schema import KINDS, Quantity
from planner.errors import CapplanError

ROOT = Path(__file__).resolve().parents[1]
DATA_FILES = sorted(DATA_DIR.rglob("*.toml"))
FOLDER = {"accelerator": "accelerators", "node": "nodes", "site": "sites",
          "site_class": "site_classes", "model": "models", "reliability": "reliability",
          "stack": "stacks"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def cat():
    return load_catalog()


# --- every shipped file --------------------------------------------------------------------
@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_file_validates(path):
    entry = parse_file(path)
    assert entry.schema_version == 1
    assert path.stem == entry.id, "file name must be the id"
    assert path.parent.name == FOLDER[entry.kind], "file must sit in its kind's folder"


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_quantity_has_source_and_date(path):
    entry = parse_file(path)
    quantities = entry.quantities()
    assert quantities
    for name, q in quantities.items():
        assert isinstance(q, Quantity)
        assert len(q.source) >= 10, f"{name}: source too short"
        assert date(2015, 1, 1) <= q.as_of <= date(2027, 12, 31), name
        if "capplan estimate" in q.source:
            assert q.estimate, f"{name}: a capplan estimate must say estimate = true"


def test_counts(cat):
    assert len(cat.accelerators) >= 15
    assert len(cat.models) >= 16
    assert len(cat.sites) >= 8
    assert len(cat.nodes) >= 8
    assert {"default", "llama3-405b", "meta-rsc"} <= set(cat.reliability)
    assert re.fullmatch(r"1\+[0-9a-f]{12}", cat.version)


def test_required_ids_present(cat):
    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h800", "h200", "gh200", "b200", "gb200",
            "mi250x", "mi300x", "mi325x", "gaudi3", "tpu-v4", "tpu-v5p", "l40s"} <= set(
        cat.accelerators)
    assert {"gpt3-175b", "bloom-176b", "opt-175b", "llama2-7b", "llama2-13b", "llama2-70b",
            "llama3-8b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b", "deepseek-v3",
            "megatron-1.7b", "megatron-1t"} <= set(cat.models)
    assert {"us-average", "us-virginia", "quebec", "norway", "germany", "france", "ireland",
            "singapore", "taiwan"} <= set(cat.sites)


# --- derived facts ------------------------------------------------------------------------
@pytest.mark.parametrize("acc, bf16, fp8", [
    ("h100-sxm", 989e12, 1979e12),      # H100 whitepaper Table 3: 989.4 / 1978.9 dense
    ("a100-40gb", 312e12, None),        # A100 whitepaper Table 1
    ("a100-80gb", 312e12, None),
    ("h200", 989e12, 1979e12),
    ("gh200", 989e12, 1979e12),         # Grace Hopper whitepaper: the H100 SXM5 peaks
    ("mi300x", 1307.4e12, 2614.9e12),   # AMD datasheet
    ("tpu-v4", 275e12, None),           # Cloud TPU docs
    ("tpu-v5p", 459e12, 459e12),
    ("gaudi3", 1835e12, 1835e12),       # Hot Chips 2024
    ("b200", 2.25e15, 4.5e15),          # DGX B200 sparse / 8 / 2
])
def test_published_peaks(cat, acc, bf16, fp8):
    a = cat.accelerator(acc)
    assert a.peak_bf16_flops_per_s.value == pytest.approx(bf16, rel=1e-3)
    if fp8 is None:
        assert a.peak_fp8_flops_per_s is None
    else:
        assert a.peak_fp8_flops_per_s.value == pytest.approx(fp8, rel=1e-3)


def test_accelerator_facts(cat):
    h100 = cat.accelerator("h100-sxm")
    assert h100.hbm_bandwidth_bytes_per_s.value == pytest.approx(3.35e12)
    assert h100.max_power_w.value == 700
    assert h100.scale_up_bandwidth_bytes_per_s.value == pytest.approx(450e9)
    assert cat.accelerator("h800").scale_up_bandwidth_bytes_per_s.value == pytest.approx(200e9)
    assert cat.accelerator("gb200").scale_up_domain_gpus.value == 72
    assert cat.accelerator("tpu-v4").hbm_bytes.value == 32 * 2**30
    for a in cat.accelerators.values():
        assert a.node in cat.nodes
        assert a.idle_power_w.value < a.max_power_w.value
        assert 0 < a.gemm_max_efficiency.value <= 1
        # estimates are labelled: prices, embodied carbon and lifetime are never datasheet facts
        assert a.embodied_kg_co2e.estimate and a.lifetime_years.estimate
        # eta(d) = eta_max * d / (d + d_half) is half of eta_max at d_half
        d = a.gemm_half_efficiency_dim.value
        assert a.gemm_max_efficiency.value * d / (d + d) == pytest.approx(
            a.gemm_max_efficiency.value / 2)


def _counts(model) -> tuple[float, float]:
    """(total, active) parameters: the run model's count (planner.engine.run.model.param_counts)."""
    from planner.cli.catalog_command import param_counts_of

    counts = param_counts_of(model)
    return counts["params"], counts["active_params"]


def _main_counts(model) -> tuple[float, float]:
    """(total, active) parameters without the MTP modules: what papers publish."""
    from planner.cli.catalog_command import param_counts_of
    from planner.engine.inputs.scenario import model_inputs
    from planner.engine.run.model import param_counts

    main = param_counts({**model_inputs(model), "mtp_layers": 0.0})
    assert main["params"] == param_counts_of(model)["params"] - param_counts_of(model)["mtp_params"]
    return main["params"], main["active_params"]


def test_every_model_matches_its_published_size(cat):
    for m in cat.models.values():
        pub = m.params_published.value
        tol = 0.02 * pub + m.params_rounding / 2
        total, active = _main_counts(m)
        assert abs(total - pub) <= tol, (m.id, total, pub)
        if not m.is_moe:
            assert active == total


def mla_overcount(model) -> float:
    """Parameters counting an MLA model's attention as MHA would add (by hand).

    MLA projections of DeepSeek-V2/V3 (arXiv:2405.04434 s2.1, arXiv:2412.19437 s2.1.1):
    Q through a rank-q_lora bottleneck with its norm, joint KV compression to kv_lora (+ the
    shared RoPE key) with its norm, per-head K/V up-projections, and the output projection.
    """
    h, a = model.hidden, model.heads
    qk = model.qk_nope_head_dim + model.qk_rope_head_dim
    q = h * model.q_lora_rank + model.q_lora_rank + model.q_lora_rank * a * qk
    kv = (h * (model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank
          + model.kv_lora_rank * a * (model.qk_nope_head_dim + model.v_head_dim))
    out = a * model.v_head_dim * h
    mha = 2 * h * h + 2 * h * h * model.kv_heads / a
    return model.layers * (mha - (q + kv + out))


@pytest.mark.parametrize("model, total, active, rel", [
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.02),   # Mistral AI: 46.7B total, 12.9B per token
    ("deepseek-v3", 671e9, 37e9, 0.03),       # arXiv:2412.19437: 671B total, 37B activated
])
def test_moe_active_params(cat, model, total, active, rel):
    m = cat.model(model)
    counted_total, counted_active = _main_counts(m)
    assert counted_total == pytest.approx(total, rel=0.02)
    assert counted_active == pytest.approx(active, rel=rel)
    assert m.active_params_published.value == pytest.approx(active)


def test_deepseek_mla_is_counted_exactly(cat):
    """MLA is counted as MLA (issue 13): 18.4M per layer, 1.123B in all, below MHA's count,
    and the main model is the paper's 671B (0.005 %); the MTP module adds its own 11.6B."""
    from planner.cli.catalog_command import param_counts_of
    from planner.engine.inputs.scenario import model_inputs
    from planner.engine.run.model import param_counts

    m = cat.model("deepseek-v3")
    assert mla_overcount(m) == 61 * 18_413_568 == 1_123_227_648
    x = {**model_inputs(m), "mtp_layers": 0.0}
    mha = {**x, "kv_lora_rank": 0.0, "q_lora_rank": 0.0, "qk_rope_head_dim": 0.0,
           "head_dim": m.hidden / m.heads, "v_head_dim": m.hidden / m.heads}
    assert param_counts(mha)["params"] - param_counts(x)["params"] == mla_overcount(m)
    total, active = _main_counts(m)
    assert total == pytest.approx(671.03e9, rel=1e-4)
    assert active == pytest.approx(37.55e9, rel=1e-3)
    assert m.mtp_layers == 1
    assert param_counts_of(m)["mtp_params"] == pytest.approx(11.61e9, rel=1e-3)


def test_model_formula_by_hand(cat):
    m = cat.model("llama2-70b")  # 80 x (2h^2 + 2h^2/8 + 3 h ffn + 2h) + 2 V h + h
    h, f = 8192, 28672
    expected = 80 * (2 * h * h + 2 * h * h * 8 / 64 + 3 * h * f + 2 * h) + 2 * 32000 * h + h
    assert _counts(m)[0] == expected == 68_976_648_192
    g = cat.model("gpt3-175b")
    assert g.kv_heads == g.heads and g.ffn == 4 * g.hidden and not g.gated_mlp
    ds = cat.model("deepseek-v3")
    assert ds.is_mla and ds.moe_layers == 58 and ds.dense_layers == 3


def test_megatron_family(cat):
    sizes = {"1.7b": 1.7, "3.6b": 3.6, "7.5b": 7.5, "18.4b": 18.4, "39.1b": 39.1,
             "76.1b": 76.1, "145.6b": 145.6, "310.1b": 310.1, "529.6b": 529.6, "1t": 1008.0}
    for size, billions in sizes.items():
        m = cat.model(f"megatron-{size}")
        assert m.params_published.value == pytest.approx(billions * 1e9)
        assert m.vocab == 51200 and m.seq_len == 2048


def test_sites_and_nodes_sane(cat):
    for s in cat.sites.values():
        assert 1 <= s.pue.value <= 2
        assert 0 < s.electricity_usd_per_kwh.value < 1
        assert 0 < s.grid_intensity_g_per_kwh.value < 1000
    assert cat.site("france").grid_intensity_g_per_kwh.value < cat.site(
        "germany").grid_intensity_g_per_kwh.value
    dgx = cat.node("dgx-h100")
    assert dgx.scale_out_bytes_per_s_per_gpu == pytest.approx(50e9)  # 400 Gb/s per GPU


def test_reliability_llama3(cat):
    p = cat.reliability_profile()
    assert p.id == "default"
    assert p.gpu_mtbf_s.value / 3600 == pytest.approx(54 * 24 * 16384 / 419, rel=1e-5)
    assert 300 <= p.restart_overhead_s.value <= 1200
    assert "l3-int" in p.validation_rows
    known = set()
    rows = ROOT / "hardware_catalog" / "data" / "validation" / "reliability.csv"
    for line in rows.read_text().splitlines()[1:]:
        known.add(line.split(",", 1)[0])
    assert known
    for prof in cat.reliability.values():
        if known:
            assert set(prof.validation_rows) <= known, prof.id


# --- errors are one line: file, key path, what was expected -----------------------------
def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _copy_with(tmp_path, src_kind_folder, src_id, old, new, name=None) -> Path:
    text = (DATA_DIR / src_kind_folder / f"{src_id}.toml").read_text()
    assert old in text
    return _write(tmp_path, name or f"{src_id}.toml", text.replace(old, new, 1))


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_unknown_key_rejected_with_key_path(tmp_path):
    p = _copy_with(tmp_path, "accelerators", "h100-sxm", "vendor = ", "colour = \"green\"\nvendor = ")
    with pytest.raises(CatalogError) as exc:
        parse_file(p)
    msg = _one_line(exc)
    assert msg.startswith(str(p)) or "h100-sxm.toml" in msg
    assert "colour: unknown key" in msg


def test_unknown_key_inside_quantity(tmp_path):
    p = _copy_with(tmp_path, "sites", "france", "pue = { value = 1.5,", "pue = { value = 1.5, unit = \"x\",")
    with pytest.raises(CatalogError) as exc:
        parse_file(p)
    msg = _one_line(exc)
    assert "pue.unit: unknown key; expected one of: value, source, as_of, estimate, note" in msg


def test_bare_number_instead_of_quantity(tmp_path):
    p = _write(tmp_path, "s.toml", 'schema_version = 1\nkind = "site"\nid = "x"\nname = "X"\n'
               'pue = 1.2\nelectricity_usd_per_kwh = 0.1\ngrid_intensity_g_per_kwh = 100\n')
    with pytest.raises(CatalogError) as exc:
        parse_file(p)
    msg = _one_line(exc)
    assert "s.toml: 3 problems: pue: expected a table { value" in msg
    assert "; electricity_usd_per_kwh: expected a table" in msg
    assert "; grid_intensity_g_per_kwh: expected a table" in msg


@pytest.mark.parametrize("old, new, expected", [
    ("schema_version = 1", "schema_version = 2", "schema_version: expected 1"),
    ('kind = "site"', 'kind = "planet"', "kind: expected one of"),
    ("value = 1.5,", "value = 0.5,", "pue.value: expected 1 <= PUE <= 3"),
    ("value = 1.5,", 'value = "high",', "pue.value: input should be a valid number"),
    ("as_of = 2023-12-31", "as_of = 2023-13-45", "invalid TOML"),
])
def test_malformed_site(tmp_path, old, new, expected):
    p = _copy_with(tmp_path, "sites", "france", old, new)
    with pytest.raises(CatalogError) as exc:
        parse_file(p)
    assert expected in _one_line(exc)


def test_physical_sanity(tmp_path):
    p = _copy_with(tmp_path, "accelerators", "h100-sxm", "idle_power_w = { value = 100,",
                   "idle_power_w = { value = 800,")
    with pytest.raises(CatalogError, match=r"idle_power_w.value: expected idle power below"):
        parse_file(p)
    p = _copy_with(tmp_path, "accelerators", "h100-sxm", "gemm_max_efficiency = { value = 0.8,",
                   "gemm_max_efficiency = { value = 1.5,")
    with pytest.raises(CatalogError, match=r"gemm_max_efficiency.value: expected a fraction"):
        parse_file(p)
    p = _copy_with(tmp_path, "models", "llama2-70b", "kv_heads = 8", "kv_heads = 7")
    with pytest.raises(CatalogError, match=r"kv_heads: expected a divisor of heads"):
        parse_file(p)
    p = _copy_with(tmp_path, "models", "llama2-70b", "layers = 80", "layers = -1")
    with pytest.raises(CatalogError, match=r"layers: input should be greater than or equal to 1"):
        parse_file(p)


def test_missing_key(tmp_path):
    p = _copy_with(tmp_path, "models", "llama3-8b", "vocab = 128256\n", "")
    with pytest.raises(CatalogError, match=r"llama3-8b.toml: vocab: missing required key"):
        parse_file(p)


def test_bad_file_in_user_dir_fails_load(tmp_path):
    _copy_with(tmp_path, "sites", "france", "pue = {", "pue_x = {")
    with pytest.raises(CatalogError, match=r"france.toml: 2 problems: pue: missing required key; pue_x: unknown key"):
        load_catalog([tmp_path])


def test_duplicate_id_in_one_dir(tmp_path):
    shutil.copy(DATA_DIR / "sites" / "france.toml", tmp_path / "a.toml")
    shutil.copy(DATA_DIR / "sites" / "france.toml", tmp_path / "b.toml")
    with pytest.raises(CatalogError, match=r"id: 'france' is already defined"):
        load_catalog([tmp_path])


def test_unknown_node_reference(tmp_path):
    _copy_with(tmp_path, "accelerators", "h100-sxm", 'node = "dgx-h100"', 'node = "dgx-h10"')
    with pytest.raises(CatalogError, match=r"node: unknown node 'dgx-h10'; did you mean: dgx-h100"):
        load_catalog([tmp_path])


# --- lookup, did-you-mean, overrides, single files ----------------------------------------
def test_did_you_mean(cat):
    with pytest.raises(CatalogError) as exc:
        cat.accelerator("h10")
    assert _one_line(exc) == "unknown accelerator 'h10'; did you mean: h100-sxm, h100-pcie?"
    with pytest.raises(CatalogError, match=r"unknown model 'lama3-70b'; did you mean: llama3-70b"):
        cat.model("lama3-70b")
    with pytest.raises(CatalogError, match=r"unknown site 'zzz'; known: france"):
        cat.site("zzz")


def test_override_with_extra_dir(tmp_path):
    base = load_catalog()
    _copy_with(tmp_path, "accelerators", "h100-sxm", "value = 6.88,", "value = 1.99,")
    _write(tmp_path, "extra-model.toml",
           (ROOT / "docs/examples/my-model.toml").read_text())
    cat = load_catalog([tmp_path])
    assert cat.accelerator("h100-sxm").cloud_price_usd_per_gpu_hour.value == 1.99
    assert base.accelerator("h100-sxm").cloud_price_usd_per_gpu_hour.value == 6.88
    assert "my-llama-13b-gqa" in cat.models and "my-llama-13b-gqa" not in base.models
    assert cat.version != base.version
    assert cat.origin("accelerator", "h100-sxm") == tmp_path / "h100-sxm.toml"


def test_override_with_env(tmp_path, monkeypatch):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    _copy_with(one, "sites", "norway", "value = 0.07,", "value = 0.05,")
    _copy_with(two, "sites", "norway", "value = 0.07,", "value = 0.04,")
    monkeypatch.setenv(ENV_VAR, str(one))
    assert load_catalog().site("norway").electricity_usd_per_kwh.value == 0.05
    # env first, then extra dirs: the explicit --catalog wins
    assert load_catalog([two]).site("norway").electricity_usd_per_kwh.value == 0.04
    import os

    monkeypatch.setenv(ENV_VAR, os.pathsep.join([str(two), str(one)]))
    assert load_catalog().site("norway").electricity_usd_per_kwh.value == 0.05


def test_missing_catalog_dir(tmp_path):
    with pytest.raises(CatalogError, match="catalog directory does not exist"):
        load_catalog([tmp_path / "nope"])


def test_cache(tmp_path):
    assert load_catalog() is load_catalog()
    assert load_catalog([tmp_path]) is not load_catalog()


def test_single_file_path(cat):
    gpu = cat.accelerator(str(ROOT / "docs/examples/my-gpu.toml"))
    assert gpu.id == "my-h100-capped" and gpu.max_power_w.value == 500
    assert gpu.node in cat.nodes
    model = cat.model(ROOT / "docs/examples/my-model.toml")
    pub = model.params_published.value
    assert abs(_counts(model)[0] - pub) <= 0.02 * pub + model.params_rounding / 2
    with pytest.raises(CatalogError, match=r"my-gpu.toml: kind: expected 'model', got 'accelerator'"):
        cat.model(str(ROOT / "docs/examples/my-gpu.toml"))
    with pytest.raises(CatalogError, match=r"nothere.toml: no such file"):
        cat.model("./nothere.toml")


def test_examples_load_as_catalog_dir():
    cat = load_catalog([ROOT / "docs/examples"])
    assert "my-h100-capped" in cat.accelerators and "my-llama-13b-gqa" in cat.models


def test_kinds_and_find(cat):
    assert set(KINDS) == {"accelerator", "node", "site", "site_class", "model", "reliability",
                          "stack"}
    assert cat.table("site_classes") is cat.site_classes
    assert cat.find("h100-sxm")[0][0] == "accelerator"
    assert cat.find("bloom-176b") and {k for k, _ in cat.find("bloom-176b")} == {
        "model", "reliability"}
    assert cat.table("models") is cat.models


# --- 2025-2026 accelerators (issue 13): datasheet numbers, FP4 field, end to end -----------
NEW_ACCELERATORS = ("gb300", "b300", "mi355x", "tpu-v6e", "trn2")

#: (accelerator, field, value as the cited table prints it, converted to SI, relative
#: tolerance, source). Rack or board figures are divided per GPU the way the file says.
DATASHEET = [
    # NVIDIA GB300 NVL72 product page, Specifications (sparse rack figures; dense = /2)
    ("gb300", "peak_bf16_flops_per_s", 360e15 / 72 / 2, 1e-9, "FP16/BF16 360 PF sparse"),
    ("gb300", "peak_fp8_flops_per_s", 720e15 / 72 / 2, 1e-9, "FP8/FP6 720 PF sparse"),
    ("gb300", "peak_tf32_flops_per_s", 180e15 / 72 / 2, 1e-9, "TF32 180 PF sparse"),
    ("gb300", "peak_fp4_flops_per_s", 1080e15 / 72, 1e-9, "FP4 1,080 PF dense"),
    ("gb300", "hbm_bandwidth_bytes_per_s", 576e12 / 72, 1e-9, "576 TB/s HBM3e"),
    ("gb300", "scale_up_bandwidth_bytes_per_s", 130e12 / 72 / 2, 0.005, "130 TB/s NVLink"),
    ("gb300", "scale_up_domain_gpus", 72, 0, "72 GPUs"),
    ("gb300", "hbm_bytes", 288e9, 0, "Blackwell Ultra blog: 288 GB HBM3e"),
    ("gb300", "max_power_w", 1400, 0, "1.4 kW per GPU (Verda table)"),
    # NVIDIA HGX B300 specifications table (8 GPUs; sparse; FP4 dense)
    ("b300", "peak_bf16_flops_per_s", 36e15 / 8 / 2, 1e-9, "FP16/BF16 36 PF sparse"),
    ("b300", "peak_fp8_flops_per_s", 72e15 / 8 / 2, 1e-9, "FP8/FP6 72 PF sparse"),
    ("b300", "peak_tf32_flops_per_s", 18e15 / 8 / 2, 1e-9, "TF32 18 PF sparse"),
    ("b300", "peak_fp4_flops_per_s", 108e15 / 8, 1e-9, "FP4 108 PF dense"),
    ("b300", "scale_up_bandwidth_bytes_per_s", 14.4e12 / 8 / 2, 1e-9, "14.4 TB/s NVLink total"),
    ("b300", "scale_up_domain_gpus", 8, 0, "8 GPUs"),
    ("b300", "hbm_bytes", 288e9, 0, "Blackwell Ultra blog: 288 GB HBM3e"),
    ("b300", "hbm_bandwidth_bytes_per_s", 8e12, 0, "Blackwell Ultra blog: 8 TB/s"),
    ("b300", "max_power_w", 1100, 0, "1.1 kW per GPU (Verda table)"),
    # AMD Instinct MI355X datasheet (dense matrix peaks)
    ("mi355x", "peak_bf16_flops_per_s", 2.5e15, 0.01, "FP16/BF16 2.5 PF"),
    ("mi355x", "peak_fp8_flops_per_s", 5.0e15, 0.01, "FP8 5.0 PF"),
    ("mi355x", "peak_fp8_flops_per_s", 256 * 8192 * 2.4e9, 1e-3, "ISSCC: 256 CU x 8,192 x 2.4 GHz"),
    ("mi355x", "peak_fp4_flops_per_s", 10.1e15, 0.01, "MXFP4 10.1 PF"),
    ("mi355x", "hbm_bytes", 288e9, 0, "288 GB HBM3E"),
    ("mi355x", "hbm_bandwidth_bytes_per_s", 8e12, 0, "8 TB/s"),
    ("mi355x", "scale_up_bandwidth_bytes_per_s", 7 * 153.6e9 / 2, 1e-9, "7 links x 153.6 GB/s"),
    ("mi355x", "max_power_w", 1400, 0, "1,400 W TBP"),
    # Google Cloud TPU v6e page, key specifications
    ("tpu-v6e", "peak_bf16_flops_per_s", 918e12, 0, "918 TFLOPs bf16"),
    ("tpu-v6e", "hbm_bytes", 32 * 2**30, 0, "32 GB"),  # GiB, as the runtime counts it
    ("tpu-v6e", "hbm_bandwidth_bytes_per_s", 1638e9, 0, "1,638 GBps"),
    ("tpu-v6e", "scale_up_bandwidth_bytes_per_s", 800e9 / 2, 0, "800 GBps bidirectional ICI"),
    ("tpu-v6e", "scale_up_domain_gpus", 256, 0, "256-chip pod"),
    # AWS Neuron documentation, Trainium2 chip components / Trn2 instance table
    ("trn2", "peak_bf16_flops_per_s", 667e12, 0, "667 BF16 TFLOPS"),
    ("trn2", "peak_fp8_flops_per_s", 1299e12, 0, "1,299 FP8 TFLOPS"),
    ("trn2", "peak_bf16_flops_per_s", 10.7e15 / 16, 0.01, "trn2.48xlarge 10.7 PF / 16"),
    ("trn2", "peak_fp8_flops_per_s", 20.8e15 / 16, 0.01, "trn2.48xlarge 20.8 PF / 16"),
    ("trn2", "hbm_bytes", 96 * 2**30, 0, "96 GiB"),
    ("trn2", "hbm_bandwidth_bytes_per_s", 2.9e12, 0, "2.9 TB/s"),
    ("trn2", "hbm_bandwidth_bytes_per_s", 46.4e12 / 16, 0.01, "trn2.48xlarge 46.4 TB/s / 16"),
    ("trn2", "scale_up_bandwidth_bytes_per_s", 1.28e12 / 2, 0, "NeuronLink-v3 1.28 TB/s"),
    ("trn2", "scale_up_domain_gpus", 16, 0, "16 chips per trn2.48xlarge"),
]

#: Scale-out bandwidth per accelerator [b/s, one direction]: the node's NICs / its GPUs.
DATASHEET_NIC_BITS_PER_GPU = {
    "gb300": 800e9,    # ConnectX-8 SuperNIC per GPU (GB300 NVL72 product page)
    "b300": 800e9,     # 8 x ConnectX-8 800 Gb/s per HGX B300
    "mi355x": 400e9,   # one 400 Gb/s NIC per GPU (estimate, as mi325x-8)
    "tpu-v6e": 100e9,  # 4 x 200 Gb/s per 8-chip host
    "trn2": 200e9,     # 3.2 Tb/s EFAv3 per 16-chip trn2.48xlarge
}


def test_new_accelerators_present(cat):
    assert set(NEW_ACCELERATORS) <= set(cat.accelerators)
    assert {"gb300-nvl72-tray", "hgx-b300", "mi355x-8", "tpu-v6e-host", "trn2-48xlarge"} <= set(
        cat.nodes)


@pytest.mark.parametrize("acc, field, cited, rel, label", DATASHEET,
                         ids=[f"{a}-{f}-{i}" for i, (a, f, *_rest) in enumerate(DATASHEET)])
def test_new_accelerator_datasheet_numbers(cat, acc, field, cited, rel, label):
    q = getattr(cat.accelerator(acc), field)
    assert q.value == pytest.approx(cited, rel=rel, abs=0), label
    assert not q.estimate, f"{acc}.{field} is a cited figure, not an estimate"


@pytest.mark.parametrize("acc", NEW_ACCELERATORS)
def test_new_accelerator_network_per_gpu(cat, acc):
    node = cat.node(cat.accelerator(acc).node)
    per_gpu_bits = node.scale_out_bytes_per_s_per_gpu * 8
    assert per_gpu_bits == pytest.approx(DATASHEET_NIC_BITS_PER_GPU[acc], rel=1e-9)


@pytest.mark.parametrize("acc", NEW_ACCELERATORS)
def test_new_accelerator_provenance(cat, acc):
    a = cat.accelerator(acc)
    for name, q in a.quantities().items():
        assert q.as_of >= date(2022, 1, 1), name
    # efficiencies without measurements say whose value they borrow, or the matmul
    # benchmark they are derived from (planner.analysis.transfer)
    for name in ("gemm_max_efficiency", "hbm_efficiency", "scale_up_bus_efficiency"):
        q = getattr(a, name)
        derived = (name == "gemm_max_efficiency" and a.mamf_bf16_flops_per_s is not None
                   and "derived by planner.analysis.transfer" in q.source)
        assert q.estimate and (derived or "as " in q.source
                               or "capplan estimate" in q.source), name
    # prices are estimates with their basis (recalled list prices say so)
    assert a.purchase_price_usd.estimate and a.cloud_price_usd_per_gpu_hour.estimate
    assert len(a.cloud_price_usd_per_gpu_hour.source) > 30


def test_fp4_peaks_and_precisions(cat):
    # FP4 (NVFP4 / MXFP4) where the datasheet has it; TPU v6e and Trainium2 list none
    assert cat.accelerator("tpu-v6e").peak_fp4_flops_per_s is None
    # FP8 at the BF16 rate on v6e (the TPU7x page's comparison table), as on v5p
    v6e = cat.accelerator("tpu-v6e")
    assert v6e.peak_fp8_flops_per_s.value == v6e.peak_bf16_flops_per_s.value == 918e12
    assert cat.accelerator("trn2").peak_fp4_flops_per_s is None
    for acc in ("gb300", "b300", "mi355x", "b200", "gb200", "mi350x"):
        a = cat.accelerator(acc)
        assert a.peak_fp4_flops_per_s.value >= 2 * a.peak_fp8_flops_per_s.value * 0.99
    # older entries need no FP4 field: the field is optional
    assert cat.accelerator("h100-sxm").peak_fp4_flops_per_s is None


def test_fp4_peak_field_is_validated(tmp_path):
    line = ('peak_fp4_flops_per_s = { value = %s, source = "test datasheet, table 1", '
            'as_of = 2025-01-01, estimate = false }\npeak_bf16_flops_per_s = ')
    ok = _copy_with(tmp_path, "accelerators", "h100-sxm", "peak_bf16_flops_per_s = ",
                    line % "3958e12", name="ok.toml")
    assert parse_file(ok).peak_fp4_flops_per_s.value == 3958e12
    low = _copy_with(tmp_path, "accelerators", "h100-sxm", "peak_bf16_flops_per_s = ",
                     line % "1000e12", name="low.toml")
    with pytest.raises(CatalogError, match=r"peak_fp4_flops_per_s.value: expected FP4 peak >= FP8"):
        parse_file(low)
    neg = _copy_with(tmp_path, "accelerators", "h100-sxm", "peak_bf16_flops_per_s = ",
                     line % "-1", name="neg.toml")
    with pytest.raises(CatalogError, match=r"peak_fp4_flops_per_s.value: expected a number from 1e\+09 to 1e\+18, got -1"):
        parse_file(neg)


@pytest.mark.parametrize("acc", NEW_ACCELERATORS)
def test_new_accelerator_evaluates_end_to_end(cat, acc):
    from planner import evaluate

    a = cat.accelerator(acc)
    gpus = int(cat.node(a.node).gpus_per_node)
    precisions = ["bf16"] + (["fp8"] if a.peak_fp8_flops_per_s is not None else [])
    for precision in precisions:
        r = evaluate(catalog=cat, model="llama3.2-1b", hardware=acc, gpus=gpus, tp=1,
                     global_batch=8 * gpus, micro_batch=1, tokens=1e10,
                     precision=precision, reliability="benchmark").iloc[0]
        assert bool(r["fits"]), (acc, precision)
        assert r["step_time_s"] > 0 and 0 < r["mfu"] < 1, (acc, precision)
        assert r["cost_usd"] > 0 and r["energy_kwh"] > 0 and r["co2e_kg"] > 0
        # the step never beats the accelerator's peak
        assert r["tflops_per_gpu"] * 1e12 < a.peak_bf16_flops_per_s.value * (
            2 if precision == "fp8" else 1)


def test_gh200_is_an_h100_on_a_grace_host(cat):
    """GH200: the H100 SXM5's GPU (peaks and the fitted Hopper efficiencies), 96 GB HBM3 at
    4 TB/s, four to an NVLink blade with a 200 Gb/s NIC each, and a Grace host that launches
    kernels 1.77x as slowly as an x86 one (Vellaisamy et al. 2025, arXiv:2504.11750)."""
    gh, h100 = cat.accelerator("gh200"), cat.accelerator("h100-sxm")
    for field in ("peak_bf16_flops_per_s", "peak_fp8_flops_per_s", "gemm_max_efficiency",
                  "gemm_max_efficiency_fp8", "exp_ops_per_s", "grouped_gemm_token_half_dim"):
        assert getattr(gh, field).value == getattr(h100, field).value, field
    assert gh.hbm_bytes.value == 96e9 and gh.hbm_bandwidth_bytes_per_s.value == 4.0e12
    assert gh.host_launch_factor.value == pytest.approx(4 / (1.9 * 2.7) ** 0.5, abs=0.005)
    node = cat.node(gh.node)
    assert node.gpus_per_node == 4 and gh.scale_up_domain_gpus.value == 4
    assert node.nic_bandwidth_bits_per_s.value == 200e9


def test_v100_trains_in_fp16_only(cat):
    """Volta's tensor cores take FP16 only: V100 runs --precision fp16 at its 125 TFLOP/s
    tensor peak (Tesla V100 datasheet) and refuses bf16 and every lower precision with one
    line naming what it runs; parts since Ampere take both 16-bit formats."""
    from planner import evaluate
    from planner.engine.inputs.scenario import precision_refusal

    v100 = cat.accelerator("v100-32gb")
    assert cat.get("accelerator", "V100").id == "v100-32gb"
    assert v100.peak_bf16_flops_per_s.value == 125e12 and v100.float16_formats == ["fp16"]
    assert v100.peak_tf32_flops_per_s is None and v100.peak_fp8_flops_per_s is None
    assert cat.node(v100.node).gpus_per_node == 16 == v100.scale_up_domain_gpus.value
    assert precision_refusal(v100, "fp16") == ""
    why = precision_refusal(v100, "bf16")
    assert "no bf16 matrix units" in why and "use --precision fp16" in why
    assert "no fp8 peak" in precision_refusal(v100, "fp8")
    assert "no tf32 peak" in precision_refusal(v100, "tf32")
    for other in ("a100-40gb", "h100-sxm", "gb200"):
        a = cat.accelerator(other)
        assert a.float16_formats == ["bf16", "fp16"]
        assert precision_refusal(a, "bf16") == precision_refusal(a, "fp16") == ""
    r = evaluate(catalog=cat, model="megatron-1.7b", hardware="v100-32gb", gpus=16, tp=1,
                 global_batch=128, micro_batch=2, tokens=1e9, precision="fp16",
                 reliability="benchmark").iloc[0]
    assert bool(r["fits"]) and 0 < r["tflops_per_gpu"] * 1e12 < 125e12
    with pytest.raises(CapplanError, match="no bf16 matrix units"):
        evaluate(catalog=cat, model="megatron-1.7b", hardware="v100-32gb", gpus=16,
                 precision="bf16")


@pytest.mark.parametrize("formats", ["[]", '["fp8"]', '"fp16"'])
def test_float16_formats_are_checked(tmp_path, formats):
    p = _copy_with(tmp_path, "accelerators", "v100-32gb", 'float16_formats = ["fp16"]',
                   f"float16_formats = {formats}")
    with pytest.raises(CatalogError) as exc:
        parse_file(p)
    assert "float16_formats" in _one_line(exc)


def test_no_fused_attention_runs_on_v100(cat, tmp_path):
    """Volta runs no fused attention kernel (FlashAttention-2 README: Ampere or later):
    its cap of 0 on the stack's fused head size sends attention down the unfused path,
    which the same part without the cap (a user file) does not take."""
    from planner import evaluate
    from planner.engine.run.run_inputs import RunChoices, base_inputs

    x = base_inputs(cat, RunChoices(model="megatron-1.7b", hardware="v100-32gb",
                                    precision="fp16"))
    assert x["fused_head_dim_max"] == 0
    assert base_inputs(cat, RunChoices(model="megatron-1.7b",
                                       hardware="a100-80gb"))["fused_head_dim_max"] == 256
    text = (DATA_DIR / "accelerators" / "v100-32gb.toml").read_text()
    assert "fused_attention_head_dim_max = " in text
    uncapped = _write(tmp_path, "v100-fa.toml", text.replace(
        'id = "v100-32gb"', 'id = "v100-fa"').replace("fused_attention_head_dim_max = ", "# ")
        .replace('aliases = ["v100", ', 'aliases = ['))
    runs = {}
    for name, hw in (("capped", "v100-32gb"), ("uncapped", str(uncapped))):
        runs[name] = evaluate(catalog=cat, model="megatron-1.7b", hardware=hw, gpus=16,
                              tp=1, pp=1, micro_batch=2, recompute="selective",
                              global_batch=128, tokens=1e9, precision="fp16",
                              reliability="benchmark").iloc[0]
    assert runs["capped"]["step_time_s"] > 1.05 * runs["uncapped"]["step_time_s"]
    assert runs["capped"]["memory_per_gpu_bytes"] > runs["uncapped"]["memory_per_gpu_bytes"]


def test_commands_without_a_precision_train_v100_in_fp16(cat):
    """The checkpoint study names no precision: each part trains in its own 16-bit format
    (bf16, V100 fp16), so V100 is studied rather than refused."""
    from planner.analysis.checkpoint_study import Study, run_study
    from planner.engine.inputs.scenario import native_float16

    assert native_float16(cat.accelerator("v100-32gb")) == "fp16"
    assert native_float16(cat.accelerator("h100-sxm")) == "bf16"
    rows = run_study(Study(model="megatron-1.7b", hardware="v100-32gb", gpus=(64,),
                           schemes=("sync", "async")), cat)
    assert len(rows) == 2 and all(r["wall_days"] > 0 for r in rows)


def test_tpu_memory_is_counted_in_gib():
    """Google lists TPU HBM as 'GB'; the runtime's limits are binary (vllm-project/
    tpu-inference get_device_hbm_limit: 16, 32, 95 and 192 GiB a chip), as the TPU v4,
    v5p and TPU7x pages state: every TPU's capacity is a whole number of GiB."""
    cat = load_catalog()
    expected_gib = {"tpu-v4": 32, "tpu-v5e": 16, "tpu-v5p": 95, "tpu-v6e": 32, "tpu-v7": 192}
    for part, gib in expected_gib.items():
        assert cat.accelerator(part).hbm_bytes.value == gib * 2**30, part
