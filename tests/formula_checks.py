"""Checks every formula module's tests run: symbolic equals numeric, input kinds agree."""

import numpy as np
import pandas as pd
import pytest
import sympy as sp


def check_symbolic(f, points, *, rel, abs=1e-300, lambdified=False):
    """The sympy expression, evaluated at 30 digits (and lambdified), equals the numeric call."""
    symbols = f.symbols()
    expr = f(**symbols)
    assert isinstance(expr, sp.Basic)
    fn = sp.lambdify([symbols[a.name] for a in f.arguments], expr, "numpy") if lambdified \
        else None
    for point in points:
        numeric = f(**point)
        if fn is not None:
            value = float(fn(*(point[a.name] for a in f.arguments)))
            assert value == pytest.approx(numeric, rel=rel, abs=abs)
        # Float arguments: sympy's harmonic(Integer) would build an exact rational
        exact = expr.subs({symbols[k]: sp.Float(v, 30) for k, v in point.items()}).evalf(30)
        assert float(exact) == pytest.approx(numeric, rel=rel, abs=abs)


def check_input_kinds(f, points, *, exact=False):
    """Scalars, a float64 ndarray and a Series (index kept) give the same values."""
    scalars = [f(**p) for p in points]
    arr = f(**{k: np.array([p[k] for p in points]) for k in points[0]})
    ser = f(**{k: pd.Series([p[k] for p in points], index=range(4, 4 + len(points)))
               for k in points[0]})
    assert all(isinstance(s, float) for s in scalars)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    assert isinstance(ser, pd.Series) and list(ser.index) == list(range(4, 4 + len(points)))
    if exact:
        np.testing.assert_array_equal(arr, scalars)
        np.testing.assert_array_equal(ser.to_numpy(), scalars)
    else:
        np.testing.assert_allclose(arr, scalars, rtol=1e-15)
        np.testing.assert_allclose(ser.to_numpy(), scalars, rtol=1e-15)


RANGES = {">0": (0.5, 5000.0), ">=0": (0.0, 5000.0), ">=1": (1.0, 64.0),
          "[0,1]": (0.0, 1.0), "(0,1]": (0.05, 1.0), "real": (-10.0, 10.0)}


def sample_point(f, rng) -> dict[str, float]:
    """A random point inside every argument's declared domain."""
    return {a.name: float(rng.uniform(*RANGES[a.domain])) for a in f.arguments}
