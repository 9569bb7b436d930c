"""``capplan formula list|show|eval`` through ``planner.cli.main.main`` (stdout data, stderr one line)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

import formulas
from planner.cli.main import main

REGISTRY = formulas.registry()
FORMATS = ["table", "json", "csv", "markdown"]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err, *needles):
    assert code == 2
    assert out == ""
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


# -- list ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_list_every_format(capsys, fmt):
    code, out, err = run(capsys, "formula", "list", "--format", fmt)
    assert code == 0, err
    assert err == ""
    if fmt == "json":
        data = json.loads(out)
        assert [d["name"] for d in data] == list(REGISTRY)
        young = next(d for d in data if d["name"] == "young_interval")
        assert young["module"] == "checkpoint" and young["result_unit"] == "s"
        assert "10.1145/361147.361115" in young["reference"]
        assert [a["name"] for a in young["arguments"]] == ["checkpoint_cost_s", "mtbf_s"]
        assert young["arguments"][0]["unit"] == "s"
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["name"] for r in rows] == list(REGISTRY)
        assert set(rows[0]) == {"name", "module", "result_unit", "summary", "reference"}
        by_name = {r["name"]: r for r in rows}
        assert by_name["checkpoint_size"]["result_unit"] == "B"
        assert by_name["checkpoint_size"]["summary"] == REGISTRY["checkpoint_size"].summary
    elif fmt == "markdown":
        assert out.startswith(f"### {len(REGISTRY)} formulas") and "|---|" in out
    else:
        assert "young_interval" in out and "result_unit" in out


def test_list_module_filter(capsys):
    code, out, _ = run(capsys, "formula", "list", "--module", "checkpoint", "-f", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    expected = sorted(n for n, f in REGISTRY.items() if f.module == "checkpoint")
    assert [r["name"] for r in rows] == expected
    assert {r["module"] for r in rows} == {"checkpoint"}


def test_list_unknown_module(capsys):
    one_line_error(*run(capsys, "formula", "list", "--module", "chekpoint"),
                   "unknown module 'chekpoint'", "did you mean: checkpoint")


def test_list_unknown_format(capsys):
    one_line_error(*run(capsys, "formula", "list", "-f", "xml"), "unknown format 'xml'")


# -- show ---------------------------------------------------------------------------
@pytest.mark.parametrize("form, needle", [
    ("text", "young_interval = sqrt(2)*sqrt(checkpoint_cost_s*mtbf_s)"),
    ("latex", r"\tau_{Young} = "),
    ("python", "return sqrt(2 * checkpoint_cost_s * mtbf_s)"),
    ("excel", "=SQRT(2*B2*B3)"),
])
def test_show_forms(capsys, form, needle):
    code, out, err = run(capsys, "formula", "show", "young_interval", "--as", form)
    assert code == 0, err
    assert needle in out
    assert "checkpoint_cost_s  [s]" in out and "mtbf_s" in out
    assert "Result: young_interval [s]" in out
    assert "Reference: Young 1974" in out and "doi:10.1145/361147.361115" in out
    if form == "excel":
        assert "cell B2" in out and "cell B3" in out
    if form == "python":
        assert '"""' not in out and "@formula" not in out


def test_show_default_is_text_and_shows_defaults(capsys):
    code, out, _ = run(capsys, "formula", "show", "checkpoint_size")
    assert code == 0
    assert "checkpoint_size = bytes_per_param*params" in out
    assert "default 14" in out and "[B]" in out


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_show_every_formula_every_form(capsys, name):
    for form in ["text", "latex", "python", "excel"]:
        code, out, err = run(capsys, "formula", "show", name, "--as", form)
        assert code == 0, err
        assert f"Result: {REGISTRY[name].result}" in out
        if form == "excel":
            assert "\n  =" in out and "no Excel form" not in out


def test_show_json_has_every_form(capsys):
    code, out, _ = run(capsys, "formula", "show", "daly_interval", "-f", "json")
    assert code == 0
    data = json.loads(out)
    assert data["name"] == "daly_interval" and data["result_unit"] == "s"
    assert set(data["expression"]) == {"text", "latex", "python", "excel"}
    assert data["expression"]["excel"].startswith("=IF(B2<2*B3, ")
    assert [a["excel_cell"] for a in data["arguments"]] == ["B2", "B3"]
    assert all(a["unit"] == "s" for a in data["arguments"])


def test_show_csv_and_markdown(capsys):
    _, out, _ = run(capsys, "formula", "show", "checkpoint_size", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["name"] for r in rows] == ["params", "bytes_per_param"]
    assert rows[1]["unit"] == "B" and float(rows[1]["default"]) == 14.0
    _, out, _ = run(capsys, "formula", "show", "checkpoint_size", "-f", "markdown")
    assert out.startswith("### `checkpoint_size`") and "$$" in out


def test_show_unknown_name(capsys):
    one_line_error(*run(capsys, "formula", "show", "yung_interval"),
                   "unknown formula 'yung_interval'", "did you mean:", "young_interval")


def test_show_unknown_form(capsys):
    one_line_error(*run(capsys, "formula", "show", "young_interval", "--as", "fortran"),
                   "unknown form 'fortran'")


# -- eval ---------------------------------------------------------------------------
def test_eval_json(capsys):
    code, out, err = run(capsys, "formula", "eval", "young_interval", "checkpoint_cost_s=60",
                         "mtbf_s=3600", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"formula", "inputs", "result", "unit"}
    assert data["formula"] == "young_interval" and data["unit"] == "s"
    assert data["inputs"] == {"checkpoint_cost_s": 60.0, "mtbf_s": 3600.0}
    assert data["result"] == pytest.approx((2 * 60 * 3600) ** 0.5, rel=1e-12)


def test_eval_uses_defaults(capsys):
    code, out, _ = run(capsys, "formula", "eval", "zero_state_bytes", "params=1e9", "dp=8",
                       "zero_stage=1", "-f", "json")
    assert code == 0
    data = json.loads(out)
    assert data["inputs"]["optimizer_bytes_per_param"] == 12.0
    assert data["result"] == pytest.approx(1e9 * (2 + 2 + 12 / 8))


def test_eval_csv_and_table(capsys):
    code, out, _ = run(capsys, "formula", "eval", "checkpoint_size", "params=405e9", "-f", "csv")
    assert code == 0
    rows = {r["quantity"]: r for r in csv.DictReader(io.StringIO(out))}
    assert float(rows["checkpoint_size"]["value"]) == pytest.approx(405e9 * 14)
    assert rows["checkpoint_size"]["unit"] == "B" and rows["checkpoint_size"]["source"] == "result"
    assert rows["bytes_per_param"]["source"] == "default"
    assert rows["params"]["source"] == "given"
    code, out, _ = run(capsys, "formula", "eval", "young_interval", "checkpoint_cost_s=60",
                       "mtbf_s=3600")
    assert code == 0 and "657.267069" in out


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_eval_every_formula_matches_the_function(capsys, name):
    f = REGISTRY[name]
    point = {a.name: {">0": 3.0, ">=0": 2.0, ">=1": 4.0, "real": 1.5}.get(a.domain, 0.5)
             for a in f.arguments}
    code, out, err = run(capsys, "formula", "eval", name,
                         *(f"{k}={v!r}" for k, v in point.items()), "-f", "json")
    assert code == 0, err
    data = json.loads(out)
    expected = float(f(**point))
    assert data["result"] == pytest.approx(expected, rel=1e-12)
    assert data["unit"] == f.result_unit


def test_eval_missing_argument(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", "checkpoint_cost_s=60"),
                   "missing mtbf_s [s]", "required: checkpoint_cost_s [s], mtbf_s [s]")


def test_eval_missing_lists_only_required(capsys):
    code, out, err = run(capsys, "formula", "eval", "checkpoint_size")
    one_line_error(code, out, err, "missing params [1]", "required: params [1]")
    assert "bytes_per_param" not in err


def test_eval_unknown_argument(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", "checkpoint_cost=1",
                        "mtbf_s=2"),
                   "unknown argument of young_interval 'checkpoint_cost'",
                   "did you mean: checkpoint_cost_s")


def test_eval_out_of_domain(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", "checkpoint_cost_s=-1",
                        "mtbf_s=3600"),
                   "checkpoint_cost_s [s] must be > 0, got -1")


@pytest.mark.parametrize("bad, needle", [
    ("checkpoint_cost_s=__import__('os').system('false')", "is not a number"),
    ("checkpoint_cost_s=2*3", "is not a number"),
    ("checkpoint_cost_s=1h", "is not a number"),
    ("checkpoint_cost_s", "expected ARG=VALUE"),
    ("=3", "expected ARG=VALUE"),
])
def test_eval_never_evaluates_user_text(capsys, bad, needle):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", bad, "mtbf_s=3600"), needle)


def test_eval_duplicate_argument(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", "mtbf_s=1", "mtbf_s=2",
                        "checkpoint_cost_s=1"), "mtbf_s given twice")


def test_eval_non_finite_rejected_by_domain(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_interval", "checkpoint_cost_s=nan",
                        "mtbf_s=3600"), "checkpoint_cost_s [s] must be > 0")


def test_eval_unknown_formula(capsys):
    one_line_error(*run(capsys, "formula", "eval", "young_intervall", "x=1"),
                   "did you mean: young_interval")


def test_output_file(capsys, tmp_path):
    target = tmp_path / "f.json"
    code, out, err = run(capsys, "formula", "eval", "energy", "power_w=700", "time_s=3600",
                         "-f", "json", "-o", str(target))
    assert code == 0 and out == "" and "wrote" in err
    assert json.loads(target.read_text())["result"] == pytest.approx(700 * 3600)


def test_module_import_stays_light():
    code = ("import sys, planner.cli.formula_command; "
            "print(any(m in sys.modules for m in ('sympy', 'numpy', 'formulas')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
