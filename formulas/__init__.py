"""capplan's closed-form models, one module per domain.

Every public function is a :class:`formulas.core.Formula`: it computes on
floats, numpy arrays and pandas Series, builds a sympy expression when given
sympy Symbols, and carries its units, LaTeX and reference.

>>> import formulas
>>> f = formulas.registry()["young_interval"]
>>> f.units["mtbf_s"], f.units["return"]
('s', 's')
>>> round(float(f(60.0, 3600.0)), 3)
657.267
"""

from __future__ import annotations

import importlib
import pkgutil

from .core import Formula, formula, registered

DOMAINS = (
    "compute", "memory", "communication", "moe", "pipeline", "checkpoint", "reliability", "straggler",
    "overhead", "batch", "finetune", "energy", "cost", "carbon", "inference",
)

__all__ = ["Formula", "formula", "registry", "DOMAINS"]


def registry() -> dict[str, Formula]:
    """Every formula of every domain module, by name (sorted)."""
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("core", "ops") and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return registered()
