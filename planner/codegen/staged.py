"""The run model as short assignments, stage by stage: the source of the generated kernel
and of the workbook's Model sheet.

Each stage of :data:`planner.engine.run.model.STAGES` runs on sympy Symbols: one per input,
and one per named quantity of the stages before it (not its expression).  So every named
quantity is a short expression of the inputs and earlier names, and ``sympy.cse`` over
these short expressions takes about a second, where over the fully expanded outputs
(:func:`planner.engine.run.symbolic.symbolic_outputs`) it took many CPU-minutes.

:func:`staged_model` returns the assignments in order: each named quantity under its own
name (``step_time_s = ...``), preceded by the common subexpressions (``x0``, ``x1``, ...)
it is the first to read.  The common subexpressions are found across all stages at once:
found per stage only, the kernel repeats the terms later stages share (the MTP layers on
the last stage, the link bandwidths, ...) and does ~4 % more array operations than the
kernel of the expanded outputs; found across stages, ~1 % fewer.  A quantity that is an
input, another name or a constant is not assigned: its uses read that instead.  Only the
quantities some output needs are kept (backward liveness).  Imports sympy: a build tool,
never on the run path.
"""

from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass
from functools import cache

from planner.engine.run.model import INPUTS, OUTPUTS, STAGES
from planner.engine.run.symbolic import symbols

#: Prefix of the common subexpressions' names (``x0``, ``x1``, ...).
TEMPORARY_PREFIX = "x"
#: Names the generated kernel reads besides its arguments and assignments.
_RESERVED = frozenset({"kernel", "numpy", "scipy", "reduce", "digamma", "erfinv",
                       "poisson_cdf", *dir(builtins), *keyword.kwlist})
#: Assumptions a named quantity's Symbol takes over from its expression, so that sympy
#: simplifies its later uses as it would the expression itself.
_ASSUMPTIONS = ("real", "positive", "nonnegative", "integer")


@dataclass(frozen=True)
class Assignment:
    """One statement of the staged model: ``name = expr``.

    ``quantity``: the named quantity it computes (``None`` for a common subexpression);
    ``stage``: the name of the stage it belongs to.
    """

    name: str
    expr: object
    quantity: str | None
    stage: str


def variable_name(quantity: str) -> str:
    """The variable a named quantity is assigned to: its own name unless that is an input,
    a name the kernel reads (numpy, a builtin, a keyword) or looks like a temporary."""
    if quantity in INPUTS or quantity in _RESERVED \
            or re.fullmatch(f"{TEMPORARY_PREFIX}\\d+", quantity):
        return f"{quantity}_q"
    return quantity


@cache
def staged_model() -> tuple[tuple[Assignment, ...], tuple]:
    """``(assignments, outputs)``: the live assignments in order, and one sympy expression
    per output of :data:`~planner.engine.run.model.OUTPUTS` (in order) over the inputs and the
    assigned names."""
    import sympy

    x = symbols()
    named: dict = {}  # each quantity -> what later stages read (its Symbol, or an alias)
    stages = []  # (stage name, [(quantity, Symbol, expression)])
    for stage in STAGES:
        defined = []
        for quantity, value in stage(x, dict(named)).items():
            if quantity in named:
                raise ValueError(f"stage {stage.__name__} redefines {quantity}")
            expr = sympy.sympify(value)
            if expr.is_Atom:  # an input, an earlier name or a constant: read it instead
                named[quantity] = expr
                continue
            known = {a: True for a in _ASSUMPTIONS if getattr(expr, f"is_{a}") is True}
            named[quantity] = sympy.Symbol(variable_name(quantity), **known)
            defined.append((quantity, named[quantity], expr))
        stages.append((stage.__name__, defined))
    outputs = tuple(named[name] for name in OUTPUTS)

    live = set().union(*(sympy.sympify(o).free_symbols for o in outputs))
    for _, defined in reversed(stages):
        for _, symbol, expr in reversed(defined):
            if symbol in live:
                live |= expr.free_symbols

    kept = [(stage, q, s, e) for stage, defined in stages for q, s, e in defined if s in live]
    replacements, reduced = sympy.cse([e for *_, e in kept],
                                      symbols=sympy.numbered_symbols("_cse"))
    return _placed(kept, dict(replacements), reduced, outputs)


def _placed(kept, replacements: dict, reduced, outputs):
    """The assignments with each common subexpression placed just before the first
    statement that reads it (in that statement's stage), numbered in that order; one that
    is a whole named quantity takes that quantity's name."""
    import sympy

    quantity_of = {symbol: quantity for _, quantity, symbol, _ in kept}
    named = {}  # common subexpression -> the named quantity that is exactly it
    for (_, _, symbol, _), expr in zip(kept, reduced, strict=True):
        if expr in replacements and expr not in named:
            named[expr] = symbol
    replacements = {named.get(t, t): e.xreplace(named) for t, e in replacements.items()}
    order, placed, numbered = [], {}, []

    def place(expr, stage):
        for symbol in sorted(expr.free_symbols, key=str):
            if symbol in replacements and symbol not in placed:
                place(replacements[symbol], stage)
                if symbol in quantity_of:
                    placed[symbol] = symbol
                else:
                    placed[symbol] = sympy.Symbol(f"{TEMPORARY_PREFIX}{len(numbered)}")
                    numbered.append(symbol)
                order.append((placed[symbol], replacements[symbol], quantity_of.get(symbol),
                              stage))

    for (stage, quantity, symbol, _), expr in zip(kept, reduced, strict=True):
        expr = expr.xreplace(named)
        place(expr, stage)
        if expr != symbol:
            order.append((symbol, expr, quantity, stage))
    for output in outputs:
        place(sympy.sympify(output), kept[-1][0])
    temporaries = {t: x for t, x in placed.items() if t != x}
    assignments = tuple(Assignment(str(symbol), expr.xreplace(temporaries), quantity, stage)
                        for symbol, expr, quantity, stage in order)
    return assignments, tuple(sympy.sympify(o).xreplace(temporaries) for o in outputs)
