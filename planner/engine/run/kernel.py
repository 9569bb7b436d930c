"""The compiled run-model kernel: load it, and identify its version.

The kernel is generated from :func:`planner.engine.run.model.run_model` by
:mod:`planner.codegen.kernel_source` into ``planner/engine/run/_kernel_generated.py``
(committed), so the engine never imports sympy.  Regenerate with
``python -m planner.codegen``.
"""

from __future__ import annotations

import ast
import hashlib
import math
import threading
from functools import cache
from pathlib import Path

from formulas.special import erfinv, poisson_cdf_float
from planner.engine.run.model import INPUTS, OUTPUTS

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
    return generated_module().kernel


def generated_module():
    """The generated kernel's module, checked against the run model's inputs and outputs.

    Imported on first use, the one lazy import here: a stale generated file is reported by
    this check, and ``python -m planner.codegen`` loads the file it has just written."""
    from planner.engine.run import _kernel_generated
    if _kernel_generated.INPUTS != tuple(INPUTS) or _kernel_generated.OUTPUTS != tuple(OUTPUTS):
        raise RuntimeError("planner/engine/run/_kernel_generated.py is stale: run python -m planner.codegen")
    return _kernel_generated



#: Builds partial kernels one at a time: threads of a Dask worker ask for the same ones at
#: once, and compiling ASTs concurrently fails in CPython 3.11 ("AST constructor recursion
#: depth mismatch").
BUILD_LOCK = threading.Lock()


def _kernel_tree():
    """A fresh syntax tree of the committed kernel function (callers rewrite it)."""
    load_kernel()  # raises if the generated kernel is stale
    tree = ast.parse(GENERATED.read_text())
    return next(node for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == "kernel")


def loaded_names(node) -> set[str]:
    """The names ``node`` reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _live_names(assigns, wanted: set[str]) -> set[str]:
    """``wanted`` and every name their values are computed from (backward liveness over
    the kernel's straight-line assignments)."""
    live = set(wanted)
    for statement in reversed(assigns):
        if statement.targets[0].id in live:
            live |= loaded_names(statement.value)
    return live


def _compile(functions, namespace: dict) -> dict:
    """``namespace`` with ``functions`` (rewritten kernel syntax trees) defined in it."""
    module = ast.fix_missing_locations(ast.Module(body=list(functions), type_ignores=[]))
    exec(compile(module, str(GENERATED), "exec"), namespace)  # noqa: S102
    return namespace


def partial_kernel(outputs: tuple[str, ...]):
    """A kernel computing only ``outputs``: ``(function, its input names)`` (thread-safe,
    built once per tuple of outputs; see :func:`build_partial_kernel`)."""
    with BUILD_LOCK:
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
    func = partial_kernel_tree(outputs)
    namespace = _compile([func], dict(vars(generated_module())))
    return namespace["kernel"], tuple(a.arg for a in func.args.args)


def partial_kernel_tree(outputs: tuple[str, ...]):
    """The syntax tree of :func:`build_partial_kernel`'s function (a fresh one per call)."""
    unknown = [name for name in outputs if name not in OUTPUTS]
    if unknown:
        raise KeyError(f"not kernel outputs: {', '.join(unknown)}")
    func = _kernel_tree()
    *statements, returned = func.body
    elements = returned.value.elts
    returned.value.elts = [elements[list(OUTPUTS).index(name)] for name in outputs]
    assigns = [s for s in statements if isinstance(s, ast.Assign)]
    needed = _live_names(assigns, loaded_names(returned))
    body = [s for s in assigns if s.targets[0].id in needed]
    func.body = [*_with_frees(statements, body, set(), set()), returned]
    func.args.args = [a for a in func.args.args if a.arg in needed]
    return func


def _with_frees(statements, body, args: set[str], keep_alive: set[str]) -> list:
    """``body`` (assignments of the kernel) in the kernel's order, each followed by the
    kernel's ``del`` of the values ``body`` or ``args`` hold that are dead there (but not
    ``keep_alive``): numpy reuses their memory while it is still in cache."""
    chosen = {id(s) for s in body}
    held = {s.targets[0].id for s in body} | args
    out = []
    for statement in statements:
        if isinstance(statement, ast.Assign) and id(statement) in chosen:
            out.append(statement)
        elif isinstance(statement, ast.Delete):
            dead = [t for t in statement.targets if t.id in held and t.id not in keep_alive]
            if dead:
                out.append(ast.Delete(targets=dead))
    return out


#: numpy calls of the generated kernel and their float counterparts (:func:`float_kernel`)
_MATH_CALLS = frozenset({"exp", "log", "log1p", "expm1", "sqrt", "ceil", "floor"})
_COMPARISONS = {"greater": "Gt", "greater_equal": "GtE", "less": "Lt", "less_equal": "LtE"}


@cache
def float_kernel():
    """The generated kernel rewritten for Python floats: one candidate, ~3x faster.

    The same statements with ``numpy.minimum``/``maximum`` as NaN-propagating float
    helpers, ``numpy.where`` as a conditional expression, comparisons as operators, the
    ``math`` functions and scalar special functions, and no ``del``.  Where numpy would
    return inf or NaN (a division by zero, the log of 0, an overflow) Python raises
    instead: :func:`planner.engine.run.kernel_run.evaluate_scalar` then runs the numpy kernel
    on float64 scalars, so the values never depend on which path ran.
    """
    func = _kernel_tree()

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

    namespace = _compile([ToFloats().visit(func)], {
        "math": math, "erfinv": erfinv, "poisson_cdf_float": poisson_cdf_float,
        "_float_minimum": _float_minimum, "_float_maximum": _float_maximum})
    return namespace["kernel"]


def _float_minimum(a: float, b: float) -> float:
    """``numpy.minimum`` of two floats: NaN if either is NaN."""
    return a if a <= b else b if b < a else math.nan


def _float_maximum(a: float, b: float) -> float:
    """``numpy.maximum`` of two floats: NaN if either is NaN."""
    return a if a >= b else b if b > a else math.nan


#: The array inputs a split kernel groups candidates by (:func:`split_kernel`): in a search
#: the failure-domain terms vary only with the GPU count (and the spare count chosen for it).
SPLIT_GROUP = ("gpus", "spare_nodes")


def split_kernel(outputs: tuple[str, ...], array_inputs: frozenset[str], *,
                 build: bool = True):
    """:func:`build_split_kernel`, thread-safe; with ``build=False`` only if it was built
    already (else ``False``): building takes ~50 ms of syntax-tree work, more than a call
    of a few hundred candidates saves with it."""
    key = (tuple(outputs), frozenset(array_inputs))
    with BUILD_LOCK:
        if build or key in _SPLIT_BUILT:
            _SPLIT_BUILT.add(key)
            return build_split_kernel(*key)
    return False


_SPLIT_BUILT: set = set()


def _array_inputs(node, arrays: dict) -> frozenset:
    """The array inputs ``node``'s value depends on (``arrays``: each name's)."""
    return frozenset().union(*(arrays.get(u, frozenset()) for u in loaded_names(node)))


def _costly(node) -> bool:
    """A call, or a power whose exponent is not a constant (``pow`` in C, ~20 ns a row:
    the pause and slow-node probabilities ``(1 - p) ** gpus``)."""
    return isinstance(node, ast.Call) or (
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
        and not isinstance(node.right, ast.Constant | ast.UnaryOp))


def _group_calls_apart(statements, arrays: dict, group: frozenset) -> list:
    """``statements`` with each largest sub-expression of a statement that varies beyond
    ``group`` - one that calls a function and whose array inputs are ``group`` members
    only - assigned to a name of its own just before it (``arrays``: each name's array
    inputs, extended with the new names).  The same operations on the same values."""
    class CallsApart(ast.NodeTransformer):
        def __init__(self, prefix: str):
            self.prefix, self.extracted = prefix, []

        def visit(self, node):
            if isinstance(node, ast.expr) and not isinstance(node, ast.Name | ast.Constant):
                used = _array_inputs(node, arrays)
                if used and used <= group and any(_costly(n) for n in ast.walk(node)):
                    name = f"{self.prefix}{len(self.extracted)}"
                    arrays[name] = used
                    self.extracted.append(ast.Assign(targets=[ast.Name(name, ast.Store())],
                                                     value=node))
                    return ast.Name(name, ast.Load())
            return self.generic_visit(node)

    out = []
    for statement in statements:
        if isinstance(statement, ast.Assign) and not arrays[statement.targets[0].id] <= group:
            apart = CallsApart(f"_{statement.targets[0].id}_g")
            statement.value = apart.visit(statement.value)
            out.extend(apart.extracted)
        out.append(statement)
    return out


@cache
def build_split_kernel(outputs: tuple[str, ...], array_inputs: frozenset[str]):
    """The kernel for ``outputs`` cut in two at the values that vary only with the GPU count.

    Returns ``None`` when nothing worth it can be split off, else ``(prelude, prelude
    inputs, main, main inputs, shared names)``: ``prelude(*inputs)`` computes the
    ``shared`` values - every statement whose array inputs (of ``array_inputs``) are only
    :data:`SPLIT_GROUP` members, the spare pool's Poisson CDFs among them - and
    ``main(*inputs, *shared)`` the rest.  Run on the distinct (GPU count, spare count)
    pairs of a call and spread back to its candidates, the prelude does the same
    operations on the same values as the whole kernel, so every output is bit-identical
    (elementwise code; ``tests/test_split_kernel.py``), at a fraction of the cost: a block of
    65,536 layouts of a plan holds a few dozen GPU counts.
    """
    trees = split_kernel_trees(outputs, array_inputs)
    if trees is None:
        return None
    prelude, main, shared = trees
    namespace = _compile([prelude, main], dict(vars(generated_module())))
    return (namespace["prelude"], tuple(a.arg for a in prelude.args.args), namespace["kernel"],
            tuple(a.arg for a in main.args.args[:len(main.args.args) - len(shared)]), shared)


@cache
def split_kernel_trees(outputs: tuple[str, ...], array_inputs: frozenset[str]):
    """The syntax trees of :func:`build_split_kernel`'s functions, built once (callers
    must not rewrite them): ``None``, or ``(prelude, main, shared names)``; ``main``'s
    last arguments are the shared values."""
    group = frozenset(SPLIT_GROUP) & array_inputs
    if not group:
        return None
    func = _kernel_tree()
    *statements, returned = func.body
    elements = returned.value.elts
    results = [elements[list(OUTPUTS).index(name)] for name in outputs]
    # the array inputs each name depends on
    arrays = {a.arg: frozenset({a.arg}) & array_inputs for a in func.args.args}
    assigns = [s for s in statements if isinstance(s, ast.Assign)]
    for s in assigns:
        arrays[s.targets[0].id] = _array_inputs(s.value, arrays)
    # calls inside the other statements whose arguments vary only with the group (the
    # straggler term's erfinv of the GPU count) become statements of their own, hoisted too
    statements = _group_calls_apart(statements, arrays, group)
    assigns = [s for s in statements if isinstance(s, ast.Assign)]
    # the statements that vary with the group only; those of scalar inputs only go to
    # whichever part needs them (computed once per call, as Python floats)
    hoisted = {s.targets[0].id for s in assigns if arrays[s.targets[0].id]
               and arrays[s.targets[0].id] <= group}
    scalar = {s.targets[0].id for s in assigns if not arrays[s.targets[0].id]}
    expensive = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id == "poisson_cdf"
                    for s in assigns if s.targets[0].id in hoisted for n in ast.walk(s))
    if not expensive:
        return None
    # what the outputs need, split into the two parts
    needed = _live_names(assigns, set().union(*(loaded_names(r) for r in results)))
    main_body = [s for s in assigns if s.targets[0].id in needed
                 and s.targets[0].id not in hoisted]
    main_loads = set().union(*(loaded_names(r) for r in results),
                             *(loaded_names(s.value) for s in main_body))
    shared = [s.targets[0].id for s in assigns if s.targets[0].id in hoisted
              and s.targets[0].id in main_loads]
    prelude_needed = _live_names(assigns, set(shared))
    prelude_body = [s for s in assigns if s.targets[0].id in hoisted | scalar
                    and s.targets[0].id in prelude_needed]
    prelude_loads = set().union(*(loaded_names(s.value) for s in prelude_body))
    arguments = [a.arg for a in func.args.args]
    prelude_args = [a for a in arguments if a in prelude_loads]
    main_args = [a for a in arguments if a in main_loads]

    def function(name, body, args, returns, keep_alive):
        return ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in args],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[*_with_frees(statements, body, set(args), keep_alive),
                  ast.Return(ast.Tuple(returns, ast.Load()))],
            decorator_list=[], returns=None, type_params=[])

    # the prelude keeps the shared values to return them; main receives them as arguments
    prelude = function("prelude", prelude_body, prelude_args,
                       [ast.Name(n, ast.Load()) for n in shared], set(shared))
    main = function("kernel", main_body, [*main_args, *shared], results, set())
    return prelude, main, tuple(shared)
