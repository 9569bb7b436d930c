"""`capplan export xlsx`: the workbook recomputed by LibreOffice equals capplan (rel 1e-9)."""

import os
import shutil
import subprocess

import pytest

from planner.cli.main import main

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _recalculate(source, tmp_path):
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        message = "LibreOffice is not installed (apt-get install libreoffice-calc-nogui)"
        if IN_CI:
            pytest.fail(f"{message} (required under CI=true)")
        pytest.skip(message)
    out = tmp_path / "recalculated"
    subprocess.run([soffice, f"-env:UserInstallation=file://{tmp_path / 'profile'}",
                    "--headless", "--calc", "--convert-to", "xlsx", "--outdir", str(out),
                    str(source)], check=True, capture_output=True, timeout=300)
    return out / source.name


@pytest.mark.slow  # LibreOffice recomputes each workbook (~10-20 s)
@pytest.mark.parametrize("args", [
    ["--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "1024", "--tp", "8",
     "--pp", "4", "--checkpoint", "sync"],
    ["--model", "mixtral-8x7b", "--hardware", "mi300x", "--gpus", "256", "--tp", "2",
     "--pp", "2", "--ep", "4", "--recompute", "full", "--zero", "2", "--cost-basis", "tco"],
    ["--model", "llama3-8b", "--hardware", "h200", "--gpus", "256", "--tp", "2",
     "--pp", "2", "--checkpoint", "gockpt"],
])
def test_workbook_recomputes_every_output(capsys, tmp_path, args):
    import openpyxl

    from planner.engine.run.model import INPUTS, OUTPUTS

    path = tmp_path / "plan.xlsx"
    assert main(["export", "xlsx", *args, "-o", str(path)]) == 0, capsys.readouterr().err
    formulas = openpyxl.load_workbook(path)
    inputs = formulas["Inputs"]
    assert [inputs.cell(row=r, column=1).value for r in range(3, 3 + len(INPUTS))] == \
        list(INPUTS)
    assert all(inputs.cell(row=r, column=5).value for r in range(3, 3 + len(INPUTS)))
    model = formulas["Model"]
    live = {row[0].value: row[1].value for row in model.iter_rows(min_row=2) if row[0].value}
    for name in OUTPUTS:
        assert str(live[name]).startswith("="), name  # a live formula, not a number
    values = openpyxl.load_workbook(_recalculate(path, tmp_path), data_only=True)["Model"]
    checked = 0
    for name, excel, _unit, capplan, _diff in values.iter_rows(min_row=2, values_only=True):
        if name in OUTPUTS:
            assert isinstance(excel, int | float), (name, excel)
            assert excel == pytest.approx(capplan, rel=1e-9, abs=1e-12), name
            checked += 1
    assert checked == len(OUTPUTS)
    sweep = list(formulas["Sweep"].iter_rows(values_only=True))
    assert sweep[0][0] == "gpus" and len(sweep) > 2


@pytest.mark.slow
def test_editing_an_input_recomputes(tmp_path, capsys):
    """Double the price per GPU-hour in the Inputs sheet: Excel's cost doubles."""
    import openpyxl

    path = tmp_path / "plan.xlsx"
    assert main(["export", "xlsx", "-o", str(path)]) == 0
    wb = openpyxl.load_workbook(path)
    ws = wb["Inputs"]
    for row in ws.iter_rows(min_row=3):
        if row[0].value == "price_usd_per_gpu_hour":
            row[1].value = row[1].value * 2
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    values = openpyxl.load_workbook(_recalculate(edited, tmp_path), data_only=True)["Model"]
    rows = {r[0]: r for r in values.iter_rows(min_row=2, values_only=True) if r[0]}
    assert rows["cost_cloud_usd"][1] == pytest.approx(2 * rows["cost_cloud_usd"][3], rel=1e-9)


def test_export_refuses_to_overwrite(tmp_path, capsys):
    path = tmp_path / "plan.xlsx"
    path.write_text("mine")
    code = main(["export", "xlsx", "-o", str(path)])
    assert code == 2 and "--force" in capsys.readouterr().err and path.read_text() == "mine"


def test_export_runs_no_sympy_cse_and_writes_every_formula(tmp_path, capsys, monkeypatch):
    """The export copies the generated formulas: sympy's CSE (minutes) is never called."""
    import openpyxl
    import sympy

    from planner.engine.run.model import OUTPUTS
    from planner.report.xlsx import model_formulas

    def forbidden(*args, **kwargs):
        raise AssertionError("export xlsx ran sympy.cse")

    monkeypatch.setattr(sympy, "cse", forbidden)
    path = tmp_path / "plan.xlsx"
    assert main(["export", "xlsx", "-o", str(path)]) == 0, capsys.readouterr().err
    model = openpyxl.load_workbook(path)["Model"]
    live = {row[0].value: row[1].value for row in model.iter_rows(min_row=2) if row[0].value}
    intermediates, outputs = model_formulas()
    assert [name for name, _ in outputs] == list(OUTPUTS)
    assert all(live[name].startswith("=") for name in OUTPUTS)
    assert all(name in live for name, _ in intermediates)


def test_export_shows_its_stages_on_a_terminal(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(["export", "xlsx", "-o", str(tmp_path / "plan.xlsx")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("capplan: export:")] == [
        "capplan: export: sweeping the layout over GPU counts ...",
        "capplan: export: writing the workbook's live formulas ..."]
    assert any(line.startswith("capplan: wrote ") for line in err)


def test_export_is_quiet_when_redirected(tmp_path, capsys):
    # the file written, and the layout the default run's search chose (no layout given)
    assert main(["export", "xlsx", "-o", str(tmp_path / "plan.xlsx")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("capplan: wrote ")
    assert err[1].startswith("capplan: layout: ")
