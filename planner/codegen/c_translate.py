"""The generated kernel's syntax tree printed as C (the compiled backend's source).

Each kernel statement becomes a ``const double`` in the kernel's order, inside one
``#pragma omp simd`` loop over the candidates; every sub-expression of scalars only is
computed once, before the loop.  Arithmetic, powers, ``numpy.minimum``/``maximum``
(NaN-propagating, as numpy's), ``where``, comparisons and ``exp``, ``log``, ``log1p``,
``expm1``, ``sqrt``, ``ceil``, ``floor`` are translated; anything else raises
:class:`Untranslatable`.  Each expression is printed fully parenthesised, so C evaluates
it in the order Python does; compiled without fused multiply-adds or fast-math it gives
numpy's bits except in the last bit of ``exp``/``log``/``pow`` (libm or libmvec instead
of numpy's loops).

Used only by :mod:`planner.codegen.native_source` (``python -m planner.codegen``): the C
it prints is committed and compiled when capplan is installed, never at run time.
"""

from __future__ import annotations

import ast
import copy
from types import SimpleNamespace

from planner.engine.run.kernel import loaded_names

_MATH = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
         "ceil": "ceil", "floor": "floor"}
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
            "equal": "==", "not_equal": "!="}
_COMPARE_OPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==",
                ast.NotEq: "!="}

class Untranslatable(ValueError):
    """The kernel calls something the C backend has no form of."""


def _c(node) -> str:
    """The C expression of a kernel expression (every sub-expression parenthesised, so
    C evaluates it in the order Python does)."""
    if isinstance(node, ast.Name):
        return f"v_{node.id}"
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Untranslatable(f"constant {value!r}")
        value = float(value)
        if value != value:
            return "NAN"
        if value in (float("inf"), float("-inf")):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        return f"{value!r}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_c(node.operand)})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _c(node.operand)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return _power(node.left, node.right)
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Untranslatable(f"operator {type(node.op).__name__}")
        return f"({_c(node.left)} {op} {_c(node.right)})"
    condition = _condition(node)
    if condition is not None:  # a comparison's value: 1.0 or 0.0, as numpy's bool in arithmetic
        return f"({condition} ? 1.0 : 0.0)"
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        name = _numpy_function(node)
        if name is not None:
            args = [_c(a) for a in node.args]
            if name in _MATH and len(args) == 1:
                return f"{_MATH[name]}({args[0]})"
            if name in ("minimum", "maximum") and len(args) == 2:
                return f"np_{name}({args[0]}, {args[1]})"
            if name == "where" and len(args) == 3:
                condition = _condition(node.args[0]) or f"({args[0]} != 0.0)"
                return f"({condition} ? {args[1]} : {args[2]})"
        if isinstance(f, ast.Name) and f.id == "np_pick" and len(node.args) == 3:
            return f"np_pick({', '.join(_c(a) for a in node.args)})"
        raise Untranslatable(f"call {ast.unparse(node.func)}")
    raise Untranslatable(f"expression {type(node).__name__}")


def _condition(node) -> str | None:
    """A comparison as a C condition (``None`` if ``node`` is none).  Never an ``int``
    value: an ``int`` among the doubles makes GCC give up vectorising the loop."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = _COMPARE_OPS.get(type(node.ops[0]))
        if op is None:
            raise Untranslatable(f"comparison {type(node.ops[0]).__name__}")
        return f"({_c(node.left)} {op} {_c(node.comparators[0])})"
    name = _numpy_function(node)
    if name in _COMPARE and len(node.args) == 2:
        return f"({_c(node.args[0])} {_COMPARE[name]} {_c(node.args[1])})"
    return None


def _power(base, exponent) -> str:
    """``base ** exponent`` as numpy computes it for float64 arrays: ``x ** -1`` is
    ``1 / x``, ``x ** 2`` is ``x * x``, ``x ** 0.5`` is ``sqrt(x)``, the rest ``pow``."""
    b = _c(base)
    if isinstance(exponent, ast.UnaryOp) and isinstance(exponent.op, ast.USub) \
            and isinstance(exponent.operand, ast.Constant):
        exponent = ast.Constant(-exponent.operand.value)
    if isinstance(exponent, ast.Constant) and not isinstance(exponent.value, bool):
        if exponent.value == -1:
            return f"(1.0 / {b})"
        if exponent.value == 2:
            return f"np_square({b})"
        if exponent.value == 0.5:
            return f"sqrt({b})"
        if exponent.value == 1:
            return b
    return f"pow({b}, {_c(exponent)})"


def c_source(func: ast.FunctionDef, per_row: frozenset[str], table: tuple[str, ...],
             name: str = "capplan_kernel", storage: str = "",
             ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The C function of kernel ``func``: ``(source, scalar argument names, array argument
    names)``.

    ``per_row``: the arguments that are arrays of the candidates; ``table``: the
    arguments read from a table of shared rows (``func``'s last ones: the split kernel's
    values per GPU count), ``table[index[i] * len(table) + j]`` for candidate ``i``
    (``index``: 32-bit); the other arguments are scalars.  The function is::

        void name(long n, const double *scalars, const double *const *arrays,
                  const int *index, const double *table, double *const *out)

    with ``scalars`` and ``arrays`` in the orders returned, and ``out`` one array of ``n``
    per value ``func`` returns.  Raises :class:`Untranslatable`.
    """
    func = copy.deepcopy(func)  # the hoisting below rewrites it
    arguments = [a.arg for a in func.args.args]
    scalars = tuple(a for a in arguments if a not in per_row and a not in table)
    arrays = tuple(a for a in arguments if a in per_row and a not in table)
    *statements, returned = func.body
    assigns = [s for s in statements if isinstance(s, ast.Assign)]
    varies = set(arrays) | set(table)
    for s in assigns:
        if loaded_names(s.value) & varies:
            varies.add(s.targets[0].id)
    results = returned.value.elts
    looped = [s for s in assigns if s.targets[0].id in varies]
    hoist = _Invariants(varies)
    looped = [(s.targets[0].id, hoist.visit(s.value)) for s in looped]
    results = [hoist.visit(r) for r in results]
    lines = [f"{storage + ' ' if storage else ''}void {name}(long n, const double *restrict scalars,",
             "          const double *const *restrict arrays, const int *restrict index,",
             "          const double *restrict table, double *const *restrict out)", "{"]
    read = set().union(*(loaded_names(s.value) for s in assigns),
                       *(loaded_names(r) for r in results),
                       *(loaded_names(v) for _, v in hoist.hoisted))
    # an input a (specialised) kernel does not read keeps its place but is not loaded
    lines += [f"    const double v_{a} = scalars[{k}];" for k, a in enumerate(scalars)
              if a in read]
    lines += [f"    const double *restrict p_{a} = arrays[{k}];" for k, a in enumerate(arrays)
              if a in read]
    lines += [f"    double *restrict o_{k} = out[{k}];" for k in range(len(results))]
    lines += [f"    const double v_{s.targets[0].id} = {_c(s.value)};" for s in assigns
              if s.targets[0].id not in varies]
    lines += [f"    const double v_{target} = {_c(value)};" for target, value in hoist.hoisted]
    lines += ["    #pragma omp simd", "    for (long i = 0; i < n; i++) {"]
    if read & set(table):
        lines.append(f"        const int row = index[i] * {len(table)};")
        lines += [f"        const double v_{a} = table[row + {k}];" for k, a in enumerate(table)
                  if a in read]
    lines += [f"        const double v_{a} = p_{a}[i];" for a in arrays if a in read]
    lines += [f"        const double v_{target} = {_c(value)};" for target, value in looped]
    lines += [f"        o_{k}[i] = {_c(r)};" for k, r in enumerate(results)]
    lines += ["    }", "}", ""]
    return "\n".join(lines), scalars, arrays


def _signed_constant(node) -> bool:
    """``-1`` and the like: left in place, so that :func:`_power` still sees ``x ** -1``
    (hoisted to a variable it became ``pow(x, v)``: a libm call per row where numpy
    divides)."""
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd) \
        and isinstance(node.operand, ast.Constant)


class _Invariants(ast.NodeTransformer):
    """Takes each largest sub-expression of the loop's statements that depends on no
    varying name out of the loop (:attr:`hoisted`): GCC vectorises a loop with fewer
    scalar selects (``numpy.minimum`` of two scalars), and computes them once."""

    def __init__(self, varies: set[str]):
        self.varies, self.hoisted = varies, []

    def visit(self, node):
        if isinstance(node, ast.expr) \
                and not isinstance(node, ast.Name | ast.Constant | ast.Attribute) \
                and not _signed_constant(node) \
                and not loaded_names(node) & self.varies:
            name = f"_h{len(self.hoisted)}"
            self.hoisted.append((name, node))
            return ast.Name(name, ast.Load())
        if _is_where(node) and not loaded_names(node.args[0]) & self.varies:
            # the condition is the same for every row: a flag before the loop, and the
            # row's value picked by bits (np_pick), which GCC vectorises
            flag = f"_h{len(self.hoisted)}"
            self.hoisted.append((flag, ast.Call(node.func, [node.args[0], ast.Constant(1.0),
                                                            ast.Constant(0.0)], [])))
            return ast.Call(ast.Name("np_pick", ast.Load()),
                            [ast.Name(flag, ast.Load()), *map(self.visit, node.args[1:])], [])
        if isinstance(node, ast.Call):  # the arguments, not the function's name
            node.args = [self.visit(a) for a in node.args]
            return node
        return self.generic_visit(node)


def _is_where(node) -> bool:
    return _numpy_function(node) == "where" and len(node.args) == 3


def _numpy_function(node) -> str | None:
    """``name`` if ``node`` is a call ``numpy.name(...)`` without keywords, else None."""
    f = getattr(node, "func", None)
    if (isinstance(node, ast.Call) and not node.keywords and isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name) and f.value.id == "numpy"):
        return f.attr
    return None


def vector_declarations(functions: tuple[str, ...]) -> str:
    """Declarations that let GCC call libmvec's vector forms of ``functions``."""
    simd = '__attribute__((simd("notinbranch")))'
    return "".join(f"double {f}(double, double) {simd};\n" if f == "pow"
                   else f"double {f}(double) {simd};\n" for f in functions)


class CExpr:
    """A C expression built by running Python code on it (the layout rules of
    :func:`planner.engine.inputs.layout_rules.derived_inputs` are traced this way): each operator
    prints itself fully parenthesised, so C evaluates it in Python's order."""

    def __init__(self, text: str):
        self.text = text

    def _binary(self, other, op: str, reflected: bool = False) -> CExpr:
        left, right = (other, self) if reflected else (self, other)
        return CExpr(f"({c_text(left)} {op} {c_text(right)})")

    def __add__(self, other):
        return self._binary(other, "+")

    def __radd__(self, other):
        return self._binary(other, "+", True)

    def __sub__(self, other):
        return self._binary(other, "-")

    def __rsub__(self, other):
        return self._binary(other, "-", True)

    def __mul__(self, other):
        return self._binary(other, "*")

    def __rmul__(self, other):
        return self._binary(other, "*", True)

    def __truediv__(self, other):
        return self._binary(other, "/")

    def __rtruediv__(self, other):
        return self._binary(other, "/", True)


def c_text(value) -> str:
    """The C of a :class:`CExpr` or a Python number (a double literal)."""
    if isinstance(value, CExpr):
        return value.text
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Untranslatable(f"constant {value!r}")
    return repr(float(value))


def _call(name: str):
    return lambda *args: CExpr(f"{name}({', '.join(c_text(a) for a in args)})")


def _compare(op: str):
    return lambda a, b: CExpr(f"({c_text(a)} {op} {c_text(b)})")


#: The operations of :mod:`planner.engine.inputs.layout_rules` on :class:`CExpr` (the C
#: counterparts of its ``NUMPY`` ops: ``np_minimum``/``np_maximum`` as numpy's).
C_OPS = SimpleNamespace(
    where=lambda c, a, b: CExpr(f"({c_text(c)} ? {c_text(a)} : {c_text(b)})"),
    minimum=_call("np_minimum"), maximum=_call("np_maximum"), floor=_call("floor"),
    ceil=_call("ceil"), flag=lambda c: CExpr(f"({c_text(c)} ? 1.0 : 0.0)"),
    zero=lambda like: CExpr("0.0"), eq=_compare("=="), ne=_compare("!="), ge=_compare(">="),
    le=_compare("<="))


#: The operations of :func:`planner.engine.layouts.space.unpacked` on :class:`CExpr` of whole-number
#: codes held in doubles (exact below 2**53: the quotient by a power of two is exact, and
#: so is the remainder built from it): the C counterparts of ``space.CODES``.
C_CODES = SimpleNamespace(
    quotient=lambda a, b: CExpr(f"floor({c_text(a)} / {c_text(b)})"),
    remainder=lambda a, b: CExpr(
        f"({c_text(a)} - {c_text(b)} * floor({c_text(a)} / {c_text(b)}))"),
    where=C_OPS.where, eq=C_OPS.eq)
