"""sympy expression -> Excel formula string (``=SQRT(2*B2*B3)``).

:func:`to_excel` prints a formula's sympy expression for a spreadsheet, with
every symbol replaced by a cell reference or defined name::

    >>> import sympy
    >>> d, m = sympy.symbols("checkpoint_cost_s mtbf_s", positive=True)
    >>> to_excel(sympy.sqrt(2 * d * m), {"checkpoint_cost_s": "B2", "mtbf_s": "B3"})
    '=SQRT(2*B2*B3)'

The printer is a whitelist: every sympy type it meets must have a ``_print_``
method defined on :class:`ExcelPrinter` itself (methods inherited from
sympy's ``StrPrinter`` would print Python, not Excel), anything else raises
:class:`ExcelUnsupportedError`.

Excel semantics the printer takes care of
-----------------------------------------
* Unary minus binds tighter than ``^`` in Excel (``=-2^2`` is 4), so a
  negated power is printed ``-(x^2)``; ``^`` is left-associative
  (``=2^3^2`` is 64), so powers in a base or exponent are parenthesised.
* Numbers are printed at full precision (``repr(float)``, 17 significant
  digits); Excel itself keeps 15 significant digits of a typed literal, a
  relative change below 1e-15.  Rationals print as ``p/q``.
* ``floor`` -> ``INT`` (rounds towards -inf, like floor, in every version);
  ``ceiling`` -> ``CEILING.MATH`` (Excel 2013+, LibreOffice 4.3+).
* ``erf`` -> ``ERF`` (negative arguments need Excel 2010+).
  ``erfinv(x)`` -> ``NORM.S.INV((x+1)/2)/SQRT(2)``; the rewrite is done on
  the sympy expression first, so the common ``sqrt(2)*erfinv(2*p - 1)`` (the
  normal quantile) cancels to plain ``NORM.S.INV(p)``.
* ``harmonic(n)`` has no Excel equivalent (Excel has no digamma).  It is
  printed as an approximation, see :func:`harmonic_approximation`: exact
  recurrence down to ``m = n + 6``, then the asymptotic series to ``m^-8``.
  Absolute error < 2e-10 for every real n >= 0 and < 3e-11 for n >= 1
  (relative error < 3e-11 for n >= 1, since H_n >= 1 there).
* ``Piecewise`` -> nested ``IF`` (no ``IFS``, which needs Excel 2019); a
  Piecewise without a ``True`` otherwise-branch yields ``NA()`` there.
* ``Max``/``Min``/``Abs``/``sign``/``exp``/``log``/``pi``/``E`` ->
  ``MAX``/``MIN``/``ABS``/``SIGN``/``EXP``/``LN``/``PI()``/``EXP(1)``.
* Formulas longer than Excel's 8,192-character limit raise
  :class:`ExcelPrintError`.

Functions new since Excel 2010 (``CEILING.MATH``, ``NORM.S.INV``) are typed
into a cell as printed; only a program writing the XML of an ``.xlsx`` file
directly must add the ``_xlfn.`` prefix (see :func:`xlsx_formula`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import sympy
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.str import StrPrinter

__all__ = [
    "to_excel", "xlsx_formula", "ExcelPrinter", "ExcelPrintError", "ExcelUnsupportedError",
    "harmonic_approximation", "EXCEL_MAX_FORMULA_LENGTH",
]

#: Excel's limit on the length of a formula (characters).
EXCEL_MAX_FORMULA_LENGTH = 8192

#: Functions that need the ``_xlfn.`` prefix inside an .xlsx file.
XLFN_FUNCTIONS = ("CEILING.MATH", "NORM.S.INV", "FLOOR.MATH", "POISSON.DIST")

_HARMONIC_SHIFT = 6
#: Bernoulli-number terms -B_2k/(2k m^2k), k = 1..4, of the asymptotic series of H_m.
_HARMONIC_SERIES = ((2, sympy.Rational(-1, 12)), (4, sympy.Rational(1, 120)),
                    (6, sympy.Rational(-1, 252)), (8, sympy.Rational(1, 240)))


class ExcelPrintError(ValueError):
    """The expression cannot be written as an Excel formula (missing cell, non-finite, too long)."""


class ExcelUnsupportedError(ExcelPrintError, NotImplementedError):
    """The expression contains a function or object with no Excel counterpart."""


class NormSInv(sympy.Function):
    """Excel's ``NORM.S.INV(p)``, the standard normal quantile; used by the erfinv rewrite."""

    nargs = 1


class _SqrtOfProduct(sympy.Function):
    """Printing helper: SQRT of a product that sympy would split again."""


#: sympy function -> Excel function with the same arguments.
_FUNCTIONS = {
    "exp": "EXP", "log": "LN", "Abs": "ABS", "sign": "SIGN", "erf": "ERF",
    "floor": "INT", "ceiling": "CEILING.MATH", "NormSInv": "NORM.S.INV",
    "Max": "MAX", "Min": "MIN",
    "sin": "SIN", "cos": "COS", "tan": "TAN", "asin": "ASIN", "acos": "ACOS", "atan": "ATAN",
    "sinh": "SINH", "cosh": "COSH", "tanh": "TANH",
    "asinh": "ASINH", "acosh": "ACOSH", "atanh": "ATANH",
}

_RELATIONS = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def harmonic_approximation(n):
    """Closed form of the harmonic number H_n usable in Excel (no digamma needed).

    H_n = H_m - sum_{j=1}^{6} 1/(n+j) with m = n + 6, and
    H_m ~ ln m + gamma + 1/(2m) - 1/(12m^2) + 1/(120m^4) - 1/(252m^6) + 1/(240m^8).
    The series' truncation error is below the next term, 1/(132 m^10): for
    n >= 0 (m >= 6) the absolute error is < 2e-10, for n >= 1 (m >= 7) < 3e-11.
    """
    m = n + _HARMONIC_SHIFT
    series = sympy.log(m) + sympy.EulerGamma + 1 / (2 * m)
    for power, coeff in _HARMONIC_SERIES:
        series += coeff / m**power
    return series - sympy.Add(*(1 / (n + j) for j in range(1, _HARMONIC_SHIFT + 1)))


def _rewrite(expr):
    """Replace functions without an Excel equivalent by equivalent sympy expressions."""

    def erfinv_as_quantile(x):
        return NormSInv((x + 1) / 2) / sympy.sqrt(2)

    def harmonic_as_series(*args):
        if len(args) != 1:
            raise ExcelUnsupportedError(
                f"generalised harmonic number harmonic{args} has no Excel equivalent")
        return harmonic_approximation(args[0])

    if expr.has(sympy.erfinv):
        expr = expr.replace(sympy.erfinv, erfinv_as_quantile)
    if expr.has(sympy.harmonic):
        expr = expr.replace(sympy.harmonic, harmonic_as_series)
    if expr.has(sympy.erfc):
        expr = expr.replace(sympy.erfc, lambda x: 1 - sympy.erf(x))
    return expr


def _is_call(expr) -> bool:
    """True for objects printed as ``NAME(...)`` (bind tighter than every operator)."""
    return isinstance(expr, sympy.Function | sympy.Piecewise | sympy.Max | sympy.Min
                      | sympy.logic.boolalg.BooleanFunction) or expr in (sympy.pi, sympy.E)


class ExcelPrinter(StrPrinter):
    """Prints sympy expressions as Excel formulas (without the leading ``=``).

    ``cell_of`` maps symbols (or symbol names) to cell references or defined names.
    """

    printmethod = "_excel"

    def __init__(self, cell_of: Mapping, settings=None):
        super().__init__(settings)
        self.cell_of = cell_of

    # -- dispatch: whitelist ---------------------------------------------------
    def _print(self, expr, **kwargs) -> str:
        if isinstance(expr, bool):
            return "TRUE" if expr else "FALSE"
        if isinstance(expr, int | float):
            return self._print(sympy.sympify(expr))
        if not isinstance(expr, sympy.Basic):
            raise ExcelUnsupportedError(
                f"cannot print {type(expr).__name__} {expr!r} as an Excel formula")
        own = set()
        for klass in type(self).__mro__:
            if issubclass(klass, ExcelPrinter):
                own.update(name for name in vars(klass) if name.startswith("_print_"))
        for klass in type(expr).__mro__:
            method = "_print_" + klass.__name__
            if method in own:
                return getattr(self, method)(expr, **kwargs)
        raise ExcelUnsupportedError(
            f"{type(expr).__name__} has no Excel equivalent (in {expr}); "
            f"supported functions: {', '.join(sorted(_FUNCTIONS))}, Piecewise, harmonic, erfinv")

    def parenthesize(self, item, level, strict=False) -> str:
        prec = PRECEDENCE["Func"] if _is_call(item) else precedence(item)
        text = self._print(item)
        if prec < level or (strict and prec <= level):
            return f"({text})"
        return text

    # -- atoms -------------------------------------------------------------------
    def _print_Symbol(self, expr) -> str:
        for key in (expr, expr.name):
            try:
                ref = self.cell_of[key]
            except (KeyError, TypeError):
                continue
            if not isinstance(ref, str) or not ref.strip():
                raise ExcelPrintError(f"cell reference for {expr.name!r} must be a non-empty "
                                      f"string, got {ref!r}")
            return ref
        known = ", ".join(sorted(str(k) for k in self.cell_of)) or "nothing"
        raise ExcelPrintError(f"no cell reference for symbol {expr.name!r} (cell_of maps {known})")

    def _print_Integer(self, expr) -> str:
        return str(int(expr))

    def _print_Rational(self, expr) -> str:
        return f"{expr.p}/{expr.q}"

    def _print_Float(self, expr) -> str:
        value = float(expr)
        if not math.isfinite(value):
            raise ExcelPrintError(f"Excel has no literal for {value}")
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text

    def _print_Pi(self, expr) -> str:
        return "PI()"

    def _print_Exp1(self, expr) -> str:
        return "EXP(1)"

    def _print_NumberSymbol(self, expr) -> str:  # EulerGamma, Catalan, GoldenRatio, ...
        return self._print_Float(sympy.Float(expr.evalf(17)))

    def _print_BooleanTrue(self, expr) -> str:
        return "TRUE"

    def _print_BooleanFalse(self, expr) -> str:
        return "FALSE"

    def _print_Infinity(self, expr) -> str:
        raise ExcelPrintError("Excel has no literal for infinity")

    _print_NegativeInfinity = _print_Infinity
    _print_ComplexInfinity = _print_Infinity

    def _print_NaN(self, expr) -> str:
        raise ExcelPrintError("Excel has no literal for NaN")

    # -- arithmetic --------------------------------------------------------------
    def _print_Add(self, expr, order=None) -> str:
        terms = self._as_ordered_terms(expr, order=order)
        # Lead with a positive term if there is one: "y - x^2" rather than "-(x^2) + y".
        positive = [t for t in terms if not t.could_extract_minus_sign()]
        if positive and terms[0].could_extract_minus_sign():
            terms.remove(positive[0])
            terms.insert(0, positive[0])
        out = [self._print(terms[0])]
        for term in terms[1:]:
            if term.could_extract_minus_sign():
                out.append(" - " + self.parenthesize(-term, PRECEDENCE["Add"], strict=True))
            else:
                out.append(" + " + self.parenthesize(term, PRECEDENCE["Add"], strict=True))
        return "".join(out)

    def _print_Mul(self, expr) -> str:
        coeff, rest = expr.as_coeff_Mul()
        negative = coeff.is_negative
        if negative:
            coeff = -coeff
        numer, denom = [], []
        if coeff.is_Rational and not coeff.is_Integer:
            if coeff.p != 1:
                numer.append(sympy.Integer(coeff.p))
            denom.append(sympy.Integer(coeff.q))
        elif coeff != 1:
            numer.append(coeff)
        for factor in rest.as_ordered_factors():
            if factor.is_Pow and factor.exp.is_Number and factor.exp.is_negative:
                if factor.exp == -1:
                    denom.append(factor.base)
                else:
                    denom.append(sympy.Pow(factor.base, -factor.exp, evaluate=False))
            else:
                numer.append(factor)
        numer, denom = self._merge_sqrt(numer), self._merge_sqrt(denom)
        mul = PRECEDENCE["Mul"]
        text = "*".join(self.parenthesize(f, mul) for f in numer) or "1"
        if len(denom) == 1:
            text += "/" + self.parenthesize(denom[0], mul, strict=True)
        elif denom:
            text += "/(" + "*".join(self.parenthesize(f, mul) for f in denom) + ")"
        if not negative:
            return text
        # Excel: unary minus binds tighter than ^, so -x^2 would be (-x)^2.
        if numer and numer[0].is_Pow and not self._pow_is_call(numer[0]):
            return f"-({text})"
        return "-" + text

    @staticmethod
    def _merge_sqrt(factors: list) -> list:
        """sqrt(a)*sqrt(b) -> one SQRT(a*b), as sympy splits them, where that is exact.

        Exact when every base is known >= 0, or when all but one are known > 0
        (then the product has the sign of the remaining base: both forms are
        #NUM! for a negative one).
        """
        roots = [f for f in factors if f.is_Pow and f.exp == sympy.S.Half]
        known = [f for f in roots if f.base.is_nonnegative]
        unknown = [f for f in roots if not f.base.is_nonnegative]
        if len(unknown) == 1 and known and all(f.base.is_positive for f in known):
            known = known + unknown
        roots = known
        if len(roots) < 2:
            return factors
        merged = _SqrtOfProduct(sympy.Mul(*(f.base for f in roots)))
        return [merged] + [f for f in factors if not any(f is r for r in roots)]

    def _print__SqrtOfProduct(self, expr) -> str:
        return f"SQRT({self._print(expr.args[0])})"

    @staticmethod
    def _pow_is_call(expr) -> bool:
        return expr.exp == sympy.S.Half

    def _print_Pow(self, expr) -> str:
        base, exp = expr.base, expr.exp
        if exp == sympy.S.Half:
            return f"SQRT({self._print(base)})"
        if exp.is_Number and exp.is_negative:
            positive = base if exp == -1 else sympy.Pow(base, -exp, evaluate=False)
            return "1/" + self.parenthesize(positive, PRECEDENCE["Mul"], strict=True)
        if base == sympy.E:
            return f"EXP({self._print(exp)})"
        pow_ = PRECEDENCE["Pow"]
        return f"{self.parenthesize(base, pow_, strict=True)}^{self.parenthesize(exp, pow_, strict=True)}"

    # -- functions ---------------------------------------------------------------
    def _call(self, name: str, args) -> str:
        return f"{name}({', '.join(self._print(a) for a in args)})"

    def _print_Function(self, expr) -> str:
        name = type(expr).__name__
        if name not in _FUNCTIONS:
            raise ExcelUnsupportedError(f"function {name} has no Excel equivalent (in {expr})")
        if name == "log" and len(expr.args) != 1:
            return f"LN({self._print(expr.args[0])})/LN({self._print(expr.args[1])})"
        return self._call(_FUNCTIONS[name], expr.args)

    def _print_Max(self, expr) -> str:
        return self._call("MAX", expr.args)

    def _print_Min(self, expr) -> str:
        return self._call("MIN", expr.args)

    def _print_atan2(self, expr) -> str:
        y, x = expr.args
        return self._call("ATAN2", (x, y))  # Excel's argument order is (x, y)

    def _print_erfinv(self, expr) -> str:  # reached only if called without _rewrite
        return self._print(_rewrite(expr))

    def _print_expm1(self, expr) -> str:  # sympy.codegen.cfunctions (formulas.ops.expm1)
        return f"(EXP({self._print(expr.args[0])}) - 1)"

    def _print_log1p(self, expr) -> str:
        return f"LN(1 + {self._print(expr.args[0])})"

    def _print_PoissonCdf(self, expr) -> str:  # formulas.ops.poisson_cdf
        k, mu = (self._print(a) for a in expr.args)
        # (a mean of 0 is an error in LibreOffice's POISSON.DIST; the CDF is then 1)
        return f"IF({k} < 0, 0, IF({mu} <= 0, 1, POISSON.DIST({k}, {mu}, TRUE)))"

    _print_harmonic = _print_erfinv
    _print_erfc = _print_erfinv

    def _print_Piecewise(self, expr) -> str:
        *branches, (last_value, last_cond) = expr.args
        if last_cond == sympy.true:
            text = self._print(last_value)
        else:
            text = f"IF({self._print(last_cond)}, {self._print(last_value)}, NA())"
        for value, cond in reversed(branches):
            text = f"IF({self._print(cond)}, {self._print(value)}, {text})"
        return text

    # -- logic ---------------------------------------------------------------------
    def _print_Relational(self, expr) -> str:
        op = _RELATIONS.get(expr.rel_op)
        if op is None:
            raise ExcelUnsupportedError(f"relation {expr.rel_op} has no Excel equivalent")
        add = PRECEDENCE["Add"]
        return (f"{self.parenthesize(expr.lhs, add)}{op}"
                f"{self.parenthesize(expr.rhs, add)}")

    def _print_And(self, expr) -> str:
        return self._call("AND", expr.args)

    def _print_Or(self, expr) -> str:
        return self._call("OR", expr.args)

    def _print_Not(self, expr) -> str:
        return self._call("NOT", expr.args)


def to_excel(expr, cell_of: Mapping) -> str:
    """The Excel formula (``=...``) computing ``expr``.

    Parameters
    ----------
    expr : sympy expression (or a number)
        For example ``formula.expr()``.
    cell_of : mapping
        ``sympy.Symbol`` or symbol name -> cell reference (``"B2"``,
        ``"Inputs!$B$2"``) or defined name (``"mtbf_s"``).  A Symbol key is
        tried first, then the symbol's name, so assumptions do not matter.

    Returns
    -------
    str
        The formula, starting with ``=``.

    Raises
    ------
    ExcelUnsupportedError
        For a function with no Excel counterpart (a ``NotImplementedError``).
    ExcelPrintError
        For a symbol missing from ``cell_of``, a non-finite number or a formula
        over 8,192 characters (a ``ValueError``).
    """
    expr = _rewrite(sympy.sympify(expr))
    text = "=" + ExcelPrinter(cell_of).doprint(expr)
    if len(text) > EXCEL_MAX_FORMULA_LENGTH:
        raise ExcelPrintError(
            f"formula is {len(text)} characters, over Excel's limit of {EXCEL_MAX_FORMULA_LENGTH}")
    return text


_XLFN = re.compile(r"(?<![\w.])(" + "|".join(re.escape(f) for f in XLFN_FUNCTIONS) + r")\(")


def xlsx_formula(formula: str) -> str:
    """``formula`` as stored in an .xlsx file: functions newer than Excel 2007 get ``_xlfn.``.

    Needed only when writing cells with a library such as openpyxl; a person
    typing the formula into Excel uses :func:`to_excel`'s output as is.
    """
    return _XLFN.sub(lambda m: "_xlfn." + m.group(1) + "(", formula)
