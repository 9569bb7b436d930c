"""Tornado plot of elasticities (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

from pathlib import Path

from planner.errors import CapplanError

SUFFIXES = (".png", ".svg", ".pdf")


def tornado(rows: list[dict], path: str, *, title: str = "", force: bool = False,
            outputs=("days", "cost", "energy", "co2e")) -> Path:
    """Horizontal bars of each input's elasticity on ``outputs``, largest on top."""
    from planner.report.output import atomic_target, check_target

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
    import numpy as np

    names = [r["input"] for r in rows][::-1]
    y = np.arange(len(names))
    height = 0.8 / len(outputs)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.5), dpi=150)
    for k, out in enumerate(outputs):
        values = [r[out] for r in rows][::-1]
        ax.barh(y + (k - (len(outputs) - 1) / 2) * height, values, height=height, label=out)
    ax.set_yticks(y, names)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("elasticity  d ln(output) / d ln(input)")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    try:
        with atomic_target(path, force) as tmp:
            fig.savefig(tmp)
    finally:
        plt.close(fig)
    return target
