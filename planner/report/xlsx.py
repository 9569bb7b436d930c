"""Excel workbook with live formulas generated from the same sympy expressions.

Sheets:

* **Inputs** -- every run-model input as a named cell (value, unit, meaning, source);
* **Model** -- every common subexpression and every output as a live Excel formula
  printed once from the symbolic run model by :mod:`planner.codegen.workbook` into
  ``_workbook_generated.py`` (edit an input and Excel recomputes everything); the value capplan computed sits beside each output;
* **Sweep** -- the same layout evaluated by capplan over a range of GPU counts
  (values; DP grows with the GPU count).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from planner.engine.run.model import INPUTS, OUTPUTS
from planner.errors import CapplanError
from planner.report.output import atomic_target, check_target

_CELL_LIKE = re.compile(r"^[A-Za-z]{1,3}\d+$|^[RrCc]$|^[Rr]\d*[Cc]\d*$")


def excel_name(name: str) -> str:
    """A defined name for ``name`` that Excel cannot mistake for a cell reference."""
    return f"in_{name}" if _CELL_LIKE.match(name) else name


#: The Model sheet's formulas, printed from the symbolic run model by
#: ``python -m planner.codegen`` (:mod:`planner.codegen.workbook`); no sympy at export time.
GENERATED = Path(__file__).with_name("_workbook_generated.py")


def model_formulas() -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(intermediates, outputs): (name, Excel formula) pairs of the Model sheet, from the
    generated file (common subexpressions first, each a defined name ``t_N``)."""
    from planner.report import _workbook_generated as generated  # a stale file is reported

    if generated.INPUTS != tuple(INPUTS) or generated.OUTPUTS != tuple(OUTPUTS):
        raise RuntimeError(f"{GENERATED} is stale: run python -m planner.codegen")
    return generated.INTERMEDIATES, generated.OUTPUT_FORMULAS


def append_row(sheet, values, live_formulas=()) -> None:
    """Append ``values`` as the sheet's next row, every text cell stored as text (data type
    ``s``): openpyxl would store a string starting with ``=`` as a live formula, and a
    user's phase name, source or title is data.  ``live_formulas``: the 0-based positions
    holding capplan's own formulas, kept live."""
    sheet.append(values)
    row = sheet.max_row
    for i, value in enumerate(values):
        if isinstance(value, str) and i not in live_formulas:
            sheet.cell(row=row, column=i + 1).data_type = "s"


def check_workbook_target(path, force: bool = False) -> Path:
    """The workbook's path if it can be written (``.xlsx``, directory exists, --force)."""
    if Path(path).suffix.lower() != ".xlsx":
        raise CapplanError(f"the workbook must end in .xlsx, got '{Path(path).name}'")
    return check_target(path, force)


def write_workbook(path: str, inputs: dict, sources: dict[str, str], values: dict,
                   sweep_rows: list[dict], title: str, force: bool = False,
                   phase_rows: list[dict] | None = None) -> Path:
    """Write the workbook; ``values`` are capplan's own outputs (shown beside Excel's).

    ``phase_rows`` (a run of several phases): a "Phases" sheet, one row of values per
    phase and a total row of live SUM formulas (MAX for the peak power)."""
    try:
        import openpyxl
        from openpyxl.styles import Font
        from openpyxl.workbook.defined_name import DefinedName
    except ImportError:
        raise CapplanError("openpyxl is not installed; pip install 'capplan[xlsx]'") from None
    from planner.report.excel import xlsx_formula
    target = check_workbook_target(path, force)
    wb = openpyxl.Workbook()
    bold = Font(bold=True)

    ws = wb.active
    ws.title = "Inputs"
    append_row(ws, [title])
    append_row(ws, ["input", "value", "unit", "meaning", "source"])
    for cell in ws[2]:
        cell.font = bold
    for row, name in enumerate(INPUTS, start=3):
        unit, meaning = INPUTS[name]
        append_row(ws, [name, float(np.ravel(inputs[name])[0]), unit, meaning,
                        sources.get(name, "")])
        defined = excel_name(name)
        wb.defined_names[defined] = DefinedName(defined, attr_text=f"Inputs!$B${row}")

    ms = wb.create_sheet("Model")
    append_row(ms, ["quantity", "formula (live)", "unit", "capplan value",
                    "relative difference"])
    for cell in ms[1]:
        cell.font = bold
    intermediates, outputs = model_formulas()
    row = 2
    for name, formula in intermediates:
        append_row(ms, [name, xlsx_formula(formula), "", None, None], live_formulas=(1,))
        wb.defined_names[name] = DefinedName(name, attr_text=f"Model!$B${row}")
        row += 1
    ms.append([])
    row += 1
    for name, formula in outputs:
        capplan = float(np.ravel(values[name])[0])
        append_row(ms, [name, xlsx_formula(formula), OUTPUTS[name], capplan,
                        f"=IF(D{row}=0,B{row}-D{row},B{row}/D{row}-1)"], live_formulas=(1, 4))
        ms.cell(row=row, column=1).font = bold
        wb.defined_names[f"out_{name}"] = DefinedName(f"out_{name}",
                                                       attr_text=f"Model!$B${row}")
        row += 1

    ss = wb.create_sheet("Sweep")
    if sweep_rows:
        columns = list(sweep_rows[0])
        append_row(ss, columns)
        for cell in ss[1]:
            cell.font = bold
        for r in sweep_rows:
            append_row(ss, [r[c] for c in columns])
    if phase_rows:
        _phases_sheet(wb.create_sheet("Phases"), phase_rows, bold)
    for sheet, widths in ((ws, (34, 18, 12, 60, 80)), (ms, (28, 60, 10, 20, 18)),
                          (ss, (10,) * 12)):
        for i, width in enumerate(widths):
            sheet.column_dimensions[chr(ord("A") + i)].width = width
    with atomic_target(path, force) as tmp:
        wb.save(tmp)
    return target


#: Phases-sheet columns whose total is not a sum.
_PHASE_MAX = ("peak_power_mw", "gpus")
_PHASE_TEXT = ("phase", "layout")


def _phases_sheet(sheet, rows: list[dict], bold) -> None:
    """One row per phase (its name is text, whatever it starts with), then the total: live
    SUM (MAX for peaks and GPUs) formulas."""
    from openpyxl.utils import get_column_letter

    columns = list(rows[0])
    append_row(sheet, columns)
    for cell in sheet[1]:
        cell.font = bold
    for r in rows:
        append_row(sheet, [r[c] for c in columns])
    last = len(rows) + 1
    total, live = [], []
    for i, c in enumerate(columns, start=1):
        letter = get_column_letter(i)
        if c == "phase":
            total.append("total")
        elif c in _PHASE_TEXT:
            total.append("")
        else:
            fn = "MAX" if c in _PHASE_MAX else "SUM"
            live.append(len(total))
            total.append(f"={fn}({letter}2:{letter}{last})")
    append_row(sheet, total, live_formulas=live)
    for cell in sheet[last + 1]:
        cell.font = bold
