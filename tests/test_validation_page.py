"""docs/validation.md holds no hand-typed model result (issue 40): its prose numbers are
computed from the predictions and checks its tables show, and a number typed into the
templates of planner/report/validation.py is dated history."""

import ast
import re
from pathlib import Path

import pytest

from planner.analysis import validate as v
from planner.report import validation

ROOT = Path(__file__).resolve().parents[1]
#: a model result: a signed error ('+12 %', '-46 %') or a MAPE value
RESULT = re.compile(r"(?<![+\-])[+\-\u2212]\d+(?:\.\d+)?\s?%|MAPE (?:was |of |\(fit\) )?\d")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
DATASETS = ("full-runs", "vtrain-single", "vtrain-multi", "llm-foundry-a100",
            "llm-foundry-h100", "modern-runs", "moe-runs")


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def _template_literals() -> list[str]:
    """Every string literal of planner/report/validation.py, f-strings' literal parts too
    (docstrings, which never reach the page, left out)."""
    tree = ast.parse((ROOT / "planner" / "report" / "validation.py").read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_no_undated_result_typed_into_the_page_templates():
    undated = [p.strip()[:90] for text in _template_literals() for p in _paragraphs(text)
               if RESULT.search(p) and not DATE.search(p)]
    assert not undated, undated


def test_the_audit_catches_a_typed_result():
    assert RESULT.search("2. **OPT-175B** (+12 % against its 147 TFLOP/s)")
    assert not RESULT.search("(dotted: +-10%)")
    assert RESULT.search("(OLMo: -46 %, -37 %, -20 % with the published layouts")
    assert not RESULT.search("MAPE <= 10 % over the dataset, 27.89 % MFU")


@pytest.fixture(scope="module")
def results(catalog):
    pred = v.predict(v.load_cases(DATASETS), catalog=catalog)
    extra = {"energy": v.energy_check(catalog), "throughput": v.steady_state_check(catalog),
             "later_stack": v.later_stack_check(catalog),
             "whole_run_energy": v.whole_run_energy_check(catalog)}
    return pred, v.summarise(pred), extra


def _perturbed(pred, extra, factor: float = 1.37):
    """The same results with every prediction ``factor`` x (errors, ratios, days, powers
    follow)."""
    p = pred.copy()
    p["predicted"] = p.predicted * factor
    p["step_time_s"] = p.step_time_s / factor
    p["error"] = p.predicted / p.measured - 1
    moved = {}
    for name, rows in extra.items():
        moved[name] = []
        for r in rows:
            r = dict(r)
            for k in ("predicted", "ratio", "implied_days", "predicted_days", "wall_days",
                      "gpu_power_w", "avg_power_mw", "peak_power_mw"):
                if k in r:
                    r[k] = r[k] * factor
            if "error" in r:
                r["error"] = r["predicted"] / r["published"] - 1
            moved[name].append(r)
    return p, moved


def _texts(pred, summary, extra) -> dict[str, str]:
    return {"weak": validation.weak_text(pred, extra),
            "later stack": validation.later_stack_text(pred, extra),
            "modern gaps": validation.modern_gaps_text(pred, summary),
            "energy": validation.energy_text(extra)}


def test_every_result_paragraph_moves_with_the_results(results):
    pred, summary, extra = results
    p, e = _perturbed(pred, extra)
    before, after = _texts(pred, summary, extra), _texts(p, v.summarise(p), e)
    for name, text in before.items():
        assert text != after[name], name
        moved = set(_paragraphs(after[name]))
        for paragraph in _paragraphs(text):
            if RESULT.search(paragraph) and not DATE.search(paragraph):
                assert paragraph not in moved, (name, paragraph[:90])


def _table_row(doc: str, label: str) -> str:
    """The table line that starts with ``| label``."""
    for line in doc.splitlines():
        if line.startswith(f"| {label} "):
            return line
    raise AssertionError(label)


def test_the_page_prose_agrees_with_its_tables():
    # issue 40: the page said OPT "+12 %" beside its table's 13.7 %, OLMo "-46/-37/-20 %"
    # beside -44/-52/-39 %
    doc = (ROOT / "docs" / "validation.md").read_text()
    opt = float(_table_row(doc, "opt-175b").split("|")[8])  # error_% column
    assert f"**OPT-175B** ({round(opt):+d} %" in doc
    olmo = [float(_table_row(doc, f"{run} GPU energy [MWh]").split("|")[4])
            for run in v.olmo_runs()]
    assert "(OLMo: " + ", ".join(f"{round(100 * e):+d} %" for e in olmo) in doc
