"""``capplan catalog list|show`` through ``planner.cli.main.main`` (stdout data, stderr one line)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from hardware_catalog import clear_cache
from hardware_catalog.loader import DATA_DIR, ENV_VAR
from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ["table", "json", "csv", "markdown"]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    clear_cache()
    yield
    clear_cache()


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", [None, "accelerators", "models", "sites", "nodes", "reliability"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_list_every_kind_every_format(capsys, kind, fmt):
    args = ["catalog", "list"] + ([kind] if kind else []) + ["-f", fmt]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert err == ""
    if fmt == "json":
        data = json.loads(out)
        assert data["catalog_version"].startswith("1+")
        assert data["entries"]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows and "id" in rows[0]
    elif fmt == "markdown":
        assert out.startswith("### ") and "|---|" in out
    else:
        assert "id" in out


def test_list_accelerators_json_si(capsys):
    code, out, _ = run(capsys, "catalog", "list", "accelerators", "--format", "json")
    entries = {e["id"]: e for e in json.loads(out)["entries"]}
    h100 = entries["h100-sxm"]
    assert h100["kind"] == "accelerator"
    assert h100["peak_bf16_flops_per_s"]["value"] == pytest.approx(989.4e12)
    assert h100["peak_bf16_flops_per_s"]["as_of"] == "2022-03-22"
    assert "whitepaper" in h100["peak_bf16_flops_per_s"]["source"]
    assert h100["hbm_bandwidth_bytes_per_s"]["value"] == pytest.approx(3.35e12)
    assert entries["a100-40gb"].get("peak_fp8_flops_per_s") is None
    assert len(entries) >= 15


def test_list_csv_is_si_and_table_is_display_units(capsys):
    _, out, _ = run(capsys, "catalog", "list", "accelerators", "-f", "csv")
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(out))}
    assert float(rows["h100-sxm"]["peak_bf16_flops_per_s"]) == pytest.approx(989.4e12)
    _, out, _ = run(capsys, "catalog", "list", "accelerators")
    assert "TFLOP/s" in out and "989" in out
    _, out, _ = run(capsys, "catalog", "list", "models", "-f", "csv")
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(out))}
    assert float(rows["mixtral-8x7b"]["active_param_count"]) == pytest.approx(12.9e9, rel=0.01)


@pytest.mark.parametrize("name", ["h100-sxm", "dgx-h100", "germany", "deepseek-v3", "default"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_show_every_kind_every_format(capsys, name, fmt):
    code, out, err = run(capsys, "catalog", "show", name, "-f", fmt)
    assert code == 0, err
    if fmt == "json":
        data = json.loads(out)
        assert data["id"] == name and data["file"].endswith(f"{name}.toml")
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert {"field", "value", "unit", "estimate", "as_of", "source"} <= set(rows[0])
    else:
        assert name in out


def test_show_json_values(capsys):
    _, out, _ = run(capsys, "catalog", "show", "deepseek-v3", "-f", "json")
    data = json.loads(out)
    assert data["kind"] == "model"
    # MLA counted exactly; the published 671B is the main model, without the MTP module
    derived = data["derived"]
    assert derived["param_count"] - derived["mtp_param_count"] == pytest.approx(671e9, rel=1e-4)
    assert derived["mtp_param_count"] == pytest.approx(11.61e9, rel=1e-3)
    assert derived["active_param_count"] == pytest.approx(37e9, rel=0.05)
    assert data["params_published"]["value"] == 671e9
    _, out, _ = run(capsys, "catalog", "show", "germany", "-f", "json")
    site = json.loads(out)
    assert site["grid_intensity_g_per_kwh"] == {
        "value": 381.0, "source": site["grid_intensity_g_per_kwh"]["source"],
        "as_of": "2023-12-31", "estimate": False}
    _, out, _ = run(capsys, "catalog", "show", "default", "-f", "json")
    assert json.loads(out)["gpu_mtbf_s"]["value"] / 3600 == pytest.approx(50677, rel=1e-4)


def test_show_csv_units(capsys):
    _, out, _ = run(capsys, "catalog", "show", "h100-sxm", "-f", "csv")
    rows = {r["field"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["hbm_bytes"]["unit"] == "B" and float(rows["hbm_bytes"]["value"]) == 80e9
    assert rows["max_power_w"]["unit"] == "W"
    assert rows["cloud_price_usd_per_gpu_hour"]["unit"] == "USD/GPU-h"
    assert rows["purchase_price_usd"]["estimate"] == "True"


def test_show_table_keeps_brackets(capsys):
    _, out, _ = run(capsys, "catalog", "show", "h100-sxm", "-f", "table")
    assert "TFLOP/s" in out and "whitepaper" in out


def test_show_ambiguous_needs_kind(capsys):
    code, out, err = run(capsys, "catalog", "show", "bloom-176b")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--kind" in err
    code, out, err = run(capsys, "catalog", "show", "bloom-176b", "--kind", "reliability",
                         "-f", "json")
    assert code == 0 and json.loads(out)["kind"] == "reliability"


def test_unknown_name_one_line_exit_2(capsys):
    code, out, err = run(capsys, "catalog", "show", "h10")
    assert code == 2 and out == ""
    assert err == "capplan: error: unknown name 'h10'; did you mean: h100-sxm, h100-pcie?\n"
    code, out, err = run(capsys, "catalog", "show", "h10", "--kind", "accelerator")
    assert code == 2
    assert err == ("capplan: error: unknown accelerator 'h10'; did you mean: h100-sxm, "
                   "h100-pcie?\n")
    code, out, err = run(capsys, "catalog", "list", "gpus")
    assert code == 2 and err.count("\n") == 1 and "unknown kind 'gpus'" in err
    code, out, err = run(capsys, "catalog", "list", "-f", "yaml")
    assert code == 2 and "unknown format 'yaml'" in err


def test_show_path_and_catalog_option(capsys, tmp_path, monkeypatch):
    gpu = ROOT / "docs/examples/my-gpu.toml"
    code, out, err = run(capsys, "catalog", "show", str(gpu), "-f", "json")
    assert code == 0, err
    assert json.loads(out)["max_power_w"]["value"] == 500
    code, out, err = run(capsys, "catalog", "show", "my-llama-13b-gqa", "--catalog",
                         str(ROOT / "docs/examples"), "-f", "json")
    assert code == 0, err
    assert json.loads(out)["kv_heads"] == 8
    monkeypatch.setenv(ENV_VAR, str(ROOT / "docs/examples"))
    clear_cache()
    code, out, _ = run(capsys, "catalog", "list", "accelerators", "-f", "csv")
    assert "my-h100-capped" in out


def test_malformed_user_file_one_line(capsys, tmp_path):
    text = (DATA_DIR / "sites" / "france.toml").read_text().replace("pue = {", "pue_x = {")
    (tmp_path / "france.toml").write_text(text)
    code, out, err = run(capsys, "catalog", "list", "sites", "--catalog", str(tmp_path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "france.toml: 2 problems: pue: missing required key" in err
    assert "Traceback" not in err


def test_output_file(capsys, tmp_path):
    target = tmp_path / "sites.json"
    code, _, err = run(capsys, "catalog", "list", "sites", "-f", "json", "-o", str(target))
    assert code == 0 and "wrote" in err
    assert len(json.loads(target.read_text())["entries"]) >= 8


def test_reliability_list_shows_the_failure_domains_and_the_job_mttf(capsys):
    """The list shows the rates the kernel charges and the job MTTF they give, not only the
    all-cause per-GPU rate; the default profile keeps Llama 3's 16,384-GPU interruption
    rate (419 in 54 days: 3.09 h, reliability.csv row l3-int) and gives an 8-GPU job at
    least 10 days."""
    code, out, _ = run(capsys, "catalog", "list", "reliability", "-f", "csv")
    assert code == 0
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(out))}
    default = rows["default"]
    assert default["failures"] == "domain_rates"
    assert float(default["domain_node_mtbf_s"]) > 0 and float(default["domain_software_mtbf_s"]) > 0
    assert float(default["job_mttf_s_16384_gpus"]) / 3600 == pytest.approx(
        54 * 24 / 419, rel=0.01)
    assert float(default["job_mttf_s_8_gpus"]) >= 10 * 86400
    # a profile without failure domains: one all-cause rate per GPU, MTTF inversely
    # proportional to the GPUs
    bloom = rows["bloom-176b"]
    assert bloom["failures"] == "all_cause_per_gpu" and bloom["domain_node_mtbf_s"] == ""
    assert float(bloom["job_mttf_s_8_gpus"]) / float(bloom["job_mttf_s_1024_gpus"]) == \
        pytest.approx(128, rel=0.01)
    code, out, _ = run(capsys, "catalog", "list", "reliability")
    assert "job MTTF 16,384 GPUs (h)" in out and "per GPU, node, job" in out


def test_unknown_site_class_lists_site_among_the_choices(capsys):
    code, _, err = run(capsys, "evaluate", "--site-class", "sit")
    assert code == 2 and "did you mean: site?" in err
    code, _, err = run(capsys, "evaluate", "--site-class", "nowhere")
    assert code == 2 and "hyperscale" in err and ", site" in err and len(err.splitlines()) == 1


def test_list_precisions_names_every_recipe_and_its_split(capsys):
    """The --precision recipes listed beside the catalog's kinds: each with the precision
    its low-precision GEMMs run at, the share of the GEMM FLOPs there and where it runs."""
    from hardware_catalog.recipes import load_recipes

    recipes = load_recipes()
    code, out, err = run(capsys, "catalog", "list", "precisions", "-f", "json")
    assert code == 0 and err == ""
    rows = {r["recipe"]: r for r in json.loads(out)["precisions"]}
    assert list(rows) == list(recipes)
    assert rows["nvfp4"]["gemm_flop_share"] == 1.0
    assert rows["nvfp4-bf16-tail"]["gemm_flop_share"] == pytest.approx(0.85)
    assert rows["fp8-rowwise-gw-hp"]["gemm_flop_share"] == pytest.approx(2 / 3)
    assert "NVIDIA only" in rows["nvfp4"]["runs_on"]
    assert rows["nvfp4-bf16-tail"]["output_layer"] == "BF16"
    assert rows["nvfp4"]["output_layer"] == "the stack's"
    assert "int8_training = 1" in rows["int8"]["runs_on"]
    assert "arXiv:2509.25149" in rows["nvfp4-bf16-tail"]["source"]
    code, out, _ = run(capsys, "catalog", "list", "precisions", "-f", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(table) == len(recipes) and table[0]["recipe"] == "bf16"
    code, out, _ = run(capsys, "catalog", "list", "precisions")
    assert code == 0 and f"{len(recipes)} precision recipes (--precision)" in out
    assert "arXiv" not in out  # the table the key numbers, the sources in CSV and JSON
    code, _, err = run(capsys, "catalog", "list", "precison")
    assert code == 2 and "did you mean: precisions?" in err and len(err.strip().splitlines()) == 1
