"""The run model as sympy expressions: every output of
:func:`planner.engine.run.model.run_model` called with one sympy Symbol per input.

Each output fully expanded, for symbolic checks of one output (``tests/test_param_count.py``).
The generated kernel and workbook are built stage by stage instead
(:mod:`planner.codegen.staged`: expanded, ``sympy.cse`` over every output took many
CPU-minutes); :func:`symbols` is shared.  Imports sympy: never on the one-shot path.
"""

from __future__ import annotations

from functools import cache

from planner.engine.run.model import INPUTS, run_model


def symbols() -> dict:
    """One sympy Symbol per run-model input (non-negative reals)."""
    import sympy

    return {name: sympy.Symbol(name, nonnegative=True, real=True) for name in INPUTS}


@cache
def symbolic_outputs() -> dict:
    """Every output of the run model as a sympy expression of the inputs."""
    return run_model(symbols())
