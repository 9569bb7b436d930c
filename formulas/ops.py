"""Backend-neutral maths used inside formula bodies.

A formula body is written once with these functions and the ordinary operators.
Called with sympy objects they build a sympy expression; called with floats,
numpy arrays or pandas Series they compute with numpy (sympy is never imported
on that path).  This is what lets one function serve symbolic, numeric and
display use.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .special import digamma
from .special import ndtri as _ndtri
from .special import poisson_cdf as _poisson_cdf

__all__ = [
    "is_symbolic", "sqrt", "exp", "log", "log2", "maximum", "minimum", "where",
    "ceil", "floor", "ndtri", "harmonic", "erf", "norm_cdf", "poisson_cdf", "expm1", "log1p",
    "pi", "euler_gamma",
]

pi = np.pi
euler_gamma = np.euler_gamma


def is_symbolic(*values) -> bool:
    """True if any value is a sympy object (checked without importing sympy)."""
    return any(type(v).__module__.startswith("sympy") for v in values)


def _sympy():
    import sympy

    return sympy


def _series_like(result, *inputs):
    """Give ``result`` the pandas index of the first Series input, if any."""
    for value in inputs:
        if hasattr(value, "index") and hasattr(value, "to_numpy"):
            import pandas as pd

            return pd.Series(np.asarray(result, dtype=float), index=value.index)
    if isinstance(result, np.ndarray) and result.ndim == 0:
        return float(result)
    return result


def sqrt(x):
    return _sympy().sqrt(x) if is_symbolic(x) else np.sqrt(x)


def exp(x):
    return _sympy().exp(x) if is_symbolic(x) else np.exp(x)


def log(x):
    return _sympy().log(x) if is_symbolic(x) else np.log(x)


def expm1(x):
    """e^x - 1, accurate for small x."""
    if is_symbolic(x):
        from sympy.codegen.cfunctions import expm1 as _expm1

        return _expm1(x)
    return np.expm1(x)


def log1p(x):
    """ln(1 + x), accurate for small x."""
    if is_symbolic(x):
        from sympy.codegen.cfunctions import log1p as _log1p

        return _log1p(x)
    return np.log1p(x)


def log2(x):
    if is_symbolic(x):
        sp = _sympy()
        return sp.log(x) / sp.log(2)
    return np.log2(x)


def maximum(a, b, *, simplify=True):
    """Element-wise maximum; sympy ``Max`` for symbols.  ``simplify=False`` keeps ``Max``
    as written: sympy compares its arguments to drop redundant ones, which takes minutes
    when both hold the run model's step-time expression."""
    if is_symbolic(a, b):
        return _sympy().Max(a, b, evaluate=simplify)
    return np.maximum(a, b)


def minimum(a, b, *, simplify=True):
    """Element-wise minimum; sympy ``Min`` for symbols (``simplify`` as in :func:`maximum`)."""
    if is_symbolic(a, b):
        return _sympy().Min(a, b, evaluate=simplify)
    return np.minimum(a, b)


def where(condition, if_true, if_false):
    """``if_true`` where ``condition`` holds, else ``if_false`` (Piecewise in sympy)."""
    if is_symbolic(condition, if_true, if_false):
        sp = _sympy()
        return sp.Piecewise((if_true, condition), (if_false, True))
    return _series_like(np.where(condition, if_true, if_false), condition, if_true, if_false)


def ceil(x, *, simplify=True):
    """Element-wise ceiling; sympy ``ceiling`` for symbols (``simplify=False``: as written,
    see :func:`maximum`)."""
    return _sympy().ceiling(x, evaluate=simplify) if is_symbolic(x) else np.ceil(x)


def floor(x):
    return _sympy().floor(x) if is_symbolic(x) else np.floor(x)


def erf(x):
    if is_symbolic(x):
        return _sympy().erf(x)
    from scipy.special import erf as _erf

    return _series_like(_erf(x), x)


def norm_cdf(x):
    """Standard normal CDF Phi(x)."""
    return (1 + erf(x / sqrt(2) if is_symbolic(x) else x / np.sqrt(2))) / 2


def ndtri(p):
    """Inverse of the standard normal CDF, Phi^-1(p)."""
    if is_symbolic(p):
        sp = _sympy()
        return sp.sqrt(2) * sp.erfinv(2 * p - 1)
    return _series_like(_ndtri(p), p)


def harmonic(n):
    """Harmonic number H_n = sum_{k=1}^{n} 1/k, continued to real n by digamma."""
    if is_symbolic(n):
        return _sympy().harmonic(n)
    return _series_like(digamma(np.asarray(n, dtype=float) + 1.0) + np.euler_gamma, n)


@cache
def _poisson_cdf_function():
    """The sympy function ``PoissonCdf(k, mu)`` (built once; sympy is imported lazily)."""
    sp = _sympy()

    class PoissonCdf(sp.Function):
        """P(X <= k) for X ~ Poisson(mu); 0 for k < 0.  Printed by the kernel printer
        (formulas.special.poisson_cdf) and the Excel printer (POISSON.DIST)."""

        nargs = 2

        @classmethod
        def eval(cls, k, mu):
            if k.is_number and mu.is_number and not (k.has(sp.zoo, sp.nan)
                                                     or mu.has(sp.zoo, sp.nan)):
                return sp.Float(float(poisson_cdf(float(k), float(mu))))
            return None

        def _numpycode(self, printer):
            """numpy code for lambdify and the generated kernel: the numpy-only
            :func:`formulas.special.poisson_cdf` (no scipy import)."""
            k, mu = (printer._print(a) for a in self.args)
            return f"{printer._module_format('formulas.special.poisson_cdf')}({k}, {mu})"

        def _mpmathcode(self, printer):
            """mpmath code (the registry test's independent path): regularised gamma."""
            k, mu = (printer._print(a) for a in self.args)
            gammainc, floor = (printer._module_format(f"mpmath.{n}") for n in ("gammainc",
                                                                                 "floor"))
            return (f"({gammainc}({floor}({k}) + 1, {mu}, {printer._module_format('mpmath.inf')}"
                    f", regularized=True) if {k} >= 0 else 0)")

        def fdiff(self, argindex=1):
            k, mu = self.args
            if argindex != 2:  # a step function of k: zero almost everywhere
                return sp.S.Zero
            whole = sp.floor(k)  # d/dmu P(X <= k) = -P(X = floor(k))
            return -sp.Piecewise((sp.exp(whole * sp.log(mu) - mu - sp.loggamma(whole + 1)),
                                  k >= 0), (0, True))

    return PoissonCdf


def poisson_cdf(k, mu):
    """P(X <= k) for X ~ Poisson(mu), k real (floored), 0 for k < 0.

    >>> round(poisson_cdf(2, 1.0), 6)
    0.919699
    >>> float(poisson_cdf(-1, 1.0))
    0.0
    """
    if is_symbolic(k, mu):
        return _poisson_cdf_function()(k, mu)
    return _series_like(_poisson_cdf(k, mu), k, mu)
