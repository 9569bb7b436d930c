"""docs/columns.md generated from the column registry (``python -m planner.codegen``).

One table per group of :data:`planner.engine.run.columns.COLUMNS`: name, unit, meaning,
where the value comes from and where it is shown.  ``tests/test_columns.py`` fails
when the file is stale.
"""

from __future__ import annotations

from pathlib import Path

from planner.engine.run.columns import (
    COLUMNS,
    FINISH,
    GROUPS,
    KERNEL,
    LAYOUT,
    SEARCH,
    Column,
    column,
    conversion_factor,
)
from planner.report.output import write_or_check

DOC = Path(__file__).resolve().parents[2] / "docs" / "columns.md"

HEADER = """\
# Output columns

<!-- Generated from planner/engine/run/columns.py by `python -m planner.codegen`; do not edit. -->

Every column of `planner.evaluate(...)`, of `plan(...).frontier` and of the JSON of
`capplan evaluate` and `capplan plan`, from one registry: `planner/engine/run/columns.py`
(the run model's own outputs are declared in `planner/engine/run/model.py`'s
`OUTPUT_COLUMNS`, beside the stages that compute them).
A column's name ends in its unit where it has one (`step_time_s`, `hbm_bytes`,
`energy_kwh`); values are SI inside (s, B, FLOP, W, J, USD) and converted only at the
edge, the conversions stated below.  *Shown in*: **E** `capplan evaluate`'s summary
(the step-time and memory breakdowns are listed apart), **P** each plan row of
`capplan plan`'s JSON, **F** the frontier kept by the search (`plan(...).frontier`,
which also holds `hardware` and the constraint check `feasible`).

To add a run-model output, add its row to `OUTPUT_COLUMNS` and the line of the stage that
computes it (both in `planner/engine/run/model.py`), then `python -m planner.codegen`; a unit
conversion is one row of `DERIVED` in `planner/engine/run/columns.py` and `--only columns`.
"""

_SOURCE = {KERNEL: "run model (kernel)", LAYOUT: "layout choice",
           SEARCH: "accelerator of the candidate", FINISH: "derived"}


def _origin(c: Column) -> str:
    if c.of:
        factor = conversion_factor(c)
        shown = f"{factor:,.0f}" if factor >= 1 else f"{factor:g}"
        return (f"`{c.of}` / {shown} "
                f"({column(c.of).unit} to {c.unit})")
    if c.source == FINISH:
        return f"derived: {c.derivation}"
    return _SOURCE[c.source]


#: Breakdown groups and the key under which ``capplan evaluate`` lists them.
_EVALUATE_BREAKDOWNS = {"step-time breakdown": "breakdown",
                        "memory breakdown": "memory_breakdown"}


def _shown(c: Column) -> str:
    breakdown = _EVALUATE_BREAKDOWNS.get(c.group)
    flags = [f"E (`{breakdown}`)" if breakdown else "E" if c.evaluate else "",
             "P" if c.plan else "", "F" if c.keep else ""]
    return " ".join(f for f in flags if f) or "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_columns_markdown() -> str:
    """docs/columns.md: the registry, one table per group, in the registry's order."""
    lines = [HEADER]
    for group in GROUPS:
        members = [c for c in COLUMNS if c.group == group]
        if not members:
            continue
        lines += [f"## {group}", "", "| column | unit | meaning | from | shown in |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{c.name}` | {c.unit or '-'} | {_cell(c.label)} | {_cell(_origin(c))} "
                  f"| {_shown(c)} |" for c in members]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    return write_or_check(DOC, render_columns_markdown(), check="--check" in (argv or []),
                          command="python -m planner.codegen --only columns")
