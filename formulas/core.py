"""The formula mechanism: one decorator, one registry.

A formula is a plain Python function whose body uses ordinary operators and
:mod:`formulas.ops`.  :func:`formula` wraps it in a :class:`Formula` that

* computes numerically on floats, numpy arrays and pandas Series (float64,
  broadcasting, same kind back), after checking every argument against its
  declared domain (``ValueError`` naming the argument and allowed range);
* builds a sympy expression when called with sympy objects (no checks);
* describes itself: ``name``, ``units`` (read from the numpydoc docstring,
  the first ``[...]`` of every parameter and of the return value),
  ``reference``, ``latex`` (derived from the expression itself).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from dataclasses import dataclass

import numpy as np

from .ops import is_symbolic

_REGISTRY: dict[str, Formula] = {}

#: Allowed domain specifications and their checks.
_DOMAINS = {
    ">0": (lambda v: v > 0, "> 0"),
    ">=0": (lambda v: v >= 0, ">= 0"),
    ">=1": (lambda v: v >= 1, ">= 1"),
    "[0,1]": (lambda v: (v >= 0) & (v <= 1), "in [0, 1]"),
    "(0,1]": (lambda v: (v > 0) & (v <= 1), "in (0, 1]"),
    "(0,1)": (lambda v: (v > 0) & (v < 1), "in (0, 1)"),
    "[0,1)": (lambda v: (v >= 0) & (v < 1), "in [0, 1)"),
    "real": (lambda v: np.isfinite(v), "a finite number"),
}

_SYMBOL_ASSUMPTIONS = {
    ">0": {"positive": True},
    ">=0": {"nonnegative": True},
    ">=1": {"positive": True},
    "[0,1]": {"nonnegative": True},
    "(0,1]": {"positive": True},
    "(0,1)": {"positive": True},
    "[0,1)": {"nonnegative": True},
    "real": {"real": True},
}


@dataclass(frozen=True)
class Argument:
    """One argument of a formula: its name, unit, domain and display symbol."""

    name: str
    unit: str
    domain: str
    latex: str


def _parse_units(doc: str) -> dict[str, str]:
    """Map parameter names (and ``"return"``) to the unit in their first ``[...]``."""
    units: dict[str, str] = {}
    section = None
    current = None
    lines = inspect.cleandoc(doc or "").splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and stripped:
            section = stripped.lower()
            current = None
            continue
        if set(stripped) == {"-"}:
            continue
        if section not in ("parameters", "returns"):
            continue
        if line and not line.startswith(" "):
            head = stripped.split(":")[0].strip()
            current = "return" if section == "returns" else head
            match = re.search(r"\[([^\]]*)\]", stripped.split(":", 1)[-1])
            if match and current not in units:
                units[current] = match.group(1).strip()
        elif current and current not in units:
            match = re.search(r"\[([^\]]*)\]", stripped)
            if match:
                units[current] = match.group(1).strip()
    return units


def _as_float(fname: str, name: str, value):
    """``value`` as float64 (a float, or an array/Series of the same kind).

    Numbers, numeric arrays and numeric Series pass; anything else (a numeric string
    like ``'60'``, ``None``, complex or object arrays) is a ``TypeError`` naming the
    argument -- a string would otherwise be repeated by ``*`` instead of multiplied.
    """
    if isinstance(value, float | np.floating) and not isinstance(value, np.longdouble):
        return value
    if isinstance(value, bool | int | np.integer | np.bool_) or (
            isinstance(value, numbers.Real) and not hasattr(value, "dtype")):
        return float(value)
    if isinstance(value, list | tuple):
        try:
            value = np.asarray(value)
        except ValueError:  # ragged
            value = np.asarray(value, dtype=object)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind in "iub":
        return value.astype("float64")
    if dtype is not None and dtype.kind == "f":
        return value if dtype == np.float64 else value.astype("float64")
    raise TypeError(f"{fname}: {name} must be a real number or an array of real numbers, "
                    f"got {type(value).__name__}"
                    + (f" of {dtype}" if dtype is not None else f" {value!r}"[:60]))


class Formula:
    """A registered closed-form model (see module docstring)."""

    def __init__(self, func, *, reference, domain, symbols, result, result_latex):
        functools.update_wrapper(self, func)
        self.func = func
        self.name = func.__name__
        self.module = func.__module__.rsplit(".", 1)[-1]
        self.reference = reference
        signature = inspect.signature(func)
        self.signature = signature
        self._domain, self._symbols = domain, symbols
        unknown = set(domain) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{self.name}: domain names unknown arguments {sorted(unknown)}")
        for spec in domain.values():
            if spec not in _DOMAINS:
                raise TypeError(f"{self.name}: unknown domain {spec!r}")
        self.result = result or self.name
        self.result_latex = result_latex or _default_latex(self.result)

    # units are parsed from the docstring on first use: importing the ~120 formulas
    # (every command does, through the run model) then costs no docstring parsing
    @functools.cached_property
    def _units(self) -> dict[str, str]:
        return _parse_units(self.func.__doc__)

    @functools.cached_property
    def arguments(self) -> tuple[Argument, ...]:
        """Name, unit, domain and display symbol of every argument, in order."""
        return tuple(
            Argument(
                name=p,
                unit=self._units.get(p, ""),
                domain=self._domain.get(p, "real"),
                latex=self._symbols.get(p, _default_latex(p)),
            )
            for p in self.signature.parameters
        )

    @functools.cached_property
    def result_unit(self) -> str:
        return self._units.get("return", "")

    # -- description -------------------------------------------------------
    @property
    def units(self) -> dict[str, str]:
        """Unit of every argument and of the result (key ``"return"``)."""
        out = {a.name: a.unit for a in self.arguments}
        out["return"] = self.result_unit
        return out

    @property
    def summary(self) -> str:
        doc = inspect.cleandoc(self.__doc__ or "")
        return doc.split("\n\n")[0].replace("\n", " ")

    def symbols(self, display: bool = False):
        """sympy Symbols for the arguments (named after them, or display LaTeX)."""
        import sympy

        return {
            a.name: sympy.Symbol(a.latex if display else a.name, **_SYMBOL_ASSUMPTIONS[a.domain])
            for a in self.arguments
        }

    def expr(self, display: bool = False):
        """The formula as a sympy expression of its argument symbols."""
        return self.func(**self.symbols(display))

    @functools.cached_property
    def latex(self) -> str:
        """``result = expression`` in LaTeX, derived from the expression itself."""
        import sympy

        return f"{self.result_latex} = {sympy.latex(self.expr(display=True))}"

    # -- evaluation --------------------------------------------------------
    def __call__(self, *args, **kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        if is_symbolic(*values.values()):
            return self.func(**values)
        checked = {}
        for arg in self.arguments:
            value = _as_float(self.name, arg.name, values[arg.name])
            _check_domain(self.name, arg, value)
            checked[arg.name] = value
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = self.func(**checked)
        # scalars in, a plain Python float out (not numpy.float64 or a 0-d array)
        if np.ndim(result) == 0 and not any(hasattr(v, "shape") and np.ndim(v) > 0
                                            for v in checked.values()):
            return float(result)
        return result

    def __repr__(self) -> str:
        args = ", ".join(f"{a.name} [{a.unit}]" for a in self.arguments)
        return f"<formula {self.module}.{self.name}({args}) -> [{self.result_unit}]>"


def _default_latex(name: str) -> str:
    return r"\mathrm{" + name.replace("_", r"\_") + "}"


def _check_domain(fname: str, arg: Argument, value) -> None:
    array = np.asarray(value, dtype=float)
    check, text = _DOMAINS[arg.domain]
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(array) & check(array)
    if not np.all(ok):
        bad = array[~ok] if array.ndim else array
        first = float(np.ravel(bad)[0])
        unit = f" [{arg.unit}]" if arg.unit else ""
        raise ValueError(f"{fname}: {arg.name}{unit} must be {text}, got {first:g}")


def in_domain(spec: str, values) -> np.ndarray:
    """True where ``values`` are finite and inside domain ``spec`` (e.g. ``">0"``)."""
    check, _ = _DOMAINS[spec]
    array = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(array) & check(array)


def number_in_domain(spec: str, value: float) -> bool:
    """:func:`in_domain` for one Python float, without numpy calls (fast in loops)."""
    check, _ = _DOMAINS[spec]
    return math.isfinite(value) and bool(check(value))


def domain_text(spec: str) -> str:
    """How domain ``spec`` reads in an error message (``"> 0"``, ``"in [0, 1]"`` ...)."""
    return _DOMAINS[spec][1]


def formula(*, reference: str, domain: dict[str, str] | None = None,
            symbols: dict[str, str] | None = None, result: str | None = None,
            result_latex: str | None = None):
    """Register a closed-form model.

    Parameters
    ----------
    reference : str
        Source: paper, equation/table number, DOI or arXiv id.
    domain : dict
        Argument name -> one of ``>0``, ``>=0``, ``>=1``, ``[0,1]``, ``(0,1]``,
        ``(0,1)``, ``[0,1)``, ``real`` (default).  Checked on numeric calls.
    symbols : dict
        Argument name -> LaTeX symbol used for display.
    result, result_latex : str
        Name and LaTeX symbol of the result (default: the function name).
    """

    def wrap(func):
        f = Formula(func, reference=reference, domain=domain or {}, symbols=symbols or {},
                    result=result, result_latex=result_latex)
        if f.name in _REGISTRY:
            raise TypeError(f"formula {f.name!r} registered twice")
        _REGISTRY[f.name] = f
        return f

    return wrap


def registered() -> dict[str, Formula]:
    """The formulas registered so far, by name (sorted)."""
    return dict(sorted(_REGISTRY.items()))
