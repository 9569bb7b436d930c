"""Tornado plot of elasticities (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from planner.engine.run.model import INPUTS
from planner.engine.run.readable import quantity_text
from planner.errors import CapplanError
from planner.report.output import atomic_target, check_target, plot_text

SUFFIXES = (".png", ".svg", ".pdf")

#: Output keys of the elasticity rows -> legend text.
OUTPUT_LABELS = {"days": "wall time", "cost": "cost", "energy": "energy", "co2e": "CO2e"}
#: Fixed colours per output, so every tornado reads the same way.
OUTPUT_COLOURS = {"days": "tab:blue", "cost": "tab:orange", "energy": "tab:green",
                  "co2e": "tab:red"}


def bar_label(row: dict) -> str:
    """'power usage effectiveness\\npue = 1.58': the input's meaning (the run model's
    input registry, ``planner.engine.run.model.INPUTS``), its name, and its base value in a
    human unit ('989 TFLOP/s', '2.95 USD/GPU-h', '15T tokens')."""
    name = row["input"]
    unit, meaning = INPUTS.get(name, (row.get("unit", "1"), ""))
    unit = row.get("unit", unit)
    value = quantity_text(float(row["value"]), unit)
    if name == "tokens":
        value += " tokens"
    first = textwrap.shorten(meaning, 44, placeholder="...") if meaning else name
    return f"{first}\n{name} = {value}"


def tornado(rows: list[dict], path: str, *, title: str = "", force: bool = False,
            outputs=("days", "cost", "energy", "co2e")) -> Path:
    """Horizontal bars of each input's elasticity on ``outputs``, largest on top; each bar
    group is labelled with the input's meaning, name and base value, and the title (the
    caller's: model, tokens, layout) states what the elasticities are of."""
    if Path(path).suffix.lower() not in SUFFIXES:
        raise CapplanError(f"plot file must end in {', '.join(SUFFIXES)}, got "
                           f"'{Path(path).name}'")
    target = check_target(path, force)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CapplanError("matplotlib is not installed; pip install 'capplan[plot]'") from None
    fig = tornado_figure(rows, title=title, outputs=outputs)
    try:
        with atomic_target(path, force) as tmp:
            fig.savefig(tmp)
    finally:
        plt.close(fig)
    return target


def tornado_figure(rows: list[dict], *, title: str = "",
                   outputs=("days", "cost", "energy", "co2e")):
    """The tornado as a matplotlib figure (not saved; the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [bar_label(r) for r in rows][::-1]
    y = np.arange(len(labels))
    height = 0.8 / len(outputs)
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(labels) + 2.0), dpi=150)
    for k, out in enumerate(outputs):
        values = [r[out] for r in rows][::-1]
        ax.barh(y + (k - (len(outputs) - 1) / 2) * height, values, height=height,
                label=OUTPUT_LABELS.get(out, out), color=OUTPUT_COLOURS.get(out))
    ax.set_yticks(y, labels, fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("elasticity d ln(output) / d ln(input): % change of the output per "
                  "+1 % of the input", fontsize=8.5)
    what = ", ".join(OUTPUT_LABELS.get(o, o) for o in outputs)
    heading = f"What moves {what} (one layout, no search objective)"
    lines = textwrap.wrap(plot_text(title), 90) if title else []
    ax.set_title("\n".join([*lines, heading]), fontsize=9)
    ax.legend(loc="lower right", fontsize=8, title="elasticity of", title_fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
