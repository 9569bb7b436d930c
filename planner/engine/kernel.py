"""The compiled run-model kernel: load it, and identify its version.

The kernel is generated from :func:`planner.engine.model.run_model` by
:mod:`planner.codegen.kernel` into ``planner/engine/_kernel_generated.py``
(committed), so the engine never imports sympy.  Regenerate with
``python -m planner.codegen``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from functools import cache
from pathlib import Path

from planner.engine.model import INPUTS, OUTPUTS

GENERATED = Path(__file__).with_name("_kernel_generated.py")


def kernel_hash() -> str:
    """Hash of the committed kernel's code: identifies the model version.

    ``tests/test_kernel.py`` checks that the committed kernel equals a fresh
    generation, and the sensitivity kernel records the hash it was derived from.
    """
    text = GENERATED.read_text()
    body = text[text.index("def kernel("):]
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def load_kernel():
    """The generated kernel function (imports numpy and :mod:`formulas.special` only)."""
    from planner.engine import _kernel_generated

    if _kernel_generated.INPUTS != tuple(INPUTS) or _kernel_generated.OUTPUTS != tuple(OUTPUTS):
        raise RuntimeError("planner/engine/_kernel_generated.py is stale: run python -m planner.codegen")
    return _kernel_generated.kernel



#: Builds partial kernels one at a time: threads of a Dask worker ask for the same ones at
#: once, and compiling ASTs concurrently fails in CPython 3.11 ("AST constructor recursion
#: depth mismatch").
_BUILD_LOCK = threading.Lock()


def partial_kernel(outputs: tuple[str, ...]):
    """A kernel computing only ``outputs``: ``(function, its input names)`` (thread-safe,
    built once per tuple of outputs; see :func:`build_partial_kernel`)."""
    with _BUILD_LOCK:
        return build_partial_kernel(outputs)


@cache
def build_partial_kernel(outputs: tuple[str, ...]):
    """A kernel computing only ``outputs``: ``(function, its input names)``.

    Cut out of the generated kernel by dropping every statement none of
    ``outputs`` needs (backward liveness over its straight-line body), so each
    value is computed by exactly the same operations as in the full kernel and
    is bit-identical to it.  The search uses it to compute memory for every
    candidate and everything else only for those that fit.
    """
    import ast

    from planner.engine import _kernel_generated

    unknown = [name for name in outputs if name not in OUTPUTS]
    if unknown:
        raise KeyError(f"not kernel outputs: {', '.join(unknown)}")
    load_kernel()  # raises if the generated kernel is stale
    tree = ast.parse(GENERATED.read_text())
    func = next(node for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == "kernel")
    *statements, returned = func.body
    elements = returned.value.elts
    returned.value.elts = [elements[list(OUTPUTS).index(name)] for name in outputs]
    needed = {node.id for node in ast.walk(returned) if isinstance(node, ast.Name)}
    kept = []
    for statement in reversed(statements):
        if isinstance(statement, ast.Assign) and statement.targets[0].id in needed:
            kept.append(statement)
            needed |= {node.id for node in ast.walk(statement.value) if isinstance(node, ast.Name)}
        elif isinstance(statement, ast.Delete):
            kept.append(statement)
    assigned = {s.targets[0].id for s in kept if isinstance(s, ast.Assign)}
    body = []
    for statement in reversed(kept):
        if isinstance(statement, ast.Delete):
            statement.targets = [t for t in statement.targets if t.id in assigned]
            if not statement.targets:
                continue
        body.append(statement)
    func.body = [*body, returned]
    func.args.args = [a for a in func.args.args if a.arg in needed]
    namespace = dict(vars(_kernel_generated))
    exec(compile(ast.fix_missing_locations(ast.Module(body=[func], type_ignores=[])),  # noqa: S102
                 str(GENERATED), "exec"), namespace)
    return namespace["kernel"], tuple(a.arg for a in func.args.args)


#: numpy calls of the generated kernel and their float counterparts (:func:`float_kernel`)
_MATH_CALLS = frozenset({"exp", "log", "log1p", "expm1", "sqrt", "ceil"})
_COMPARISONS = {"greater": "Gt", "greater_equal": "GtE", "less": "Lt", "less_equal": "LtE"}


@cache
def float_kernel():
    """The generated kernel rewritten for Python floats: one candidate, ~3x faster.

    The same statements with ``numpy.minimum``/``maximum`` as NaN-propagating float
    helpers, ``numpy.where`` as a conditional expression, comparisons as operators, the
    ``math`` functions and scalar special functions, and no ``del``.  Where numpy would
    return inf or NaN (a division by zero, the log of 0, an overflow) Python raises
    instead: :func:`planner.engine.evaluator.evaluate_scalar` then runs the numpy kernel
    on float64 scalars, so the values never depend on which path ran.
    """
    import ast

    from formulas.special import erfinv, poisson_cdf_float

    load_kernel()  # raises if the generated kernel is stale
    tree = ast.parse(GENERATED.read_text())
    func = next(node for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == "kernel")

    class ToFloats(ast.NodeTransformer):
        def visit_Delete(self, node):
            return None

        def visit_Call(self, node):
            self.generic_visit(node)
            f = node.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id == "numpy"):
                if isinstance(f, ast.Name) and f.id == "poisson_cdf":
                    node.func = ast.Name("poisson_cdf_float", ast.Load())
                return node
            if f.attr in _MATH_CALLS:
                node.func = ast.Attribute(ast.Name("math", ast.Load()), f.attr, ast.Load())
                return node
            if f.attr in ("minimum", "maximum"):
                node.func = ast.Name(f"_float_{f.attr}", ast.Load())
                return node
            if f.attr == "where":
                condition, yes, no = node.args
                return ast.IfExp(condition, yes, no)
            if f.attr in _COMPARISONS:
                left, right = node.args
                return ast.Compare(left, [getattr(ast, _COMPARISONS[f.attr])()], [right])
            raise ValueError(f"float_kernel: no float form of numpy.{f.attr}")

    func = ToFloats().visit(func)
    namespace = {"math": math, "erfinv": erfinv, "poisson_cdf_float": poisson_cdf_float,
                 "_float_minimum": _float_minimum, "_float_maximum": _float_maximum}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[func], type_ignores=[])),  # noqa: S102
                 str(GENERATED), "exec"), namespace)
    return namespace["kernel"]


def _float_minimum(a: float, b: float) -> float:
    """``numpy.minimum`` of two floats: NaN if either is NaN."""
    return a if a <= b else b if b < a else math.nan


def _float_maximum(a: float, b: float) -> float:
    """``numpy.maximum`` of two floats: NaN if either is NaN."""
    return a if a >= b else b if b > a else math.nan
