"""docs/formulas.md is generated from the registry and must not go stale."""

from __future__ import annotations

import formulas
from planner.report.formula_docs import DOCS_PATH, main, render_formulas_markdown


def test_docs_formulas_md_is_up_to_date():
    assert DOCS_PATH.exists(), "docs/formulas.md missing; run python -m planner.codegen"
    assert DOCS_PATH.read_text() == render_formulas_markdown(), (
        "docs/formulas.md is stale; regenerate with: python -m planner.codegen")


def test_render_has_every_formula_grouped_by_module():
    text = render_formulas_markdown()
    registry = formulas.registry()
    for name, f in registry.items():
        assert f"### `{name}`" in text
        assert f"Reference: {f.reference}" in text
        assert f"Result: `{f.result}` [{f.result_unit}]" in text
    modules = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sorted(modules) == sorted({f.module for f in registry.values()})
    # each formula sits under its own module heading
    for name, f in registry.items():
        heading = text.index(f"\n## {f.module}\n")
        entry = text.index(f"### `{name}`")
        later = [text.index(f"\n## {m}\n") for m in modules if text.index(f"\n## {m}\n") > heading]
        assert heading < entry < min(later, default=len(text))


def test_section_content_for_young_interval():
    text = render_formulas_markdown()
    section = text[text.index("### `young_interval`"):]
    section = section[:section.index("\n### ", 1)]
    assert "$$\n\\tau_{Young} = " in section
    assert "| `checkpoint_cost_s` | $\\delta$ | s | > 0 |  |" in section
    assert "| `mtbf_s` | $M$ | s | > 0 |  |" in section
    assert "Result: `young_interval` [s]" in section
    assert "`=SQRT(2*B2*B3)`" in section


def test_check_mode(tmp_path, capsys):
    target = tmp_path / "formulas.md"
    assert main(["-o", str(target), "--check"]) == 1
    assert main(["-o", str(target)]) == 0
    assert target.read_text() == render_formulas_markdown()
    assert main(["-o", str(target), "--check"]) == 0
    target.write_text("stale\n")
    assert main(["-o", str(target), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
