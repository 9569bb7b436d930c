"""The compiled run-model kernel: load it, and identify its version.

The kernel is generated from :func:`planner.engine.model.run_model` by
:mod:`planner.codegen.kernel` into ``planner/engine/_kernel_generated.py``
(committed), so the engine never imports sympy.  Regenerate with
``python -m planner.codegen``.
"""

from __future__ import annotations

import hashlib
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
